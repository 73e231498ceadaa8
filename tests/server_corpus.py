"""A hub configuration of many published MCP servers, for tool search and context-cost measurements.

Every server here runs locally and lists its tools with no account, key or network (some need the
network or an account only when a tool is called, which the tool-search corpus never does). They are
installed from the project's own pin files by tests/installs.py: the npm packages from
tests/reference_servers/package-lock.json, the Python ones into two virtualenvs, one per SDK era
(tests/servers/requirements-v1.txt, tests/servers/requirements-published.txt).

Used by tests/test_tool_search_corpus.py and benchmarks/bench_tool_search.py; the labelled queries over
these servers' tools are in benchmarks/data/tool_search_queries.json.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.installs import (
    InstallError,
    ensure_legacy_v1_venv,
    ensure_published_venv,
    ensure_reference_servers,
)
from tests.support import REPO_ROOT

QUERIES_FILE = REPO_ROOT / "benchmarks" / "data" / "tool_search_queries.json"

CONNECT_TIMEOUT_MS = 120_000
"""Generous: sixteen servers (node and Python interpreters) start at once on a small machine."""


@dataclass(frozen=True)
class Installed:
    """Where the corpus's servers are: the npm packages' folder, node, and the two virtualenvs."""

    reference_root: Path
    node: str
    v1_python: Path
    published_python: Path


def install() -> Installed:
    """Install (once) and locate every server of the corpus; `InstallError` says what failed."""
    node = shutil.which("node")
    if node is None:
        raise InstallError("the corpus's npm servers need Node.js: `node` is not on PATH")
    return Installed(
        reference_root=ensure_reference_servers(),
        node=node,
        v1_python=ensure_legacy_v1_venv(),
        published_python=ensure_published_venv(),
    )


def _stdio(name: str, command: str | os.PathLike[str], *args: str, **env: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "server_name": name,
        "transport": "stdio",
        "command": os.fspath(command),
        "args": list(args),
        "connect_timeout_ms": CONNECT_TIMEOUT_MS,
    }
    if env:
        config["env"] = env
    return config


def configs(installed: Installed, workdir: Path) -> list[dict[str, Any]]:
    """The hub configuration of every corpus server; files they write stay under `workdir`."""
    modules = installed.reference_root / "node_modules"

    def npm(name: str, entry: str, *args: str, **env: str) -> dict[str, Any]:
        return _stdio(name, installed.node, str(modules / entry), *args, **env)

    v1_bin = installed.v1_python.parent
    published_bin = installed.published_python.parent
    files = workdir / "files"
    files.mkdir(parents=True, exist_ok=True)
    return [
        # npm: https://github.com/modelcontextprotocol/servers
        npm("everything", "@modelcontextprotocol/server-everything/dist/index.js", "stdio"),
        npm("filesystem", "@modelcontextprotocol/server-filesystem/dist/index.js", str(files)),
        npm(
            "memory",
            "@modelcontextprotocol/server-memory/dist/index.js",
            MEMORY_FILE_PATH=str(workdir / "memory.jsonl"),
        ),
        npm("thinking", "@modelcontextprotocol/server-sequential-thinking/dist/index.js"),
        # https://github.com/modelcontextprotocol/servers-archived (the token is read per call)
        npm("github", "@modelcontextprotocol/server-github/dist/index.js"),
        # https://github.com/microsoft/playwright-mcp (a browser is launched on the first call only)
        npm("playwright", "@playwright/mcp/cli.js", "--headless", "--isolated"),
        # https://github.com/makenotion/notion-mcp-server (the token is sent per call)
        npm("notion", "@notionhq/notion-mcp-server/bin/cli.mjs"),
        # Python, 2.x SDK: https://github.com/modelcontextprotocol/servers and the packages' pages
        _stdio("time", published_bin / "mcp-server-time", "--local-timezone", "UTC"),
        _stdio("fetch", published_bin / "mcp-server-fetch"),
        _stdio("git", published_bin / "mcp-server-git"),
        _stdio("excel", published_bin / "excel-mcp-server", "stdio", EXCEL_FILES_PATH=str(files)),
        _stdio("duckduckgo", published_bin / "duckduckgo-mcp-server"),
        # Python, 1.x SDK
        _stdio("sqlite", v1_bin / "mcp-server-sqlite", "--db-path", str(workdir / "corpus.db")),
        _stdio("calculator", v1_bin / "mcp-server-calculator"),
        _stdio("shell", v1_bin / "mcp-shell-server", ALLOW_COMMANDS="ls,cat,echo"),
        _stdio("arxiv", v1_bin / "arxiv-mcp-server", "--storage-path", str(workdir / "papers")),
    ]
