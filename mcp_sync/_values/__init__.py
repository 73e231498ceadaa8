"""Plain values both sides share: tools, results, resources, prompts, names, errors, and their rendering.

Nothing here starts a thread, holds a connection or waits: a value made on a server's loop thread is
read on callers' threads as it is. One piece of process-wide state lives here, the registry of known
secret values (`secrets`), because every layer scrubs text with it; `scrubbed_errors` scrubs an
error's chain. May import: the standard library, `mcp`'s types and pydantic only; nothing else of
mcp_sync.
"""
