"""What the adapters share: no framework is imported until its adapter is, and `$ref`s are inlined for
frameworks that take each argument's schema on its own."""

from __future__ import annotations

import subprocess
import sys

from mcp_sync.integrations._common import inline_refs
from tests.integrations.support import RICH_SCHEMA
from tests.support import REPO_ROOT

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "smolagents", "llama_index", "dspy", "haystack")


def test_importing_mcp_sync_imports_no_framework() -> None:
    code = (
        "import sys, mcp_sync, mcp_sync.integrations\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FRAMEWORKS!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"


def test_inline_refs_replaces_references_and_keeps_their_own_keys() -> None:
    resolved = inline_refs(RICH_SCHEMA)
    assert "$defs" not in resolved
    assert resolved["properties"]["home"] == {
        **RICH_SCHEMA["$defs"]["Address"],
        "description": "Where the travellers live.",
    }


def test_inline_refs_stops_at_a_recursive_type() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node", "description": "d"}}}
        },
    }
    child = inline_refs(schema)["properties"]["root"]["properties"]["child"]
    assert child == {"type": "object", "description": "d"}
