"""Real host files, taken from public repositories (tests/data/hosts/corpus/<host>/, with PROVENANCE.json
naming each file's repository, path and commit, and the examples from the hosts' own documentation,
or the host source a file written for the corpus is shaped after), each laid out where its host reads
it in a temporary home or project (a project the host trusts) and loaded as that host would: the
servers it names and the transport of each ("off" for one the host leaves off) must be what
`expected.json` says, written by reading each file as its host reads it.

Every variable a file references is set (to a fake value) and every VS Code input answered, since
the question is how the file is read, not what this machine's environment holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import HostInput, InvalidServerEntry, load_host_entries
from tests.support import REPO_ROOT

CORPUS = REPO_ROOT / "tests" / "data" / "hosts" / "corpus"

# Where each host reads a file of each scope, under the home or the project folder (Linux layout).
PLACES: Mapping[tuple[str, str], str] = {
    ("claude-desktop", "user"): ".config/Claude/claude_desktop_config.json",
    ("claude-code", "project"): ".mcp.json",
    ("cursor", "project"): ".cursor/mcp.json",
    ("vscode", "project"): ".vscode/mcp.json",
    ("codex", "user"): ".codex/config.toml",
    ("codex", "project"): ".codex/config.toml",
    ("gemini", "user"): ".gemini/settings.json",
    ("gemini", "project"): ".gemini/settings.json",
    ("windsurf", "user"): ".codeium/windsurf/mcp_config.json",
}
# Variables that say where the hosts' files are, or whether a folder is trusted: left unset, so the
# default places and the trust the test writes are used.
_LOCATION_VARIABLES = frozenset(
    {
        "XDG_CONFIG_HOME",
        "APPDATA",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
        "GEMINI_CLI_TRUST_WORKSPACE",
    }
)


class EveryVariable(Mapping[str, str]):
    """An environment in which every variable a file names is set, to a fake value."""

    def __getitem__(self, name: str) -> str:
        if name in _LOCATION_VARIABLES:
            raise KeyError(name)
        return f"fake-{name.lower()}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def corpus() -> list[Any]:
    cases = []
    for host_dir in sorted(CORPUS.iterdir()):
        expected = json.loads((host_dir / "expected.json").read_text(encoding="utf-8"))
        for item in json.loads((host_dir / "PROVENANCE.json").read_text(encoding="utf-8")):
            cases.append(
                pytest.param(
                    host_dir.name, item, expected[item["file"]], id=f"{host_dir.name}/{item['file']}"
                )
            )
    return cases


def transport_of(entry: Any) -> str:
    """What the host would connect with: stdio, Streamable HTTP (then SSE, where it falls back) or SSE;
    "off" for a server the host leaves off."""
    if isinstance(entry, InvalidServerEntry):
        return "fails"
    if not entry.enabled:
        return "off"
    if entry.transport == "streamable-http" and getattr(entry, "sse_fallback", False):
        return "streamable-http, then sse"
    return str(entry.transport)


def name_of(entry: Any) -> str:
    """The name the host's file gave the server."""
    if isinstance(entry, InvalidServerEntry):
        return entry.server_name
    return getattr(entry, "original_name", None) or entry.server_name


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_corpus_holds_at_least_eight_files_per_host() -> None:
    counts = {host.name: len(json.loads((host / "PROVENANCE.json").read_text())) for host in CORPUS.iterdir()}

    assert len(counts) == 7
    assert min(counts.values()) >= 8, counts


@pytest.mark.parametrize(("host", "item", "expected"), corpus())
def test_a_real_file_loads_as_its_host_reads_it(
    tmp_path: Path, host: str, item: dict[str, str], expected: dict[str, str]
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    where = home if item["scope"] == "user" else project
    target = where / PLACES[host, item["scope"]]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((CORPUS / host / item["file"]).read_bytes())
    if (host, item["scope"]) == ("codex", "project"):  # Codex reads a project's file once it is trusted
        trusted = f'[projects.{json.dumps(os.fspath(project))}]\ntrust_level = "trusted"\n'
        write_text(home / PLACES["codex", "user"], trusted)
    if (host, item["scope"]) == ("gemini", "project"):  # so does Gemini CLI, with its folder trust
        write_text(home / ".gemini" / "trustedFolders.json", json.dumps({os.fspath(project): "TRUST_FOLDER"}))

    def answer(question: HostInput) -> str:
        return f"fake-input-{question.id}"

    entries = load_host_entries(
        host,
        project if item["scope"] == "project" else None,
        home=home,
        environ=EveryVariable(),
        inputs=answer,
        platform="linux",
    )

    assert {name_of(entry): transport_of(entry) for entry in entries.entries} == expected
