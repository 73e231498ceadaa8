"""mcp_sync: a blocking, thread-safe MCP client for synchronous Python.

Each configured MCP server runs its async `mcp` session on its own background
event-loop thread; `MCPHub` gives the caller one registry of namespaced tools
(`mcp__<server>__<tool>`), blocking calls with timeouts and cancellation that
reach the server, and callbacks when tools come and go.
"""

from ._config import (
    ConfigEntries,
    HttpServerConfig,
    InvalidServerEntry,
    ServerConfig,
    StdioServerConfig,
    load_config_entries,
    load_config_file,
    parse_server_configs,
    parse_server_entries,
)
from ._connection import ServerConnection, ServerState
from ._errors import (
    ConfigError,
    MCPSyncError,
    ServerDisconnectedError,
    ServerStartError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolListError,
    ToolNotFoundError,
)
from ._hub import MCPHub
from ._naming import public_tool_name
from ._registry import ToolRegistry
from ._results import ToolImage, ToolResult
from ._servers import UnusableServer
from ._tool import Tool, ToolChanges, function_spec

__version__ = "0.1.0"

__all__ = [
    "ConfigEntries",
    "ConfigError",
    "HttpServerConfig",
    "InvalidServerEntry",
    "MCPHub",
    "MCPSyncError",
    "ServerConfig",
    "ServerConnection",
    "ServerDisconnectedError",
    "ServerStartError",
    "ServerState",
    "StdioServerConfig",
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
    "UnusableServer",
    "function_spec",
    "load_config_entries",
    "load_config_file",
    "parse_server_configs",
    "parse_server_entries",
    "public_tool_name",
]
