"""Public tool names: byte-identical to the RFC's reference, and its invariants."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sync import public_tool_name

VECTORS = json.loads((Path(__file__).parent / "data" / "public_tool_names.json").read_text(encoding="utf-8"))
PUBLIC_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

server_names = st.from_regex(r"[A-Za-z0-9_-]{1,32}", fullmatch=True)
raw_names = st.text(max_size=160)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['server']}/{v['raw'][:20]}")
def test_matches_reference_vector(vector: dict[str, str]) -> None:
    assert public_tool_name(vector["server"], vector["raw"]) == vector["public"]


def test_clean_name_is_plain_namespace() -> None:
    assert public_tool_name("github", "create_issue") == "mcp__github__create_issue"


def test_character_outside_bmp_becomes_two_underscores() -> None:
    name = public_tool_name("srv", "a🚀")
    assert name.startswith("mcp__srv__a___")  # "a", two underscores for the emoji, then "_" + hash


@given(server_names, raw_names)
def test_name_fits_function_calling_contract(server: str, raw: str) -> None:
    assert PUBLIC_NAME.fullmatch(public_tool_name(server, raw))


@given(server_names, raw_names)
def test_name_is_pure(server: str, raw: str) -> None:
    assert public_tool_name(server, raw) == public_tool_name(server, raw)


@given(server_names, raw_names)
def test_name_keeps_the_server_namespace(server: str, raw: str) -> None:
    assert public_tool_name(server, raw).startswith(f"mcp__{server}__")


@given(st.lists(st.tuples(server_names, raw_names), min_size=2, max_size=40, unique=True))
def test_distinct_identities_never_collide(identities: list[tuple[str, str]]) -> None:
    # Distinct (server, raw) pairs may only meet when the plain spelling is ambiguous
    # ("a" + "b__c" vs "a__b" + "c"), which the registry treats as a collision between owners.
    names: dict[str, tuple[str, str]] = {}
    for server, raw in identities:
        name = public_tool_name(server, raw)
        other = names.setdefault(name, (server, raw))
        if other != (server, raw):
            assert name == f"mcp__{server}__{raw}" == f"mcp__{other[0]}__{other[1]}"


@given(server_names, st.text(alphabet="._ /é", min_size=1, max_size=10))
def test_normalised_names_differ_from_their_clean_lookalikes(server: str, raw: str) -> None:
    clean = raw.replace(".", "_").replace(" ", "_").replace("/", "_").replace("é", "_")
    if clean != raw:
        assert public_tool_name(server, raw) != public_tool_name(server, clean)
