#!/usr/bin/env bash
# Runs the Windows test subset (tests/windows/test_windows_*.py) with the Windows Python that setup.sh
# installs, under Wine; the repository is imported from its folder. Extra arguments go to pytest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=$("$here/setup.sh" | tail -n 1)
export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export PYTHONPATH="$(winepath -w "$repo")" MCP_SYNC_TOKEN_DIR=
cd "$repo"
status=0
# The Windows Python dies at start when a standard stream is a regular file: stdin is /dev/null and
# the output goes through a pipe.
wine "$cache/python/python.exe" -m pytest -c "$(winepath -w "$here/pytest.ini")" \
    --rootdir "$(winepath -w "$here")" "$(winepath -w "$here")" "$@" </dev/null 2>&1 | cat || status=$?
wineserver -k 2>/dev/null || true  # nothing of Wine's left running
exit "$status"
