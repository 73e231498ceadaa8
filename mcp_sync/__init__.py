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

if TYPE_CHECKING:
    from ._config import (
        AuthConfig,
        ConfigEntries,
        HttpServerConfig,
        InvalidServerEntry,
        ReconnectConfig,
        ServerConfig,
        StdioServerConfig,
        load_config_entries,
        load_config_file,
        parse_server_configs,
        parse_server_entries,
    )
    from ._connection import ServerConnection, ServerState
    from ._errors import (
        AmbiguousResourceError,
        AuthError,
        ConfigError,
        MCPSyncError,
        PromptNotFoundError,
        ResourceNotFoundError,
        ServerDisconnectedError,
        ServerStartError,
        SignInRequiredError,
        ToolCallCancelledError,
        ToolCallError,
        ToolCallTimeoutError,
        ToolListError,
        ToolNotFoundError,
        UnsupportedFeatureError,
    )
    from ._handlers import openai_sampling, terminal_elicitation
    from ._hub import MCPHub
    from ._hub_features import Completion
    from ._naming import public_tool_name
    from ._prompts import Prompt, PromptArgument, PromptMessage, PromptResult
    from ._registry import ToolRegistry
    from ._reload import ReloadResult
    from ._resources import Resource, ResourceContent, ResourceResult, ResourceTemplate
    from ._results import ToolImage, ToolResult
    from ._server_requests import (
        ElicitationRequest,
        ElicitationResponse,
        SamplingRequest,
        SamplingResponse,
        decline_elicitation,
    )
    from ._servers import UnusableServer
    from ._token_store import FileTokenStorage, TokenStorage
    from ._tool import Tool, ToolChanges, function_spec

__version__ = "0.1.0"

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
    "StdioServerConfig",
    "TokenStorage",
    "Tool",
    "ToolCallCancelledError",
    "ToolCallError",
    "ToolCallTimeoutError",
    "ToolChanges",
    "ToolImage",
    "ToolListError",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResult",
    "UnsupportedFeatureError",
    "UnusableServer",
    "decline_elicitation",
    "function_spec",
    "load_config_entries",
    "load_config_file",
    "openai_sampling",
    "parse_server_configs",
    "parse_server_entries",
    "public_tool_name",
    "terminal_elicitation",
]

# Public name -> the module that defines it, the same imports as the `TYPE_CHECKING` block above.
_MODULE_OF = MappingProxyType(
    {
        "AmbiguousResourceError": "_errors",
        "AuthConfig": "_config",
        "AuthError": "_errors",
        "Completion": "_hub_features",
        "ConfigEntries": "_config",
        "ConfigError": "_errors",
        "ElicitationRequest": "_server_requests",
        "ElicitationResponse": "_server_requests",
        "FileTokenStorage": "_token_store",
        "HttpServerConfig": "_config",
        "InvalidServerEntry": "_config",
        "MCPHub": "_hub",
        "MCPSyncError": "_errors",
        "Prompt": "_prompts",
        "PromptArgument": "_prompts",
        "PromptMessage": "_prompts",
        "PromptNotFoundError": "_errors",
        "PromptResult": "_prompts",
        "ReconnectConfig": "_config",
        "ReloadResult": "_reload",
        "Resource": "_resources",
        "ResourceContent": "_resources",
        "ResourceNotFoundError": "_errors",
        "ResourceResult": "_resources",
        "ResourceTemplate": "_resources",
        "SamplingRequest": "_server_requests",
        "SamplingResponse": "_server_requests",
        "ServerConfig": "_config",
        "ServerConnection": "_connection",
        "ServerDisconnectedError": "_errors",
        "ServerStartError": "_errors",
        "ServerState": "_connection",
        "SignInRequiredError": "_errors",
        "StdioServerConfig": "_config",
        "TokenStorage": "_token_store",
        "Tool": "_tool",
        "ToolCallCancelledError": "_errors",
        "ToolCallError": "_errors",
        "ToolCallTimeoutError": "_errors",
        "ToolChanges": "_tool",
        "ToolImage": "_results",
        "ToolListError": "_errors",
        "ToolNotFoundError": "_errors",
        "ToolRegistry": "_registry",
        "ToolResult": "_results",
        "UnsupportedFeatureError": "_errors",
        "UnusableServer": "_servers",
        "decline_elicitation": "_server_requests",
        "function_spec": "_tool",
        "load_config_entries": "_config",
        "load_config_file": "_config",
        "openai_sampling": "_handlers",
        "parse_server_configs": "_config",
        "parse_server_entries": "_config",
        "public_tool_name": "_naming",
        "terminal_elicitation": "_handlers",
    }
)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
