"""Signing in to remote servers: the `httpx2.Auth` a connection uses (`server_auth`, `user_oauth`,
`machine_oauth`), the stored tokens (`tokens`, `token_store`), and the interactive sign-in
(`sign_in`, `redirect`).

A connection's auth runs on its server's loop thread; a sign-in runs on a loop thread of its own
(`mcp-sync:login:<server>`). May import: `_values`, `_os` and the configuration (`_config`) only.
"""
