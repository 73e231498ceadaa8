"""One-time work of result validation, done during start-up instead of in somebody's first call.

The SDK validates a tool's result against the tool's output schema. It imports `jsonschema` on
the first result it validates (40-100 ms), and compiles each tool's validator on that tool's
first call (1-4 ms, about the cost of a whole call). The request models of tools/call,
resources/read and prompts/get, and the checks of their results at the session's protocol version, are
built by pydantic on their first use (about 1 ms each).
The imports and the models are done once per process on a thread of their own (`RESULT_VALIDATION`,
a `OncePerProcess`: no connection owns it, so none can leave it pending or cancel it), started
by the first session; each session then compiles its tools' validators on its loop, a tool at a
time between the loop's other work, after every listing, through the session's public
`validate_tool_result`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

import mcp_types
import pydantic
from mcp import Client
from mcp_types import methods

from .._runtime.lifecycle import OncePerProcess
from .._values.tool import Tool

__all__ = ["RESULT_VALIDATION", "ValidatorWarmer", "build_result_checks"]

logger = logging.getLogger("mcp_sync")

# Per listing, the tools whose validators are compiled ahead; a larger server's other tools compile
# on their first call, as without this.
MAX_WARM_TOOLS = 256

# The request models pydantic builds on first use, and the hub sends on a caller's path.
_DEFERRED_MODELS = ("CallToolRequest", "ReadResourceRequest", "GetPromptRequest")
# The results the SDK checks each answer of these requests against (its protocol version's shape), with
# the least such a result holds at any version (a version ignores fields it lacks); pydantic builds each
# check once per process and version, on first use.
_RESULT_SHAPES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tools/call", {"content": [], "resultType": "complete"}),
    ("resources/read", {"contents": [], "resultType": "complete", "cacheScope": "private", "ttlMs": 0}),
    ("prompts/get", {"messages": [], "resultType": "complete"}),
)


def _import() -> None:
    """Import what the SDK's result validation uses, and compile one schema the way it does (the
    first compile also builds the metaschema's own validator); build the deferred request models."""
    for name in _DEFERRED_MODELS:
        model = getattr(mcp_types, name, None)
        if model is not None:
            model.model_rebuild()
    for module in ("jsonschema.exceptions", "referencing.exceptions"):
        importlib.import_module(module)
    validators: Any = importlib.import_module("jsonschema.validators")
    registry: Any = importlib.import_module("referencing").Registry
    schema = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    validator_class = validators.validator_for(schema)
    validator_class.check_schema(schema)
    list(validator_class(schema, registry=registry()).iter_errors({"result": 1}))


def _run_import() -> None:
    _import()  # looked up when it runs, so a test can replace the work (a path no server can produce)


RESULT_VALIDATION = OncePerProcess("result validation warm-up", _run_import)
"""The process's one import; sessions `start()` it and wait for it, bounded (`OncePerProcess`)."""


class ValidatorWarmer:
    """Has the SDK compile the output-schema validator of each listed tool ahead of its first call
    (loop thread); `listed_tools()` gives the tools of the server's current listing."""

    def __init__(self, client: Client, listed_tools: Callable[[], Iterable[Tool]], wait_limit: float) -> None:
        self._client = client
        self._listed_tools = listed_tools
        self._wait_limit = wait_limit
        self._listed = asyncio.Event()
        self._warmed: dict[str, Any] = {}  # raw name -> the output schema its validator was compiled for

    def listed(self) -> None:
        """The tools were (re)listed: compile what is new."""
        self._listed.set()

    async def run(self) -> None:
        """Wait for listings and compile after each, until cancelled with the session."""
        await RESULT_VALIDATION.wait(self._wait_limit)  # the imports off this loop first, if they come
        while True:
            await self._listed.wait()
            self._listed.clear()
            await self._compile_missing()

    async def _compile_missing(self) -> None:
        session = self._client.session
        # Validating a result builds and caches the tool's validator; this probe (an empty structured
        # content) is refused, and the refusal is all it does.
        probe = mcp_types.CallToolResult(content=[], structured_content={})
        schemas = {
            tool.raw_name: tool.output_schema
            for tool in self._listed_tools()
            if tool.raw_name is not None and tool.output_schema is not None
        }
        self._warmed = {name: schema for name, schema in self._warmed.items() if name in schemas}
        for name, schema in list(schemas.items())[:MAX_WARM_TOOLS]:
            if self._listed.is_set():
                # A newer listing came in between two steps: the SDK asks the server again for a tool
                # it no longer knows, so these tools wait for the next round, which takes the new one.
                return
            if self._warmed.get(name) == schema:
                continue
            try:
                await session.validate_tool_result(name, probe)
            except RuntimeError:  # the probe refused, or an invalid schema that the tool's calls report
                pass
            except Exception as exc:
                logger.debug("output schema of %r not compiled ahead: %s", name, exc)
            self._warmed[name] = schema
            await asyncio.sleep(0)


def build_result_checks(version: str) -> None:
    """Have pydantic build the SDK's check of each `_RESULT_SHAPES` result at `version` (about 1 ms each,
    once per process and version): a session does it before it is ready, not in a caller's first call."""
    for method, result in _RESULT_SHAPES:
        try:
            methods.validate_server_result(method, version, result)
        except (KeyError, ValueError, pydantic.ValidationError) as exc:  # not a method of that version
            logger.debug("the check of %s results at %s not built ahead: %s", method, version, exc)
