"""mcp_sync: a blocking, thread-safe MCP client for synchronous Python.

Each configured MCP server runs its async `mcp` session on its own background
event-loop thread; `MCPHub` gives the caller one registry of namespaced tools
(`mcp__<server>__<tool>`), blocking calls with timeouts and cancellation that
reach the server, and callbacks when tools come and go; the servers' resources and
prompts in one view, and their requests (elicitation, sampling, roots, log messages)
answered by plain Python handlers.
"""

# The public names are imported on first use (PEP 562), so that importing a light submodule (the command
# line's parser) does not import the `mcp` SDK; `from mcp_sync import X` is unchanged.

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._values.version import __version__ as __version__

if TYPE_CHECKING:
    from ._auth.token_store import FileTokenStorage, TokenStorage
    from ._config import (
        AuthConfig,
        ConfigEntries,
        HostInput,
        HttpServerConfig,
        InvalidServerEntry,
        ReconnectConfig,
        ServerConfig,
        SseServerConfig,
        StdioServerConfig,
        load_config_entries,
        load_host_entries,
        parse_server_entries,
    )
    from ._handlers import openai_sampling, terminal_approval, terminal_elicitation
    from ._hub.connection import ServerConnection, ServerState
    from ._hub.hub import MCPHub
    from ._hub.hub_features import Completion
    from ._hub.registry import ToolRegistry
    from ._hub.reload import ReloadResult
    from ._hub.tasks import TaskHandle
    from ._server.server_requests import (
        ElicitationRequest,
        ElicitationResponse,
        SamplingRequest,
        SamplingResponse,
        decline_elicitation,
    )
    from ._values.errors import (
        AmbiguousResourceError,
        AuthError,
        ConfigError,
        MCPSyncError,
        PromptNotFoundError,
        ResourceNotFoundError,
        ServerDisconnectedError,
        ServerStartError,
        SignInRequiredError,
        TaskCancelRefusedError,
        TaskNotFoundError,
        ToolApprovalDeniedError,
        ToolApprovalError,
        ToolApprovalRequiredError,
        ToolCallCancelledError,
        ToolCallError,
        ToolCallMayHaveRunError,
        ToolCallTimeoutError,
        ToolListError,
        ToolNotFoundError,
        UnresolvedInputError,
        UnsupportedFeatureError,
    )
    from ._values.naming import public_tool_name
    from ._values.prompts import Prompt, PromptArgument, PromptMessage, PromptResult
    from ._values.resources import Resource, ResourceContent, ResourceResult, ResourceTemplate
    from ._values.results import ToolImage, ToolResult
    from ._values.tasks import TaskInfo, TaskStatus
    from ._values.tool import Tool, ToolAnnotations, ToolChanges, function_spec

__all__ = [
    "AmbiguousResourceError",
    "AuthConfig",
    "AuthError",
    "Completion",
    "ConfigEntries",
    "ConfigError",
    "ElicitationRequest",
    "ElicitationResponse",
    "FileTokenStorage",
    "HostInput",
    "HttpServerConfig",
    "InvalidServerEntry",
    "MCPHub",
    "MCPSyncError",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptNotFoundError",
    "PromptResult",
    "ReconnectConfig",
    "ReloadResult",
    "Resource",
    "ResourceContent",
    "ResourceNotFoundError",
    "ResourceResult",
    "ResourceTemplate",
    "SamplingRequest",
    "SamplingResponse",
    "ServerConfig",
    "ServerConnection",
    "ServerDisconnectedError",
    "ServerStartError",
    "ServerState",
    "SignInRequiredError",
    "SseServerConfig",
    "StdioServerConfig",
    "TaskCancelRefusedError",
    "TaskHandle",
    "TaskInfo",
    "TaskNotFoundError",
    "TaskStatus",
    "TokenStorage",
    "Tool",
    "ToolAnnotations",
    "ToolApprovalDeniedError",
    "ToolApprovalError",
    "ToolApprovalRequiredError",
    "ToolCallCancelledError",
    "ToolCallError",
    "ToolCallMayHaveRunError",
    "ToolCallTimeoutError",
    "ToolChanges",
    "ToolImage",
    "ToolListError",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResult",
    "UnresolvedInputError",
    "UnsupportedFeatureError",
    "decline_elicitation",
    "function_spec",
    "load_config_entries",
    "load_host_entries",
    "openai_sampling",
    "parse_server_entries",
    "public_tool_name",
    "terminal_approval",
    "terminal_elicitation",
]

# Public name -> the module that defines it, the same imports as the `TYPE_CHECKING` block above.
_MODULE_OF = MappingProxyType(
    {
        "AmbiguousResourceError": "_values.errors",
        "AuthConfig": "_config",
        "AuthError": "_values.errors",
        "Completion": "_hub.hub_features",
        "ConfigEntries": "_config",
        "ConfigError": "_values.errors",
        "ElicitationRequest": "_server.server_requests",
        "ElicitationResponse": "_server.server_requests",
        "FileTokenStorage": "_auth.token_store",
        "HostInput": "_config",
        "HttpServerConfig": "_config",
        "InvalidServerEntry": "_config",
        "MCPHub": "_hub.hub",
        "MCPSyncError": "_values.errors",
        "Prompt": "_values.prompts",
        "PromptArgument": "_values.prompts",
        "PromptMessage": "_values.prompts",
        "PromptNotFoundError": "_values.errors",
        "PromptResult": "_values.prompts",
        "ReconnectConfig": "_config",
        "ReloadResult": "_hub.reload",
        "Resource": "_values.resources",
        "ResourceContent": "_values.resources",
        "ResourceNotFoundError": "_values.errors",
        "ResourceResult": "_values.resources",
        "ResourceTemplate": "_values.resources",
        "SamplingRequest": "_server.server_requests",
        "SamplingResponse": "_server.server_requests",
        "ServerConfig": "_config",
        "ServerConnection": "_hub.connection",
        "ServerDisconnectedError": "_values.errors",
        "ServerStartError": "_values.errors",
        "ServerState": "_hub.connection",
        "SignInRequiredError": "_values.errors",
        "SseServerConfig": "_config",
        "StdioServerConfig": "_config",
        "TaskCancelRefusedError": "_values.errors",
        "TaskHandle": "_hub.tasks",
        "TaskInfo": "_values.tasks",
        "TaskNotFoundError": "_values.errors",
        "TaskStatus": "_values.tasks",
        "TokenStorage": "_auth.token_store",
        "Tool": "_values.tool",
        "ToolAnnotations": "_values.tool",
        "ToolApprovalDeniedError": "_values.errors",
        "ToolApprovalError": "_values.errors",
        "ToolApprovalRequiredError": "_values.errors",
        "ToolCallCancelledError": "_values.errors",
        "ToolCallError": "_values.errors",
        "ToolCallMayHaveRunError": "_values.errors",
        "ToolCallTimeoutError": "_values.errors",
        "ToolChanges": "_values.tool",
        "ToolImage": "_values.results",
        "ToolListError": "_values.errors",
        "ToolNotFoundError": "_values.errors",
        "ToolRegistry": "_hub.registry",
        "ToolResult": "_values.results",
        "UnresolvedInputError": "_values.errors",
        "UnsupportedFeatureError": "_values.errors",
        "decline_elicitation": "_server.server_requests",
        "function_spec": "_values.tool",
        "load_config_entries": "_config",
        "load_host_entries": "_config",
        "openai_sampling": "_handlers",
        "parse_server_entries": "_config",
        "public_tool_name": "_values.naming",
        "terminal_approval": "_handlers",
        "terminal_elicitation": "_handlers",
    }
)


# Old public name -> (what to use instead, where the old object is). Each still works for one release
# and warns when it is imported; none is bound here, so each import warns.
_DEPRECATED = MappingProxyType(
    {
        "UnusableServer": ("InvalidServerEntry (the one name for an entry that cannot be used)", "_config"),
        "load_config_file": ("load_config_entries(path, strict=True).configs", "_config"),
        "parse_server_configs": ("parse_server_entries(servers, strict=True).configs", "_config"),
    }
)
_OLD_OBJECT = MappingProxyType({"UnusableServer": "InvalidServerEntry"})


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        import sys
        import warnings
        from importlib import import_module

        instead, where = _DEPRECATED[name]
        # `from mcp_sync import old` looks it up twice: importlib's `hasattr` probe of the names asked
        # for (`_handle_fromlist`), then the import itself. Only the import warns.
        if sys._getframe(1).f_code.co_name != "_handle_fromlist":
            warnings.warn(
                f"mcp_sync.{name} is deprecated and will be removed in the next release; use {instead}",
                DeprecationWarning,
                stacklevel=2,
            )
        return getattr(import_module(f"{__name__}.{where}"), _OLD_OBJECT.get(name, name))
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    """The public API and the module's dunders: not the submodules importing binds here, nor the helpers
    this module imports for itself."""
    dunders = (name for name in globals() if name.startswith("__") and name.endswith("__"))
    return sorted({*dunders, *__all__})
