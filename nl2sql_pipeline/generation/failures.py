"""Why a model call failed: provider exceptions classified by cause, from status code and message.

litellm's exception classes are not a reliable taxonomy on their own (a 402 is a plain ``APIError``,
connection refused is an ``InternalServerError`` saying "Connection error.", a daily quota and a
per-minute limit are both ``RateLimitError``), so ``classify_exception`` looks at the underlying cause
chain first (connection refused, timeouts, dropped connections), then the HTTP status code, then the
provider's message.

The classes, and what the evaluation makes of them:

=========================  ===========================================  ===========  ========  ==========
class                      cause                                        outcome      retried   stops run
=========================  ===========================================  ===========  ========  ==========
authentication_error       401/403: bad, missing or unauthorised key    skipped      no        yes
payment_required           402, or a 400/429 about credit or billing    skipped      no        yes
daily_quota_exhausted      429 naming a per-day quota                   skipped      no        yes
connection_refused         nothing listening / host unreachable         skipped      no        no
unknown_model              404 or "model ... does not exist"            skipped      no        yes
not_ready                  key or server missing: nothing was sent      skipped      no        (never sent)
rate_limited               429 (per-minute limits)                      gen. error   yes       no
provider_error             5xx, dropped connection, anything unknown    gen. error   5xx/drop  no
timeout                    no reply within the model's ``timeout_s``    gen. error   no        no
context_window_exceeded    the prompt is longer than the model accepts  gen. error   no        no
content_filtered           the provider's content filter refused        gen. error   no        no
bad_request                any other 4xx                                gen. error   no        no
no_sql                     the reply holds no SQL                       gen. error   no        no
conversion_failed          a replayed prediction does not convert to    gen. error   no        no
                           DuckDB from its source dialect
=========================  ===========================================  ===========  ========  ==========

"skipped" classes are the environment's fault: ``nl2sql_pipeline.stages.outcomes.ENVIRONMENT_GENERATION_ERRORS``
must list exactly ``ENVIRONMENT_ERROR_CLASSES`` (a test checks it). A class that "stops run" makes the
generate loop send nothing more: every case not yet answered is recorded with that class, unsent.
"""

from __future__ import annotations

import email.utils
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

AUTHENTICATION_ERROR = "authentication_error"
PAYMENT_REQUIRED = "payment_required"
DAILY_QUOTA_EXHAUSTED = "daily_quota_exhausted"
CONNECTION_REFUSED = "connection_refused"
UNKNOWN_MODEL = "unknown_model"
NOT_READY = "not_ready"
RATE_LIMITED = "rate_limited"
PROVIDER_ERROR = "provider_error"
TIMEOUT = "timeout"
CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
CONTENT_FILTERED = "content_filtered"
BAD_REQUEST = "bad_request"
NO_SQL = "no_sql"
CONVERSION_FAILED = "conversion_failed"

ERROR_CLASSES: tuple[str, ...] = (
    AUTHENTICATION_ERROR,
    PAYMENT_REQUIRED,
    DAILY_QUOTA_EXHAUSTED,
    CONNECTION_REFUSED,
    UNKNOWN_MODEL,
    NOT_READY,
    RATE_LIMITED,
    PROVIDER_ERROR,
    TIMEOUT,
    CONTEXT_WINDOW_EXCEEDED,
    CONTENT_FILTERED,
    BAD_REQUEST,
    NO_SQL,
    CONVERSION_FAILED,
)
# Not the model's doing: the verdict is ``skipped`` and the case leaves every denominator.
ENVIRONMENT_ERROR_CLASSES: frozenset[str] = frozenset(
    {AUTHENTICATION_ERROR, PAYMENT_REQUIRED, DAILY_QUOTA_EXHAUSTED, CONNECTION_REFUSED, UNKNOWN_MODEL, NOT_READY}
)
# The first of these ends the run's calls: the same request would fail for every remaining case.
RUN_STOPPING_CLASSES: frozenset[str] = frozenset(
    {AUTHENTICATION_ERROR, PAYMENT_REQUIRED, DAILY_QUOTA_EXHAUSTED, UNKNOWN_MODEL}
)

_DAILY_RE = re.compile(
    r"per[ _-]?day|\bdaily\b|\bRPD\b|\bTPD\b|requests? per day|tokens? per day|per 24 ?h|PerDay", re.IGNORECASE
)
# Narrow on purpose: OpenAI's per-minute 429s mention "adding a payment method ... billing" too.
_BILLING_RE = re.compile(
    r"insufficient[ _](?:quota|funds|credits?|balance)|exceeded your current quota|credit balance|out of credits?"
    r"|add (?:more )?credits|payment required|requires more credits|not enough credits|balance is too low"
    r"|top[ -]?up your",
    re.IGNORECASE,
)
_CONTEXT_RE = re.compile(
    r"context[ _]?(?:length|window)|maximum context|too many tokens|prompt is too long|input is too long"
    r"|reduce the length|exceeds the (?:maximum|max)",
    re.IGNORECASE,
)
_FILTER_RE = re.compile(
    r"content[ _]?(?:filter|management|policy)|safety|flagged|moderation|responsible ai|blocked", re.IGNORECASE
)
_UNKNOWN_MODEL_RE = re.compile(
    r"model[^.]*(?:does not exist|not found|not_found|is not supported|unknown)|unknown model|no such model"
    r"|LLM Provider NOT provided|model_not_found|invalid model",
    re.IGNORECASE,
)
_AUTH_RE = re.compile(r"api[ _]?key|unauthori[sz]ed|authentication|permission|forbidden|access denied", re.IGNORECASE)


@dataclass(frozen=True)
class ProviderFailure:
    """A classified failed call: its class, a one-line message, the status code and Retry-After."""

    error_class: str
    message: str
    status_code: int | None = None
    retry_after_s: float | None = None
    retryable: bool = False  # rate limits, 5xx and dropped connections heal; the rest fail alike again

    @property
    def stops_run(self) -> bool:
        """True when no further call of this run can succeed (quota, payment, key, model)."""
        return self.error_class in RUN_STOPPING_CLASSES

    @property
    def is_environment(self) -> bool:
        """True when the case is skipped rather than counted against the model."""
        return self.error_class in ENVIRONMENT_ERROR_CLASSES


def _cause_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(chain) < 20:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _status_code(exc: BaseException) -> int | None:
    for candidate in (getattr(exc, "status_code", None), getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(candidate, int) and 100 <= candidate <= 599:
            return candidate
    return None


def _headers(exc: BaseException) -> Any:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None if absent."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _provider_message(exc: BaseException) -> str:
    """The provider's own words: litellm prefixes "litellm.XError: XError: OpenAIException - "."""
    text = str(getattr(exc, "message", None) or exc)
    return text.split(" - ", 1)[1] if " - " in text and "Exception" in text.split(" - ", 1)[0] else text


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _transport_class(chain: list[BaseException]) -> str | None:
    """Class decided by the transport-level cause, if any (before any HTTP status)."""
    names = {type(e).__name__ for e in chain}
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or any(isinstance(e, socket.gaierror) for e in chain):
        return CONNECTION_REFUSED
    if "ConnectError" in names:  # httpx.ConnectError: no TCP connection (refused, unreachable, DNS)
        return CONNECTION_REFUSED
    if any(isinstance(e, TimeoutError) for e in chain) or names & {
        "Timeout",
        "APITimeoutError",
        "ReadTimeout",
        "ConnectTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TimeoutException",
    }:
        return TIMEOUT
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError", "BrokenPipeError"} or any(
        isinstance(e, (ConnectionResetError, BrokenPipeError))
        for e in chain  # subclasses: a system's process died
    ):
        return PROVIDER_ERROR  # the connection broke mid-request: worth a retry
    return None


def _class_from_status(status: int | None, message: str, names: set[str]) -> str:
    if status == 402:
        return PAYMENT_REQUIRED
    if status == 429:
        if _DAILY_RE.search(message):
            return DAILY_QUOTA_EXHAUSTED
        if _BILLING_RE.search(message):
            return PAYMENT_REQUIRED  # OpenAI's insufficient_quota is a 429
        return RATE_LIMITED
    if status in (401, 403):
        if status == 403 and _FILTER_RE.search(message) and not _AUTH_RE.search(message):
            return CONTENT_FILTERED  # some gateways answer 403 to flagged input
        return AUTHENTICATION_ERROR
    if "ContextWindowExceededError" in names or _CONTEXT_RE.search(message):
        return CONTEXT_WINDOW_EXCEEDED
    if "ContentPolicyViolationError" in names or (status == 400 and _FILTER_RE.search(message)):
        return CONTENT_FILTERED
    if status == 404 or "NotFoundError" in names or _UNKNOWN_MODEL_RE.search(message):
        return UNKNOWN_MODEL
    if status == 400 and _BILLING_RE.search(message):
        return PAYMENT_REQUIRED  # providers that report low credit as a bad request
    if status == 408:
        return TIMEOUT
    if status is not None and 400 <= status < 500:
        return BAD_REQUEST
    if "AuthenticationError" in names:
        return AUTHENTICATION_ERROR
    if "RateLimitError" in names:
        return DAILY_QUOTA_EXHAUSTED if _DAILY_RE.search(message) else RATE_LIMITED
    return PROVIDER_ERROR


def classify_exception(exc: BaseException) -> ProviderFailure:
    """The ``ProviderFailure`` of an exception raised by ``litellm.completion``."""
    chain = _cause_chain(exc)
    status = _status_code(exc)
    message = _provider_message(exc)
    names = {type(e).__name__ for e in chain}
    error_class = _transport_class(chain)
    if error_class is not None:
        detail = next((str(e) for e in reversed(chain) if str(e)), message)
        return ProviderFailure(
            error_class, _one_line(f"{type(exc).__name__}: {detail}"), retryable=error_class == PROVIDER_ERROR
        )
    error_class = _class_from_status(status, message, names)
    # litellm reports an exception raised on our side of the wire (a custom provider's bug) as an
    # APIConnectionError with a made-up 500: nothing a retry would fix.
    local_error = type(exc).__name__ == "APIConnectionError"
    retryable = error_class == RATE_LIMITED or (
        error_class == PROVIDER_ERROR and status is not None and status >= 500 and not local_error
    )
    retry_after = parse_retry_after(_headers(exc)) if retryable else None
    prefix = f"HTTP {status}: " if status is not None else f"{type(exc).__name__}: "
    return ProviderFailure(error_class, _one_line(prefix + message), status, retry_after, retryable)
