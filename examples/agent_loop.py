"""A synchronous function-calling agent loop over mcp_sync, shaped like an OpenAI / DeepSeek client.

Each turn the host sends the model the conversation and `hub.function_specs()`, runs the tool
calls the model answers with through `hub.call_tool_safe()` (always a result, never an
exception: an unknown tool, a timeout or bad arguments come back as error text the model can
act on), and appends the results as `tool` messages. Listeners report tools that appear or
disappear mid-run; the next turn's specs include the change.

The model is scripted, so this runs without a network or an API key: it picks its calls
from the specs it is given. To use a real one, replace `ScriptedModel.complete` with
`client.chat.completions.create(model=..., messages=messages, tools=specs)` and read
`choices[0].message`.

Run from the repository root, with the virtualenv active:

    python examples/agent_loop.py
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

from mcp_sync import MCPHub

TOOL_TIMEOUT = 10.0  # seconds per tool call; a call that runs longer is cancelled on the server
MAX_TURNS = 10
# Tools known to change the server's tool list. After calling one, the loop waits (bounded) for
# the registry to report the change, so that the very next turn's specs show it. A loop that
# knows no such thing still sees the change on a later turn: specs are rebuilt every turn.
TOOL_SET_CHANGERS = {"mcp__demo__enable_statistics", "mcp__demo__disable_statistics"}
TOOL_CHANGE_WAIT = 5.0

Message = dict[str, Any]


class ScriptedModel:
    """Stands in for a chat-completions endpoint: decides tool calls from the specs it is sent."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def complete(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        offered = [spec["function"]["name"] for spec in tools]

        def tool(short_name: str) -> str | None:
            """The offered tool with this name, or whose public name ends with it."""
            return next((n for n in offered if n == short_name or n.endswith("__" + short_name)), None)

        results = _results_by_tool(messages)
        if "convert_units" not in results:
            convert, slugify = tool("convert_units"), tool("slugify")
            assert convert is not None and slugify is not None, "the demo server's tools are missing"
            return self._calls(
                (convert, {"value": 5, "from_unit": "km", "to_unit": "mi"}),
                (convert, {"value": 7500, "from_unit": "m", "to_unit": "mi"}),
                (slugify, {"text": "My Week of Running!"}),
            )
        miles = [float(results["convert_units"][0]), 3.2, float(results["convert_units"][1])]
        if "statistics" not in results:
            statistics, enable = tool("statistics"), tool("enable_statistics")
            if statistics is None and enable is not None and "enable_statistics" not in results:
                return self._calls((enable, {}))  # not offered yet: ask the server for it
            if statistics is None:
                return self._answer("I could not get the statistics tool, so I stop here.")
            calculate = tool("calculate")
            assert calculate is not None
            return self._calls(
                (statistics, {"numbers": miles}),
                (calculate, {"expression": " + ".join(str(m) for m in miles)}),
            )
        total = float(results["calculate"][-1])
        log = results.get("log_week", [])
        if not log:  # a first attempt with a sloppy argument, as models do
            return self._calls(("log_week", {"total_miles": "about eleven", "runs": 3}))
        if log[-1].startswith("invalid arguments"):  # read the error, fix the call, tidy up
            disable = tool("disable_statistics")
            calls: list[tuple[str, dict[str, Any]]] = [
                ("log_week", {"total_miles": total, "runs": 3, "note": results["slugify"][0]})
            ]
            if disable is not None:
                calls.append((disable, {}))
            return self._calls(*calls)
        stats = json.loads(results["statistics"][0])
        return self._answer(
            f"You ran {total:.2f} miles in 3 runs: {stats['mean']:.2f} miles per run on average "
            f"(median {stats['median']:.2f}). Your post's slug is '{results['slugify'][0]}', "
            "and the week is logged."
        )

    def _calls(self, *calls: tuple[str, dict[str, Any]]) -> Message:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for name, arguments in calls
            ],
        }

    @staticmethod
    def _answer(text: str) -> Message:
        return {"role": "assistant", "content": text}


def _results_by_tool(messages: list[Message]) -> dict[str, list[str]]:
    """Tool results so far, by the tool's short name (after the last "__"), oldest first."""
    names = {
        call["id"]: call["function"]["name"].rpartition("__")[2]
        for message in messages
        for call in message.get("tool_calls") or ()
    }
    results: dict[str, list[str]] = {}
    for message in messages:
        if message["role"] == "tool":
            results.setdefault(names[message["tool_call_id"]], []).append(message["content"])
    return results


def _one_line(text: str, limit: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run_agent(hub: MCPHub, model: ScriptedModel, question: str) -> str:
    """Run the loop until the model answers without tool calls; returns its answer."""
    messages: list[Message] = [
        {"role": "system", "content": "You are a helpful assistant. Use the tools offered."},
        {"role": "user", "content": question},
    ]
    changed = threading.Event()

    # Listeners run on mcp_sync's callback thread; they only note the change and print it.
    def on_added(tool: Any) -> None:
        print(f"  [tools] added {tool.name}")
        changed.set()

    def on_removed(tool: Any) -> None:
        print(f"  [tools] removed {tool.name}")
        changed.set()

    unsubscribe = [hub.on_tool_added(on_added), hub.on_tool_removed(on_removed)]
    try:
        for turn in range(1, MAX_TURNS + 1):
            specs = hub.function_specs()  # rebuilt every turn: tools come and go
            reply = model.complete(messages, specs)
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                return str(reply["content"])
            print(f"turn {turn}: {len(specs)} tools offered, the model calls {len(calls)}")
            changed.clear()
            for call in calls:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                print(f"  -> {name} {arguments}")
                result = hub.call_tool_safe(name, arguments, timeout=TOOL_TIMEOUT)
                print(f"  <- {'ERROR ' if result.is_error else ''}{_one_line(result.text)}")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.text})
            if any(call["function"]["name"] in TOOL_SET_CHANGERS for call in calls):
                changed.wait(TOOL_CHANGE_WAIT)
        return "(no answer within the turn limit)"
    finally:
        for stop in unsubscribe:
            stop()


def main() -> None:
    week_log: list[dict[str, Any]] = []

    with MCPHub.from_file("examples/servers.yaml") as hub:
        # A host function as a tool, next to the MCP tools; its schema comes from the type hints
        # and its arguments are validated before it runs.
        @hub.registry.register_function
        def log_week(total_miles: float, runs: int, note: str = "") -> str:
            """Record a week of training in the user's log."""
            week_log.append({"total_miles": total_miles, "runs": runs, "note": note})
            return f"logged {total_miles:.2f} miles over {runs} runs"

        question = (
            "This week I ran 5 km, 3.2 miles and 7500 m. What is my total and average in miles? "
            "Give me a URL slug for my post 'My Week of Running!' and log the week."
        )
        print(f"user: {question}\n")
        answer = run_agent(hub, ScriptedModel(), question)
        print(f"\nassistant: {answer}")
        print(f"training log: {week_log}")


if __name__ == "__main__":
    main()
