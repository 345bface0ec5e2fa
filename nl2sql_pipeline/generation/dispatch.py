"""One model call made resilient: paced by the rate limiter, retried, classified, stoppable.

``dispatch`` sends one prompt. Each attempt first takes one of the provider's in-flight slots (shared
by every process on the machine, ``generation.inflight``), then a slot from the rate limiter (tokens estimated from
the prompt and ``max_tokens``, reconciled with the measured usage afterwards). A rate-limited (429) or
server-side (5xx, dropped connection) failure is retried up to ``spec.retry.max_retries`` times,
waiting the provider's Retry-After when it sends one (and pausing every caller of that provider for as
long) or else an exponential backoff with jitter. A failure in ``RUN_STOPPING_CLASSES`` (daily quota,
payment, key, model) trips the run's ``RunControl``: from then on nothing more is sent, and waiting
callers wake up at once.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nl2sql_pipeline.generation.candidate_record import ModelCall
from nl2sql_pipeline.generation.client import call_model, warm_up
from nl2sql_pipeline.generation.failures import PROVIDER_ERROR, ProviderFailure, classify_exception
from nl2sql_pipeline.generation.inflight import ConcurrencySlots, NoSlots, SharedSlots, SlotWaitStopped
from nl2sql_pipeline.generation.limiter import LimiterStopped, NoLimit, RateLimiter, SharedRateLimiter, provider_key
from nl2sql_pipeline.generation.model_spec import ModelSpec, RetryPolicy
from nl2sql_pipeline.generation.prompts import Message, messages_chars
from nl2sql_pipeline.generation.usage import tokens_for_chars

logger = logging.getLogger(__name__)


@dataclass
class RunControl:
    """State shared by every call of one generate run: the limiter, the in-flight slots and the stop signal."""

    limiter: RateLimiter = field(default_factory=NoLimit)
    slots: ConcurrencySlots = field(default_factory=NoSlots)
    stop_event: threading.Event = field(default_factory=threading.Event)
    stop_failure: ProviderFailure | None = None
    stop_case: str | None = None
    rng: random.Random = field(default_factory=random.Random)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def trip(self, failure: ProviderFailure, case_id: str) -> None:
        """Stop the run after ``failure`` on ``case_id`` (the first trip wins)."""
        with self._lock:
            if self.stop_failure is not None:
                return
            self.stop_failure, self.stop_case = failure, case_id
        self.stop_event.set()
        logger.warning(
            "run stopped after %s on case %s: %s; nothing more is sent", failure.error_class, case_id, failure.message
        )

    def abort(self, reason: str) -> None:
        """Stop the run because of an error outside any provider (the caller re-raises it)."""
        self.trip(ProviderFailure(PROVIDER_ERROR, f"run aborted: {reason}"), "-")

    def stopped(self) -> ProviderFailure | None:
        """The failure that stopped the run, re-worded for a call that was never sent; None if running."""
        failure = self.stop_failure
        if failure is None:
            return None
        return ProviderFailure(
            failure.error_class,
            f"not sent: the run stopped after {failure.error_class} on case {self.stop_case} ({failure.message})",
            failure.status_code,
        )

    def jitter(self, low: float, high: float) -> float:
        """A uniform draw in [low, high] (thread-safe)."""
        with self._lock:
            return self.rng.uniform(low, high)


def budget_key(spec: ModelSpec) -> str:
    """The key whose callers share rate limits and in-flight slots: provider and api_base (a system: its address)."""
    if spec.system is not None:  # a system's budget is its own: keyed by its address
        return f"system@{spec.system.target_text}"
    return provider_key(spec.model, spec.api_base)


def slots_for(spec: ModelSpec) -> ConcurrencySlots:
    """The machine-wide in-flight slots of ``spec``'s provider key (``max_concurrency``), or ``NoSlots``."""
    limit = spec.limits.max_concurrency
    if spec.is_offline or spec.is_replay or limit is None:
        return NoSlots()
    return SharedSlots(budget_key(spec), limit)


def limiter_for(spec: ModelSpec, *, window_s: float | None = None) -> RateLimiter:
    """The shared limiter of ``spec``'s provider key, or ``NoLimit`` when the model has no rate limits."""
    limits = spec.limits
    if spec.is_offline or (limits.requests_per_minute is None and limits.tokens_per_minute is None):
        return NoLimit()
    kwargs: dict[str, Any] = {} if window_s is None else {"window_s": window_s}
    key = budget_key(spec)
    return SharedRateLimiter(
        key,
        requests_per_window=limits.requests_per_minute,
        tokens_per_window=limits.tokens_per_minute,
        **kwargs,
    )


def estimate_request_tokens(spec: ModelSpec, messages: list[Message]) -> int:
    """Tokens a request may use, before sending it: prompt characters / 4 plus ``max_tokens``."""
    max_tokens = spec.params.get("max_tokens")
    return tokens_for_chars(messages_chars(messages)) + (int(max_tokens) if isinstance(max_tokens, int) else 0)


def retry_delay(policy: RetryPolicy, attempt: int, retry_after_s: float | None, control: RunControl) -> float | None:
    """Seconds before retry number ``attempt`` (1-based); None when the wait would exceed the policy.

    A Retry-After is honoured (plus up to 10 % jitter, never less); otherwise an exponential backoff
    ``base * 2**(attempt-1)`` capped at ``max_delay_s``, with jitter down to half of it.
    """
    if retry_after_s is not None:
        if retry_after_s > policy.max_delay_s:
            return None
        return retry_after_s + control.jitter(0.0, 0.1 * retry_after_s + 0.01)
    ceiling = min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1))
    return control.jitter(ceiling / 2.0, ceiling)


@dataclass(frozen=True)
class Dispatched:
    """What ``dispatch`` ended with: a call or a failure, and the attempts sent for it."""

    call: ModelCall | None
    failure: ProviderFailure | None
    attempts: int


def dispatch(
    spec: ModelSpec,
    messages: list[Message],
    control: RunControl,
    *,
    case_id: str,
    metadata: dict[str, Any] | None = None,
    send: Callable[[], ModelCall] | None = None,
) -> Dispatched:
    """Send ``messages`` to ``spec`` with pacing and retries; never raises for a provider failure.

    ``send`` replaces the litellm call (a system's own transport, ``generation.systems``); ``messages``
    then only size the limiter's token estimate.
    """
    estimate = estimate_request_tokens(spec, messages)
    if send is None:
        warm_up(spec)  # once per process and model, before the first timed call
    attempts = 0
    while True:
        stopped = control.stopped()
        if stopped is not None:
            return Dispatched(None, stopped, attempts)
        try:
            with control.slots.hold(stop=control.stop_event):
                outcome = _attempt(spec, messages, control, estimate, case_id=case_id, metadata=metadata, send=send)
        except SlotWaitStopped:
            return Dispatched(None, control.stopped(), attempts)
        if outcome is None:  # stopped while waiting for the rate limiter
            return Dispatched(None, control.stopped(), attempts)
        call, failure = outcome
        attempts += 1
        if failure is None:
            return Dispatched(call, None, attempts)
        logger.warning(
            "%s on case %s (attempt %d): %s: %s", spec.slug, case_id, attempts, failure.error_class, failure.message
        )
        if failure.stops_run:
            control.trip(failure, case_id)
            return Dispatched(None, failure, attempts)
        if not failure.retryable or attempts > spec.retry.max_retries:
            return Dispatched(None, failure, attempts)
        delay = retry_delay(spec.retry, attempts, failure.retry_after_s, control)
        if delay is None:
            return Dispatched(None, failure, attempts)
        if failure.retry_after_s is not None:
            control.limiter.pause_until(time.time() + delay)
        if control.stop_event.wait(delay):
            return Dispatched(None, control.stopped(), attempts)


def _attempt(
    spec: ModelSpec,
    messages: list[Message],
    control: RunControl,
    estimate: int,
    *,
    case_id: str,
    metadata: dict[str, Any] | None,
    send: Callable[[], ModelCall] | None,
) -> tuple[ModelCall | None, ProviderFailure | None] | None:
    """One paced attempt (the caller holds an in-flight slot): (call, None), (None, failure), or None when
    the run stopped before it was sent."""
    try:
        reservation = control.limiter.acquire(estimate, stop=control.stop_event)
    except LimiterStopped:
        return None
    if control.stopped() is not None:  # stopped while this call waited for its slot
        control.limiter.reconcile(reservation, 0)
        return None
    try:
        call = send() if send is not None else call_model(spec, messages, metadata=metadata)
    except Exception as exc:  # any provider failure is a per-candidate outcome, never a crashed run
        failure = classify_exception(exc)
        rejected = failure.status_code is not None and 400 <= failure.status_code < 500  # no tokens spent
        control.limiter.reconcile(reservation, 0 if rejected else reservation.tokens)
        return None, failure
    control.limiter.reconcile(reservation, call.input_tokens + call.output_tokens)
    return call, None
