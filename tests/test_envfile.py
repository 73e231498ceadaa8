"""`envFile` read by VS Code's own grammar (its `parseEnvFile`), case by case as VS Code's tests state it.

The example and the expected values are those of VS Code's `src/vs/base/test/common/envfile.test.ts`
(taken there from Node's dotenv tests), plus the lines where VS Code's grammar differs from dotenv's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_sync import StdioServerConfig, load_host_entries
from mcp_sync._config.hosts.envfile import parse_env_file

# Backslashes are the file's own (a raw string); the last line is indented with two tabs.
VSCODE_EXAMPLE = (
    r"""
BASIC=basic

# previous line intentionally left blank
AFTER_LINE=after_line
EMPTY=
EMPTY_SINGLE_QUOTES=''
EMPTY_DOUBLE_QUOTES=""
EMPTY_BACKTICKS=``
SINGLE_QUOTES='single_quotes'
SINGLE_QUOTES_SPACED='    single quotes    '
DOUBLE_QUOTES="double_quotes"
DOUBLE_QUOTES_SPACED="    double quotes    "
DOUBLE_QUOTES_INSIDE_SINGLE='double "quotes" work inside single quotes'
DOUBLE_QUOTES_WITH_NO_SPACE_BRACKET="{ port: $MONGOLAB_PORT}"
SINGLE_QUOTES_INSIDE_DOUBLE="single 'quotes' work inside double quotes"
BACKTICKS_INSIDE_SINGLE='`backticks` work inside single quotes'
BACKTICKS_INSIDE_DOUBLE="`backticks` work inside double quotes"
BACKTICKS=`backticks`
BACKTICKS_SPACED=`    backticks    `
DOUBLE_QUOTES_INSIDE_BACKTICKS=`double "quotes" work inside backticks`
SINGLE_QUOTES_INSIDE_BACKTICKS=`single 'quotes' work inside backticks`
DOUBLE_AND_SINGLE_QUOTES_INSIDE_BACKTICKS=`double "quotes" and single 'quotes' work inside backticks`
EXPAND_NEWLINES="expand\nnew\nlines"
DONT_EXPAND_UNQUOTED=dontexpand\nnewlines
DONT_EXPAND_SQUOTED='dontexpand\nnewlines'
# COMMENTS=work
INLINE_COMMENTS=inline comments # work #very #well
INLINE_COMMENTS_SINGLE_QUOTES='inline comments outside of #singlequotes' # work
INLINE_COMMENTS_DOUBLE_QUOTES="inline comments outside of #doublequotes" # work
INLINE_COMMENTS_BACKTICKS=`inline comments outside of #backticks` # work
INLINE_COMMENTS_SPACE=inline comments start with a#number sign. no space required.
EQUAL_SIGNS=equals==
RETAIN_INNER_QUOTES={"foo": "bar"}
RETAIN_INNER_QUOTES_AS_STRING='{"foo": "bar"}'
RETAIN_INNER_QUOTES_AS_BACKTICKS=`{"foo": "bar's"}`
TRIM_SPACE_FROM_UNQUOTED=    some spaced out string
USERNAME=therealnerdybeast@example.tld
"""
    + "\t\tSPACED_KEY = parsed\n"
)

VSCODE_EXPECTED = {
    "BASIC": "basic",
    "AFTER_LINE": "after_line",
    "EMPTY": "",
    "EMPTY_SINGLE_QUOTES": "",
    "EMPTY_DOUBLE_QUOTES": "",
    "EMPTY_BACKTICKS": "",
    "SINGLE_QUOTES": "single_quotes",
    "SINGLE_QUOTES_SPACED": "    single quotes    ",
    "DOUBLE_QUOTES": "double_quotes",
    "DOUBLE_QUOTES_SPACED": "    double quotes    ",
    "DOUBLE_QUOTES_INSIDE_SINGLE": 'double "quotes" work inside single quotes',
    "DOUBLE_QUOTES_WITH_NO_SPACE_BRACKET": "{ port: $MONGOLAB_PORT}",
    "SINGLE_QUOTES_INSIDE_DOUBLE": "single 'quotes' work inside double quotes",
    "BACKTICKS_INSIDE_SINGLE": "`backticks` work inside single quotes",
    "BACKTICKS_INSIDE_DOUBLE": "`backticks` work inside double quotes",
    "BACKTICKS": "backticks",
    "BACKTICKS_SPACED": "    backticks    ",
    "DOUBLE_QUOTES_INSIDE_BACKTICKS": 'double "quotes" work inside backticks',
    "SINGLE_QUOTES_INSIDE_BACKTICKS": "single 'quotes' work inside backticks",
    "DOUBLE_AND_SINGLE_QUOTES_INSIDE_BACKTICKS": (
        "double \"quotes\" and single 'quotes' work inside backticks"
    ),
    "EXPAND_NEWLINES": "expand\nnew\nlines",
    "DONT_EXPAND_UNQUOTED": "dontexpand\\nnewlines",
    "DONT_EXPAND_SQUOTED": "dontexpand\\nnewlines",
    "INLINE_COMMENTS": "inline comments",
    "INLINE_COMMENTS_SINGLE_QUOTES": "inline comments outside of #singlequotes",
    "INLINE_COMMENTS_DOUBLE_QUOTES": "inline comments outside of #doublequotes",
    "INLINE_COMMENTS_BACKTICKS": "inline comments outside of #backticks",
    "INLINE_COMMENTS_SPACE": "inline comments start with a",
    "EQUAL_SIGNS": "equals==",
    "RETAIN_INNER_QUOTES": '{"foo": "bar"}',
    "RETAIN_INNER_QUOTES_AS_STRING": '{"foo": "bar"}',
    "RETAIN_INNER_QUOTES_AS_BACKTICKS": '{"foo": "bar\'s"}',
    "TRIM_SPACE_FROM_UNQUOTED": "some spaced out string",
    "USERNAME": "therealnerdybeast@example.tld",
    "SPACED_KEY": "parsed",
}


@pytest.mark.parametrize("name", list(VSCODE_EXPECTED))
def test_vscode_test_case_reads_as_vscode_reads_it(name: str) -> None:
    assert parse_env_file(VSCODE_EXAMPLE)[name] == VSCODE_EXPECTED[name]


def test_vscode_example_defines_exactly_its_variables_and_no_commented_one() -> None:
    assert parse_env_file(VSCODE_EXAMPLE) == VSCODE_EXPECTED


def test_a_single_line_without_a_newline_is_read() -> None:
    assert parse_env_file("BUFFER=true") == {"BUFFER": "true"}


@pytest.mark.parametrize("newline", ["\r", "\n", "\r\n"], ids=["cr", "lf", "crlf"])
def test_every_line_ending_separates_lines_in_order(newline: str) -> None:
    text = newline.join(["SERVER=localhost", "PASSWORD=password", "DB=tests", ""])

    expected = [("SERVER", "localhost"), ("PASSWORD", "password"), ("DB", "tests")]
    assert list(parse_env_file(text).items()) == expected


# Where VS Code's grammar is not dotenv's (python-dotenv reads each of these otherwise).
DIFFERS_FROM_DOTENV = {
    "A=abc#def": ("A", "abc"),  # `#` outside quotes starts a comment, even inside a word
    "B: colon-value": ("B", "colon-value"),  # `:` separates too
    'C="x\\\\y"': ("C", "x\\\\y"),  # in double quotes only \n and \r are escapes
    'D="tab\\there"': ("D", "tab\\there"),
    "export E = spaced": ("E", "spaced"),
    "F=\"unclosed # kept": ("F", '"unclosed # kept'),  # an open quote runs to the end of the line
    'G="a\\"b" # c': ("G", 'a\\"b'),  # a backslash keeps a quote from closing, and stays
}


@pytest.mark.parametrize("line", list(DIFFERS_FROM_DOTENV))
def test_a_line_where_vscode_differs_from_dotenv_reads_as_vscode_reads_it(line: str) -> None:
    name, value = DIFFERS_FROM_DOTENV[line]

    assert parse_env_file(line + "\n") == {name: value}


def test_whitespace_trimmed_is_what_javascript_trims() -> None:
    # JavaScript's trim() takes U+FEFF and U+3000 off but not U+0085 or U+001C, unlike str.strip().
    assert parse_env_file("\ufeffA=1\u3000\n\x85B=2\x1c\n") == {"A": "1", "\x85B": "2\x1c"}


def test_a_line_without_a_separator_defines_nothing() -> None:
    assert parse_env_file("JUST_A_NAME\n=no-name\nOK=1\n") == {"OK": "1"}


@pytest.mark.parametrize("host", ["vscode", "cursor"])
def test_an_env_file_of_a_vscode_or_cursor_entry_is_read_with_vscode_grammar(
    tmp_path: Path, host: str
) -> None:
    project = tmp_path / "shop"
    (project / f".{host}").mkdir(parents=True)
    (project / ".env").write_text('A=abc#def\nB: colon-value\nC="x\\\\y"\nD="tab\\there"\n', encoding="utf-8")
    server = {"command": "srv", "envFile": "${workspaceFolder}/.env"}
    vscode = {"servers": {"s": {"type": "stdio", **server}}}
    document = vscode if host == "vscode" else {"mcpServers": {"s": server}}
    (project / f".{host}" / "mcp.json").write_text(json.dumps(document), encoding="utf-8")

    [config] = load_host_entries(host, project, home=tmp_path / "home", environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert dict(config.env) == {"A": "abc", "B": "colon-value", "C": "x\\\\y", "D": "tab\\there"}
