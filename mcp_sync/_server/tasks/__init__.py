"""Long-running calls as MCP tasks, on the loop side: one wire per protocol era and the runner that
drives a task from creation to its result (polling, status messages, input, cancellation)."""
