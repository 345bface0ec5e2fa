"""One daemon thread that runs callbacks at deadlines: the sandbox's timeout watchdog and idle reaper.

Arming a timer costs a heap push under a lock (microseconds), not a thread per query. A callback runs
holding its ticket's lock, and ``cancel`` takes that lock: once ``cancel`` returns, the callback is not
running and will not run again, so a caller may close the connection a callback would interrupt.

The thread wakes only at deadlines (and when a new ticket is due before its next wake-up), never because
a ticket was cancelled: a cancelled ticket stays in the heap, without its callback, until its deadline
comes round, and is dropped then with every other cancelled ticket at the front. A query that finishes
in time therefore costs no thread switch (waking the thread per query cost ~0.1 ms: the woken thread
takes the GIL while the query runs).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Ticket:
    """A scheduled callback; ``fired`` counts how many times it ran."""

    __slots__ = ("callback", "repeat_s", "lock", "cancelled", "fired")

    def __init__(self, callback: Callable[[], None] | None, repeat_s: float | None):
        self.callback = callback
        self.repeat_s = repeat_s
        self.lock = threading.Lock()
        self.cancelled = False
        self.fired = 0


class Scheduler:
    """Runs each ticket's callback at its deadline, then every ``repeat_s`` until cancelled."""

    def __init__(self, name: str = "nl2sql-sandbox-scheduler"):
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Ticket]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._stopping = False
        self._wake_at = float("inf")  # when the thread wakes next on its own (inf: it waits for a notify)

    def schedule(self, delay_s: float, callback: Callable[[], None], repeat_s: float | None = None) -> Ticket:
        """Run ``callback`` after ``delay_s`` seconds (then every ``repeat_s`` if given) on the scheduler thread."""
        if self._pid != os.getpid():  # a forked child has no scheduler thread
            self._reset()
        ticket = Ticket(callback, repeat_s)
        deadline = time.monotonic() + delay_s
        with self._cond:
            self._push(deadline, ticket)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
        return ticket

    @staticmethod
    def cancel(ticket: Ticket) -> int:
        """Stop ``ticket``; returns how many times its callback ran. Never returns while it is running."""
        with ticket.lock:
            ticket.cancelled = True
            ticket.callback = None  # the heap keeps the ticket until its deadline, not what it would call
            return ticket.fired

    def _push(self, deadline: float, ticket: Ticket) -> None:
        heapq.heappush(self._heap, (deadline, next(self._order), ticket))
        if deadline < self._wake_at:  # due before the thread would look again: wake it to wait less
            self._wake_at = deadline
            self._cond.notify()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop the thread (waiting for a running callback) so that no callback is inside DuckDB at exit.

        A daemon thread still in DuckDB's C++ code when the interpreter finalizes aborts the process
        ("FATAL: exception not rethrown"); the pool's atexit hook calls this first.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    now = time.monotonic()
                    ticket = self._pop_due(now)
                    if ticket is not None:
                        break
                    self._wake_at = self._heap[0][0] if self._heap else float("inf")
                    self._cond.wait(self._wake_at - now if self._heap else None)
                    self._wake_at = float("-inf")  # awake: a push needs no notify until the next wait
            self._fire(ticket)

    def _pop_due(self, now: float) -> Ticket | None:
        """Drop the cancelled tickets at the front of the heap; the first live one if it is due, else None."""
        while self._heap:
            deadline, _, ticket = self._heap[0]
            if not ticket.cancelled and deadline > now:
                return None
            heapq.heappop(self._heap)
            if not ticket.cancelled:
                return ticket
        return None

    def _fire(self, ticket: Ticket) -> None:
        with ticket.lock:
            callback = ticket.callback
            if ticket.cancelled or callback is None:  # cancel() clears the callback
                return
            try:
                callback()
            except Exception:  # a failing callback must not stop the thread every query relies on
                logger.exception("sandbox scheduler callback failed")
            ticket.fired += 1
            if ticket.repeat_s is None:
                ticket.cancelled = True
                return
        with self._cond:
            self._push(time.monotonic() + ticket.repeat_s, ticket)


SCHEDULER = Scheduler()
