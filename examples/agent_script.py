"""The scripted model behind the framework examples (`langchain_agent.py`, `smolagents_agent.py`,
`llamaindex_agent.py`): it decides its next step from the tools it is offered and the results so far,
as a chat model would, so the examples run without a network or an API key. Each example wraps it in
its framework's own model class; swap that for a real model (ChatOpenAI, OpenAIServerModel, OpenAI...)
to use one.

The conversation has two user turns. In the first the model converts units, slugifies a title, makes
a sloppy `calculate` call, reads the error and fixes it, and turns on the demo server's `statistics`
tool, which appears only then. In the second it uses that tool, which the framework offers by now.
"""

from __future__ import annotations

import json
import threading
from typing import Any

QUESTION = (
    "This week I ran 5 km and 7500 m. How many miles is that in total, and what slug should my post "
    "'My Week of Running!' get? Please turn on statistics for later."
)
FOLLOW_UP = "What was my average run, in miles?"
TOOL_SET_CHANGERS = ("enable_statistics",)
"""Tools that change the server's tool list: after one, the host waits (bounded) for the change."""
TOOL_CHANGE_WAIT = 10.0
"""Seconds to wait for the change a changer announces: it comes within milliseconds; the rest is room
for a busy machine. Running out means the change never came (or had already been reported): an error."""

Call = tuple[str, dict[str, Any]]
Results = dict[str, list[tuple[str, bool]]]
"""Tool results so far by short tool name, oldest first: (text, is_error)."""


def short_name(name: str) -> str:
    """`mcp__demo__slugify` -> `slugify`."""
    return name.rpartition("__")[2]


def next_step(offered: list[str], results: Results, follow_up: bool) -> list[Call] | str:
    """The model's next move: tool calls, or its answer (a string)."""

    def tool(short: str) -> str:
        found = next((name for name in offered if short_name(name) == short), None)
        return found if found is not None else short  # not offered: the framework will say so

    if "convert_units" not in results:
        return [
            (tool("convert_units"), {"value": 5, "from_unit": "km", "to_unit": "mi"}),
            (tool("convert_units"), {"value": 7500, "from_unit": "m", "to_unit": "mi"}),
            (tool("slugify"), {"text": "My Week of Running!"}),
        ]
    # Sorted: a framework may run the two conversions side by side, so they can finish in either order.
    miles = sorted(float(text) for text, _ in results["convert_units"])
    calculations = results.get("calculate", [])
    if not calculations:  # a sloppy first attempt, as models make
        return [(tool("calculate"), {"expression": f"{miles[0]} mi + {miles[1]} mi"})]
    if calculations[-1][1]:  # read the error, fix the call
        return [(tool("calculate"), {"expression": " + ".join(str(m) for m in miles)})]
    total = float(calculations[-1][0])
    if not follow_up:
        if "enable_statistics" not in results:
            return [(tool("enable_statistics"), {})]
        slug = results["slugify"][0][0]
        return f"You ran {total:.2f} miles. Your post's slug is '{slug}'. Statistics are on."
    if "statistics" not in results:
        return [(tool("statistics"), {"numbers": miles})]
    text, is_error = results["statistics"][-1]
    if is_error:
        return f"I could not compute the statistics: {text}"
    return f"Your average run was {json.loads(text)['mean']:.2f} miles."


def one_line(text: str, limit: int = 90) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class ToolWatch:
    """An `on_tool_added` listener that notes what was added, for the main thread to report between
    turns (listeners run on mcp_sync's callback thread; printing there would mix with the transcript)."""

    def __init__(self) -> None:
        self._added: list[str] = []
        self._changed = threading.Event()

    def __call__(self, tool: Any) -> None:
        self._added.append(tool.name)
        self._changed.set()

    def after_turn(self, called: set[str]) -> None:
        """If this turn called a tool that changes the tool set, wait (bounded) for the change; print
        what came. `called`: the short names of the tools called in this turn only, not in earlier ones."""
        changers = called & set(TOOL_SET_CHANGERS)
        if changers and not self._changed.wait(TOOL_CHANGE_WAIT):
            raise TimeoutError(
                f"no tool change reported within {TOOL_CHANGE_WAIT} s after {sorted(changers)}"
            )
        self._changed.clear()
        while self._added:
            print(f"  [tools] added {self._added.pop(0)}")
