"""Gold preflight: proves a gold set is sound before any model is judged against it.

Findings about one case *quarantine* that case (``PreflightReport.quarantine``: case id, kind, reason): it
is left out of generation and scoring, listed and counted in every report, and part of the gold version's
identity. The kinds: an expected SQL that fails (``expected_sql_fails``), times out (``expected_sql_timeout``)
or exceeds the row cap (``row_cap_exceeded``); gold that does not score 100% against itself
(``gold_self_mismatch``); a query case whose own policy rejects its expected SQL (``policy_rejects_gold``); a
probe its policy lets through (``probe_allowed``); and the blocking kinds of the gold triage
(``gold_triage``): a result that differs between thread counts, a tie at a
subquery's LIMIT the gold depends on, a LIMIT without ORDER BY that cuts rows. A case with several
acceptable expected queries is quarantined when any of them is. Findings that are not about one case (the
second thread count's worker process cannot start) still block (``problems``). Under strict gold
(``run --strict-gold``, ``strict_gold: true`` in the gold-set registry) the quarantine blocks too
(``blocking_lines``). Warnings (reported, not blocking): the triage's ``limit_ties``, ``empty_result`` and
``degenerate_result``, and ``clock_dependent`` (every query runs with its clock pinned
at the case's reference date, ``sql.clock``).

Every expected SQL runs with the configured limits in this process, and once more with another thread
count (``threads=1`` against N) in a worker process of its own (DuckDB allows one configuration per
database file and process, so the second thread count cannot share this process's sandbox).

The results of the first runs that succeeded are handed to the oracle stage of the same process
(``take_gold_results``): it runs the same queries with the same limits on the same files, and uses them
instead of running each a third time (a file changed since, other limits or another SQL are run again).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, compare_query_results
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution import IsolatedRunner, QueryResult, SandboxLimits, run_query
from nl2sql_pipeline.gold.quality.triage import (
    TriageFlag,
    clock_flags,
    limit_flags,
    other_thread_count,
    result_flags,
    thread_flags,
)
from nl2sql_pipeline.policy.gate import DatabaseResolver, PolicyGate
from nl2sql_pipeline.sql.clock import pin_clock

logger = logging.getLogger(__name__)


EXPECTED_SQL_FAILS = "expected_sql_fails"
EXPECTED_SQL_TIMEOUT = "expected_sql_timeout"
ROW_CAP_EXCEEDED = "row_cap_exceeded"
GOLD_SELF_MISMATCH = "gold_self_mismatch"
POLICY_REJECTS_GOLD = "policy_rejects_gold"
PROBE_ALLOWED = "probe_allowed"
CASE_KINDS = (
    EXPECTED_SQL_FAILS,
    EXPECTED_SQL_TIMEOUT,
    ROW_CAP_EXCEEDED,
    GOLD_SELF_MISMATCH,
    POLICY_REJECTS_GOLD,
    PROBE_ALLOWED,
)
"""The preflight's own kinds of case findings (beside the triage's blocking kinds)."""


@dataclass(frozen=True)
class CaseFinding:
    """A blocking finding about one case, which quarantines it: ``label`` is the case id (``id[i]`` for the
    i-th acceptable expected SQL)."""

    case_id: str
    label: str
    kind: str
    reason: str

    def line(self) -> str:
        """``<label>: [<kind>] <reason>``, as the CLI, the reports and the asset check print it."""
        return f"{self.label}: [{self.kind}] {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PreflightReport:
    """The outcome of a preflight: the quarantined cases' findings, blocking problems that are about no one
    case, and non-blocking flags (warnings), one line each.

    ``triage`` holds every triage finding (blocking or not) as a record; the blocking ones are also in
    ``quarantine``, the others' lines in ``flags``.
    """

    case_count: int = 0
    queries_run: int = 0
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    triage: list[TriageFlag] = field(default_factory=list)
    quarantine: list[CaseFinding] = field(default_factory=list)

    @property
    def quarantined(self) -> list[str]:
        """The ids of the quarantined cases, in the order they were found."""
        return list(dict.fromkeys(finding.case_id for finding in self.quarantine))

    @property
    def passed(self) -> bool:
        """True when nothing blocks the gold set (quarantined cases are left out, they do not block)."""
        return not self.problems

    def passed_under(self, strict: bool) -> bool:
        """``passed``; under strict gold, also nothing quarantined."""
        return not self.blocking_lines(strict)

    def blocking_lines(self, strict: bool = True) -> list[str]:
        """What blocks the gold set: the problems, and under strict gold every quarantine finding."""
        return list(self.problems) + ([finding.line() for finding in self.quarantine] if strict else [])

    def quarantine_case(self, case_id: str, label: str, kind: str, reason: str) -> None:
        """Record a blocking finding about one case: the case is quarantined."""
        self.quarantine.append(CaseFinding(case_id, label, kind, reason))

    def add(self, flags: list[TriageFlag], case_id: str) -> None:
        """Record triage findings about ``case_id``: blocking ones quarantine it, the others are warnings."""
        for flag in flags:
            self.triage.append(flag)
            if flag.blocking:
                self.quarantine_case(case_id, flag.label, flag.kind, flag.reason)
            else:
                self.flags.append(flag.line())


GoldRunKey = tuple[str, tuple[int, int, int, int], str, SandboxLimits]
"""(resolved database path, the file's (device, inode, size, mtime), pinned SQL, limits)."""
_GOLD_RESULTS: dict[GoldRunKey, QueryResult] = {}
_GOLD_RESULTS_LOCK = threading.Lock()


def gold_run_key(db_path: Path | str, sql: str, limits: SandboxLimits) -> GoldRunKey | None:
    """The key of a gold query's result: the database file by path and identity, the SQL as run, the limits
    (None when the file cannot be read: nothing is handed over then)."""
    try:
        resolved = Path(db_path).resolve()
        stat = os.stat(resolved)
    except OSError:
        return None
    return (str(resolved), (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns), sql, limits)


def _hand_over(results: dict[GoldRunKey, QueryResult]) -> None:
    """Offer the preflight's successful first runs to the oracle (replacing any earlier preflight's)."""
    with _GOLD_RESULTS_LOCK:
        _GOLD_RESULTS.clear()
        _GOLD_RESULTS.update(results)


def take_gold_results() -> dict[GoldRunKey, QueryResult]:
    """The successful first runs of the last preflight of this process, handed over once (then forgotten)."""
    with _GOLD_RESULTS_LOCK:
        taken = dict(_GOLD_RESULTS)
        _GOLD_RESULTS.clear()
    return taken


@dataclass
class _Second:
    """An expected SQL whose first run succeeded, waiting for its run at the other thread count."""

    case: Case
    part: PreflightReport
    label: str
    db_path: Path
    sql: str
    first: QueryResult


def run_preflight(
    cases: list[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits = SandboxLimits(),
    config: CompareConfig = CompareConfig(),
    check_policy: bool = True,
) -> PreflightReport:
    """Run every expected SQL (twice, at two thread counts), triage the gold, score it against itself, and
    check each case against its policy.

    Every expected SQL first runs in this process; one that succeeded is queued at once for the worker
    process, which runs it while the next first runs run here. Findings are recorded per case and
    alternative and put together in that order: the report is the one of checking each in turn.
    """
    report = PreflightReport(case_count=len(cases))
    gate = PolicyGate(resolve_database) if check_policy else None
    parts: list[PreflightReport] = []
    seconds: list[_Second] = []
    handed: dict[GoldRunKey, QueryResult] = {}
    other = _OtherThreadCount(limits)
    try:
        _first_runs(cases, resolve_database, limits, gate, parts, seconds, handed, other)
        for item, second in zip(seconds, other.outcomes(), strict=True):
            _check_second(item, second, other.limits, limits, config, gate)
    finally:
        other.close()
    for part in parts:
        report.queries_run += part.queries_run
        report.problems += part.problems
        report.flags += part.flags
        report.triage += part.triage
        report.quarantine += part.quarantine
    _hand_over(handed)
    logger.info(
        "preflight: %d cases, %d quarantined, %d problems, %d flags",
        len(cases),
        len(report.quarantined),
        len(report.problems),
        len(report.flags),
    )
    return report


class _OtherThreadCount:
    """The runs at the other thread count (``threads=1`` against N), in a worker process fed from a thread of
    this one: an expected SQL queued as soon as its first run succeeded runs there while the next first runs
    run here. ``outcomes`` gives one outcome per queued SQL, in order."""

    def __init__(self, limits: SandboxLimits):
        self.limits = other_thread_count(limits)
        self._runner = IsolatedRunner()
        self._queued: queue.SimpleQueue[_Second | None] = queue.SimpleQueue()
        self._outcomes: queue.SimpleQueue[QueryResult | Nl2SqlError | _End] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def queue(self, item: _Second) -> None:
        """Run ``item`` in the worker (started with the first item)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._feed, name="preflight-threads", daemon=True)
            self._thread.start()
        self._queued.put(item)

    def outcomes(self) -> Iterator[QueryResult | Nl2SqlError]:
        """The outcome of each queued SQL in order (call once every SQL is queued)."""
        if self._thread is None:
            return
        self._queued.put(None)
        while True:
            outcome = self._outcomes.get()
            if isinstance(outcome, _End):
                if outcome.error is not None:
                    raise outcome.error
                return
            yield outcome

    def close(self) -> None:
        """Stop feeding the worker, wait for the thread, stop the worker process."""
        self._stop.set()
        if self._thread is not None:
            self._queued.put(None)
            self._thread.join()
        self._runner.close()

    def _feed(self) -> None:
        def requests() -> Iterator[tuple[Path, str]]:
            while not self._stop.is_set():
                item = self._queued.get()
                if item is None:
                    return
                yield item.db_path, item.sql

        try:
            with closing(self._runner.run_many(requests(), self.limits)) as results:
                for outcome in results:
                    self._outcomes.put(outcome)
        except BaseException as exc:  # handed to the preflight's thread, which raises it
            self._outcomes.put(_End(exc))
        else:
            self._outcomes.put(_End(None))


@dataclass(frozen=True)
class _End:
    """The end of the worker's outcomes; ``error`` when feeding it failed."""

    error: BaseException | None


def _check_second(
    item: _Second,
    second: QueryResult | Nl2SqlError,
    other_limits: SandboxLimits,
    limits: SandboxLimits,
    config: CompareConfig,
    gate: PolicyGate | None,
) -> None:
    """Thread check, self score, result and LIMIT triage and the policy check of one expected SQL."""
    case, part, label, db_path, sql, first = item.case, item.part, item.label, item.db_path, item.sql, item.first
    if isinstance(second, Nl2SqlError):  # the worker process could not start or answer
        part.problems.append(
            f"{label}: could not run the expected SQL with threads={other_limits.threads} "
            f"in a worker process ({second})"
        )
        return
    part.queries_run += 1
    thread = thread_flags(label, sql, first, second, db_path, limits, config)
    part.add(thread, case.id)
    if thread:
        return
    self_score = compare_query_results(first, first, config)
    if not self_score.match:
        part.quarantine_case(
            case.id,
            label,
            GOLD_SELF_MISMATCH,
            f"gold does not match itself ({self_score.reason}): comparator bug",
        )
    part.add(result_flags(label, first), case.id)
    flags, probes = limit_flags(label, sql, partial(run_query, db_path), limits, config)
    part.queries_run += probes
    part.add(flags, case.id)
    if gate is not None:
        decision = gate.check(case, sql)
        if not decision.allowed:
            part.quarantine_case(
                case.id,
                label,
                POLICY_REJECTS_GOLD,
                f"its own policy '{decision.policy_name}' rejects the expected SQL "
                f"({decision.rule}: {decision.reason})",
            )


def _first_runs(
    cases: list[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits,
    gate: PolicyGate | None,
    parts: list[PreflightReport],
    seconds: list[_Second],
    handed: dict[GoldRunKey, QueryResult],
    other: _OtherThreadCount,
) -> None:
    """The probes' policy check and each expected SQL's first run, a report part per case and alternative;
    an expected SQL whose first run succeeded is queued for its run at the other thread count."""
    for case in cases:
        if case.is_probe:
            part = PreflightReport()
            parts.append(part)
            if gate is not None:
                decision = gate.check(case, case.policy_probe_sql or "")
                if decision.allowed:
                    part.quarantine_case(
                        case.id, case.id, PROBE_ALLOWED, f"policy '{decision.policy_name}' lets the probe through"
                    )
            continue
        db_path = resolve_database(case.database)
        for index, sql in enumerate(case.expected_sql):
            part = PreflightReport()
            parts.append(part)
            label = case.id if len(case.expected_sql) == 1 else f"{case.id}[{index}]"
            part.add(clock_flags(label, sql, case.reference_instant), case.id)
            sql = pin_clock(sql, case.reference_instant)  # every run below sees the case's pinned clock
            first = run_query(db_path, sql, limits)
            part.queries_run += 1
            if not first.ok:
                timed_out = first.error_class == "timeout"
                part.quarantine_case(
                    case.id,
                    label,
                    EXPECTED_SQL_TIMEOUT if timed_out else EXPECTED_SQL_FAILS,
                    f"expected SQL {'times out' if timed_out else 'fails'} ({first.error_class}: "
                    f"{first.error_message})",
                )
                continue
            key = gold_run_key(db_path, sql, limits)
            if key is not None:
                handed[key] = first
            if first.truncated:
                part.quarantine_case(
                    case.id, label, ROW_CAP_EXCEEDED, f"expected result exceeds the row cap ({limits.row_cap} rows)"
                )
            seconds.append(_Second(case, part, label, db_path, sql, first))
            other.queue(seconds[-1])  # runs in the worker while the next first runs run here
