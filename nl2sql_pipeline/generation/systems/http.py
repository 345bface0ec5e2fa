"""``kind: http``: the request POSTed (or PUT) as JSON to the system's URL, the JSON reply read back.

Header values may name environment variables (``Bearer ${TOKEN}``), substituted at call time; TLS
certificates are verified unless the entry says ``verify_tls: false``. A non-2xx status raises
``SystemHTTPError`` carrying the status, the headers (``Retry-After``) and the body's message, so that
``failures.classify_exception`` maps it as it maps a provider's (401/403 authentication, 402 payment,
429 rate limit, 5xx retried); transport errors keep their cause (connection refused, timeout, a
dropped connection).
"""

from __future__ import annotations

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


class MissingSecretError(GenerationError):
    """A header names an environment variable that is not set."""


@dataclass(frozen=True)
class _Response:
    """What ``classify_exception`` reads off an HTTP failure: status code and headers."""

    status_code: int
    headers: Any


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
            return response.read(MAX_RESPONSE_BYTES)
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
