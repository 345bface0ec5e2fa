"""A stable efficiency score for each correct candidate: its work against the gold's, from DuckDB's profile.

VES-like (BIRD's valid efficiency score rewards a correct query by sqrt(gold time / its time)); here the
times are replaced by the work DuckDB's profile counts (``execution.efficiency``: rows scanned plus rows
every operator produced), so the score of the same query is the same on every run and every machine:

    efficiency_score = sqrt((gold_work + 1) / (candidate_work + 1))      for a correct candidate

1 is as efficient as the gold, above 1 less work than the gold, below 1 more (+1: a query answered from the
table statistics does no operator work). The gold is the case's canonical expected SQL, both at the case's
reference date, both in the sandbox. The wall time of each profiled run is kept beside (``candidate_profile_ms``,
``gold_profile_ms``) and never enters the score. Only correct candidates are profiled (the rest score 0 in
the run's ``efficiency_score``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.execution import Sandbox, SandboxLimits
from nl2sql_pipeline.execution.efficiency import QueryWork, query_work
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages.records import Verdict


def efficiency_score(gold_work: int, candidate_work: int) -> float:
    """sqrt((gold + 1) / (candidate + 1)): 1 for the gold's work, above 1 for less.

    >>> efficiency_score(99, 99), efficiency_score(399, 99)
    (1.0, 2.0)
    """
    return math.sqrt((gold_work + 1) / (candidate_work + 1))


class EfficiencyMeter:
    """Profiles correct candidates and their gold (each gold once) on sandboxes held until ``close``."""

    def __init__(self, resolve_database: Callable[[str], Path], limits: SandboxLimits | None = None):
        self.resolve_database = resolve_database
        self.limits = limits or SandboxLimits()
        self._sandboxes: dict[str, Sandbox] = {}
        self._gold: dict[str, QueryWork] = {}

    def __enter__(self) -> EfficiencyMeter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the sandboxes."""
        for sandbox in self._sandboxes.values():
            sandbox.close()
        self._sandboxes.clear()

    def _sandbox(self, database: str) -> Sandbox:
        if database not in self._sandboxes:
            self._sandboxes[database] = Sandbox(self.resolve_database(database), self.limits)
        return self._sandboxes[database]

    def work(self, case: Case, sql: str) -> QueryWork:
        """The work of ``sql`` on the case's database, its clock read at the case's reference date."""
        return query_work(self._sandbox(case.database), pin_clock(sql, case.reference_instant))

    def gold_work(self, case: Case) -> QueryWork:
        """The work of the case's canonical expected SQL (profiled once per case)."""
        if case.id not in self._gold:
            self._gold[case.id] = self.work(case, case.canonical_sql or "")
        return self._gold[case.id]

    def verdict_fields(self, case: Case, verdict: Verdict) -> dict[str, Any]:
        """The efficiency fields of a correct verdict (empty for any other)."""
        if not verdict.correct or verdict.is_probe or not verdict.generated_sql or case.canonical_sql is None:
            return {}
        gold = self.gold_work(case)
        candidate = self.work(case, verdict.generated_sql)
        fields: dict[str, Any] = {"gold_profile_ms": gold.wall_ms, "candidate_profile_ms": candidate.wall_ms}
        if not gold.ok or not candidate.ok:
            which = "gold" if not gold.ok else "candidate"
            return {**fields, "efficiency_error": f"{which}: {gold.error if not gold.ok else candidate.error}"}
        return {
            **fields,
            "efficiency_score": efficiency_score(gold.work, candidate.work),
            "gold_work": gold.work,
            "candidate_work": candidate.work,
        }
