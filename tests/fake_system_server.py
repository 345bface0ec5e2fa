"""A scripted NL2SQL system on loopback for tests (stdlib only): answers ``POST /nl2sql`` as told.

    with FakeSystem(default=SystemReply.sql("SELECT 1")) as system:
        system.enqueue(SystemReply.status(500), SystemReply.sql("SELECT 2"))   # in order, then the default

Each reply is a status, a body (a contract response, an error object, or raw bytes such as malformed
JSON), headers (``Retry-After``) and an optional delay; ``cut_at`` sends only that many bytes of the body
and closes the connection (``Content-Length`` still announces the whole), ``chunked`` sends the body
chunked (cut: without its last chunk). ``responder(index, request)`` may decide
instead (e.g. answer each question with its gold SQL). ``stop()`` closes the socket (connection refused).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class SystemReply:
    """How the fake system answers one request."""

    status: int = 200
    body: Any = None  # a JSON-able object, or bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    cut_at: int | None = None  # send only this many bytes of the body, then close
    chunked: bool = False  # Transfer-Encoding: chunked instead of Content-Length

    @classmethod
    def sql(cls, sql: str | None, **fields: Any) -> SystemReply:
        return cls(body={"contract": "nl2sql-system/1", "sql": sql, **fields})

    @classmethod
    def error(cls, status: int, message: str, headers: dict[str, str] | None = None) -> SystemReply:
        return cls(status=status, body={"error": {"message": message}}, headers=dict(headers or {}))


class FakeSystem:
    """The scripted system (a context manager: starts on enter, stops on exit)."""

    def __init__(
        self,
        script: tuple[SystemReply, ...] = (),
        *,
        default: SystemReply | None = None,
        responder: Callable[[int, dict[str, Any]], SystemReply | None] | None = None,
    ):
        self.default = default or SystemReply.sql("SELECT 1 AS one")
        self.responder = responder
        self._queue: deque[SystemReply] = deque(script)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._server: ThreadingHTTPServer | None = None
        self._port = 0

    def start(self) -> FakeSystem:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> FakeSystem:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/nl2sql"

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def enqueue(self, *replies: SystemReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> SystemReply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            reply = self.responder(index, body)
            if reply is not None:
                return reply
        return self.default


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSystem
    protocol_version = "HTTP/1.0"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        reply = self.fake._next(body, {k.lower(): v for k, v in self.headers.items()})
        if reply.delay_s:
            time.sleep(reply.delay_s)
        data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            if reply.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            sent = data if reply.cut_at is None else data[: reply.cut_at]
            if reply.chunked:
                if sent:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(sent), sent))
                if reply.cut_at is None:
                    self.wfile.write(b"0\r\n\r\n")
            else:
                self.wfile.write(sent)
        except OSError:  # the client gave up (timeout)
            pass
