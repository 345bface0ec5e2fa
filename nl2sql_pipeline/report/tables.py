"""The tables of a run report, computed from the run's verdicts: every number traces to ``case_verdicts`` rows.

``build_run_report(verdicts, model=..., gold_set=...)`` gives a :class:`RunReport`: warnings first, the
headline rates with Wilson intervals, latency and cost with bootstrap intervals, breakdowns by dimension
(domain, category, difficulty, tag, and database when verdicts carry one), the weakest capabilities,
outcomes by cause, the token source and the cost split into paid now and replayed from cache.
Renderers (console, HTML) only format these records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nl2sql_pipeline.report.samples import CaseSample
from nl2sql_pipeline.report.sql_judges import SqlJudgeReport
from nl2sql_pipeline.scoring.causes import outcome_causes
from nl2sql_pipeline.scoring.run_scores import policy_counts
from nl2sql_pipeline.scoring.statistics import (
    NO_INTERVAL,
    CaseVariance,
    Interval,
    bootstrap_interval,
    case_variance,
    median,
    total,
    wilson_interval,
)
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict

BREAKDOWN_DIMENSIONS: tuple[str, ...] = ("database", "domain", "category", "difficulty", "tag")
WEAKEST_LIMIT = 5


@dataclass(frozen=True)
class RateRow:
    """``correct`` of ``total`` scored verdicts in one group, with the Wilson interval of the rate."""

    key: str
    correct: int
    total: int
    interval: Interval

    @property
    def rate(self) -> float | None:
        """The share correct (None for an empty group)."""
        return self.interval.estimate

    @property
    def fraction(self) -> str:
        """``3/9``."""
        return f"{self.correct}/{self.total}"


@dataclass(frozen=True)
class CostSplit:
    """Cost of the scored verdicts: paid by this run, replayed from the generation cache, unknown."""

    paid_now_usd: float
    from_cache_usd: float
    paid_now_cases: int
    from_cache_cases: int
    unknown_cases: int
    total: Interval  # the bootstrap interval of the total cost (None when any cost is unknown)


@dataclass(frozen=True)
class RunReport:
    """Everything the console and HTML reports show for one run."""

    model: str
    gold_set: str
    warnings: list[str]
    correctness: RateRow
    execution_success: RateRow
    latency_p50: Interval
    latency_mean: Interval
    latency_values: list[float]
    cost: CostSplit
    token_source: str | None
    breakdowns: dict[str, list[RateRow]]
    weakest: list[tuple[str, RateRow]]
    causes: list[tuple[str, int]]
    variance: CaseVariance
    verdicts: list[Verdict] = field(repr=False, default_factory=list)
    samples: Mapping[tuple[str, int], CaseSample] = field(repr=False, default_factory=dict)  # by (case, sample)
    test_suite: RateRow | None = None  # test-suite accuracy (None: not measured in this run)
    suite_disagreements: list[Verdict] = field(default_factory=list)  # correct on the database, not on a variant
    grades: list[RateRow] = field(default_factory=list)  # pass / partial / fail shares of the scored verdicts
    quarantined: list[dict[str, str]] = field(default_factory=list)  # the gold preflight's findings per left-out case
    answers: Any = None  # report.answers.AnswersReport: the answer stage and judges (None: not run)
    sql_judges: SqlJudgeReport | None = None  # the SQL judges' section (report.sql_judges; None: not judged)
    # policy rejection precision (probes rejected / everything rejected) and recall (probes rejected / probes);
    # None when the run had no probe
    policy_precision: RateRow | None = None
    policy_recall: RateRow | None = None

    def quarantine_lines(self) -> list[str]:
        """``<label>: [<kind>] <reason>`` for every finding that quarantined a case (left out of every rate)."""
        return [f"{f.get('label') or f.get('case_id')}: [{f.get('kind')}] {f.get('reason')}" for f in self.quarantined]


def _rate_row(key: str, group: Sequence[Verdict], predicate: Callable[[Verdict], bool]) -> RateRow:
    hits = sum(1 for v in group if predicate(v))
    return RateRow(key, hits, len(group), wilson_interval(hits, len(group)))


def _is_correct(verdict: Verdict) -> bool:
    return bool(verdict.correct)


def _executed(verdict: Verdict) -> bool:
    return verdict.outcome in outcomes.EXECUTED


def _keys(verdict: Verdict, dimension: str) -> list[str]:
    if dimension == "tag":
        return list(verdict.tags)
    value = getattr(verdict, dimension, None)  # ``database`` exists only on verdicts that record it
    return [] if value in (None, "") else [str(value)]


def breakdown(scored: Sequence[Verdict], dimension: str) -> list[RateRow]:
    """Correctness per value of ``dimension`` (a verdict with several tags counts under each), by key."""
    groups: dict[str, list[Verdict]] = {}
    for verdict in scored:
        for key in _keys(verdict, dimension):
            groups.setdefault(key, []).append(verdict)
    return [_rate_row(key, group, _is_correct) for key, group in sorted(groups.items())]


def weakest_capabilities(breakdowns: dict[str, list[RateRow]], limit: int = WEAKEST_LIMIT) -> list[tuple[str, RateRow]]:
    """The categories and tags below 100%, surest weakness first: lowest Wilson upper bound (so 0/1 does not
    outrank 15/30), then the lower rate, then the larger group."""
    rows = [(dim, row) for dim in ("category", "tag") for row in breakdowns.get(dim, []) if row.correct < row.total]
    rows.sort(
        key=lambda item: (item[1].interval.high, item[1].correct / item[1].total, -item[1].total, item[0], item[1].key)
    )
    return rows[:limit]


def cost_split(scored: Sequence[Verdict]) -> CostSplit:
    """The cost paid by this run and the cost replayed from the generation cache (``cached``)."""
    paid = [v.cost_usd for v in scored if v.cost_usd is not None and not v.cached]
    cached = [v.cost_usd for v in scored if v.cost_usd is not None and v.cached]
    unknown = sum(v.cost_usd is None for v in scored)
    interval = NO_INTERVAL if unknown else bootstrap_interval([v.cost_usd for v in scored], total)
    return CostSplit(float(sum(paid)), float(sum(cached)), len(paid), len(cached), unknown, interval)


def _test_suite(scored: Sequence[Verdict]) -> tuple[RateRow | None, list[Verdict]]:
    """Test-suite accuracy over the verdicts that measured it, and those where it disagrees with correctness."""
    measured = [v for v in scored if v.test_suite_correct is not None]
    if not measured:
        return None, []
    disagree = [v for v in measured if v.correct and not v.test_suite_correct]
    return _rate_row("test_suite_accuracy", measured, lambda v: bool(v.test_suite_correct)), disagree


def _has_grade(grade: str, verdict: Verdict) -> bool:
    return (verdict.grade or "fail") == grade


def _grades(scored: Sequence[Verdict]) -> list[RateRow]:
    if not scored:
        return []
    return [_rate_row(name, scored, partial(_has_grade, name)) for name in ("pass", "partial", "fail")]


def _partial_run_warnings(queries: Sequence[Verdict], scored: Sequence[Verdict]) -> list[str]:
    if queries and not scored:
        return [f"PARTIAL RUN: none of the {len(queries)} query verdicts was scored; no rate below means anything"]
    if len(scored) < len(queries):
        return [f"PARTIAL RUN: {len(scored)} of {len(queries)} query verdicts were scored"]
    return []


def build_run_report(
    verdicts: Sequence[Verdict],
    *,
    model: str,
    gold_set: str,
    warnings: Sequence[str] = (),
    samples: Mapping[tuple[str, int], CaseSample] | None = None,
    quarantined: Sequence[Mapping[str, str]] = (),
) -> RunReport:
    """The report of one run from its verdicts; ``warnings`` are the run scores' own (skipped cases, ...);
    ``samples`` the result samples of its cases (``report.samples``), for the per-case table; ``quarantined``
    the gold preflight's findings about the cases left out (the scores' ``quarantined_cases``)."""
    queries = [v for v in verdicts if not v.is_probe]
    scored = [v for v in queries if v.outcome not in outcomes.NOT_SCORED]
    latency = [v.latency_ms for v in scored if v.latency_ms is not None and not v.cold_start]
    breakdowns = {dim: breakdown(scored, dim) for dim in BREAKDOWN_DIMENSIONS}
    breakdowns = {dim: rows for dim, rows in breakdowns.items() if rows}
    estimated = any(v.token_source == "estimated" for v in scored)
    measured = any(v.token_source == "measured" for v in scored)
    suite, disagreements = _test_suite(scored)
    policy = _policy_rows(verdicts)
    return RunReport(
        model=model,
        gold_set=gold_set,
        warnings=_partial_run_warnings([v for v in queries if v.outcome not in outcomes.OWN_CATEGORY], scored)
        + list(warnings),
        correctness=_rate_row("semantic_correctness", scored, _is_correct),
        execution_success=_rate_row("sql_execution_success", scored, _executed),
        latency_p50=bootstrap_interval(latency, median),
        latency_mean=bootstrap_interval(latency),
        latency_values=[float(x) for x in latency],
        cost=cost_split(scored),
        token_source=(
            "mixed" if estimated and measured else "estimated" if estimated else "measured" if measured else None
        ),
        breakdowns=breakdowns,
        weakest=weakest_capabilities(breakdowns),
        causes=outcome_causes(queries),
        variance=case_variance(verdicts),
        verdicts=list(verdicts),
        samples=dict(samples or {}),
        test_suite=suite,
        suite_disagreements=disagreements,
        grades=_grades(scored),
        quarantined=[dict(finding) for finding in quarantined],
        policy_precision=policy[0],
        policy_recall=policy[1],
    )


def _policy_rows(verdicts: Sequence[Verdict]) -> tuple[RateRow | None, RateRow | None]:
    """Policy rejection precision and recall with their counts (the run scores' rule), or None without probes."""
    if not any(v.is_probe for v in verdicts):
        return None, None
    tp, fp, fn = policy_counts(verdicts)
    return (
        RateRow("policy_rejection_precision", tp, tp + fp, wilson_interval(tp, tp + fp)),
        RateRow("policy_rejection_recall", tp, tp + fn, wilson_interval(tp, tp + fn)),
    )
