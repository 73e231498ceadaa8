"""One-time work of result validation, done during start-up instead of in somebody's first call.

The SDK validates a tool's result against the tool's output schema. It imports `jsonschema` on
the first result it validates (40-100 ms), and compiles each tool's validator on that tool's
first call (1-4 ms, about the cost of a whole call). The request models of tools/call,
resources/read and prompts/get are built by pydantic on their first use (about 1 ms each).
The imports and the models are done once per process on an executor thread beside the first
server's connect; each session then compiles its tools' validators on its loop, a tool at a
time between the loop's other work, after every listing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import threading
from typing import Any

import mcp_types
from mcp import Client

__all__ = ["ValidatorWarmer", "import_result_validation"]

logger = logging.getLogger("mcp_sync")

# Per listing, the tools whose validators are compiled ahead; a larger server's other tools compile
# on their first call, as without this.
MAX_WARM_TOOLS = 256

_imported: concurrent.futures.Future[None] | None = None
_imported_lock = threading.Lock()


# The request models pydantic builds on first use, and the hub sends on a caller's path.
_DEFERRED_MODELS = ("CallToolRequest", "ReadResourceRequest", "GetPromptRequest")


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


def import_result_validation(loop: asyncio.AbstractEventLoop) -> concurrent.futures.Future[None]:
    """The process's one import, started on `loop`'s executor by the first session that asks."""
    global _imported
    with _imported_lock:
        if _imported is None:
            imported = _imported = concurrent.futures.Future()
            task = loop.run_in_executor(None, _import)
            task.add_done_callback(lambda _done: imported.set_result(None))
        return _imported


class ValidatorWarmer:
    """Compiles the SDK's output-schema validator of each listed tool that has none yet (loop thread).

    This reaches into the SDK's `ClientSession` (its schema cache and its compile method); if
    those are gone, it does nothing and first calls compile as they always did.
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._listed = asyncio.Event()

    def listed(self) -> None:
        """The tools were (re)listed: compile what is new."""
        self._listed.set()

    async def run(self) -> None:
        """Wait for listings and compile after each, until cancelled with the session."""
        await asyncio.wrap_future(import_result_validation(asyncio.get_running_loop()))
        while True:
            await self._listed.wait()
            self._listed.clear()
            await self._compile_missing()

    async def _compile_missing(self) -> None:
        session = self._client.session
        schemas = getattr(session, "_tool_output_schemas", None)
        if not isinstance(schemas, dict) or not callable(getattr(session, "_output_schema_validator", None)):
            return
        for name in list(schemas)[:MAX_WARM_TOOLS]:
            # Read the cache again at each step: a listing between two steps may have changed a schema,
            # and a validator compiled for the old one would be kept for the new.
            schemas = getattr(session, "_tool_output_schemas", {})
            compiled = getattr(session, "_tool_output_validators", {})
            schema = schemas.get(name)
            if schema is not None and name not in compiled:
                try:
                    session._output_schema_validator(name, schema)
                except Exception as exc:  # an invalid schema: the tool's calls report it, as before
                    logger.debug("output schema of %r not compiled ahead: %s", name, exc)
                await asyncio.sleep(0)
