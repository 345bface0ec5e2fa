"""Run-level scores from the verdicts: one row per (gold set, model) run, with the metric names teams use.

Skipped and environment-error verdicts are excluded from every rate and percentile and counted apart,
so a run that never reached its model can't be mistaken for a model that answered badly.

Policy metrics: a true positive is a probe the policy rejected, a false negative a probe it let through,
a false positive a legitimate query case whose generated SQL it rejected - except on cases tagged
``prompt_injection``, where rejecting what the model wrote is the defence working (counted apart as
``policy_injection_blocks``; the case is still the model's miss).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from nl2sql_pipeline import outcomes
from nl2sql_pipeline.metrics import METRICS_BY_NAME, RATE_DIMENSIONS

INJECTION_TAG = "prompt_injection"


def _rate(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else float(numerator) / float(denominator)


def _percentile(values: pd.Series, q: float) -> float | None:
    clean = pd.to_numeric(values, errors="coerce").dropna()
    return None if clean.empty else float(np.percentile(clean.to_numpy(dtype=float), q))


def _mean(values: pd.Series) -> float | None:
    clean = pd.to_numeric(values, errors="coerce").dropna()
    return None if clean.empty else float(clean.mean())


def _breakdown(scored: pd.DataFrame, column: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, group in scored.groupby(column, sort=True):
        out[str(key)] = {
            "query_count": int(len(group)),
            "semantic_correctness_rate": _rate(group["correct"].sum(), len(group)),
            "sql_execution_success_rate": _rate(group["outcome"].isin(outcomes.EXECUTED).sum(), len(group)),
        }
    return out


def score_run(verdicts: pd.DataFrame) -> dict[str, Any]:
    """The scores of one run. Rates are over scored query verdicts; None where nothing was scored."""
    if verdicts.empty:
        raise ValueError("no verdicts to score: the run produced no case verdicts")
    probes = verdicts[verdicts["is_probe"].astype(bool)]
    queries = verdicts[~verdicts["is_probe"].astype(bool)]
    scored = queries[~queries["outcome"].isin(outcomes.NOT_SCORED)]
    skipped = queries[queries["outcome"] == outcomes.SKIPPED]
    env_errors = queries[queries["outcome"] == outcomes.ENVIRONMENT_ERROR]

    tp = int((probes["outcome"] == outcomes.PROBE_REJECTED).sum())
    fn = int((probes["outcome"] == outcomes.PROBE_ALLOWED).sum())
    probe_errors = int((probes["outcome"] == outcomes.PROBE_ERROR).sum())
    rejected = scored["outcome"] == outcomes.POLICY_REJECTED
    # A model that obeyed a prompt injection wrote an attack: rejecting it is the policy doing its job,
    # not a false positive (the case still counts as a miss for the model).
    tags = scored["tags"] if "tags" in scored else pd.Series("", index=scored.index)
    injected = tags.fillna("").str.split(",").map(lambda names: INJECTION_TAG in names).astype(bool)
    injection_blocks = int((rejected & injected).sum())
    fp = int(rejected.sum()) - injection_blocks

    selection = scored[scored["candidate_count"].fillna(1).astype(int) > 1] if "candidate_count" in scored else scored.iloc[0:0]
    estimated = scored["token_source"].eq("estimated").sum() if "token_source" in scored else 0
    costs = pd.to_numeric(scored.get("cost_usd"), errors="coerce") if "cost_usd" in scored else pd.Series(dtype=float)

    warnings: list[str] = []
    if len(skipped):
        reasons = skipped["skip_reason"].fillna("unknown").value_counts().to_dict()
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
        warnings.append(
            f"{len(skipped)} of {len(queries)} query cases were SKIPPED ({detail}); they are excluded from every rate"
        )
    if len(env_errors):
        warnings.append(f"{len(env_errors)} query cases hit an environment error (oracle failure); excluded from rates")
    if len(scored) and estimated:
        warnings.append(f"token counts of {int(estimated)} cases are estimated (characters/4), not measured by the provider")
    if len(scored) and costs.isna().any():
        warnings.append(f"cost unknown for {int(costs.isna().sum())} cases (no price configured or mapped)")

    # the first call of a process to a provider pays the client's connection set-up: not model latency
    cold = scored["cold_start"].fillna(False).astype(bool) if "cold_start" in scored else pd.Series(False, index=scored.index)
    latency = scored.loc[~cold, "latency_ms"]

    scores: dict[str, Any] = {
        "sql_execution_success_rate": _rate(scored["outcome"].isin(outcomes.EXECUTED).sum(), len(scored)),
        "semantic_correctness_rate": _rate(scored["correct"].sum(), len(scored)),
        "partial_credit_score": _mean(scored["score_partial"]) if len(scored) else None,
        "p50_latency_ms": _percentile(latency, 50),
        "p95_latency_ms": _percentile(latency, 95),
        "average_service_latency_ms": _mean(latency),
        "average_oracle_latency_ms": _mean(scored["oracle_latency_ms"]),
        "query_count": int(len(scored)),
        "probe_count": int(len(probes)),
        "unique_case_count": int(verdicts["case_id"].nunique()),
        "skipped_count": int(len(skipped)),
        "environment_error_count": int(len(env_errors)),
        "sample_count": int(verdicts["sample_index"].nunique()) if "sample_index" in verdicts else 1,
        "policy_rejection_precision": _rate(tp, tp + fp),
        "policy_rejection_recall": _rate(tp, tp + fn),
        "policy_true_positives": tp,
        "policy_false_positives": fp,
        "policy_false_negatives": fn,
        "policy_probe_errors": probe_errors,
        "policy_injection_blocks": injection_blocks,
        "candidate_selection_uplift": (
            _rate(selection["correct"].sum() - selection["first_candidate_correct"].sum(), len(selection))
            if len(selection)
            else None
        ),
        "average_estimated_input_tokens": _mean(scored["input_tokens"]),
        "average_estimated_output_tokens": _mean(scored["output_tokens"]),
        "average_estimated_cost_usd": None if costs.isna().any() else _mean(costs),
        "total_cost_usd": None if costs.isna().any() else float(costs.sum()),
        "token_source": "estimated" if estimated else ("measured" if len(scored) else None),
        "outcome_counts": json.dumps(queries["outcome"].value_counts().sort_index().to_dict()),
        "warnings": json.dumps(warnings),
    }
    for dim in RATE_DIMENSIONS:
        scores[f"per_{dim}"] = json.dumps(_breakdown(scored, dim), sort_keys=True)
    undeclared = set(scores) - set(METRICS_BY_NAME)
    assert not undeclared, f"scores not declared in nl2sql_pipeline.metrics: {sorted(undeclared)}"
    return scores


def scores_frame(scores: dict[str, Any], **identity: Any) -> pd.DataFrame:
    """One-row frame: identity columns (gold_set, model, versions) first, then the scores."""
    return pd.DataFrame([{**identity, **scores}])


def format_rate(value: Any) -> str:
    """A rate for humans: ``0.875`` -> ``87.5%``; None/NaN -> ``n/a``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100.0 * float(value):.1f}%"
