"""A DSPy `ReAct` agent calling MCP tools through mcp_sync, from a plain script.

The switch from DSPy's own MCP path, which needs an async session (and an event loop to await it in):

    tools = [dspy.Tool.from_mcp_tool(session, tool) for tool in (await session.list_tools()).tools]  # before
    tools = dspy_tools(hub)                                                                          # after

`dspy.ReAct` writes its tools' names into its signature when it is built, so the agent is built with
`dspy_tools(hub)` for each question: the demo server's `statistics` tool, turned on in the first
question, is used in the second. The conversation goes on through a `dspy.History`. A tool's error is
raised, and ReAct shows it to the model as the step's observation, which it reads and recovers from.
The language model is scripted (see `agent_script.py`), as a DSPy engine: no network, no API key.

Run from the repository root, with the virtualenv active (`pip install -e '.[dspy]'`):

    python examples/dspy_agent.py
"""

from __future__ import annotations

import json
import re
from typing import Any

import dspy
from agent_script import FOLLOW_UP, QUESTION, Results, ToolWatch, next_step, one_line, short_name
from dspy.lm15 import Message, Request, Response, TextPart, Usage, response_to_events

from mcp_sync import MCPHub
from mcp_sync.integrations.dspy import dspy_tools

TOOL_TIMEOUT = 10.0  # seconds per call; a call that runs longer is cancelled on the server
ERROR = "Execution error in "  # how ReAct starts the observation of a tool that raised
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n")
OFFERED = re.compile(r"^\s*\(\d+\) ([\w-]+)", re.MULTILINE)
TRAILER = "\n\nRespond with the corresponding output fields"  # what follows the fields of a request


class ScriptedEngine:
    """A DSPy engine (`dspy.LM(..., engine=...)`) whose replies come from `agent_script.next_step`.

    It reads the prompt as a model does: the tools listed in the instructions, and each question with the
    trajectory ReAct shows for it (earlier questions come from the `dspy.History`). ReAct makes one call
    per step, so the calls the script makes at once are made one after the other.
    """

    def complete(self, request: Request) -> Response:
        system = request.system if isinstance(request.system, str) else ""
        if "next_tool_name" in system:
            offered = [name for name in OFFERED.findall(system) if name != "finish"]
            fields = self._react_step(offered, [message.text or "" for message in request.messages])
        else:  # ReAct's last step: extract the answer from the trajectory, which holds it
            trajectory = _fields(request.messages[-1].text or "")
            answers = [value for key, value in trajectory.items() if key.startswith("thought_")]
            fields = {"reasoning": "The answer is in my last thought.", "answer": answers[-1]}
        reply = "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items())
        return Response(
            id=None,
            model=request.model,
            message=Message.assistant([TextPart(reply + "[[ ## completed ## ]]")]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request: Request) -> Any:
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass

    @staticmethod
    def _react_step(offered: list[str], prompts: list[str]) -> dict[str, Any]:
        results: Results = {}
        step: list[tuple[str, dict[str, Any]]] | str = ""
        for prompt in prompts:  # every question so far, each with its trajectory
            fields = _fields(prompt)
            if "question" not in fields:
                continue
            follow_up = fields["question"] == FOLLOW_UP
            made = [
                (fields[f"tool_name_{i}"], fields[f"observation_{i}"])
                for i in range(len(fields))
                if f"observation_{i}" in fields and fields[f"tool_name_{i}"] != "finish"
            ]
            # The calls of one scripted step are made one per ReAct step: `pending` are those not made yet.
            step, pending = next_step(offered, results, follow_up), []
            for name, observation in made:
                if not pending and isinstance(step, list):
                    pending = list(step)
                pending.pop(0)
                failed = observation.startswith(ERROR)
                results.setdefault(short_name(name), []).append((observation, failed))
                if not pending:
                    step = next_step(offered, results, follow_up)
            if pending:
                step = pending
        if isinstance(step, str):
            return {"next_thought": step, "next_tool_name": "finish", "next_tool_args": "{}"}
        name, arguments = step[0]
        return {
            "next_thought": f"I call {name}.",
            "next_tool_name": name,
            "next_tool_args": json.dumps(arguments),
        }


def _fields(text: str) -> dict[str, str]:
    """The `[[ ## name ## ]]` fields of a ChatAdapter prompt, by name; the trajectory's own fields
    (`thought_0`, `tool_name_0`, `observation_0`, ...) are read at the same level."""
    parts = FIELD.split(text.split(TRAILER)[0])
    fields = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    if fields.get("trajectory", "").startswith("{"):  # an earlier question's, from the history: JSON
        earlier = json.loads(fields["trajectory"])
        fields.update(
            {key: value if isinstance(value, str) else json.dumps(value) for key, value in earlier.items()}
        )
    return fields


def show(trajectory: dict[str, Any]) -> None:
    for index in range(len(trajectory)):
        name = trajectory.get(f"tool_name_{index}")
        if name is None or name == "finish":
            continue
        print(f"  -> {name} {trajectory[f'tool_args_{index}']}")
        observation = str(trajectory[f"observation_{index}"])
        if observation.startswith(ERROR):
            print(f"  <- ERROR {one_line(observation.strip().splitlines()[-1])}")  # the traceback's last line
        else:
            print(f"  <- {one_line(observation)}")


def main() -> None:
    lm = dspy.LM("scripted/agent-script", engine=ScriptedEngine(), cache=False)
    watch = ToolWatch()
    history = dspy.History(messages=[])
    with MCPHub.from_file("examples/servers.yaml") as hub, dspy.context(lm=lm):
        hub.on_tool_added(watch)
        for question in (QUESTION, FOLLOW_UP):
            print(f"user: {question}")
            tools = dspy_tools(hub, timeout=TOOL_TIMEOUT)  # the tools as they are now
            print(f"  ({len(tools)} tools offered, and finish)")
            agent = dspy.ReAct("question: str, history: dspy.History -> answer: str", tools=tools)
            prediction = agent(question=question, history=history)
            show(prediction.trajectory)
            print(f"assistant: {prediction.answer}")
            history.messages.append(
                {"question": question, "trajectory": prediction.trajectory, "answer": prediction.answer}
            )
            called = {
                short_name(name)
                for key, name in prediction.trajectory.items()
                if key.startswith("tool_name_")
            }
            watch.after_turn(called)  # the next question's tools then include the change


if __name__ == "__main__":
    main()
