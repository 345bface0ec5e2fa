"""Gold preflight: proves a gold set is sound before any model is judged against it.

Blocking problems: an expected SQL that fails or times out; gold that does not score 100% against itself;
a query case that its own policy rejects; a probe that its policy lets through; and the blocking kinds of
the gold triage (``gold_triage``): a result that differs between thread counts (or from run to run), a
LIMIT without ORDER BY that cuts rows. Warnings (reported, not blocking): the triage's ``limit_ties``,
``empty_result`` and ``degenerate_result``, and ``clock_dependent`` (every query runs with its clock pinned
at the case's reference date, ``sql.clock``).

Every expected SQL runs with the configured limits in this process, and once more with another thread
count (``threads=1`` against N) in a worker process of its own (DuckDB allows one configuration per
database file and process, so the second thread count cannot share this process's sandbox).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, compare_query_results
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution import IsolatedRunner, SandboxLimits, run_query
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


@dataclass
class PreflightReport:
    """The outcome of a preflight: blocking problems and non-blocking flags (warnings), one line each.

    ``triage`` holds every triage finding (blocking or not) as a record; its lines are in ``problems``
    (blocking) or ``flags`` (warnings).
    """

    case_count: int = 0
    queries_run: int = 0
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    triage: list[TriageFlag] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when nothing blocks the gold set."""
        return not self.problems

    def add(self, flags: list[TriageFlag]) -> None:
        """Record triage findings: blocking ones as problems, the others as warnings."""
        for flag in flags:
            self.triage.append(flag)
            (self.problems if flag.blocking else self.flags).append(flag.line())


def run_preflight(
    cases: list[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits = SandboxLimits(),
    config: CompareConfig = CompareConfig(),
    check_policy: bool = True,
) -> PreflightReport:
    """Run every expected SQL (twice, at two thread counts), triage the gold, score it against itself, and
    check each case against its policy."""
    report = PreflightReport(case_count=len(cases))
    gate = PolicyGate(resolve_database) if check_policy else None
    other_limits = other_thread_count(limits)
    worker: IsolatedRunner | None = None
    try:
        for case in cases:
            if case.is_probe:
                if gate is not None:
                    decision = gate.check(case, case.policy_probe_sql or "")
                    if decision.allowed:
                        report.problems.append(f"{case.id}: policy '{decision.policy_name}' lets the probe through")
                continue
            db_path = resolve_database(case.database)
            for index, sql in enumerate(case.expected_sql):
                label = case.id if len(case.expected_sql) == 1 else f"{case.id}[{index}]"
                report.add(clock_flags(label, sql, case.reference_instant))
                sql = pin_clock(sql, case.reference_instant)  # every run below sees the case's pinned clock
                first = run_query(db_path, sql, limits)
                report.queries_run += 1
                if not first.ok:
                    report.problems.append(f"{label}: expected SQL fails ({first.error_class}: {first.error_message})")
                    continue
                if first.truncated:
                    report.problems.append(f"{label}: expected result exceeds the row cap ({limits.row_cap} rows)")
                worker = worker or IsolatedRunner()
                try:
                    second = worker.run(db_path, sql, other_limits)
                except Nl2SqlError as exc:  # the worker process could not start or answer
                    report.problems.append(
                        f"{label}: could not run the expected SQL with threads={other_limits.threads} "
                        f"in a worker process ({exc})"
                    )
                    continue
                report.queries_run += 1
                thread = thread_flags(label, sql, first, second, db_path, limits, config)
                report.add(thread)
                if thread:
                    continue
                self_score = compare_query_results(first, first, config)
                if not self_score.match:
                    report.problems.append(f"{label}: gold does not match itself ({self_score.reason}): comparator bug")
                report.add(result_flags(label, first))
                flags, probes = limit_flags(label, sql, partial(run_query, db_path), limits, config)
                report.queries_run += probes
                report.add(flags)
                if gate is not None:
                    decision = gate.check(case, sql)
                    if not decision.allowed:
                        report.problems.append(
                            f"{label}: its own policy '{decision.policy_name}' rejects the expected SQL "
                            f"({decision.rule}: {decision.reason})"
                        )
    finally:
        if worker is not None:
            worker.close()
    logger.info("preflight: %d cases, %d problems, %d flags", len(cases), len(report.problems), len(report.flags))
    return report
