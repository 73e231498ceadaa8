"""Adapters that hand a hub's tools to agent frameworks, one module per framework.

    mcp_sync.integrations.langchain    langchain_tools(hub)    LangChain / LangGraph `StructuredTool`s
    mcp_sync.integrations.smolagents   smolagents_tools(hub)   smolagents `Tool`s; `HubToolCollection`
    mcp_sync.integrations.llamaindex   llamaindex_tools(hub)   LlamaIndex `FunctionTool`s; `HubToolRetriever`
    mcp_sync.integrations.dspy         dspy_tools(hub)         DSPy `Tool`s, for `dspy.ReAct`
    mcp_sync.integrations.haystack     HubToolset(hub)         a Haystack `Toolset` that follows the registry

Each module imports its framework when it is imported itself (install it with the extra of the same name,
e.g. `pip install 'mcp-syncio[langchain]'`); importing `mcp_sync` or this package imports none.
Every adapter keeps the hub's guarantees: per-call timeouts and cancellation that reach the server,
public names `mcp__<server>__<tool>` (or raw names on request, refused when two tools would share one),
and a fresh tool list each time it is asked, so agents see tools that come and go. With `discovery=True`
each offers the hub's search and call tools (and the `pinned` ones) in place of all.
"""

from ._common import ExposedTool, ToolFilter, ToolResultError

__all__ = ["ExposedTool", "ToolFilter", "ToolResultError"]
