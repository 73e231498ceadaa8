"""One server, its loop side: everything that runs on the server's event-loop thread `mcp-sync:<server>`.

The session that owns the `mcp.Client` (`session`), its transports and stdio child process
(`transports`, `stdio`), keeping its tools and catalog in sync (`tool_sync`, `catalog_sync`), the
server's requests to the client (`server_requests`), its resources, prompts and subscriptions
(`features`: the loop side, and the blocking entry points callers use to hand work to that loop),
and the one-time warm-up its first session starts (`warm_up`).

It writes to the hub's registry and catalog only through the protocols in `leases`. May import:
`_values`, `_os`, `_runtime`, the configuration and `_auth`; never `_hub` (the callers' side).
"""
