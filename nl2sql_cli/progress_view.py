"""What ``nl2sql-eval run`` shows while it works: progress of each model and stage, on stderr.

On a terminal, one live bar redrawn in place (``\\r``, at most ``LIVE_INTERVAL_S`` apart) and left as a
finished line when the stage ends. Anywhere else (CI, a log file, a pipe) plain ``progress ...`` lines, at
most one per stage every ``NL2SQL_PROGRESS_INTERVAL`` seconds (default 5), plus each stage's first and last.
stdout is never written to, so ``--json`` output stays valid JSON; ``--quiet`` shows nothing.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.progress import ProgressSnapshot, ThrottledSink
from nl2sql_pipeline.report.console import bar

INTERVAL_ENV = "NL2SQL_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 5.0
LIVE_INTERVAL_S = 0.1
LIVE_BAR_WIDTH = 20


def plain_interval() -> float:
    """Seconds between plain progress lines of one stage (``NL2SQL_PROGRESS_INTERVAL``, default 5)."""
    text = os.environ.get(INTERVAL_ENV)
    if not text:
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{INTERVAL_ENV}={text!r} is not a number of seconds (e.g. {INTERVAL_ENV}=2)") from None
    return max(0.0, value)


def live_line(snapshot: ProgressSnapshot, width: int) -> str:
    """``generate gpt-4o [████░░] 45/120  37% | in flight 4, 3.2 calls/s, ...`` cut to ``width`` columns."""
    head = f"{snapshot.stage} {snapshot.model}".strip()
    line = (
        f"{head} [{bar(snapshot.fraction, LIVE_BAR_WIDTH)}] {snapshot.done}/{snapshot.total} {snapshot.fraction:4.0%}"
    )
    tail = snapshot.summary()
    if tail:
        line += f" | {tail}"
    return line if len(line) < width else line[: max(10, width - 2)] + "…"


class ProgressView:
    """A progress sink writing to ``stream`` (stderr): a live bar on a terminal, plain lines elsewhere."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        live: bool | None = None,
        interval_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._lock = threading.Lock()
        self._clock = clock
        self._drawn = False  # a live line is on screen, not yet ended by a newline
        self._last_draw = 0.0
        interval = plain_interval() if interval_s is None else interval_s
        self._plain = ThrottledSink(self._write_line, interval, clock)

    def __call__(self, snapshot: ProgressSnapshot) -> None:
        if self.live:
            self._draw(snapshot)
        else:
            self._plain(snapshot)

    def _write_line(self, snapshot: ProgressSnapshot) -> None:
        with self._lock:
            self.stream.write(snapshot.line() + "\n")
            self.stream.flush()

    def _draw(self, snapshot: ProgressSnapshot) -> None:
        now = self._clock()
        with self._lock:
            if not snapshot.finished and self._drawn and now - self._last_draw < LIVE_INTERVAL_S:
                return
            self._last_draw = now
            width = shutil.get_terminal_size((120, 20)).columns
            self.stream.write("\r\x1b[2K" + live_line(snapshot, width))
            self._drawn = not snapshot.finished
            if snapshot.finished:
                self.stream.write("\n")
            self.stream.flush()

    def clear(self) -> None:
        """Wipe a live line off the screen (before other text is written to the same terminal); the next
        snapshot draws it again."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._drawn = False

    def close(self) -> None:
        """End a live line left open (a stage that never finished), so later output starts on its own line."""
        with self._lock:
            if self._drawn:
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False


class _ClearBeforeLogging(logging.Filter):
    """Wipes the live bar before a log record is written, so the record starts at the line's beginning."""

    def __init__(self, view: ProgressView):
        super().__init__()
        self.view = view

    def filter(self, record: logging.LogRecord) -> bool:
        self.view.clear()
        return True


def clear_before_logging(view: ProgressView) -> Callable[[], None]:
    """Make every root log handler wipe ``view``'s live bar before it writes; returns the undo."""
    if not view.live:
        return lambda: None
    guard = _ClearBeforeLogging(view)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(guard)

    def undo() -> None:
        for handler in handlers:
            handler.removeFilter(guard)

    return undo
