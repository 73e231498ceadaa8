"""mcp_sync: a blocking, thread-safe MCP client for synchronous Python.

Each configured MCP server runs its async `mcp` session on its own background
event-loop thread; `MCPHub` gives the caller one registry of namespaced tools
(`mcp__<server>__<tool>`), blocking calls with timeouts and cancellation that
reach the server, and callbacks when tools come and go; the servers' resources and
prompts in one view, and their requests (elicitation, sampling, roots, log messages)
answered by plain Python handlers.
"""

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
    load_config_file,
    load_host_entries,
    parse_server_configs,
    parse_server_entries,
)
from ._handlers import openai_sampling, terminal_elicitation
from ._hub.connection import ServerConnection, ServerState
from ._hub.hub import MCPHub
from ._hub.hub_features import Completion
from ._hub.registry import ToolRegistry
from ._hub.reload import ReloadResult
from ._hub.servers import UnusableServer
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
    ToolCallCancelledError,
    ToolCallError,
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
from ._values.tool import Tool, ToolChanges, function_spec
from ._values.version import __version__ as __version__

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
    "UnresolvedInputError",
    "UnsupportedFeatureError",
    "UnusableServer",
    "decline_elicitation",
    "function_spec",
    "load_config_entries",
    "load_config_file",
    "load_host_entries",
    "openai_sampling",
    "parse_server_configs",
    "parse_server_entries",
    "public_tool_name",
    "terminal_elicitation",
]
