"""Calls in flight to one provider, bounded across every thread and process on the machine.

A model's ``limits.max_concurrency`` is the number of its calls that may be in flight at once to its
provider key (provider and api_base, the key of the shared rate limiter), whatever runs them: the
threads of one run, several ``nl2sql-eval run`` processes, Dagster runs launched by the UI, a backfill,
a sensor or a schedule. A call holds one of ``limit`` slot files under ``<storage root>/limits/``,
locked with ``fcntl.flock`` for as long as it is in flight. The kernel releases the lock when the
holder exits, however it exits, so a killed run never keeps a slot. Models of one provider with
different limits share the slot files: a model with limit N only takes slots 0..N-1, so the calls in
flight to the provider never exceed the largest limit among the models calling it, and a model's own
calls never exceed its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from nl2sql_pipeline.errors import GenerationError

_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")
POLL_S = 0.02  # how often a waiting call looks for a free slot


class SlotWaitStopped(GenerationError):
    """Raised by ``hold`` when the caller's stop event was set while waiting for a slot."""


class SharedSlots:
    """At most ``limit`` holders at once of the slots of ``key``, across threads and processes."""

    def __init__(self, key: str, limit: int, *, state_dir: Path | None = None, poll_s: float = POLL_S):
        if limit < 1:
            raise GenerationError(f"concurrency slots {key!r}: the limit must be at least 1, got {limit}")
        from nl2sql_pipeline.generation.limiter import limits_dir

        self.key, self.limit, self.poll_s = key, int(limit), poll_s
        directory = Path(state_dir) if state_dir is not None else limits_dir()
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        stem = _SAFE_RE.sub("_", key)[:60].strip("_") or "provider"
        self.paths = [directory / f"{stem}.{digest}.inflight.{i}" for i in range(self.limit)]
        directory.mkdir(parents=True, exist_ok=True)

    def _try_take(self) -> int | None:
        """A locked descriptor of a free slot, or None when all ``limit`` are held."""
        for path in self.paths:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None

    @contextmanager
    def hold(self, *, stop: threading.Event | None = None) -> Iterator[None]:
        """Hold one slot for the duration of the block; waits for one (raises SlotWaitStopped on ``stop``)."""
        while True:
            if stop is not None and stop.is_set():
                raise SlotWaitStopped(f"concurrency slots {self.key}: the run stopped while waiting for a slot")
            fd = self._try_take()
            if fd is not None:
                break
            if stop is not None:
                stop.wait(self.poll_s)
            else:
                time.sleep(self.poll_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def held(self) -> int:
        """How many slots are held right now, by anyone (for logs and tests)."""
        fd = None
        count = 0
        for path in self.paths:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                count += 1
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        return count


_HOLD_NOTHING = nullcontext()  # reusable; cheaper per call than a generator-based context manager


class NoSlots:
    """The slots of a model without ``max_concurrency``: never waits (its run's own workers bound it)."""

    key = "none"

    def hold(self, *, stop: threading.Event | None = None) -> AbstractContextManager[None]:
        """Hold nothing."""
        return _HOLD_NOTHING


ConcurrencySlots = SharedSlots | NoSlots
