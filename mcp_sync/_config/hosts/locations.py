"""Where each host keeps its MCP configuration, and loading all of a host's files as one configuration.

`host_config_files(host, project)` lists the files that exist, in merge order (user level first,
then the project's); `load_host_entries(host, project)` reads them, entry by entry. When one
server name is in several files, the later file's entry wins (a project's over the user's, and
Claude Code's local scope over both). Home, environment and platform can be given, for tests and
for looking at another machine's layout; by default they are this process's.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..._values.errors import ConfigError
from ..._values.suggestions import did_you_mean
from ..context import Inputs, LoadContext, remembered
from ..entries import ConfigEntries, InvalidServerEntry, build_entries
from ..loading import read_document
from . import codex, document_entries, gemini
from .claude import REJECTED_KEY, local_scope, switched_off, user_scope

_log = logging.getLogger("mcp_sync.config")

# The files parsed in the load under way: each is parsed, and a repeated key warned about, once.
_parsed: ContextVar[dict[Path, tuple[Any, str] | ConfigError] | None] = ContextVar(
    "mcp_sync_host_files_parsed", default=None
)

HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini", "windsurf")


@dataclass(frozen=True)
class HostFile:
    """One file a host reads; `part` picks the servers out of a file shared with other settings."""

    path: Path
    scope: str  # "system", "user", "project" or "local"
    part: Callable[[Any], Any] | None = None
    # Why the host does not read this file although it is there (an untrusted Codex project), or None.
    left_off: str | None = None


@contextmanager
def _one_parse_per_file() -> Iterator[None]:
    """Within it, `_read` parses each file once (the outermost one holds the parses)."""
    if _parsed.get() is not None:
        yield
        return
    token = _parsed.set({})
    try:
        yield
    finally:
        _parsed.reset(token)


def _read(path: Path) -> tuple[Any, str]:
    """`read_document`, once per file in one load: the helpers reading one setting share the parse."""
    cache = _parsed.get()
    if cache is None:
        return read_document(path)
    if path not in cache:
        try:
            cache[path] = read_document(path)
        except ConfigError as exc:
            cache[path] = exc
    found = cache[path]
    if isinstance(found, ConfigError):
        raise ConfigError(str(found)) from None
    return found


def _user_config_dir(home: Path, environ: Mapping[str, str], platform: str) -> Path:
    """Where desktop applications keep their settings: Application Support, %APPDATA%, XDG."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        return Path(environ["APPDATA"]) if environ.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else home / ".config"


def _candidates(
    host: str, project: Path | None, home: Path, environ: Mapping[str, str], platform: str
) -> list[HostFile]:
    """Every file `host` may read, in merge order, whether it exists or not."""
    config_dir = _user_config_dir(home, environ, platform)
    files: list[HostFile] = []
    if host == "claude-desktop":
        files.append(HostFile(config_dir / "Claude" / "claude_desktop_config.json", "user"))
    elif host == "claude-code":
        claude_json, settings = _claude_code_places(home, environ)
        files.append(HostFile(claude_json, "user", user_scope))
        if project is not None:
            rejected = _rejected_project_servers(claude_json, settings, project)
            files.append(HostFile(project / ".mcp.json", "project", lambda doc: switched_off(doc, rejected)))
            files.append(HostFile(claude_json, "local", lambda doc: local_scope(doc, project)))
    elif host == "cursor":
        files.append(HostFile(home / ".cursor" / "mcp.json", "user"))
        if project is not None:
            files.append(HostFile(project / ".cursor" / "mcp.json", "project"))
    elif host == "vscode":
        files.append(HostFile(config_dir / "Code" / "User" / "mcp.json", "user"))
        if project is not None:
            files.append(HostFile(project / ".vscode" / "mcp.json", "project"))
    elif host == "codex":
        codex_home = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
        files.append(HostFile(codex_home / "config.toml", "user"))
        if project is not None:
            files.extend(_codex_project_files(project, codex_home))
    elif host == "gemini":
        system = _gemini_system_settings(environ, platform)
        defaults = environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or system.parent / "system-defaults.json"
        files.append(HostFile(Path(defaults), "system"))
        gemini_home = _gemini_home(home, environ)
        user = gemini_home / ".gemini" / "settings.json"
        files.append(HostFile(user, "user"))
        if project is not None and not _same_folder(project, gemini_home):  # Gemini: the user's, not twice
            why = _gemini_untrusted(project, gemini_home, [Path(defaults), user, system], environ, platform)
            files.append(HostFile(project / ".gemini" / "settings.json", "project", left_off=why))
        files.append(HostFile(system, "system"))  # system settings override the others
    elif host == "windsurf":
        files.append(HostFile(home / ".codeium" / "windsurf" / "mcp_config.json", "user"))
    else:
        hint = did_you_mean(host, HOSTS, cutoff=0.65)  # a few names far apart: `claude` is `claude-code`
        raise ConfigError(
            f"unknown host {host!r}; {hint + ' ' if hint else ''}known hosts: {', '.join(HOSTS)}"
        )
    return files


def _codex_project_files(project: Path, codex_home: Path) -> list[HostFile]:
    """The `.codex/config.toml` files Codex reads for `project`: from its root down to it, when trusted.

    The root is the nearest folder up with `.git` (Codex's default `project_root_markers`), from the
    project's real folder (Codex's working folder, `..` collapsed: never a lexical parent); each file
    is read when its folder, else the root, else the repository's main folder is trusted in the user's
    `config.toml`, matched by the path as Codex writes it (absolute, through symlinks), and is left
    off with the reason otherwise (codex-rs/core/src/config_loader/mod.rs, `load_project_layers`).
    """
    user_file = codex_home / "config.toml"
    try:
        user_config = _read(user_file)[0] if user_file.is_file() else {}
    except ConfigError:
        user_config = {}  # reported where its servers are read; no project is trusted by it
    levels = codex.trust_levels(user_config)
    # Codex walks up from the real folder (its cwd, `..` collapsed): a symlink or a `..` in the
    # path given names no folder Codex would take as a parent.
    real = Path(os.path.realpath(project))
    given = os.path.normpath(project)
    folders = [real, *real.parents]
    root = next((folder for folder in folders if (folder / ".git").exists()), real)
    repository = _main_worktree(root)
    folders = folders[: folders.index(root) + 1]
    files = []
    for folder in reversed(folders):  # the root's first: the folder nearest the project wins
        if _same_folder(folder / ".codex", codex_home):
            continue  # the user's own folder, read as the user's
        spellings = [given] if folder == real else []
        spellings += [key for place in (folder, root, repository) for key in _path_keys(place)]
        keys = [key for key in spellings if key in levels]
        key = keys[0] if keys else os.fspath(repository)
        level = levels.get(key)
        reason = None
        if level == "untrusted":
            reason = f"{key} is marked as untrusted in {user_file}; mark it trusted to load this file"
        elif level != "trusted":
            reason = (
                f"Codex reads it only in a trusted project: add {key} as a trusted project in "
                f'{user_file} ([projects."{key}"] trust_level = "trusted")'
            )
        files.append(HostFile(folder / ".codex" / "config.toml", "project", left_off=reason))
    return files


def _path_keys(folder: Path) -> list[str]:
    """The spellings of a folder Codex may have written as a `[projects]` key: as given, and real."""
    return list(dict.fromkeys((os.fspath(folder), os.path.realpath(folder))))


def _main_worktree(root: Path) -> Path:
    """The repository's main folder: `root`, or for a linked worktree (`.git` a file) the main one's.

    Only when the worktree's metadata points back: `<gitdir>/gitdir` names this checkout's `.git` and
    `<gitdir>/commondir` the main `.git` whose `worktrees` holds it; a `.git` file alone proves nothing,
    as Codex's `resolve_root_git_project_for_trust` checks (codex-rs/git-utils; its tests
    `..._validates_main_checkout_ownership` and `..._rejects_incomplete_metadata`).
    """
    marker = root / ".git"
    if not marker.is_file():
        return root
    try:
        line = marker.read_text(encoding="utf-8").strip()
        if not line.startswith("gitdir:"):
            return root
        # <main>/.git/worktrees/<name>
        gitdir = Path(os.path.realpath(root / line.removeprefix("gitdir:").strip()))
        back = (gitdir / "gitdir").read_text(encoding="utf-8").strip()
        common = Path(os.path.realpath(gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()))
    except (OSError, UnicodeDecodeError, ValueError):
        return root
    owned = back and os.path.realpath(gitdir / back) == os.path.realpath(marker)
    inside = gitdir.parent.name == "worktrees" and gitdir.parent.parent == common
    if owned and inside and common.name == ".git":
        return common.parent
    return root


def _gemini_home(home: Path, environ: Mapping[str, str]) -> Path:
    """The folder Gemini CLI takes for the home folder: `GEMINI_CLI_HOME`, else the home folder.

    Its `homedir()` (packages/core/src/utils/paths.ts); `.gemini` is under it.
    """
    return Path(environ["GEMINI_CLI_HOME"]) if environ.get("GEMINI_CLI_HOME") else home


def _gemini_untrusted(
    project: Path, gemini_home: Path, settings: list[Path], environ: Mapping[str, str], platform: str
) -> str | None:
    """Why Gemini CLI would not read the project's settings (its folder trust), or None."""
    rules_path = environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or (
        gemini_home / ".gemini" / gemini.TRUSTED_FOLDERS_FILE
    )
    rules = _quiet_read(Path(rules_path))
    documents = [_quiet_read(path) for path in settings]
    return gemini.untrusted_workspace(os.fspath(project), rules, documents, environ, platform)


def _quiet_read(path: Path) -> Any:
    """A host's settings file read to learn one setting: None when it is not there or not readable."""
    if not path.is_file():
        return None
    try:
        return _read(path)[0]
    except ConfigError:
        return None  # reported where its servers are read, if it has any


def _gemini_system_settings(environ: Mapping[str, str], platform: str) -> Path:
    """Gemini CLI's system settings file, which overrides the others (its `getSystemSettingsPath`)."""
    if environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"):
        return Path(environ["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    if platform == "darwin":
        return Path("/Library/Application Support/GeminiCli/settings.json")
    if platform.startswith("win"):
        return Path("C:\\ProgramData\\gemini-cli\\settings.json")
    return Path("/etc/gemini-cli/settings.json")


def _gemini_switches(
    files: list[HostFile], home: Path, environ: Mapping[str, str], platform: str
) -> Callable[[str], str | None]:
    """Why Gemini CLI leaves a server off, from its settings files and `mcp-server-enablement.json`.

    An untrusted workspace's file counts for nothing (settings.ts: `this.workspace = isTrusted ?
    workspace : this.createEmptyWorkspace(workspace)`); the system settings come first, as Gemini
    CLI consolidates its lists (`ServerSwitches`).
    """
    system = _gemini_system_settings(environ, platform)
    ordered = sorted(files, key=lambda file: file.path != system)  # stable: defaults, user, workspace
    documents = []
    for file in ordered:
        if file.left_off is not None:
            continue
        try:
            documents.append(_read(file.path)[0])
        except ConfigError:
            continue  # reported where its servers are read
    enablement_path = _gemini_home(home, environ) / ".gemini" / gemini.ENABLEMENT_FILE
    enablement = None
    if enablement_path.is_file():
        try:
            enablement, _ = _read(enablement_path)
        except ConfigError as exc:
            _log.warning("%s", exc)
    return gemini.ServerSwitches.of(documents, enablement).why_off


def _same_folder(a: Path, b: Path) -> bool:
    """Whether two paths name one folder, through symlinks."""
    return os.path.realpath(a) == os.path.realpath(b)


def _claude_code_places(home: Path, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """Claude Code's `.claude.json` and user `settings.json`: in `CLAUDE_CONFIG_DIR` when it is set.

    Claude Code's settings docs: `CLAUDE_CONFIG_DIR` is where it keeps its configuration and data
    files (then `$CLAUDE_CONFIG_DIR/.claude.json`, as anthropics/claude-code#42217 reads it, and
    `$CLAUDE_CONFIG_DIR/settings.json`); else `~/.claude.json` and `~/.claude/settings.json`.
    """
    if environ.get("CLAUDE_CONFIG_DIR"):
        folder = Path(environ["CLAUDE_CONFIG_DIR"]).expanduser()
        return folder / ".claude.json", folder / "settings.json"
    return home / ".claude.json", home / ".claude" / "settings.json"


def _rejected_project_servers(claude_json: Path, user_settings: Path, project: Path) -> frozenset[str]:
    """The `.mcp.json` servers the user turned down in Claude Code (`disabledMcpjsonServers`).

    Claude Code keeps them in `~/.claude.json` (per project, where its approval prompt writes them)
    and in its settings files (`~/.claude/settings.json`, `.claude/settings.json`,
    `.claude/settings.local.json`). A settings file that cannot be read is skipped: it is not ours.
    """
    names: set[str] = set()
    places = [
        (claude_json, True),
        (user_settings, False),
        (project / ".claude" / "settings.json", False),
        (project / ".claude" / "settings.local.json", False),
    ]
    for path, per_project in places:
        if not path.is_file():
            continue
        try:
            document, _ = _read(path)
        except ConfigError as exc:
            _log.debug("not reading %s for %s: %s", path, REJECTED_KEY, exc)
            continue
        if per_project:
            document = local_scope(document, project, key=None)
        found = document.get(REJECTED_KEY) if isinstance(document, Mapping) else None
        if isinstance(found, list):
            names.update(name for name in found if isinstance(name, str))
    return frozenset(names)


def host_config_files(
    host: str,
    project: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> list[HostFile]:
    """The files `host` reads that exist, in merge order; raises `ConfigError` naming what was looked for.

    `host` is one of `HOSTS`; `project` adds the project's files (`.mcp.json`, `.cursor/mcp.json`,
    `.vscode/mcp.json`, `.codex/config.toml`, `.gemini/settings.json`) and Claude Code's local scope.
    A project file the host would not read (Codex's or Gemini CLI's, in a project they do not trust)
    is listed with `left_off` saying why.
    """
    environ = os.environ if environ is None else environ
    home_dir = Path(home) if home is not None else Path(os.path.expanduser("~"))
    project_dir = Path(project).expanduser().absolute() if project is not None else None
    with _one_parse_per_file():
        candidates = _candidates(host, project_dir, home_dir, environ, platform or sys.platform)
    found = [candidate for candidate in candidates if candidate.path.is_file()]
    if not found:
        looked = ", ".join(dict.fromkeys(str(candidate.path) for candidate in candidates))
        raise ConfigError(f"no {host} configuration found; looked for {looked}")
    return found


def load_host_entries(
    host: str,
    project: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    inputs: Inputs = None,
    strict: bool = False,
    home: str | os.PathLike[str] | None = None,
    platform: str | None = None,
) -> ConfigEntries:
    """The servers `host` is configured with, read from its files (see `host_config_files`).

    Entry by entry, as `load_config_entries`: one that cannot be used is an `InvalidServerEntry`.
    So is a file that cannot be read or parsed (named by its path), and the other files' servers
    still load; a file without servers is zero servers. A file the host leaves off (`left_off`: an
    untrusted project's) is not read, with a warning saying why. `strict` raises one `ConfigError`
    instead.
    Finding no file, or a `project` that is not a directory, raises `ConfigError`.
    """
    with _one_parse_per_file():
        return _load_host_entries(host, project, environ, inputs, strict, home, platform)


def _load_host_entries(
    host: str,
    project: str | os.PathLike[str] | None,
    environ: Mapping[str, str] | None,
    inputs: Inputs,
    strict: bool,
    home: str | os.PathLike[str] | None,
    platform: str | None,
) -> ConfigEntries:
    """`load_host_entries`, within one load's parses."""
    environ = os.environ if environ is None else environ
    if project is not None and not Path(project).expanduser().is_dir():
        raise ConfigError(f"the project folder {os.fspath(project)!r} does not exist or is not a directory")
    files = host_config_files(host, project, home=home, environ=environ, platform=platform)
    project_dir = Path(project).expanduser().absolute() if project is not None else None
    context = LoadContext(
        project=project_dir, home=Path(home) if home is not None else None, inputs=remembered(inputs)
    )
    if host == "gemini":
        home_dir = Path(home) if home is not None else Path(os.path.expanduser("~"))
        context = replace(
            context, why_off=_gemini_switches(files, home_dir, environ, platform or sys.platform)
        )
    by_name: dict[Any, Any] = {}
    unnamed = []
    unreadable: list[InvalidServerEntry] = []
    for file in files:
        if file.left_off is not None:
            _log.warning("%s: not loaded: %s", file.path, file.left_off)
            continue
        try:
            document, source = _read(file.path)  # Claude Code's ~/.claude.json (megabytes) serves two scopes
            if file.part is not None:
                document = file.part(document)
            raw = document_entries(document, source, environ, context, host=host)
        except ConfigError as exc:
            if strict:
                raise
            # Once per file: Claude Code's ~/.claude.json is read for two scopes.
            if all(entry.label != os.fspath(file.path) for entry in unreadable):
                _log.warning("%s", exc)
                unreadable.append(InvalidServerEntry(os.fspath(file.path), exc, os.fspath(file.path)))
            continue
        for entry in raw:
            entry.label = f"{source}: {entry.label}"
            if entry.map_key is None:
                unnamed.append(entry)
            else:
                by_name.pop(entry.map_key, None)  # a later file's entry replaces it, in the later place
                by_name[entry.map_key] = entry
    loaded = build_entries([*unnamed, *by_name.values()], environ, None, strict=strict)
    return ConfigEntries((*unreadable, *loaded.entries), loaded.source)
