"""A client-side rate limiter shared by every thread and process calling the same provider.

Registry limits (``requests_per_minute``, ``tokens_per_minute``) are enforced over a sliding window
(60 s by default): a request is admitted only when the requests admitted during the last window, plus
this one, stay within the limit, and likewise for tokens. A request's tokens are estimated before the
call (prompt characters / 4 plus ``max_tokens``) and reconciled with the measured count afterwards.

The window's state is a small JSON file under ``<storage root>/limits/`` named after the provider
key (provider and api_base), read and rewritten under an exclusive ``fcntl.flock``: parallel runs on
one machine (threads of one run, or several ``nl2sql-eval run`` processes) share one budget. A
provider's ``Retry-After`` pauses every caller of that key until it has passed (``pause_until``).

Admission is conservative by ``margin_s`` (by default 1 % of the window, at least 0.25 s, at most 10 %):
an admitted request counts as inside the window a little longer than the window itself, so that the
jitter between our admission and the request's arrival at the provider (thread start-up, connection
set-up) cannot squeeze an extra request into the provider's window.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import GenerationError

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 60.0
STATE_VERSION = 1
_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


class LimiterStopped(GenerationError):
    """Raised by ``acquire`` when the caller's stop event was set while waiting for a slot."""


@dataclass(frozen=True)
class Reservation:
    """An admitted request: its id in the shared window and the tokens reserved for it."""

    request_id: str
    admitted_at: float
    tokens: int


def default_margin(window_s: float) -> float:
    """Extra seconds an admitted request stays in the window: 1 % of it, within [0.25 s, 10 %]."""
    return min(max(0.01 * window_s, 0.25), 0.1 * window_s)


def limits_dir() -> Path:
    """``<storage root>/limits``: one state file per provider key."""
    path = paths.storage_root() / "limits"
    path.mkdir(parents=True, exist_ok=True)
    return path


def provider_key(model: str, api_base: str | None) -> str:
    """The key whose callers share a budget: the litellm provider prefix and the api_base."""
    provider = model.split("/", 1)[0] if "/" in model else model
    return f"{provider}@{api_base or 'default'}"


class SharedRateLimiter:
    """Sliding-window limits on requests and tokens, shared through a locked state file."""

    def __init__(
        self,
        key: str,
        *,
        requests_per_window: int | None,
        tokens_per_window: int | None,
        window_s: float = DEFAULT_WINDOW_S,
        margin_s: float | None = None,
        state_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if window_s <= 0:
            raise GenerationError(f"rate limiter {key!r}: window must be > 0 s, got {window_s}")
        self.key = key
        self.requests_per_window = requests_per_window
        self.tokens_per_window = tokens_per_window
        self.window_s = float(window_s)
        self.margin_s = default_margin(window_s) if margin_s is None else float(margin_s)
        self.clock, self.sleep = clock, sleep
        directory = state_dir if state_dir is not None else limits_dir()
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        stem = _SAFE_RE.sub("_", key)[:60].strip("_") or "provider"
        self.state_path = Path(directory) / f"{stem}.{digest}.json"
        self.lock_path = self.state_path.with_suffix(".lock")
        self._thread_lock = threading.Lock()  # flock also serialises threads; this keeps them off the file

    # ------------------------------------------------------------------ shared state
    @contextmanager
    def _locked_state(self) -> Iterator[dict[str, Any]]:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        with self._thread_lock, open(self.lock_path, "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                state = self._read()
                yield state
                self._write(state)
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = None
        except (OSError, ValueError) as exc:
            logger.warning(
                "rate limiter %s: unreadable state %s (%s); starting a new window", self.key, self.state_path, exc
            )
            data = None
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or not isinstance(data.get("events"), list)
        ):
            data = {"version": STATE_VERSION, "events": [], "paused_until": 0.0}
        return data

    def _write(self, state: dict[str, Any]) -> None:
        tmp = self.state_path.with_name(f".{self.state_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(state, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.state_path)

    def _live_events(self, state: dict[str, Any], now: float) -> list[list[Any]]:
        horizon = now - self.window_s - self.margin_s
        return sorted((event for event in state["events"] if event[0] > horizon), key=lambda event: event[0])

    # ------------------------------------------------------------------ admission
    def _wait_needed(self, events: list[list[Any]], tokens: int, now: float, paused_until: float) -> float:
        """Seconds until ``tokens`` more could be admitted (0 = now)."""
        waits = [paused_until - now]
        expiry = self.window_s + self.margin_s
        if self.requests_per_window is not None and len(events) + 1 > self.requests_per_window:
            # the oldest events must leave until one slot is free
            excess = len(events) + 1 - self.requests_per_window
            waits.append(events[excess - 1][0] + expiry - now)
        if self.tokens_per_window is not None and events:
            budget = self.tokens_per_window - min(tokens, self.tokens_per_window)  # one huge request may run alone
            used = sum(int(event[1]) for event in events)
            for event in events:
                if used <= budget:
                    break
                used -= int(event[1])
                waits.append(event[0] + expiry - now)
        return max(0.0, *waits)

    def acquire(self, tokens: int = 0, *, stop: threading.Event | None = None) -> Reservation:
        """Block until one request of ``tokens`` estimated tokens fits the window, then record it.

        Raises LimiterStopped when ``stop`` is set while waiting.
        """
        while True:
            if stop is not None and stop.is_set():
                raise LimiterStopped(f"rate limiter {self.key}: the run stopped while waiting for a slot")
            with self._locked_state() as state:
                now = self.clock()
                events = self._live_events(state, now)
                wait = self._wait_needed(events, tokens, now, float(state.get("paused_until") or 0.0))
                if wait <= 0:
                    reservation = Reservation(uuid.uuid4().hex[:16], now, int(tokens))
                    events.append([now, int(tokens), reservation.request_id])
                state["events"] = events
            if wait <= 0:
                return reservation
            logger.debug("rate limiter %s: waiting %.3f s", self.key, wait)
            if stop is not None and self.sleep is time.sleep:
                stop.wait(min(wait, 1.0))  # wakes at once when the run stops
            else:
                self.sleep(min(wait, 1.0))

    def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        """Replace the estimate of an admitted request by the tokens it really used."""
        if self.tokens_per_window is None or actual_tokens == reservation.tokens:
            return
        with self._locked_state() as state:
            for event in state["events"]:
                if len(event) > 2 and event[2] == reservation.request_id:
                    event[1] = int(actual_tokens)
                    break

    def pause_until(self, until: float) -> None:
        """Admit nothing before ``until`` (epoch seconds), e.g. after a provider's Retry-After."""
        with self._locked_state() as state:
            state["paused_until"] = max(float(state.get("paused_until") or 0.0), until)

    def window_usage(self) -> tuple[int, int]:
        """(requests, tokens) admitted during the current window (for logs and tests)."""
        with self._locked_state() as state:
            events = self._live_events(state, self.clock())
            state["events"] = events
            return len(events), sum(int(event[1]) for event in events)


class NoLimit:
    """The limiter of a model without rate limits: admits at once, remembers nothing."""

    key = "none"

    def acquire(self, tokens: int = 0, *, stop: threading.Event | None = None) -> Reservation:
        """Admit immediately."""
        return Reservation("", time.time(), int(tokens))

    def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        """Nothing to reconcile."""

    def pause_until(self, until: float) -> None:
        """Nothing shared to pause: the caller's own retry wait applies."""


RateLimiter = SharedRateLimiter | NoLimit
