"""Progress of long work: a typed tracker per model and stage, and the sinks that show it.

A stage (generation, execution, judging) makes one ``ProgressTracker`` for the model it works on, says how
many units it plans (``begin``), and reports each unit as it starts and ends; every change is sent to the
tracker's sinks as an immutable ``ProgressSnapshot`` (cases done / total, units in flight, calls/s, tokens,
cost so far, cache hits, retries, failures by cause, ETA). The core knows no renderer:

    with progress.subscribe(print_line):            # the CLI's bar, or Dagster's context.log
        generate_candidates(cases, spec, ...)       # its tracker reports to every subscribed sink

Sinks are called from worker threads, outside the tracker's lock, at most once per ``emit_interval_s``
(default 0.1 s) plus at ``begin`` and ``finish``, so a unit costs its counters only; a sink bounds its own
rate beyond that (``ThrottledSink``). A sink that raises is logged and dropped, never fatal to the work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

STAGE_GENERATE = "generate"
STAGE_EXECUTE = "execute"
STAGE_JUDGE = "judge"
STAGE_ANSWER = "answer"  # the answer stage (generation.answers)
STAGE_ANSWER_JUDGE = "answer-judge"  # the answer judges (judges.answer)
DEFAULT_EMIT_INTERVAL_S = 0.1  # the fastest any sink is told of a change (a terminal redraw)


@dataclass(frozen=True)
class ProgressSnapshot:
    """The state of one stage of one model at one moment."""

    stage: str
    model: str
    done: int
    total: int
    in_flight: int = 0
    calls: int = 0  # model calls sent (cache hits excluded)
    cached: int = 0  # units answered from the cache
    retries: int = 0  # attempts beyond the first of each call
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # cost of the units whose cost is known
    cost_unknown: int = 0  # answered units whose cost is unknown
    failures: tuple[tuple[str, int], ...] = ()  # (cause, count), most frequent first
    elapsed_s: float = 0.0
    finished: bool = False
    left_out: str = ""  # the cases the count does not hold, e.g. "24 probes not asked" (units differ from cases)

    @property
    def fraction(self) -> float:
        """Share of the planned units done (1.0 for an empty stage)."""
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)

    @property
    def rate(self) -> float | None:
        """Calls per second when the stage sends calls, else units per second; None before anything happened."""
        count = self.calls if self.calls else self.done
        return count / self.elapsed_s if self.elapsed_s > 0 and count else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far; None until a unit is done, 0 when finished."""
        if self.finished or self.done >= self.total:
            return 0.0
        if self.done == 0 or self.elapsed_s <= 0:
            return None
        return (self.total - self.done) * self.elapsed_s / self.done

    def summary(self) -> str:
        """Everything but the counts, as ``in flight 2, 4.1 calls/s, tokens 1200 in / 80 out, ...``."""
        parts = [self.left_out] if self.left_out else []
        if self.in_flight:
            parts.append(f"in flight {self.in_flight}")
        rate = self.rate
        if rate is not None:
            parts.append(f"{rate:.1f} {'calls' if self.calls else self.stage_unit}/s")
        if self.input_tokens or self.output_tokens:
            parts.append(f"tokens {self.input_tokens} in / {self.output_tokens} out")
        if self.cost_usd or self.calls:
            cost = f"cost ${self.cost_usd:.4f}"
            parts.append(cost + (f" (+{self.cost_unknown} unknown)" if self.cost_unknown else ""))
        if self.cached:
            parts.append(f"cached {self.cached}")
        if self.retries:
            parts.append(f"retries {self.retries}")
        if self.failures:
            label = "not correct" if self.stage == STAGE_JUDGE else "failed"
            parts.append(f"{label} " + " ".join(f"{cause}={count}" for cause, count in self.failures))
        eta = self.eta_s
        if self.finished:
            parts.append(f"took {format_seconds(self.elapsed_s)}")
        elif eta is not None:
            parts.append(f"ETA {format_seconds(eta)}")
        return ", ".join(parts)

    @property
    def stage_unit(self) -> str:
        """What one unit of this stage is called in a rate."""
        return {STAGE_GENERATE: "candidates", STAGE_EXECUTE: "queries", STAGE_JUDGE: "verdicts"}.get(
            self.stage, "units"
        )

    def line(self) -> str:
        """One plain line: ``progress generate gpt-4o-mini: 45/120 (37%), in flight 4, ...``."""
        head = f"progress {self.stage} {self.model}: {self.done}/{self.total} ({self.fraction:.0%})"
        tail = self.summary()
        return f"{head}{', ' + tail if tail else ''}{' done' if self.finished else ''}"


def left_out_cases(verb: str, **counts: int) -> str:
    """``24 probes and 2 ambiguous questions not asked``: the non-zero counts (keyword: the plural noun, words
    joined by ``_``), or "" when there are none."""
    parts = [
        f"{n} {noun.replace('_', ' ') if n != 1 else _singular(noun.replace('_', ' '))}"
        for noun, n in counts.items()
        if n
    ]
    return f"{' and '.join(parts)} {verb}" if parts else ""


def units_of_questions(units: int, unit: str, questions: int) -> str:
    """``110 candidates for 96 questions`` when a stage's units are not one per question, else ""."""
    return f"{units} {unit} for {questions} questions" if units != questions else ""


def counted(*notes: str) -> str:
    """The non-empty ``notes`` of a stage's count, joined (``ProgressTracker.begin``'s ``left_out``)."""
    return ", ".join(note for note in notes if note)


def _singular(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") else noun


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


ProgressSink = Callable[[ProgressSnapshot], None]

_subscribers: list[ProgressSink] = []
_subscribers_lock = threading.Lock()


@contextmanager
def subscribe(sink: ProgressSink) -> Iterator[ProgressSink]:
    """Send the snapshots of every tracker made inside the block to ``sink``."""
    with _subscribers_lock:
        _subscribers.append(sink)
    try:
        yield sink
    finally:
        with _subscribers_lock:
            if sink in _subscribers:
                _subscribers.remove(sink)


def subscribers() -> tuple[ProgressSink, ...]:
    """The sinks subscribed now."""
    with _subscribers_lock:
        return tuple(_subscribers)


@dataclass
class _Counts:
    done: int = 0
    in_flight: int = 0
    calls: int = 0
    cached: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0
    failures: dict[str, int] = field(default_factory=dict)


class ProgressTracker:
    """Counts of one stage of one model, sent to its sinks on every change (thread-safe).

    ``sinks`` are added to the sinks subscribed when the tracker is made (``subscribe``); they hear of a change
    at most once per ``emit_interval_s`` (0: every change), and always of ``begin`` and ``finish``.
    """

    def __init__(
        self,
        stage: str,
        model: str,
        *,
        sinks: tuple[ProgressSink, ...] = (),
        clock: Callable[[], float] = time.monotonic,
        emit_interval_s: float = DEFAULT_EMIT_INTERVAL_S,
    ):
        self.stage, self.model = stage, model
        self._sinks = list(dict.fromkeys((*subscribers(), *sinks)))
        self._clock = clock
        self._emit_interval = emit_interval_s
        self._last_emit: float | None = None
        self._lock = threading.Lock()
        self._counts = _Counts()
        self._total = 0
        self._left_out = ""
        self._started: float | None = None
        self._finished = False

    def begin(self, total: int, left_out: str = "") -> None:
        """The stage plans ``total`` units; the clock starts. ``left_out`` names the cases the units do not count
        (``left_out_cases``), so a count below the gold set's size says why."""
        with self._lock:
            self._total, self._left_out, self._started = total, left_out, self._clock()
        self._emit(force=True)

    def unit_started(self) -> None:
        """A unit is being worked on (counts as in flight until it finishes)."""
        with self._lock:
            self._counts.in_flight += 1
        self._emit()

    def unit_finished(
        self,
        *,
        calls: int = 0,
        attempts: int = 0,
        cached: bool = False,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        cost_expected: bool = False,
        failure: str | None = None,
        started: bool = True,
    ) -> None:
        """A unit ended: what it sent (``attempts`` beyond ``calls`` are retries), spent and failed with.

        ``cost_expected`` marks a unit whose cost should be known (it was answered): a None cost then counts
        as unknown. ``started=False`` for a unit never reported by ``unit_started``.
        """
        with self._lock:
            c = self._counts
            c.done += 1
            if started:
                c.in_flight = max(0, c.in_flight - 1)
            c.calls += calls
            c.retries += max(0, attempts - calls)
            c.cached += bool(cached)
            c.input_tokens += input_tokens or 0
            c.output_tokens += output_tokens or 0
            if cost_usd is not None:
                c.cost_usd += cost_usd
            elif cost_expected:
                c.cost_unknown += 1
            if failure:
                c.failures[failure] = c.failures.get(failure, 0) + 1
        self._emit()

    def finish(self) -> None:
        """The stage ended (sends the last snapshot once)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        self._emit(force=True)

    def snapshot(self) -> ProgressSnapshot:
        """The counts now."""
        with self._lock:
            return self._snapshot_locked()

    def _snapshot_locked(self) -> ProgressSnapshot:
        c = self._counts
        elapsed = 0.0 if self._started is None else max(0.0, self._clock() - self._started)
        failures = tuple(sorted(c.failures.items(), key=lambda item: (-item[1], item[0])))
        return ProgressSnapshot(
            stage=self.stage,
            model=self.model,
            done=c.done,
            total=max(self._total, c.done),
            in_flight=c.in_flight,
            calls=c.calls,
            cached=c.cached,
            retries=c.retries,
            input_tokens=c.input_tokens,
            output_tokens=c.output_tokens,
            cost_usd=c.cost_usd,
            cost_unknown=c.cost_unknown,
            failures=failures,
            elapsed_s=elapsed,
            finished=self._finished,
            left_out=self._left_out,
        )

    def _emit(self, force: bool = False) -> None:
        if not self._sinks:
            return
        with self._lock:
            now = self._clock()
            if not force and self._last_emit is not None and now - self._last_emit < self._emit_interval:
                return
            self._last_emit = now
            snapshot = self._snapshot_locked()
        for sink in list(self._sinks):
            try:
                sink(snapshot)
            except Exception:
                logger.exception("progress sink %r failed; it is dropped", sink)
                self._sinks.remove(sink)


@contextmanager
def tracking(tracker: ProgressTracker | None, stage: str, model: str) -> Iterator[ProgressTracker]:
    """``tracker``, or a new one for ``stage`` and ``model``; finished when the block ends."""
    tracker = tracker if tracker is not None else ProgressTracker(stage, model)
    try:
        yield tracker
    finally:
        tracker.finish()


class ThrottledSink:
    """Passes a snapshot on at most once per ``interval_s`` per stage and model; the first and the last
    (finished) snapshot of each always pass."""

    def __init__(self, sink: ProgressSink, interval_s: float, clock: Callable[[], float] = time.monotonic):
        self._sink, self._interval, self._clock = sink, interval_s, clock
        self._last: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def __call__(self, snapshot: ProgressSnapshot) -> None:
        key = (snapshot.stage, snapshot.model)
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if not snapshot.finished and last is not None and now - last < self._interval:
                return
            self._last[key] = now
            if snapshot.finished:
                self._last.pop(key, None)
        self._sink(snapshot)
