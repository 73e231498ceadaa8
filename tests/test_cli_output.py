"""What `mcp-sync call` shows besides the result's text: progress while the tool works, the images,
audio and binary resources a result carries, and, under `--json`, every failure as a JSON object.

Each command runs once, in a real subprocess (`python -m mcp_sync`) against the fixture server; the
runs of `RUNS` start together, four at a time, when the module's first test asks for one.
"""

from __future__ import annotations

import base64
import io
import json
import os
import select
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers.fixture_app import TINY_PNG
from tests.support import REPO_ROOT, cli_command, python_path, run_in_repo, stdio_config

PNG_SIZE = len(base64.b64decode(TINY_PNG))
SECRET = "s3cr3t-cli-value-4242"
# Bounds on one run of the command line, fixture server start included: "does not hang", on a loaded machine.
RUN_TIMEOUT = 120.0
# All of the module's runs, queued two at a time.
ALL_RUNS_TIMEOUT = 900.0

pytestmark = pytest.mark.timeout(ALL_RUNS_TIMEOUT + 60)

Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]

CONFIGS: dict[str, list[dict[str, Any]]] = {
    "fx.yaml": [stdio_config("fx", "--media", env={"FIXTURE_TOKEN": SECRET})],
    "required.yaml": [
        {"server_name": "broken", "transport": "stdio", "command": "no-such-command", "required": True}
    ],
}
FX = "{tmp}/fx.yaml"

RUNS: dict[str, list[str]] = {
    # Those that start no server (or only fail to) first: they answer at once.
    "error_usage_arguments": ["call", FX, "mcp__fx__echo", "{not json", "--json"],
    "error_usage_parser": ["call", FX, "mcp__fx__echo", "--timeout", "-1", "--json"],
    "error_config": ["tools", "{tmp}/missing.yaml", "--json"],
    "error_start": ["servers", "{tmp}/required.yaml", "--json"],
    "error_save_images_not_a_directory": ["call", FX, "mcp__fx__media", "--save-images", FX],
    "progress_lines": ["call", FX, "mcp__fx__progress", '{"steps": 3}'],
    "progress_json": ["call", FX, "mcp__fx__progress", '{"steps": 3}', "--json"],
    "media_text": ["call", FX, "mcp__fx__media"],
    "media_saved": ["call", FX, "mcp__fx__media", "--save-images", "{tmp}/saved"],
    "media_json": ["call", FX, "mcp__fx__media", "--json"],
    "media_json_saved": ["call", FX, "mcp__fx__media", "--json", "--save-images", "{tmp}/saved-json"],
    "crlf_text": ["call", FX, "mcp__fx__echo", '{"text": "Name,Total\\r\\nalpha,1\\r\\nbeta\\r2\\u0007"}'],
    "error_not_found": ["call", FX, "mcp__fx__nothing", "--json"],
    "error_timeout": ["call", FX, "mcp__fx__sleep", '{"seconds": 30}', "--timeout", "0.5", "--json"],
    "error_disconnected": ["call", FX, "mcp__fx__crash", "--json"],
    "error_refused_secret": ["call", FX, "mcp__fx__fail_with_env", '{"name": "FIXTURE_TOKEN"}', "--json"],
}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runs, Path]]:
    tmp = tmp_path_factory.mktemp("cli-output")
    for name, servers in CONFIGS.items():
        (tmp / name).write_text(yaml.safe_dump({"servers": servers}))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {
            name: pool.submit(
                run_in_repo,
                cli_command(*(arg.replace("{tmp}", str(tmp)) for arg in args)),
                RUN_TIMEOUT,
            )
            for name, args in RUNS.items()
        }
        yield runs, tmp


def result(cli: tuple[Runs, Path], name: str) -> subprocess.CompletedProcess[str]:
    return cli[0][name].result(timeout=ALL_RUNS_TIMEOUT)


def json_error(done: subprocess.CompletedProcess[str], code: int, kind: str) -> str:
    """The message of the JSON error object on stdout, checked for its type and exit code."""
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["exit_code"]) == (kind, code), error
    assert isinstance(error["message"], str) and error["message"]
    return str(error["message"])


# -- progress -------------------------------------------------------------------------------------------


def test_progress_is_plain_lines_on_stderr_when_it_is_not_a_terminal(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "progress_lines")
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert done.stderr.splitlines() == [
        "mcp-sync: progress 1/3 (33%): step 1",
        "mcp-sync: progress 2/3 (67%): step 2",
        "mcp-sync: progress 3/3 (100%): step 3",
    ]


def test_progress_is_left_out_under_json(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "progress_json")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["text"] == "done"


def _run_with_stderr_on_a_terminal(argv: list[str]) -> tuple[int, str, str]:
    """Run the CLI with its stderr on a pseudo-terminal: (exit code, stdout, what the terminal got)."""
    leader, follower = os.openpty()
    env = dict(os.environ, COLUMNS="80")
    env["PATH"] = python_path(env.get("PATH", ""))
    process = subprocess.Popen(
        cli_command(*argv),
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    terminal = b""
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            terminal += chunk
        stdout, _ = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    return process.returncode, stdout.decode(), terminal.decode(errors="replace")


def test_progress_is_a_bar_on_a_terminal_that_is_cleared_before_the_result(tmp_path: Path) -> None:
    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump({"servers": CONFIGS["fx.yaml"]}))
    code, stdout, terminal = _run_with_stderr_on_a_terminal(
        ["call", str(config), "mcp__fx__progress", '{"steps": 4}']
    )
    assert (code, stdout) == (0, "done\n"), terminal
    # Each update redraws one line in place; the last shows the bar full, and the line is erased at the end.
    assert "\n" not in terminal.replace("\r\n", "\n").strip("\n"), repr(terminal)
    assert "\r" in terminal and "4/4 100%" in terminal and "step 4" in terminal, repr(terminal)
    assert "[" + "#" * 10 in terminal, repr(terminal)
    assert terminal.endswith("\r\x1b[K"), repr(terminal)


# -- images, audio, embedded resources ------------------------------------------------------------------


def test_text_output_says_what_it_left_out(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "media_text")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "two pictures and a clip\nembedded notes\n"
    assert done.stderr == (
        f"mcp-sync: left out 3 images (image/png {PNG_SIZE} bytes, image/png {PNG_SIZE} bytes, image/jpeg "
        "10 bytes), 1 audio clip (audio/wav 9 bytes), 1 embedded resource (application/pdf 9 bytes, "
        "fixture://blob/report); see them with --save-images DIR or --json\n"
    )


def test_text_with_windows_line_breaks_prints_as_lines_and_a_lone_carriage_return_as_an_escape(
    cli: tuple[Runs, Path],
) -> None:
    done = result(cli, "crlf_text")
    assert (done.returncode, done.stdout) == (0, "Name,Total\nalpha,1\nbeta\\x0d2\\x07\n"), done.stderr


def test_save_images_writes_each_binary_block_to_its_own_file_and_says_where(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "media_saved")
    saved = cli[1] / "saved"
    assert done.returncode == 0, done.stderr
    assert done.stdout == "two pictures and a clip\nembedded notes\n"
    expected = {
        "mcp__fx__media-1.png": base64.b64decode(TINY_PNG),
        "mcp__fx__media-2.png": base64.b64decode(TINY_PNG),
        "mcp__fx__media-3.jpg": b"jpeg-bytes",
        "mcp__fx__media-4.wav": b"wav-bytes",
        "mcp__fx__media-5.pdf": b"pdf-bytes",
    }
    assert {path.name: path.read_bytes() for path in saved.iterdir()} == expected
    lines = done.stderr.splitlines()
    assert len(lines) == 5, done.stderr
    assert lines[0] == f"mcp-sync: saved image/png ({PNG_SIZE} bytes) to {saved / 'mcp__fx__media-1.png'}"
    assert lines[4] == f"mcp-sync: saved application/pdf (9 bytes) to {saved / 'mcp__fx__media-5.pdf'}"


def test_json_output_carries_every_content_block_in_its_mcp_shape(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "media_json")
    assert (done.returncode, done.stderr) == (0, "")
    record = json.loads(done.stdout)
    assert record["text"] == "two pictures and a clip\nembedded notes"
    assert record["content"] == [
        {"type": "text", "text": "two pictures and a clip"},
        {"type": "image", "mimeType": "image/png", "data": TINY_PNG},
        {"type": "image", "mimeType": "image/png", "data": TINY_PNG},
        {"type": "image", "mimeType": "image/jpeg", "data": base64.b64encode(b"jpeg-bytes").decode()},
        {"type": "audio", "mimeType": "audio/wav", "data": base64.b64encode(b"wav-bytes").decode()},
        {
            "type": "resource",
            "resource": {
                "uri": "fixture://blob/report",
                "mimeType": "application/pdf",
                "blob": base64.b64encode(b"pdf-bytes").decode(),
            },
        },
        {
            "type": "resource",
            "resource": {"uri": "fixture://text/notes", "mimeType": "text/plain", "text": "embedded notes"},
        },
    ]
    assert "saved" not in record


def test_json_with_save_images_lists_the_files_it_wrote(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "media_json_saved")
    assert (done.returncode, done.stderr) == (0, "")
    saved = cli[1] / "saved-json"
    record = json.loads(done.stdout)
    assert record["saved"] == [str(saved / f"mcp__fx__media-{n}.{ext}") for n, ext in enumerate(
        ["png", "png", "jpg", "wav", "pdf"], start=1
    )]
    assert all(Path(path).is_file() for path in record["saved"])


def test_save_images_never_overwrites_a_file_that_is_there(tmp_path: Path) -> None:
    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump({"servers": CONFIGS["fx.yaml"]}))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mcp__fx__media-1.png").write_bytes(b"mine")
    done = run_in_repo(
        cli_command("call", str(config), "mcp__fx__media", "--save-images",
         str(tmp_path / "out"), "--json"),
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "mcp__fx__media-1.png").read_bytes() == b"mine"
    names = [Path(path).name for path in json.loads(done.stdout)["saved"]]
    assert names == [f"mcp__fx__media-{n}.{ext}" for n, ext in zip(
        range(2, 7), ["png", "png", "jpg", "wav", "pdf"], strict=True
    )]


def test_save_images_into_a_file_is_a_usage_error_before_any_server_starts(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "error_save_images_not_a_directory")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("mcp-sync: --save-images: ") and "not a directory" in done.stderr


# -- failures under --json ------------------------------------------------------------------------------


def test_json_error_for_arguments_that_are_not_json(cli: tuple[Runs, Path]) -> None:
    message = json_error(result(cli, "error_usage_arguments"), 2, "usage")
    assert "ARGUMENTS is not valid JSON" in message


def test_json_error_for_an_option_the_parser_refuses(cli: tuple[Runs, Path]) -> None:
    message = json_error(result(cli, "error_usage_parser"), 2, "usage")
    assert "--timeout" in message


def test_json_error_for_a_config_file_that_cannot_be_read(cli: tuple[Runs, Path]) -> None:
    assert "cannot read the config file" in json_error(result(cli, "error_config"), 2, "config")


def test_json_error_for_a_required_server_that_cannot_start(cli: tuple[Runs, Path]) -> None:
    assert "broken" in json_error(result(cli, "error_start"), 3, "start")


def test_json_error_for_an_unknown_tool(cli: tuple[Runs, Path]) -> None:
    assert "unknown tool 'mcp__fx__nothing'" in json_error(result(cli, "error_not_found"), 3, "not_found")


def test_json_error_for_a_call_that_times_out(cli: tuple[Runs, Path]) -> None:
    message = json_error(result(cli, "error_timeout"), 4, "timeout")
    assert "did not finish within 0.5 s" in message


def test_json_error_for_a_server_that_dies_during_the_call(cli: tuple[Runs, Path]) -> None:
    json_error(result(cli, "error_disconnected"), 4, "disconnected")


def test_json_error_for_a_refused_call_does_not_repeat_a_secret(cli: tuple[Runs, Path]) -> None:
    done = result(cli, "error_refused_secret")
    json_error(done, 4, "call_failed")
    assert SECRET not in done.stdout + done.stderr


def test_json_error_for_an_unexpected_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    # No real server makes the command line itself fail: stand in a loader that raises.
    from mcp_sync._cli import commands, main

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("loader broke")

    monkeypatch.setattr(commands, "load_config_entries", broken)
    monkeypatch.setattr(commands, "_configure_logging", lambda verbose: None)  # this process's loggers
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["servers", "examples/servers.yaml", "--json"])
    assert code == 5
    assert json.loads(stdout.getvalue()) == {
        "error": {
            "type": "internal",
            "message": "unexpected error: RuntimeError: loader broke (rerun with -v for details)",
            "exit_code": 5,
        }
    }
    assert stderr.getvalue() == ""
