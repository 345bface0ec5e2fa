"""Gold preflight: proves a gold set is sound before any model is judged against it.

Blocking problems: an expected SQL that fails or times out; one that returns a different result when run
again (non-deterministic gold); gold that does not score 100% against itself; a query case that its own
policy rejects; a probe that its policy lets through. Flags (reported, not blocking): empty or all-NULL
expected results, which rarely discriminate between a right and a wrong answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, compare_query_results
from nl2sql_pipeline.execution import SandboxLimits, run_query
from nl2sql_pipeline.policy.gate import DatabaseResolver, PolicyGate

logger = logging.getLogger(__name__)


@dataclass
class PreflightReport:
    """The outcome of a preflight: blocking problems and non-blocking flags, one line each."""

    case_count: int = 0
    queries_run: int = 0
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when nothing blocks the gold set."""
        return not self.problems


def run_preflight(
    cases: list[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits = SandboxLimits(),
    config: CompareConfig = CompareConfig(),
    check_policy: bool = True,
) -> PreflightReport:
    """Run every expected SQL twice, score gold against itself, and check each case against its policy."""
    report = PreflightReport(case_count=len(cases))
    gate = PolicyGate(resolve_database) if check_policy else None
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
            first = run_query(db_path, sql, limits)
            report.queries_run += 1
            if not first.ok:
                report.problems.append(f"{label}: expected SQL fails ({first.error_class}: {first.error_message})")
                continue
            if first.truncated:
                report.problems.append(f"{label}: expected result exceeds the row cap ({limits.row_cap} rows)")
            second = run_query(db_path, sql, limits)
            report.queries_run += 1
            same = compare_query_results(first, second, config) if second.ok else None
            if same is None or not same.match:
                why = same.reason if same else f"{second.error_class}: {second.error_message}"
                report.problems.append(f"{label}: not deterministic, a second run differs ({why})")
                continue
            self_score = compare_query_results(first, first, config)
            if not self_score.match:
                report.problems.append(f"{label}: gold does not match itself ({self_score.reason}): comparator bug")
            if not first.rows:
                report.flags.append(f"{label}: expected result is empty")
            elif all(value is None for row in first.rows for value in row):
                report.flags.append(f"{label}: expected result is all NULL")
            if gate is not None:
                decision = gate.check(case, sql)
                if not decision.allowed:
                    report.problems.append(
                        f"{label}: its own policy '{decision.policy_name}' rejects the expected SQL "
                        f"({decision.rule}: {decision.reason})"
                    )
    logger.info("preflight: %d cases, %d problems, %d flags", len(cases), len(report.problems), len(report.flags))
    return report
