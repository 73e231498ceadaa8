"""A tiny 2025-era stdio MCP server, standard library only, that waits before it serves.

Its start costs almost no CPU: it sleeps `--delay` seconds (as a server that fetches a token or
warms a cache would), then answers the handshake, `tools/list` (one `echo` tool) and
`tools/call`. `bench_startup.py` uses it to show that a hub's start-up is parallel when the
servers' own start is not bound by the machine's CPU.

    python benchmarks/_slow_start_server.py [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC response to one request."""
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow-start", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [ECHO_TOOL]}
    elif method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:  # server/discover among them: a 2025-era server does not know it
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.5)
    time.sleep(parser.parse_args().delay)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:  # a request; notifications need no answer
            sys.stdout.write(json.dumps(answer(message)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
