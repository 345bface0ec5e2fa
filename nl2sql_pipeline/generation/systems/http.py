"""``kind: http``: the request POSTed (or PUT) as JSON to the system's URL, the JSON reply read back.

Header values may name environment variables (``Bearer ${TOKEN}``), substituted at call time; TLS
certificates are verified unless the entry says ``verify_tls: false``. A non-2xx status raises
``SystemHTTPError`` carrying the status, the headers (``Retry-After``) and the body's message, so that
``failures.classify_exception`` maps it as it maps a provider's (401/403 authentication, 402 payment,
429 rate limit, 5xx retried); transport errors keep their cause (connection refused, timeout, a
dropped connection). The body is read to its end: one shorter than its ``Content-Length``, or a chunked
stream that ends early, is a dropped connection (``TruncatedReplyError``, retried like one), and one over
``MAX_RESPONSE_BYTES`` is refused (``ReplyTooLargeError``, a ``provider_error`` "reply over N MiB"),
never silently cut.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.system_entry import ENV_REF_RE
from nl2sql_pipeline.generation.system_spec import SystemConfig

MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_READ_BLOCK = 64 * 1024


class MissingSecretError(GenerationError):
    """A header names an environment variable that is not set."""


@dataclass(frozen=True)
class _Response:
    """What ``classify_exception`` reads off an HTTP failure: status code and headers."""

    status_code: int
    headers: Any


class TruncatedReplyError(ConnectionResetError):
    """The reply's body ended before its ``Content-Length`` (or its last chunk): a dropped connection."""


class ReplyTooLargeError(GenerationError):
    """The reply's body is over ``MAX_RESPONSE_BYTES``: refused, not cut (a retry would send as much)."""


class SystemHTTPError(GenerationError):
    """The system answered with a non-2xx status."""

    def __init__(self, status_code: int, message: str, headers: Any):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.response = _Response(status_code, headers)


def header_env_vars(config: SystemConfig) -> list[str]:
    """The environment variables the entry's headers name (for readiness)."""
    return sorted({name for value in config.headers.values() for name in ENV_REF_RE.findall(value)})


def resolved_headers(config: SystemConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The headers with every ``${VAR}`` replaced from the environment; MissingSecretError if one is unset."""

    def substitute(match: Any) -> str:
        name = match.group(1)
        if not environ.get(name):
            raise MissingSecretError(f"environment variable {name} is not set (export it to call the system)")
        return environ[name]

    return {name: ENV_REF_RE.sub(substitute, value) for name, value in config.headers.items()}


def _error_message(body: bytes) -> str:
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return text


def _size_text(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MiB"


def read_body(response: http.client.HTTPResponse, url: str, limit: int | None = None) -> bytes:
    """The whole body, at most ``limit`` bytes (``MAX_RESPONSE_BYTES``).

    Raises TruncatedReplyError when the body is shorter than announced (``read(amt)`` alone returns the
    short body without a word), ReplyTooLargeError when it is (or is announced) over the limit.
    """
    limit = MAX_RESPONSE_BYTES if limit is None else limit
    announced = response.getheader("Content-Length")
    expected = int(announced) if announced is not None and announced.strip().isdigit() else None
    if expected is not None and expected > limit:
        raise ReplyTooLargeError(f"reply over {_size_text(limit)} from {url} (Content-Length {expected})")
    blocks: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            block = response.read(min(_READ_BLOCK, limit + 1 - size))
            if not block:
                break
            blocks.append(block)
            size += len(block)
    except http.client.IncompleteRead as exc:
        raise TruncatedReplyError(
            f"the reply from {url} ended early (chunked body cut after {size + len(exc.partial)} bytes)"
        ) from None  # http.client's cause ("invalid literal for int()") says less than this
    if size > limit:
        raise ReplyTooLargeError(f"reply over {_size_text(limit)} from {url}")
    if expected is not None and size < expected:
        raise TruncatedReplyError(f"the reply from {url} ended after {size} of {expected} bytes (Content-Length)")
    return b"".join(blocks)


def post(config: SystemConfig, payload: dict[str, Any], timeout_s: float) -> bytes:
    """Send ``payload``; the response body of a 2xx reply. Raises SystemHTTPError, or the transport error."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json", **resolved_headers(config)}
    request = urllib.request.Request(str(config.url), data=data, headers=headers, method=config.method)
    context = None
    if str(config.url).startswith("https:"):
        context = ssl.create_default_context()
        if not config.verify_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return read_body(response, str(config.url))
    except urllib.error.HTTPError as exc:
        body = exc.read() if exc.fp is not None else b""
        raise SystemHTTPError(exc.code, _error_message(body), exc.headers) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, BaseException):  # keep the transport cause (refused, timed out) for classification
            raise reason from exc
        raise ConnectionError(f"cannot reach {config.url}: {reason}") from exc
    except TimeoutError as exc:  # a read that outlived timeout_s
        raise TimeoutError(f"no reply from {config.url} within {timeout_s:g} s") from exc
