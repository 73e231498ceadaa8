"""Hubs in a real Jupyter kernel: a re-run cell leaves exactly one hub; an interrupted call, a kernel
restart and a kernel shutdown leave no server process.

The cells run in a real ipykernel through jupyter_client, as a person runs them; servers are counted
by the pids they record when ready (alive or not), so a count does not depend on which process is
whose parent. IPython's output history (`Out`, `_`) is what kept re-run hubs alive: cells here end
with the hub as their displayed value on purpose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from tests.hosts._common import poll, reap_servers, server_pids
from tests.support import REPO_ROOT, EventLog, pid_alive
from tests.test_hosts import Cell, run_cell, run_cell_after_an_error, shell_reply

pytestmark = pytest.mark.timeout(240)

SETTLE = 5.0
"""A dropped hub's servers are gone this long after the cell that dropped it (a hang detector: the
close itself is immediate, the servers' exit takes milliseconds)."""

EXAMPLES = REPO_ROOT / "examples"


@dataclass
class KernelRun:
    example_servers: list[int]  # live demo servers after each of two runs of the example's cells
    example_after_close: int
    example_history: str  # what the example's `hub` cell left in Out, after its re-run
    pair_servers: list[int]  # live servers of a 2-server hub after each of three runs of its cell
    pair_after_close: int
    interrupted: Cell | None
    after_interrupt_servers: int  # live servers once the create cell ran again after the interrupt
    after_interrupt_call: Cell | None
    shapes: dict[str, int]  # live servers after two runs of a cell ending with the hub in a container
    user_values: str  # the types the user's own `_` and list hold after their cells
    completed_servers: int  # live servers once the create cell ran again after a completion on `hub.`
    restart_left: int  # servers of the first kernel alive after a restart
    shutdown_left: int  # servers of the second kernel alive after its shutdown
    printed: str  # whatever the cells above printed, stderr included


def _alive(log: Path) -> int:
    return sum(pid_alive(pid) for pid in server_pids(log))


def _settled(log: Path, expected: int) -> int:
    """The number of live servers in `log` once it is `expected` (or after `SETTLE`)."""
    poll(lambda: _alive(log) == expected, SETTLE)
    return _alive(log)


def _hub_cell(name: str, *logs: Path, last: str = "hub") -> str:
    configs = ", ".join(
        f"stdio_config({f'{name}{i}'!r}, events={os.fspath(log)!r})" for i, log in enumerate(logs)
    )
    return f"hub = MCPHub([{configs}])\nhub.start()\n{last}"


SETUP = "\n".join(
    [
        "import sys, warnings",
        f"sys.path.insert(0, {os.fspath(REPO_ROOT)!r})",
        "warnings.simplefilter('default')",  # a ResourceWarning would show in the cell's stderr
        "from mcp_sync import MCPHub",
        "from tests.support import stdio_config",
    ]
)


def _example_cells() -> list[str]:
    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelRun]:
    from jupyter_client.manager import KernelManager

    workdir = tmp_path_factory.mktemp("kernel")
    logs = {name: workdir / f"{name}.jsonl" for name in ("a", "b", "call", "restart")}
    example = _example_cells()
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=os.fspath(EXAMPLES))  # Jupyter runs a notebook from its folder
    client = manager.client()
    client.start_channels()
    kernel_pid = manager.provisioner.process.pid  # type: ignore[union-attr]
    printed: list[str] = []

    def cell(code: str, timeout: float = 60) -> Cell:
        done = run_cell(client, code, timeout)
        assert done.status == "ok", (code, done)
        printed.append(done.stdout)  # stdout and stderr alike
        return done

    def demo_servers() -> int:
        from tests.hosts._common import live_children

        return len(live_children(kernel_pid, marker="demo_server.py"))

    try:
        client.wait_for_ready(timeout=60)
        cell(SETUP)
        # The example notebook, every cell but its last (`hub.close()`), run twice as a person re-runs it.
        example_servers = []
        for _ in range(2):
            for code in example[:-1]:
                cell(code)
            poll(lambda: demo_servers() == 1, SETTLE)
            example_servers.append(demo_servers())
        history = cell("print(sorted({type(value).__name__ for value in Out.values()}))").stdout.strip()
        cell(example[-1])
        poll(lambda: demo_servers() == 0, SETTLE)
        example_after_close = demo_servers()

        # A hub of two servers whose cell ends by showing the hub, run three times.
        pair_servers = []
        for _ in range(3):
            cell(_hub_cell("p", logs["a"], logs["b"]))
            pair_servers.append(_settled(logs["a"], 1) + _settled(logs["b"], 1))
        cell("hub.close()")
        pair_after_close = _settled(logs["a"], 0) + _settled(logs["b"], 0)

        # An interrupt during a call, then the create cell again: one hub, and it answers.
        cell(_hub_cell("c", logs["call"], last="hub.start()"))
        msg_id = client.execute('hub.call_tool("mcp__c0__sleep", {"seconds": 60})')
        EventLog(logs["call"]).wait_for("started", timeout=30)
        manager.interrupt_kernel()
        reply = shell_reply(client, msg_id, 20)
        interrupted = (
            None if reply is None else Cell(reply["content"]["status"], "", reply["content"].get("ename"))
        )
        rerun = run_cell_after_an_error(client, _hub_cell("c", logs["call"], last="hub.start()"), 60)
        assert rerun.status == "ok", rerun
        after_interrupt_servers = _settled(logs["call"], 1)
        answer = run_cell(client, 'print(hub.call_tool("mcp__c0__echo", {"text": "again"}).text)', 30)

        # A cell whose shown value holds the hub in a tuple, list or dict, run twice: one hub.
        shapes = {}
        for shape, last in {
            "tuple": "hub, len(hub.tools())",
            "list": "[hub]",
            "dict": "{'hub': hub}",
        }.items():
            for _ in range(2):
                cell(_hub_cell(shape, workdir / f"{shape}.jsonl", last=last))
            shapes[shape] = _settled(workdir / f"{shape}.jsonl", 1)
            cell("hub.close()")
        # The user's own `_` and list keep the hub itself (the history's copy of a list holds a stand-in).
        cell(_hub_cell("own", workdir / "own.jsonl", last="_ = hub\nmine = [hub]\nmine"))
        user_values = cell("print(type(_).__name__, type(mine[0]).__name__)").stdout.strip()
        cell("hub.close()")

        # Tab completion on `hub.`, then the create cell again: one hub.
        cell(_hub_cell("complete", workdir / "complete.jsonl", last="hub.start();"))
        completion = shell_reply(client, client.complete("hub.call_t"), 30)
        assert completion is not None and completion["content"]["status"] == "ok", completion
        cell(_hub_cell("complete", workdir / "complete.jsonl", last="hub.start();"))
        completed_servers = _settled(workdir / "complete.jsonl", 1)
        cell("hub.close()")

        # A kernel restart with a hub open: the old kernel's servers end with it.
        cell(_hub_cell("r", logs["restart"]))
        manager.restart_kernel(now=False)
        client.wait_for_ready(timeout=60)
        restart_left = _settled(logs["restart"], 0)

        # The new kernel, a hub left open, then shutdown.
        cell(SETUP)
        cell(_hub_cell("s", workdir / "shutdown.jsonl"))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    shutdown_left = _settled(workdir / "shutdown.jsonl", 0)
    try:
        yield KernelRun(
            example_servers,
            example_after_close,
            history,
            pair_servers,
            pair_after_close,
            interrupted,
            after_interrupt_servers,
            answer,
            shapes,
            user_values,
            completed_servers,
            restart_left,
            shutdown_left,
            "".join(printed),
        )
    finally:
        reap_servers(workdir)


def test_rerunning_the_example_notebook_leaves_one_demo_server(kernel_run: KernelRun) -> None:
    assert kernel_run.example_servers == [1, 1], kernel_run


def test_closing_the_hub_after_a_rerun_leaves_no_demo_server(kernel_run: KernelRun) -> None:
    assert kernel_run.example_after_close == 0, kernel_run


def test_the_output_history_holds_no_hub_itself(kernel_run: KernelRun) -> None:
    assert "MCPHub" not in json.loads(kernel_run.example_history.replace("'", '"')), kernel_run


def test_a_cell_showing_a_two_server_hub_run_three_times_leaves_two_servers(kernel_run: KernelRun) -> None:
    assert kernel_run.pair_servers == [2, 2, 2], kernel_run
    assert kernel_run.pair_after_close == 0, kernel_run


def test_an_interrupted_call_then_a_rerun_leaves_one_working_hub(kernel_run: KernelRun) -> None:
    assert kernel_run.interrupted == Cell("error", "", "KeyboardInterrupt"), kernel_run
    assert kernel_run.after_interrupt_servers == 1, kernel_run
    assert kernel_run.after_interrupt_call == Cell("ok", "again\n", None), kernel_run


def test_a_cell_showing_the_hub_in_a_tuple_list_or_dict_run_twice_leaves_one_server(
    kernel_run: KernelRun,
) -> None:
    assert kernel_run.shapes == {"tuple": 1, "list": 1, "dict": 1}, kernel_run


def test_the_users_own_underscore_and_list_keep_the_hub(kernel_run: KernelRun) -> None:
    assert kernel_run.user_values == "MCPHub MCPHub", kernel_run


def test_tab_completion_on_the_hub_then_a_rerun_leaves_one_server(kernel_run: KernelRun) -> None:
    assert kernel_run.completed_servers == 1, kernel_run


def test_a_kernel_restart_leaves_no_server_of_the_old_kernel(kernel_run: KernelRun) -> None:
    assert kernel_run.restart_left == 0, kernel_run


def test_a_kernel_shutdown_leaves_no_server(kernel_run: KernelRun) -> None:
    assert kernel_run.shutdown_left == 0, kernel_run


def test_a_replaced_hub_closes_without_a_warning(kernel_run: KernelRun) -> None:
    assert "ResourceWarning" not in kernel_run.printed, kernel_run.printed


def test_the_stand_in_in_the_history_shows_the_hub_and_holds_it_weakly() -> None:
    from mcp_sync import MCPHub
    from mcp_sync._hub.notebook import ShownHub

    hub = MCPHub([])
    shown = ShownHub(hub)
    assert repr(shown) == repr(hub)
    assert shown.tools() == hub.tools()
    assert shown._repr_html_() == hub._repr_html_()
    del hub
    assert repr(shown) == "<MCPHub (dropped and closed)>"
    assert shown._repr_html_() is None
    with pytest.raises(ReferenceError, match="dropped"):
        shown.tools()
    with pytest.raises(AttributeError):
        shown._repr_png_  # noqa: B018  (what IPython's display formatters probe for)


def test_the_stand_in_in_the_history_can_be_used_in_a_with_statement() -> None:
    """`with _:` looks `__enter__` up on the stand-in's type, not through its attribute forwarding."""
    from mcp_sync import MCPHub
    from mcp_sync._hub.notebook import ShownHub

    hub = MCPHub([])
    with ShownHub(hub) as entered:
        assert entered is hub
        assert hub.state == "running"
    assert hub.state == "closed"


class _Probed:
    """An item whose every type check is counted (`isinstance` reads `__class__` when the type differs)."""

    checks = 0

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        _Probed.checks += 1
        return _Probed


def test_the_history_swapper_looks_at_a_bounded_number_of_a_containers_items() -> None:
    from mcp_sync import MCPHub
    from mcp_sync._hub.notebook import _SCAN_LIMIT, _Shown

    hub = MCPHub([])
    items = [_Probed() for _ in range(_SCAN_LIMIT * 10)]
    for container in (items, tuple(items), dict(enumerate(items))):
        _Probed.checks = 0
        assert _Shown(MCPHub)(container) is container  # no hub: the value itself, not a copy
        assert 0 < _Probed.checks <= _SCAN_LIMIT
    shown = _Shown(MCPHub)([hub, *items])
    assert type(shown[0]).__name__ == "ShownHub" and shown[1:] == items


SHELL_SCRIPT = """
import json
from IPython.core.interactiveshell import InteractiveShell
from mcp_sync._hub import notebook

looked = []

class Counting(notebook._Shown):
    def __call__(self, value):
        looked.append(value)
        return super().__call__(value)

notebook._Shown = Counting
shell = InteractiveShell.instance()

def run(code):
    looked.clear()
    assert shell.run_cell(code, store_history=True).success, code

run("from mcp_sync import MCPHub\\nhub = MCPHub([])")
for i in range(20):
    run(f"[{i}] * 3")
run("[99]")
distinct = len({id(value) for value in looked})
run("hub")
out = shell.user_ns["Out"]
print("REPORT " + json.dumps({"distinct": distinct, "last": type(out[max(out)]).__name__}))
"""


def test_the_history_swapper_looks_only_at_outputs_new_since_its_last_run() -> None:
    """After 20 cells with output, the next cell's pass looks at its own output and IPython's last three
    (`_`, `__`, `___`), not at the whole history again; a hub shown later is still swapped."""
    done = subprocess.run(
        [sys.executable, "-c", SHELL_SCRIPT], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    assert report["distinct"] <= 4, report  # [99], then `_`, `__`, `___` (the first of them is [99])
    assert report["last"] == "ShownHub", report
