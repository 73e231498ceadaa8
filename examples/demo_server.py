"""A small MCP server for the examples: a few useful, deterministic tools over stdio.

Run by the examples through `servers.yaml` (`python examples/demo_server.py`); any MCP
client can use it. Built on the `mcp` 2.x SDK's `MCPServer`.

Tools
-----
word_count(text)                          words, characters and lines of a text
calculate(expression)                     arithmetic (+ - * / // % **, parentheses), no eval
convert_units(value, from_unit, to_unit)  length, mass, time and temperature
slugify(text)                             "Hello, World!" -> "hello-world"
sleep(seconds)                            waits, reporting progress: for timeout and cancellation demos
plan_week(goal)                           asks the user (elicitation) how they like to train
enable_statistics() / disable_statistics()
                                          add or remove the `statistics(numbers)` tool at run time and
                                          announce the change, as servers with dynamic tool sets do

word_count, calculate, convert_units and slugify are annotated read-only and closed-world (MCP's tool hints).

Resources: demo://notes/training (markdown) and the template demo://units/{dimension} (JSON).
Prompt: weekly_summary(miles, runs).

Set LOG_LEVEL (DEBUG, INFO, WARNING, ...) to change how much the server logs to stderr.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
import re
import statistics as stats
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any, Literal, cast

import anyio
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_level = os.environ.get("LOG_LEVEL", "WARNING").upper()
server: MCPServer = MCPServer(
    "mcp-sync-demo",
    version="1.0.0",
    instructions="Text, arithmetic and unit tools for the mcp_sync examples.",
    log_level=cast(LogLevel, _level) if _level in LogLevel.__args__ else "WARNING",
)


# The hints a client may show or act on: these tools only compute, from their arguments alone.
PURE = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@server.tool(annotations=PURE)
def word_count(text: str) -> dict[str, int]:
    """Count the words, characters and lines of a text."""
    return {"words": len(text.split()), "characters": len(text), "lines": len(text.splitlines())}


# -- calculate ---------------------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_BITS = 4096  # integers past ~1200 digits are refused: 9**9**9 would take the server down


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return cast(int | float, node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        big_power = isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int)
        if big_power and left.bit_length() * abs(right) > _MAX_BITS:
            raise ToolError("the result is too large")
        value = cast(int | float, _BINARY[type(node.op)](left, right))
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        value = cast(int | float, _UNARY[type(node.op)](_evaluate(node.operand)))
    else:
        raise ToolError(f"unsupported syntax {ast.unparse(node)!r}: use numbers, + - * / // % ** and ( )")
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise ToolError("the result is too large")
    return value


@server.tool(annotations=PURE)
def calculate(expression: str) -> int | float:
    """Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value = _evaluate(tree)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("the result is too large") from None
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        raise ToolError("the result is not a finite real number")
    return value


# -- convert_units -----------------------------------------------------------------------------------

# Each unit as a factor to its dimension's base unit (metre, kilogram, second).
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "day": ("time", 86400.0),
}
_TEMPERATURES: dict[str, tuple[Callable[[float], float], Callable[[float], float]]] = {
    # unit: (to kelvin, from kelvin)
    "C": (lambda c: c + 273.15, lambda k: k - 273.15),
    "F": (lambda f: (f - 32) * 5 / 9 + 273.15, lambda k: (k - 273.15) * 9 / 5 + 32),
    "K": (lambda k: k, lambda k: k),
}


def _dimension(unit: str) -> str:
    if unit in _TEMPERATURES:
        return "temperature"
    if unit in _UNITS:
        return _UNITS[unit][0]
    raise ToolError(f"unknown unit {unit!r}; known units: {', '.join([*_UNITS, *_TEMPERATURES])}")


@server.tool(annotations=PURE)
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between units of length (mm cm m km in ft yd mi), mass (g kg oz lb), time (s min h day) or temperature (C F K)."""  # noqa: E501
    from_dimension, to_dimension = _dimension(from_unit), _dimension(to_unit)
    if from_dimension != to_dimension:
        raise ToolError(f"cannot convert {from_dimension} ({from_unit}) to {to_dimension} ({to_unit})")
    if from_dimension == "temperature":
        kelvin = _TEMPERATURES[from_unit][0](value)
        return round(_TEMPERATURES[to_unit][1](kelvin), 6)
    return round(value * _UNITS[from_unit][1] / _UNITS[to_unit][1], 6)


@server.tool(annotations=PURE)
def slugify(text: str) -> str:
    """Turn a title into a URL slug: ASCII, lower case, words joined by hyphens."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


@server.tool()
async def sleep(seconds: float, ctx: Context) -> str:
    """Wait `seconds` (at most 3600), reporting progress every second; for timeout and cancellation demos."""
    if not 0 <= seconds <= 3600:
        raise ToolError("seconds must be between 0 and 3600")
    await ctx.report_progress(0, seconds, "started")
    elapsed = 0.0
    while elapsed < seconds:
        step = min(1.0, seconds - elapsed)
        await anyio.sleep(step)
        elapsed += step
        await ctx.report_progress(elapsed, seconds)
    return f"slept {seconds:g} s"


# -- a tool set that changes at run time ----------------------------------------------------------------


def statistics(numbers: list[float]) -> dict[str, float]:
    """Mean, median, standard deviation, minimum and maximum of a list of numbers."""
    if not numbers:
        raise ToolError("numbers must not be empty")
    return {
        "mean": round(stats.fmean(numbers), 6),
        "median": round(stats.median(numbers), 6),
        "stdev": round(stats.stdev(numbers), 6) if len(numbers) > 1 else 0.0,
        "min": min(numbers),
        "max": max(numbers),
    }


async def _announce_tools_changed(ctx: Context) -> None:
    """Tell the client the tool list changed, the way the negotiated protocol version wants."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await ctx.notify_tools_changed()  # 2026-07-28: an event on subscriptions/listen streams
    else:
        await ctx.session.send_tool_list_changed()  # 2025: notifications/tools/list_changed


@server.tool()
async def enable_statistics(ctx: Context) -> str:
    """Add the `statistics` tool to this server's tool list."""
    if any(tool.name == "statistics" for tool in await server.list_tools()):
        return "statistics is already enabled"
    server.add_tool(statistics)
    await _announce_tools_changed(ctx)
    return "enabled the statistics tool"


@server.tool()
async def disable_statistics(ctx: Context) -> str:
    """Remove the `statistics` tool from this server's tool list."""
    if not any(tool.name == "statistics" for tool in await server.list_tools()):
        return "statistics is not enabled"
    server.remove_tool("statistics")
    await _announce_tools_changed(ctx)
    return "disabled the statistics tool"


# -- resources, a prompt, and a question for the user ---------------------------------------------------


@server.resource("demo://notes/training", name="training-notes", mime_type="text/markdown")
def training_notes() -> str:
    """Notes on training paces."""
    return "# Training notes\n- Easy runs: a pace you can talk at\n- Long run: once a week, a quarter of it"


@server.resource("demo://units/{dimension}", name="units", mime_type="application/json")
def units(dimension: str) -> str:
    """The units `convert_units` knows for one dimension (length, mass, time, temperature)."""
    return json.dumps([unit for unit in [*_UNITS, *_TEMPERATURES] if _dimension(unit) == dimension])


@server.prompt()
def weekly_summary(miles: str, runs: str) -> str:
    """Ask for a short summary of a week of running."""
    return f"I ran {miles} miles over {runs} runs this week. Summarise the week in two sentences."


class RunPlan(BaseModel):
    runs_per_week: int
    long_run_day: str


def _ask_plan() -> Elicit[RunPlan]:
    return Elicit("How would you like to train?", RunPlan)


@server.tool()
async def plan_week(goal: str, plan: Annotated[ElicitationResult[RunPlan], Resolve(_ask_plan)]) -> str:
    """Plan a week of running towards `goal`, asking the user how they like to train."""
    if not isinstance(plan, AcceptedElicitation):
        return f"no plan: the user chose to {plan.action}"
    answer = plan.data
    return f"{goal}: {answer.runs_per_week} runs, the long one on {answer.long_run_day}"


if __name__ == "__main__":
    server.run("stdio")
