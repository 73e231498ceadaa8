"""The hub, callers' side: what runs on the threads that call mcp_sync (a script, a notebook, a pool).

`MCPHub` (`hub`, with the resources/prompts mixin `hub_features`), its set of servers and their
lifecycle (`servers`, `reload`, `reconnect`), each server's connection as callers see it
(`connection`), the tool registry and the catalog the loop sides write to (`registry`, `catalog`),
native Python tools (`native`), and agent-loop helpers (`agent`, `resource_tool`).

Calls block here on a future or a lock and are run by a server's loop (`_server`). May import
every folder below it: `_values`, `_os`, `_runtime`, the configuration, `_auth`, `_server`.
"""
