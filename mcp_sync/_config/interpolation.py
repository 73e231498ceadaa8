"""`${VAR}` interpolation of an entry's strings, before validation.

`${VAR}`, `${VAR:-default}` and `${env:VAR}` (the spellings the hosts use) read the environment;
`$${` is a literal `${`; a bare `$VAR` stays literal, since passwords contain `$` (except in Gemini
CLI's files, which expand a `$VAR` that is set, as Gemini does). In our own files an unset variable
without a default is a problem naming the field, never a silent empty string. A host's file follows
its host's rule (`VariableRules`): VS Code reads only `${env:NAME}` (unset: "", and `${env:NAME:-x}`
is NAME too: no default), Gemini CLI keeps an
unset one as written, Claude Code has no `${env:NAME}`; a spelling the host does not read is passed
as written, with a warning.

`${input:ID}` is VS Code's input variable, understood only where the variables are an
`InputVariables` (a VS Code file's): the value an inputs handler gave, else the environment
variable `input_variable_name(ID)` (`api-key` -> `API_KEY`). An input given by neither is a
`MissingInput` problem naming its id; elsewhere `${input:ID}` is a malformed reference.

A value taken from a variable named like a credential (`${GITHUB_TOKEN}`, or Gemini's `$GITHUB_TOKEN`)
is a secret of the entry wherever it lands, whatever the name of the field it fills.
"""

from __future__ import annotations

import re
from abc import ABC
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .child_env import is_credential_name


@dataclass(frozen=True)
class VariableRules:
    """What one host makes of `${...}`: which spellings read the environment, and of an unset variable.

    The default is our own YAML's rule (DESIGN.md): `${NAME}`, `${NAME:-default}` and `${env:NAME}`
    read the environment, and an unset variable without a default is an error.
    """

    plain: bool = True  # `${NAME}` and `${NAME:-default}` read the environment (not in VS Code)
    env_prefix: bool = True  # `${env:NAME}` reads the environment (not in Claude Code nor Gemini CLI)
    unset_env_is_empty: bool = False  # an unset `${env:NAME}` is "" (VS Code, as a shell does)
    unset_kept: bool = False  # an unset variable without a default stays as written (Gemini CLI)
    default_when_empty: bool = True  # `:-` takes the default for a set but empty one too (not Gemini CLI)
    defaults: bool = True  # `:-default` is a default (not in VS Code, which reads only the name)
    host: str = ""  # the host's name, for the warning about a spelling it does not read


OUR_RULES = VariableRules()


def field_path(parts: Iterable[str | int]) -> str:
    """`('headers', 'Authorization')` -> `headers.Authorization`; `('args', 1)` -> `args[1]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (a key)"  # pydantic's marker for a failed dict key
        else:
            out += f".{part}" if out else str(part)
    return out


# One scan finds, in order: the `$${` escape (a literal `${`), a `${...}` reference, or a `${`
# that never closes. A bare `$VAR` matches nothing and stays literal: passwords contain `$`.
_REFERENCE_RE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
# Gemini CLI also expands a bare `$NAME` (its `"$MY_TOKEN"` examples); an unset one stays as written.
_BARE_RE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{|\$([A-Za-z_][A-Za-z0-9_]*)")
_INNER_RE = re.compile(r"(env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_INPUT_RE = re.compile(r"input:([A-Za-z0-9_.-]+)")
# The editors' variables that name the project folder: unset when a user's file is read without one.
_PROJECT_VARIABLES = frozenset({"workspaceFolder", "workspaceFolderBasename"})
# The editors' predefined variables (VS Code's, which Cursor documents too): never the environment.
EDITOR_VARIABLES = frozenset({*_PROJECT_VARIABLES, "userHome", "pathSeparator"})
_NO_PROJECT = "names the project folder, and the file is read without one (give `project=` or `--project`)"
_REFERENCE_FORMS = "write ${VAR}, ${VAR:-default} or ${env:VAR}, and $${ for a literal ${"


def input_variable_name(input_id: str) -> str:
    """The environment variable that gives `${input:ID}`: the id upper-cased, other characters `_`."""
    return re.sub(r"[^A-Z0-9_]", "_", input_id.upper())


class MissingInput(str):
    """A problem: a `${input:ID}` reference nothing gave a value for; `input_id` names the input."""

    input_id: str

    def __new__(cls, message: str, input_id: str) -> MissingInput:
        problem = super().__new__(cls, message)
        problem.input_id = input_id
        return problem


class InputVariables(Mapping[str, str], ABC):
    """Variables that also answer `input:ID` keys: the values of a host file's inputs."""


def _input_value(input_id: str, where: str, environ: Mapping[str, str], problems: list[str]) -> str:
    value = environ.get(f"input:{input_id}")
    if value is None:
        problems.append(
            MissingInput(
                f"field '{where}' references ${{input:{input_id}}}, which no inputs handler gave and no "
                f"environment variable {input_variable_name(input_id)} sets",
                input_id,
            )
        )
        return ""
    return value


def _interpolate_string(
    text: str,
    where: str,
    environ: Mapping[str, str],
    problems: list[str],
    bare: bool = False,
    lenient: bool = False,
    secrets: set[str] | None = None,
    rules: VariableRules = OUR_RULES,
    notices: list[str] | None = None,
) -> str:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        if bare and match.group(2) is not None:
            bare_value = environ.get(match.group(2))
            if bare_value and secrets is not None and is_credential_name(match.group(2)):
                secrets.add(bare_value)  # `$GITHUB_TOKEN` is as secret as `${GITHUB_TOKEN}`
            return whole if bare_value is None else bare_value
        inner = match.group(1)
        as_input = _INPUT_RE.fullmatch(inner) if inner is not None else None
        if as_input is not None and isinstance(environ, InputVariables):
            return _input_value(as_input.group(1), where, environ, problems)
        if inner == "/" and environ.get("/") is not None:
            return environ["/"]  # the editors' `${/}`, short for `${pathSeparator}`
        parsed = _INNER_RE.fullmatch(inner) if inner is not None else None
        if (parsed is None or "${" in (parsed.group(3) or "")) and lenient:
            return whole  # the host reads no variable here either (`${input:x}` in a Claude Code file)
        if parsed is None or "${" in (parsed.group(3) or ""):
            # The text itself is not echoed: it may be part of a secret.
            problems.append(f"field '{where}' has a malformed ${{...}} reference ({_REFERENCE_FORMS})")
            return ""
        prefixed, name, default = parsed.group(1) is not None, parsed.group(2), parsed.group(3)
        if not _is_variable(prefixed, name, rules):
            if notices is not None:
                notices.append(
                    f"field '{where}': {_spelling(prefixed, name, default)} is not a variable {rules.host} "
                    "reads; it is passed as written"
                )
            return whole
        value = environ.get(name)
        if value and secrets is not None and is_credential_name(name):
            secrets.add(value)  # taken from a credential: a secret wherever it is used
        if default is not None and not rules.defaults:
            if notices is not None:
                notices.append(
                    f"field '{where}': {_spelling(prefixed, name, default)} has no default in {rules.host}, "
                    f"which reads only {name}"
                )
            default = None
        if default is not None:
            if rules.default_when_empty:
                return value if value else default  # like the shell: unset or empty takes the default
            return default if value is None else value
        if value is None and prefixed and rules.unset_env_is_empty:
            return ""  # VS Code, as a shell: an unset `${env:NAME}` is empty
        if value is None and rules.unset_kept:
            return whole  # Gemini CLI leaves it as written
        if value is None:
            why = _NO_PROJECT if name in _PROJECT_VARIABLES else "is not set"
            problems.append(f"field '{where}' references ${{{name}}}, which {why}")
            return ""
        return value

    return (_BARE_RE if bare else _REFERENCE_RE).sub(replace, text)


def _is_variable(prefixed: bool, name: str, rules: VariableRules) -> bool:
    """Whether the host reads this spelling as a variable at all (else it passes it as written)."""
    if prefixed:
        return rules.env_prefix
    return rules.plain or name in EDITOR_VARIABLES


def _spelling(prefixed: bool, name: str, default: str | None) -> str:
    """The reference's form, named without its default (which may be a secret)."""
    return "${" + ("env:" if prefixed else "") + name + (":-...}" if default is not None else "}")


# A server entry is a few dozen values; far more, or far deeper, is a mistake or an attack (a YAML
# alias bomb expands a few hundred bytes into millions of values).
MAX_ENTRY_DEPTH = 32
MAX_ENTRY_VALUES = 100_000


class EntryTooLarge(Exception):
    """An entry past `MAX_ENTRY_DEPTH` or `MAX_ENTRY_VALUES`."""


# Fields whose value must come from the environment, never be written in the configuration itself.
_REFERENCE_ONLY = frozenset({("auth", "private_key"), ("auth", "assertion")})


def interpolate(
    value: Any,
    parts: tuple[str | int, ...],
    environ: Mapping[str, str],
    problems: list[str],
    budget: list[int] | None = None,
    bare: bool = False,
    lenient: bool = False,
    literal: bool = False,
    secrets: set[str] | None = None,
    rules: VariableRules = OUR_RULES,
    notices: list[str] | None = None,
) -> Any:
    """A copy of `value` with every string (in lists and dict values, not keys) interpolated.

    `bare` also expands `$NAME` when NAME is set (Gemini CLI's files); `lenient` keeps a `${...}`
    that names no variable as written, as the hosts do (all but VS Code, whose `${input:ID}` it is);
    `literal` replaces nothing (Codex reads its values as written) and only checks the entry's size.
    `rules` says which spellings the host reads and what an unset variable becomes; a spelling it
    does not read stays as written, with a line in `notices`.
    The values taken from variables named like credentials (`${GITHUB_TOKEN}`) are added to `secrets`.
    """
    budget = [MAX_ENTRY_VALUES] if budget is None else budget

    def walk(item: Any, where: tuple[str | int, ...]) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or len(where) > MAX_ENTRY_DEPTH:
            raise EntryTooLarge
        if isinstance(item, str):
            if literal:
                return item
            if "${" not in item and not (bare and "$" in item):  # most values: nothing to replace
                if where[-2:] in _REFERENCE_ONLY:
                    field = field_path(where)
                    problems.append(f"field '{field}' must be a ${{VAR}} reference, not the key itself")
                return item
            return _interpolate_string(
                item, field_path(where), environ, problems, bare, lenient, secrets, rules, notices
            )
        if isinstance(item, Mapping):
            return {k: walk(v, (*where, k)) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v, (*where, i)) for i, v in enumerate(item)]
        return item

    return walk(value, parts)
