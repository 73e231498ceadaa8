"""The framework examples run as a user runs them, from the repository root; they start when the first
test asks for one, two at a time (each imports its framework and starts a server: more at once only
makes each slower on a 2-core machine)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType, SimpleNamespace

import pytest

from tests.support import REPO_ROOT, run_in_repo

SCRIPTS = (
    "langchain_agent.py",
    "smolagents_agent.py",
    "llamaindex_agent.py",
    "dspy_agent.py",
    "haystack_agent.py",
)
Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]
AT_ONCE = 2
RUN_TIMEOUT = 120.0  # one example, from its own start: seconds of work, the rest room for a busy machine
# A test may wait for every example queued before its own, then its own.
WAIT_TIMEOUT = RUN_TIMEOUT * (len(SCRIPTS) // AT_ONCE + 1) + 10.0

# What every example prints, whichever framework runs the agent.
TRANSCRIPT = (
    "user: This week I ran 5 km and 7500 m.",
    "  -> mcp__demo__convert_units {'value': 5, 'from_unit': 'km', 'to_unit': 'mi'}",
    "  <- 3.106856",
    "  <- my-week-of-running",
    "  <- ERROR ",  # the sloppy calculate call: an error the model reads
    "  -> mcp__demo__calculate {'expression': '3.106856 + 4.660284'}",
    "  -> mcp__demo__enable_statistics {}",
    "  [tools] added mcp__demo__statistics",
    "assistant: You ran 7.77 miles. Your post's slug is 'my-week-of-running'. Statistics are on.",
    "user: What was my average run, in miles?",
    "  -> mcp__demo__statistics {'numbers': [3.106856, 4.660284]}",
    "assistant: Your average run was 3.88 miles.",
)


@pytest.fixture(scope="module")
def examples() -> Iterator[Runs]:
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        yield {
            name: pool.submit(run_in_repo, [sys.executable, f"examples/{name}"], timeout=RUN_TIMEOUT)
            for name in SCRIPTS
        }


@pytest.mark.timeout(WAIT_TIMEOUT + 30.0)
@pytest.mark.parametrize("script", SCRIPTS)
def test_example_agent_uses_a_tool_that_appeared_and_recovers_from_an_error(
    examples: Runs, script: str
) -> None:
    done = examples[script].result(timeout=WAIT_TIMEOUT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for text in TRANSCRIPT:
        assert any(line.startswith(text) for line in lines), (
            f"no line starts with {text!r} in:\n{done.stdout}"
        )
    assert lines.index("user: What was my average run, in miles?") < lines.index(
        "  -> mcp__demo__statistics {'numbers': [3.106856, 4.660284]}"
    )


def load_agent_script() -> ModuleType:
    """`examples/agent_script.py`, the scripted model the framework examples share, as a module."""
    spec = importlib.util.spec_from_file_location("agent_script", REPO_ROOT / "examples" / "agent_script.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_waits_for_a_tool_change_only_after_a_turn_that_asked_for_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent_script = load_agent_script()
    monkeypatch.setattr(agent_script, "TOOL_CHANGE_WAIT", 0.01)
    watch = agent_script.ToolWatch()
    watch.after_turn({"statistics"})  # no changer called: no wait, no error
    watch(SimpleNamespace(name="mcp__demo__statistics"))
    watch.after_turn({"enable_statistics"})  # the change came: no wait, no error
    # A change already reported is not waited for again: counting an earlier turn's call is a mistake
    # the examples must not make, and it ends the run rather than stalling it.
    with pytest.raises(TimeoutError, match="enable_statistics"):
        watch.after_turn({"enable_statistics"})
