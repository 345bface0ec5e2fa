"""A scripted OpenAI-compatible chat-completions server for tests and benchmarks (stdlib only).

    with FakeLLMServer(default=Reply.sql("SELECT 1")) as server:
        server.enqueue(Reply.error(500), Reply.sql("SELECT 2"))   # answered in order, then the default
        litellm.completion(model="openai/fake", api_base=server.api_base, api_key="x", messages=[...])
        assert server.hits == 1

Every ``POST .../chat/completions`` is one *hit*: it takes the next queued ``Reply`` (else asks
``responder(hit_index, body)``, else uses ``default``) and answers with it: a chat completion (with or
without ``usage``; ``Reply.json`` for a judge's structured reply), an OpenAI-style error body with any status and headers (``Retry-After``), after an
optional delay, or by dropping the connection. ``hold`` blocks a reply until an event is set (to
freeze a run half-way). The server listens on 127.0.0.1 with an ephemeral port, in a daemon thread;
``stop()`` closes the socket (clients then get *connection refused*) and ``start()`` binds the same
port again, so the ``api_base`` (part of a model's config hash) stays the same.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE: dict[str, int] = {"prompt_tokens": 111, "completion_tokens": 22, "total_tokens": 133}


@dataclass(frozen=True)
class Reply:
    """How the server answers one request."""

    content: str | None = "```sql\nSELECT 1 AS one\n```"
    status: int = 200
    usage: dict[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    error_message: str = "error"
    error_type: str | None = None
    error_code: str | None = None
    drop: bool = False  # close the connection without answering
    hold: threading.Event | None = None  # wait for this event before answering
    finish_reason: str = "stop"

    @classmethod
    def text(cls, content: str, *, usage: dict[str, int] | None | bool = True, delay_s: float = 0.0) -> Reply:
        """A 200 with ``content``; ``usage=False`` leaves usage out, a dict sets it."""
        if usage is True:
            usage_value: dict[str, int] | None = dict(DEFAULT_USAGE)
        elif usage is False:
            usage_value = None
        else:
            usage_value = usage  # type: ignore[assignment]
        return cls(content=content, usage=usage_value, delay_s=delay_s)

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        """A 200 whose content is ``value`` as JSON text (a judge's structured reply)."""
        return cls.text(json.dumps(value), **kwargs)

    @classmethod
    def sql(cls, sql: str, **kwargs: Any) -> Reply:
        """A 200 answering ``sql`` in a ```sql fence."""
        return cls.text(f"```sql\n{sql}\n```", **kwargs)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "error",
        *,
        error_type: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        """An OpenAI-style error body ``{"error": {"message", "type", "code"}}`` with ``status``."""
        return cls(
            content=None,
            status=status,
            error_message=message,
            error_type=error_type,
            error_code=code,
            headers=dict(headers or {}),
            delay_s=delay_s,
        )

    # ------------------------------------------------------------------ the provider failures tests need
    @classmethod
    def unauthorized(cls) -> Reply:
        return cls.error(
            401,
            "Incorrect API key provided: sk-***. You can find your API key at the dashboard.",
            error_type="invalid_request_error",
            code="invalid_api_key",
        )

    @classmethod
    def payment_required(cls) -> Reply:
        return cls.error(402, "Insufficient balance. Please add credits to continue.", error_type="billing_error")

    @classmethod
    def low_credit_400(cls) -> Reply:
        return cls.error(
            400,
            "Your credit balance is too low to access the API. Please go to Plans & Billing.",
            error_type="invalid_request_error",
        )

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1") -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls.error(
            429,
            "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1.",
            error_type="requests",
            code="rate_limit_exceeded",
            headers=headers,
        )

    @classmethod
    def daily_quota(cls) -> Reply:
        return cls.error(
            429,
            "Rate limit reached for requests per day (RPD): Limit 200, Used 200, Requested 1. "
            "Please try again in 7m12s.",
            error_type="requests",
            code="rate_limit_exceeded",
            headers={"Retry-After": "432"},
        )

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls.error(status, "The server had an error while processing your request.", error_type="server_error")

    @classmethod
    def unknown_model(cls) -> Reply:
        return cls.error(
            404,
            "The model `no-such-model` does not exist or you do not have access to it.",
            error_type="invalid_request_error",
            code="model_not_found",
        )

    @classmethod
    def context_window(cls) -> Reply:
        return cls.error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 9000 tokens. Please reduce the length of the messages.",
            error_type="invalid_request_error",
            code="context_length_exceeded",
        )

    @classmethod
    def content_filtered(cls) -> Reply:
        return cls.error(
            400,
            "The response was filtered due to the prompt triggering the content management policy.",
            error_type="invalid_request_error",
            code="content_filter",
        )


def last_user_message(body: dict[str, Any]) -> str:
    """The content of the last user message of a chat-completions request body."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def answer_by_question(
    answers: dict[str, str], *, unknown: Reply | None = None, delay_s: float = 0.0
) -> Callable[[int, dict[str, Any]], Reply]:
    """A responder replying with ``answers[question]`` (SQL, fenced) for the request's last user message
    (with prompt template nl2sql-v1 that message is the question itself); ``unknown`` otherwise."""
    fallback = unknown or Reply.text("I do not know how to answer that.")

    def respond(index: int, body: dict[str, Any]) -> Reply:
        sql = answers.get(last_user_message(body).strip())
        return Reply.sql(sql, delay_s=delay_s) if sql is not None else fallback

    return respond


@dataclass(frozen=True)
class RecordedRequest:
    """One hit: when it arrived (``time.time()``), its path, JSON body and headers (lower-case names)."""

    arrived: float
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeLLMServer:
    """The scripted server (a context manager: starts on enter, stops on exit)."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        default: Reply | None = None,
        responder: Callable[[int, dict[str, Any]], Reply | None] | None = None,
        port: int = 0,
        keep_alive: bool = False,
    ):
        self.default = default or Reply()
        self.responder = responder
        self._queue: deque[Reply] = deque(script)
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.answered = 0  # 200 replies fully written
        self.in_flight = 0  # requests received and not answered yet
        self.max_in_flight = 0
        self._port = port
        self.keep_alive = keep_alive  # HTTP/1.1 connections reused (as real providers do); stop() then
        # refuses new connections only, so tests that stop the server keep the default HTTP/1.0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeLLMServer:
        """Listen (on the same port as before after a ``stop``) and serve in a daemon thread."""
        if self._server is not None:
            return self
        protocol = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
        handler = type("ScriptedHandler", (_Handler,), {"fake": self, "protocol_version": protocol})
        server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        server.daemon_threads = True
        self._port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (new connections are refused)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def api_base(self) -> str:
        """``http://127.0.0.1:<port>/v1``, for ``litellm.completion(api_base=...)``."""
        return f"http://127.0.0.1:{self._port}/v1"

    # ------------------------------------------------------------------ script and observations
    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def hits(self) -> int:
        """Chat-completion requests received so far."""
        with self._lock:
            return len(self.requests)

    def arrival_times(self) -> list[float]:
        with self._lock:
            return [r.arrived for r in self.requests]

    def wait_for_hits(self, count: int, timeout_s: float = 10.0) -> bool:
        """Block until ``count`` hits arrived (False on timeout)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.hits >= count:
                return True
            time.sleep(0.005)
        return False

    def _next_reply(self, body: dict[str, Any], path: str, headers: dict[str, str]) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(RecordedRequest(time.time(), path, body, headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            reply = self.responder(index, body)
            if reply is not None:
                return reply
        return self.default

    def _mark_answered(self) -> None:
        with self._lock:
            self.answered += 1

    def _mark_done(self) -> None:
        with self._lock:
            self.in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.0"  # one request per connection: after stop() every new call is refused
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]}, {})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "body is not JSON"}}, {})
            return
        try:
            reply = self.fake._next_reply(body, self.path, {k.lower(): v for k, v in self.headers.items()})
            self._answer(body, reply)
        finally:
            self.fake._mark_done()

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        if reply.hold is not None:
            reply.hold.wait()
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply.status != 200:
            error = {"message": reply.error_message, "type": reply.error_type, "code": reply.error_code, "param": None}
            self._send(reply.status, {"error": error}, reply.headers)
            return
        payload: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.fake.hits}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage is not None:
            payload["usage"] = reply.usage
        if self._send(200, payload, reply.headers):
            self.fake._mark_answered()

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> bool:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away (timed out, killed)
            return False
        return True
