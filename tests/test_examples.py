"""The examples run as a user runs them: each script from the repository root, the notebook in a
real Jupyter kernel. The three scripts start together, when the first test asks for one."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import nbformat
import pytest
from nbclient import NotebookClient

from mcp_sync import load_config_entries
from tests.support import REPO_ROOT, run_in_repo

EXAMPLES = REPO_ROOT / "examples"
SCRIPTS = ("quickstart.py", "agent_loop.py", "parallel_calls.py")
Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    return run_in_repo([sys.executable, f"examples/{name}"], timeout=50)


@pytest.fixture(scope="module")
def examples() -> Iterator[Runs]:
    with ThreadPoolExecutor(max_workers=len(SCRIPTS)) as pool:
        yield {name: pool.submit(run_example, name) for name in SCRIPTS}


def assert_lines(output: str, *expected: str) -> None:
    """Each expected text starts some line of the output."""
    lines = output.splitlines()
    for text in expected:
        assert any(line.startswith(text) for line in lines), f"no line starts with {text!r} in:\n{output}"


def test_quickstart_lists_calls_and_handles_both_kinds_of_failure(examples: Runs) -> None:
    done = examples["quickstart.py"].result(timeout=55)
    assert done.returncode == 0, done.stderr
    assert_lines(
        done.stdout,
        "<MCPHub servers=[demo=ready] tools=8>",
        "server demo: ready",
        "  mcp__demo__word_count ",
        "word_count: {'words': 4, 'characters': 19, 'lines': 1}",
        "10 km in miles: 6.213712",
        "calculate reported an error: Error executing tool calculate: division by zero",
        "as expected: unknown tool 'mcp__demo__no_such_tool'",
    )


def test_agent_loop_follows_tools_that_appear_and_disappear_mid_run(examples: Runs) -> None:
    done = examples["agent_loop.py"].result(timeout=55)
    assert done.returncode == 0, done.stderr
    assert_lines(
        done.stdout,
        "turn 1: 9 tools offered, the model calls 3",
        "  -> mcp__demo__enable_statistics {}",
        "  [tools] added mcp__demo__statistics",
        "turn 3: 10 tools offered, the model calls 2",
        "  <- ERROR invalid arguments for log_week: total_miles: ",
        "  <- logged 10.97 miles over 3 runs",
        "  [tools] removed mcp__demo__statistics",
        "assistant: You ran 10.97 miles in 3 runs: 3.66 miles per run on average (median 3.20).",
        "training log: [{'total_miles': 10.96714, 'runs': 3, 'note': 'my-week-of-running'}]",
    )


def test_parallel_calls_run_side_by_side_and_the_cancelled_one_ends_promptly(examples: Runs) -> None:
    done = examples["parallel_calls.py"].result(timeout=55)
    assert done.returncode == 0, done.stderr
    assert_lines(
        done.stdout,
        'word_count: { "words": 5, "characters": 22, "lines": 1 }',
        "calculate: 1000",
        "slugify: parallel-calls-done-right",
        "cancelled: call to mcp__demo__sleep was cancelled",
        "timed out: call to mcp__demo__sleep did not finish within 0.5 s",
        "future.cancel() on a running call: True",
    )
    latency = re.search(r"\((\d+\.\d+) s after the Event was set\)", done.stdout)
    assert latency is not None and float(latency.group(1)) < 2.0  # the call slept 60 s


def test_both_example_config_formats_describe_the_same_demo_server() -> None:
    (ours,) = load_config_entries(EXAMPLES / "servers.yaml", strict=True).configs
    (theirs,) = load_config_entries(EXAMPLES / "claude_desktop_config.json", strict=True).configs
    for config in (ours, theirs):
        assert config.transport == "stdio"
        assert (config.server_name, config.command, config.args) == (
            "demo",
            "python",
            ("examples/demo_server.py",),
        )
        assert dict(config.env) == {"LOG_LEVEL": "WARNING"}
        assert (REPO_ROOT / config.args[0]).is_file()


def test_notebook_runs_in_a_real_kernel() -> None:
    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    client = NotebookClient(
        notebook,
        timeout=40,
        kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},  # Jupyter runs a notebook from its folder
    )
    client.execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    printed = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert_lines(
        printed,
        "<MCPHub servers=[demo=ready] tools=8>",
        "a marathon is 26.218757 miles",
        "cancelled: call to mcp__demo__sleep was cancelled",
        "resource demo://notes/training text/markdown",
        "# Training notes",
        'units of length: ["mm", "cm", "m", "km", "in", "ft", "yd", "mi"]',
        "[{'role': 'user', 'content': 'I ran 20 miles over 4 runs this week.",
        "a half marathon: 4 runs, the long one on Sunday",
        "<MCPHub servers=[] tools=0 (closed)>",
    )
    html = [output.data["text/html"] for output in outputs if "text/html" in output.get("data", {})]
    assert len(html) == 2  # the hub, then its registry
    assert "<strong>demo</strong>" in html[0] and "ready" in html[0]
    assert (
        "<code>demo://notes/training</code>" in html[0]
        and "<code>mcp__demo__weekly_summary</code>" in html[0]
    )
    for table in html:
        assert "<code>mcp__demo__word_count</code>" in table
        assert "server&#x27;s tool list" in table  # descriptions are escaped
