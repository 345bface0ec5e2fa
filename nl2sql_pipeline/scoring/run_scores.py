"""Run-level scores from the verdicts: one ``RunScores`` per (gold set, model) run, with the metric names teams use.

Skipped and environment-error verdicts are excluded from every rate and percentile and counted apart,
so a run that never reached its model can't be mistaken for a model that answered badly. Cases the gold
preflight quarantined have no verdict at all: they are counted (``quarantined_count``) and listed with their
findings (``quarantined_cases``), never in a rate.

Policy metrics: a true positive is a probe the policy rejected, a false negative a probe it let through,
a false positive a legitimate query case whose generated SQL it rejected - except on cases tagged
``prompt_injection``, where rejecting what the model wrote is the defence working (counted apart as
``policy_injection_blocks``; the case is still the model's miss).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nl2sql_pipeline.scoring.ambiguity import ambiguity_scores
from nl2sql_pipeline.scoring.budgets import budget_scores
from nl2sql_pipeline.scoring.causes import outcome_causes
from nl2sql_pipeline.scoring.efficiency import efficiency_scores
from nl2sql_pipeline.scoring.metrics import METRICS, RATE_DIMENSIONS
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.probe_replies import probe_reply_scores
from nl2sql_pipeline.stages.records import Verdict

INJECTION_TAG = "prompt_injection"


class RunScoresError(ValueError):
    """Run scores that do not hold exactly the metrics declared in ``nl2sql_pipeline.scoring.metrics``."""


@dataclass(frozen=True)
class RunScores:
    """The scores of one run, one value per metric of ``metrics.METRICS`` (in the order they were computed).

    The ``json``-kind metrics hold real values: ``outcome_counts`` a dict, ``warnings`` a list, each
    ``per_<dimension>`` a dict of breakdown rows. Read a metric as ``scores["semantic_correctness_rate"]``.
    """

    values: Mapping[str, Any]

    def __post_init__(self) -> None:
        declared = {m.name for m in METRICS}
        if set(self.values) != declared:
            missing, extra = sorted(declared - set(self.values)), sorted(set(self.values) - declared)
            raise RunScoresError(f"run scores must hold the declared metrics (missing {missing}, undeclared {extra})")

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def get(self, name: str, default: Any = None) -> Any:
        """The value of metric ``name``, or ``default``."""
        return self.values.get(name, default)

    def as_dict(self) -> dict[str, Any]:
        """Every metric by name (a plain dict; nested values stay real dicts and lists)."""
        return dict(self.values)

    @property
    def warnings(self) -> list[str]:
        """What a reader must know before trusting the numbers (skipped cases, estimated tokens, ...)."""
        return list(self.values["warnings"])

    @property
    def outcome_counts(self) -> dict[str, int]:
        """Query verdicts per outcome class."""
        return dict(self.values["outcome_counts"])

    def breakdown(self, dimension: str) -> dict[str, dict[str, Any]]:
        """The rates per value of ``dimension`` (one of ``metrics.RATE_DIMENSIONS``)."""
        if dimension not in RATE_DIMENSIONS:
            raise KeyError(f"no breakdown by {dimension!r}; dimensions: {RATE_DIMENSIONS}")
        return dict(self.values[f"per_{dimension}"])


class NoVerdictsError(ValueError):
    """A run with no verdicts at all cannot be scored."""


def _rate(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else float(numerator) / float(denominator)


def _known(values: Iterable[float | None]) -> np.ndarray:
    return np.asarray([v for v in values if v is not None], dtype=float)


def _percentile(values: Iterable[float | None], q: float) -> float | None:
    known = _known(values)
    return None if known.size == 0 else float(np.percentile(known, q))


def _mean(values: Iterable[float | None]) -> float | None:
    known = _known(values)
    return None if known.size == 0 else float(known.mean())


def _dimension_values(verdict: Verdict, dimension: str) -> tuple[Any, ...]:
    """The groups a verdict belongs to on ``dimension`` (one per tag for ``tag``; none when unset)."""
    if dimension == "tag":
        return tuple(dict.fromkeys(verdict.tags))
    key = getattr(verdict, dimension)
    return () if key is None else (key,)


def _breakdown(scored: Sequence[Verdict], dimension: str) -> dict[str, dict[str, Any]]:
    tallies: dict[Any, list[int]] = {}  # group -> [queries, correct, executed], counted in one pass
    for verdict in scored:
        correct, executed = verdict.correct, verdict.outcome in outcomes.EXECUTED
        for key in _dimension_values(verdict, dimension):  # a verdict without a value is in no group
            tally = tallies.get(key)
            if tally is None:
                tally = tallies[key] = [0, 0, 0]
            tally[0] += 1
            tally[1] += correct
            tally[2] += executed
    return {
        str(key): {
            "query_count": count,
            "semantic_correctness_rate": _rate(correct, count),
            "sql_execution_success_rate": _rate(executed, count),
        }
        for key, (count, correct, executed) in sorted(tallies.items())
    }


def _warnings(
    queries: Sequence[Verdict],
    scored: Sequence[Verdict],
    skipped: Sequence[Verdict],
    env_errors: Sequence[Verdict],
    estimated: int,
    unknown_cost: int,
) -> list[str]:
    warnings: list[str] = []
    if skipped:
        reasons = Counter(v.skip_reason or "unknown" for v in skipped)
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
        warnings.append(
            f"{len(skipped)} of {len(queries)} query cases were SKIPPED ({detail}); they are excluded from every rate"
        )
    if env_errors:
        warnings.append(f"{len(env_errors)} query cases hit an environment error (oracle failure); excluded from rates")
    if scored and estimated:
        warnings.append(f"token counts of {estimated} cases are estimated (characters/4), not measured by the provider")
    if scored and unknown_cost:
        warnings.append(
            f"cost unknown for {unknown_cost} of {len(scored)} cases (no price configured or mapped, none reported); "
            "total_cost_usd sums the others"
        )
    return warnings


def _system_warnings(scored: Sequence[Verdict]) -> list[str]:
    """What a system's own answers add: cases where the rows it showed differ from its SQL's result."""
    disagree = [v.case_id for v in scored if v.system_rows_disagree]
    if not disagree:
        return []
    shown = ", ".join(disagree[:5]) + (f" and {len(disagree) - 5} more" if len(disagree) > 5 else "")
    return [
        f"{len(disagree)} cases: the system showed rows that differ from its own SQL's result ({shown}); "
        "see system_rows_reason in case_verdicts"
    ]


GRADES: tuple[str, ...] = ("pass", "partial", "fail")


def grade_rates(scored: Sequence[Verdict]) -> dict[str, float | None]:
    """``pass_rate``, ``partial_rate``, ``fail_rate``: shares of the scored verdicts by grade (a scored verdict
    without a grade counts as fail)."""
    counts = Counter(v.grade if v.grade in GRADES else "fail" for v in scored)
    return {f"{grade}_rate": _rate(counts[grade], len(scored)) for grade in GRADES}


def suite_scores(scored: Sequence[Verdict]) -> dict[str, Any]:
    """Test-suite accuracy (None when no verdict measured it), the variants per case, and the disagreements
    with execution accuracy (correct on the database, not on some variant), in case order."""
    measured = [v for v in scored if v.test_suite_correct is not None]
    disagreements = [
        {"case_id": v.case_id, "sample_index": v.sample_index, "reason": v.test_suite_reason}
        for v in measured
        if v.correct and not v.test_suite_correct
    ]
    return {
        "test_suite_accuracy": _rate(sum(bool(v.test_suite_correct) for v in measured), len(measured))
        if measured
        else None,
        "test_suite_variants": max((v.test_suite_variants or 0 for v in measured), default=0),
        "test_suite_disagreements": disagreements,
    }


def _suite_warnings(scored: Sequence[Verdict]) -> list[str]:
    """Cases test-suite accuracy checked on no variant: there it only repeats execution accuracy."""
    bare = [v.case_id for v in scored if v.test_suite_correct is not None and not v.test_suite_variants]
    if not bare:
        return []
    shown = ", ".join(bare[:5]) + (f" and {len(bare) - 5} more" if len(bare) > 5 else "")
    return [
        f"test-suite accuracy: {len(bare)} cases were checked on no database variant ({shown}; variants not "
        "built, or the gold fails on every one): there it equals execution accuracy"
    ]


def quarantine_scores(quarantine: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``quarantined_count`` (distinct cases) and ``quarantined_cases`` (one finding per entry: case id, label,
    kind, reason) of the gold preflight's quarantine findings."""
    findings = [
        {key: str(finding.get(key) or "") for key in ("case_id", "label", "kind", "reason")} for finding in quarantine
    ]
    return {
        "quarantined_count": len({finding["case_id"] for finding in findings}),
        "quarantined_cases": findings,
    }


def _quarantine_warnings(values: Mapping[str, Any]) -> list[str]:
    count = values["quarantined_count"]
    if not count:
        return []
    kinds = Counter(finding["kind"] for finding in values["quarantined_cases"])
    detail = ", ".join(f"{kind}: {n}" for kind, n in sorted(kinds.items()))
    return [
        f"{count} cases were QUARANTINED by the gold preflight ({detail}); they are left out of every rate "
        "(quarantined_cases lists them; --strict-gold stops the run instead)"
    ]


def policy_counts(verdicts: Sequence[Verdict]) -> tuple[int, int, int]:
    """The policy's true positives (probes rejected), false positives (scored query cases rejected) and false
    negatives (probes let through) over a run's verdicts."""
    probe_outcomes = Counter(v.outcome for v in verdicts if v.is_probe)
    tp, fn = probe_outcomes[outcomes.PROBE_REJECTED], probe_outcomes[outcomes.PROBE_ALLOWED]
    rejected = [v for v in verdicts if not v.is_probe and v.outcome == outcomes.POLICY_REJECTED]
    # A model that obeyed a prompt injection wrote an attack: rejecting it is the policy doing its job,
    # not a false positive (the case still counts as a miss for the model).
    injection_blocks = sum(INJECTION_TAG in v.tags for v in rejected)
    return tp, len(rejected) - injection_blocks, fn


def score_run(verdicts: Sequence[Verdict], quarantine: Sequence[Mapping[str, Any]] = ()) -> RunScores:
    """The scores of one run. Rates are over scored query verdicts; None where nothing was scored.

    ``quarantine``: the gold preflight's findings about the cases it quarantined (``CaseFinding.to_dict``);
    those cases have no verdict and are counted and listed apart.
    """
    if not verdicts:
        raise NoVerdictsError("no verdicts to score: the run produced no case verdicts")
    probes = [v for v in verdicts if v.is_probe]
    queries = [v for v in verdicts if not v.is_probe]
    scored = [v for v in queries if v.outcome not in outcomes.NOT_SCORED]
    skipped = [v for v in queries if v.outcome == outcomes.SKIPPED]
    env_errors = [v for v in queries if v.outcome == outcomes.ENVIRONMENT_ERROR]

    probe_outcomes = Counter(v.outcome for v in probes)
    tp, fp, fn = policy_counts(verdicts)
    injection_blocks = sum(v.outcome == outcomes.POLICY_REJECTED and INJECTION_TAG in v.tags for v in scored)

    selection = [v for v in scored if v.candidate_count > 1]
    estimated = sum(v.token_source == "estimated" for v in scored)
    costs = [v.cost_usd for v in scored]
    unknown_cost = sum(c is None for c in costs)
    # the first call of a process to a provider pays the client's connection set-up: not model latency
    latency = [v.latency_ms for v in scored if not v.cold_start]
    executed = sum(v.outcome in outcomes.EXECUTED for v in scored)

    values: dict[str, Any] = {
        "sql_execution_success_rate": _rate(executed, len(scored)),
        "semantic_correctness_rate": _rate(sum(v.correct for v in scored), len(scored)),
        "partial_credit_score": _mean(v.score_partial for v in scored) if scored else None,
        "p50_latency_ms": _percentile(latency, 50),
        "p95_latency_ms": _percentile(latency, 95),
        "average_service_latency_ms": _mean(latency),
        "average_oracle_latency_ms": _mean(v.oracle_latency_ms for v in scored),
        "query_count": len(scored),
        "probe_count": len(probes),
        "unique_case_count": len({v.case_id for v in verdicts}),
        "skipped_count": len(skipped),
        "answer_only_count": sum(v.outcome == outcomes.ANSWER_ONLY for v in queries),
        "environment_error_count": len(env_errors),
        "sample_count": len({v.sample_index for v in verdicts}),
        "policy_rejection_precision": _rate(tp, tp + fp),
        "policy_rejection_recall": _rate(tp, tp + fn),
        "policy_true_positives": tp,
        "policy_false_positives": fp,
        "policy_false_negatives": fn,
        "policy_probe_errors": probe_outcomes[outcomes.PROBE_ERROR],
        "policy_injection_blocks": injection_blocks,
        "candidate_selection_uplift": (
            _rate(sum(v.correct for v in selection) - sum(v.first_candidate_correct for v in selection), len(selection))
            if selection
            else None
        ),
        "average_estimated_input_tokens": _mean(v.input_tokens for v in scored),
        "average_estimated_output_tokens": _mean(v.output_tokens for v in scored),
        # what is known is summed, the unknown counted beside it (None only when no cost at all is known)
        "average_estimated_cost_usd": _mean(costs),
        "total_cost_usd": None if costs and unknown_cost == len(costs) else float(_known(costs).sum()),
        "unknown_cost_count": unknown_cost,
        "token_source": "estimated" if estimated else ("measured" if scored else None),
        "outcome_counts": dict(sorted(Counter(v.outcome for v in queries).items())),
        "warnings": _warnings(queries, scored, skipped, env_errors, estimated, unknown_cost) + _system_warnings(scored),
    }
    for dim in RATE_DIMENSIONS:
        values[f"per_{dim}"] = _breakdown(scored, dim)
    values["outcome_causes"] = dict(outcome_causes(queries))
    values.update(grade_rates(scored))
    values.update(suite_scores(scored))
    values.update(quarantine_scores(quarantine))
    values.update(probe_reply_scores(probes))
    values.update(budget_scores(scored))
    values.update(efficiency_scores(scored))
    values.update(ambiguity_scores(queries))
    values["warnings"] = values["warnings"] + _suite_warnings(scored) + _quarantine_warnings(values)
    return RunScores(values)
