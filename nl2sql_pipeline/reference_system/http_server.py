"""The reference system as an HTTP service: ``POST /nl2sql`` with a contract request, a contract response back.

    python -m nl2sql_pipeline.reference_system.http_server --host 127.0.0.1 --port 8765

Registered as ``kind: http`` with ``url: http://127.0.0.1:8765/nl2sql``. A failure the system reports
(``error`` with a status) is also sent with that HTTP status, so the harness reads it either way.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nl2sql_pipeline.reference_system.service import answer_json

logger = logging.getLogger(__name__)
PATH = "/nl2sql"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format, *args)

    def do_POST(self) -> None:
        if self.path.rstrip("/") != PATH:
            self._send(404, {"error": {"message": f"no route {self.path}; POST {PATH}", "status": 404}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            self._send(400, {"error": {"message": f"request is not JSON: {exc}", "status": 400}})
            return
        reply: dict[str, Any] = (
            answer_json(data) if isinstance(data, dict) else {"error": {"message": "not an object", "status": 400}}
        )
        error = reply.get("error")
        self._send(int(error.get("status") or 500) if isinstance(error, dict) else 200, reply)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def make_server(host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    """A server bound to (host, port) (port 0: an ephemeral one), not yet serving."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server


def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Start serving in a daemon thread (tests); ``server.shutdown()`` stops it."""
    server = make_server(host, port)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The reference NL2SQL system over HTTP (POST /nl2sql).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    server = make_server(args.host, args.port)
    logger.info("reference system listening on http://%s:%d%s", args.host, server.server_address[1], PATH)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
