"""The Windows test subset: run by tests/windows/run.sh with a Windows Python (under Wine on CI), never
collected elsewhere (the Linux suite tests the same behaviour with its own tests)."""

from __future__ import annotations

import sys

collect_ignore_glob = [] if sys.platform == "win32" else ["test_*.py"]
