"""Candidate selection and the best of several acceptable expected results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from nl2sql_pipeline.compare import CompareConfig, Comparison, EngineSource, compare_query_results
from nl2sql_pipeline.execution import QueryResult, SandboxLimits
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages.records import Attempt


@dataclass(frozen=True)
class WholeResults:
    """Where a case's whole results can be recomputed for an in-engine comparison (results over the row cap).

    Every query it hands to the engine reads the clock at ``reference`` (the case's reference date).
    """

    db_path: Path | None
    expected_sql: Sequence[str]
    limits: SandboxLimits | None = None
    reference: date | None = None

    def source(self, alternative: int, candidate_sql: str | None) -> EngineSource | None:
        """The engine source comparing expected alternative ``alternative`` with ``candidate_sql``."""
        if candidate_sql is None or alternative >= len(self.expected_sql):
            return None
        return EngineSource(
            self.db_path,
            pin_clock(self.expected_sql[alternative], self.reference),
            pin_clock(candidate_sql, self.reference),
            self.limits,
        )

    def between(self, sql_a: str | None, sql_b: str | None) -> EngineSource | None:
        """The engine source comparing two candidates' queries (None without a database: no order check)."""
        if sql_a is None or sql_b is None or self.db_path is None:
            return None
        return EngineSource(
            self.db_path, pin_clock(sql_a, self.reference), pin_clock(sql_b, self.reference), self.limits
        )


def best_comparison(
    oracles: Sequence[QueryResult],
    candidate: QueryResult,
    config: CompareConfig,
    whole: WholeResults | None = None,
    candidate_sql: str | None = None,
) -> Comparison:
    """Compare against every acceptable alternative; a match with any one is a match, else an undetermined
    comparison (``Comparison.undetermined``: that alternative might have matched), else the best score.

    With ``whole`` and ``candidate_sql``, results over the row cap are compared whole in the engine.
    """
    best: Comparison | None = None
    undetermined: Comparison | None = None
    for index, oracle in enumerate(oracles):
        source = whole.source(index, candidate_sql) if whole is not None else None
        comparison = compare_query_results(oracle, candidate, config, source)
        if comparison.match:
            return comparison
        if comparison.undetermined:
            undetermined = undetermined or comparison
        elif best is None or comparison.score > best.score:
            best = comparison
    if undetermined is not None:
        return undetermined
    if best is None:
        raise ValueError("no expected result to compare with")
    return best


def select_candidate(attempts: Sequence[Attempt], config: CompareConfig, whole: WholeResults | None = None) -> int:
    """Execution-consistency selection: the position of the result most candidates agree on.

    Only candidates that ran successfully vote; ties go to the first cluster's first member; with no
    successful candidate the first one is selected.
    """
    executed = [(i, a.result) for i, a in enumerate(attempts) if a.executed and a.result is not None and a.result.ok]
    if not executed:
        return 0
    clusters: list[list[int]] = []
    representatives: list[QueryResult] = []
    for index, result in executed:
        for members, rep in zip(clusters, representatives):
            source = whole.between(attempts[members[0]].sql, attempts[index].sql) if whole is not None else None
            if compare_query_results(rep, result, config, source).match:
                members.append(index)
                break
        else:
            clusters.append([index])
            representatives.append(result)
    best = max(clusters, key=lambda members: (len(members), -members[0]))
    return best[0]
