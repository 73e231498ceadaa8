"""An HTTP endpoint that answers every request with a chosen status, for error-message tests.

Run as ``python status_server.py [--port N]`` (other flags, such as ``--transport http``, are
ignored, so `tests.support.HttpServer` can start it); it listens on 127.0.0.1 and prints one line
``LISTENING <port>``. The first path segment is the status to answer with (``/401/mcp`` answers
401). The body is a JSON-RPC error (code ``--code``, default -32000) that echoes the request's
``Authorization`` and ``X-Api-Key`` headers and its query string back, in its message and its
``data``, as a careless server might: the client must not repeat them.
"""

import argparse
import http.server
import json


class Handler(http.server.BaseHTTPRequestHandler):
    code = -32000

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path, _, query = self.path.partition("?")
        status = int(path.strip("/").split("/")[0])
        echoed = [self.headers.get("Authorization", ""), self.headers.get("X-Api-Key", ""), query]
        error = {"code": self.code, "message": f"rejected {' '.join(filter(None, echoed))}", "data": echoed}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--code", type=int, default=-32000)
    options, _ignored = parser.parse_known_args()
    Handler.code = options.code
    server = http.server.ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
