"""The documentation stays whole: the API reference names every public name, and the site lists every page.

The pages' Python code blocks themselves run as tests through Sybil (the top-level conftest.py); the
command line page's first shell block runs here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

import mcp_sync
import mcp_sync.integrations
from tests.docstrings import undocumented, undocumented_classes
from tests.support import REPO_ROOT, cli_command, python_path

DOCS = REPO_ROOT / "docs"


def test_the_api_reference_documents_every_public_name() -> None:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: mcp_sync\.(\w+)$", text, flags=re.MULTILINE))
    missing = sorted(set(mcp_sync.__all__) - documented)
    assert not missing, f"docs/api.md has no `::: mcp_sync.<name>` for {missing}"
    stale = sorted(documented - set(mcp_sync.__all__))
    assert not stale, f"docs/api.md documents names that are not in mcp_sync.__all__: {stale}"
    # Read as Markdown (on the code host), the page is its tables: one row per name.
    untabled = sorted(name for name in documented if f"| `{name}` |" not in text)
    assert not untabled, f"docs/api.md has no table row for {untabled}"


INTEGRATIONS = REPO_ROOT / "mcp_sync" / "integrations"
TESTS = REPO_ROOT / "tests"


def test_every_public_name_class_method_and_property_has_a_docstring() -> None:
    # What `help()` shows a user: a Literal alias (`ServerState`) carries one set at import.
    missing = [entry for name in mcp_sync.__all__ for entry in undocumented(name, getattr(mcp_sync, name))]
    missing += undocumented_classes(mcp_sync.integrations)
    assert not missing, f"public names without a docstring: {sorted(set(missing))}"


def test_every_framework_adapter_s_tests_check_its_docstrings() -> None:
    # Each adapter's public classes are checked in its own test module, which imports the framework
    # anyway (importing all five here would cost a worker about ten seconds).
    adapters = sorted(path.stem for path in INTEGRATIONS.glob("*.py") if not path.stem.startswith("_"))
    assert adapters, "no framework adapters found"
    unchecked = [
        name
        for name in adapters
        if "undocumented_classes(" not in (TESTS / "integrations" / f"test_{name}.py").read_text()
    ]
    assert not unchecked, f"adapters whose test module does not run undocumented_classes: {unchecked}"


def _nav_pages(entries: object) -> set[str]:
    if isinstance(entries, str):
        return {entries}
    if isinstance(entries, list):
        return set().union(*(_nav_pages(entry) for entry in entries))
    if isinstance(entries, dict):
        return set().union(*(_nav_pages(value) for value in entries.values()))
    return set()


def test_every_page_is_in_the_site_navigation_and_linked_from_the_readme() -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = {path.name for path in DOCS.glob("*.md")}
    assert _nav_pages(config["nav"]) == pages
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    assert linked == pages, f"pages the README does not link to: {sorted(pages - linked)}"


def _install_commands(page: str) -> list[str]:
    """What each `pip install` in the page's "Install" section's shell blocks installs."""
    text = (REPO_ROOT / page).read_text(encoding="utf-8")
    section = text.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return [
        target.split("#")[0].split("&&")[0].strip()
        for block in blocks
        for target in re.findall(r"pip install ([^\n]+)", block)
    ]


def test_the_install_sections_install_what_exists_before_a_release() -> None:
    # No release is on the package index yet: a clone (`.`) or the wheel `python -m build` makes.
    for page in ("README.md", "docs/getting-started.md"):
        targets = _install_commands(page)
        assert targets, page
        for target in targets:
            assert target.removeprefix("-e ").startswith((".", "'.[", "dist/")), (page, target)


@pytest.mark.parametrize(
    ("old", "instead"),
    [
        ("load_config_file", "load_config_entries(path, strict=True).configs"),
        ("parse_server_configs", "parse_server_entries(servers, strict=True).configs"),
        ("UnusableServer", "InvalidServerEntry"),
    ],
)
def test_an_old_public_name_still_works_for_a_release_and_warns(old: str, instead: str) -> None:
    with pytest.warns(DeprecationWarning, match=re.escape(f"mcp_sync.{old} is deprecated")) as caught:
        value = getattr(mcp_sync, old)
    assert instead in str(caught[0].message)
    assert old not in mcp_sync.__all__ and old not in dir(mcp_sync)
    if old == "UnusableServer":
        assert value is mcp_sync.InvalidServerEntry
    elif old == "load_config_file":
        assert [c.server_name for c in value(REPO_ROOT / "examples" / "servers.yaml")] == ["demo"]
    else:
        assert [c.server_name for c in value([{"server_name": "a", "command": "x"}])] == ["a"]


# Two uses of an old name (`{old}`), each saying whether it raised.
USED_TWICE = "import mcp_sync\n" + (
    "try:\n    mcp_sync.{old}\nexcept DeprecationWarning:\n    print('raised')\n" * 2
)


@pytest.mark.parametrize("old", ["load_config_file", "parse_server_configs", "UnusableServer"])
def test_importing_an_old_name_warns_once_and_every_later_use_warns(old: str) -> None:
    """`from mcp_sync import old` looks the name up twice (importlib's fromlist check, then the import):
    one warning; every later use warns again, as the warning filters say."""
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", f"from mcp_sync import {old}\n" + USED_TWICE.format(old=old)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("DeprecationWarning") == 3, done.stderr


@pytest.mark.parametrize("old", ["load_config_file", "UnusableServer"])
def test_an_old_name_under_w_error_raises_at_every_use(old: str) -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", USED_TWICE.format(old=old)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["raised", "raised"], done.stdout
    imported = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", f"from mcp_sync import {old}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert imported.returncode != 0 and "DeprecationWarning" in imported.stderr, imported.stderr


def test_an_old_entry_attribute_still_works_for_a_release_and_warns() -> None:
    [invalid] = mcp_sync.parse_server_entries([{"server_name": "bad name", "command": "x"}]).invalid
    with pytest.warns(DeprecationWarning, match="use the entry itself"):
        assert invalid.entry is invalid


def test_an_entry_that_cannot_be_used_is_the_same_object_in_the_loader_and_among_the_servers() -> None:
    entries = mcp_sync.parse_server_entries([{"server_name": "bad name", "command": "x"}])
    [invalid] = entries.invalid
    with mcp_sync.MCPHub(entries) as hub:
        shown = hub.servers[invalid.server_name]
        assert shown is invalid and isinstance(shown, mcp_sync.InvalidServerEntry)
        assert (shown.state, shown.tools, shown.name, shown.pid) == ("failed", [], "bad name", None)
        assert "bad name" in repr(shown)


CLI_RUN_TIMEOUT = 120.0  # one command, its server started and closed, on a loaded machine


def _first_shell_block(page: str) -> list[str]:
    """The command lines of the page's first `sh` block, comments dropped."""
    text = (DOCS / page).read_text(encoding="utf-8")
    block = re.search(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert block, f"docs/{page} has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.parametrize("line", _first_shell_block("cli.md"))
def test_the_command_line_page_opens_with_commands_that_succeed(line: str) -> None:
    # As a reader runs them: from the repository root, the virtualenv's `python` first on PATH.
    program, *arguments = shlex.split(line, comments=True)
    assert program == "mcp-sync", line
    done = subprocess.run(
        cli_command(*arguments),
        cwd=REPO_ROOT,
        env={**os.environ, "PATH": python_path()},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_RUN_TIMEOUT,
    )
    assert done.returncode == 0, (line, done.stdout, done.stderr)
    assert done.stdout.strip(), line
