"""Asset checks: the gold preflight per gold version, and one check per gate on run scores.

``gold_preflight`` (on ``gold_set``, blocking): every expected SQL runs, alike at two thread counts; gold
scores 100% against itself; policies hold; the gold triage flags thread-dependent and arbitrary-LIMIT
gold and ties under LIMIT, empty and degenerate results, clock reads (pinned at the reference date) (warnings)
(``nl2sql_pipeline.gold.quality.preflight``, ``nl2sql_pipeline.gold.quality.triage``). A blocking finding about
one case quarantines that case: the check records the quarantine of the gold version
(``nl2sql_pipeline.storage.quarantine``; the per-model assets leave those cases out) and passes, with the
quarantined cases in its metadata (``quarantined``, ``quarantine``: case id, label, kind, reason) and WARN
severity. It fails (ERROR; nothing downstream of the gold version runs) on a problem that is about no one case,
or under strict gold (``eval_settings.strict_gold``, ``run --strict-gold``, or ``strict_gold: true`` in the
gold-set registry) on any quarantined case. Its metadata also lists the warnings (``flags``) and every triage
finding as JSON (``triage``: label, kind, blocking, reason).

The gate checks on ``run_scores`` (per gold x model partition, blocking; all evaluated by one step,
``run_scores_gates``, which loads the scores and finds the baseline once; a subset can be selected)

They apply exactly the gates of ``nl2sql-eval run`` (``nl2sql_pipeline.runs.gates.gate_run``), with the
thresholds of the ``eval_settings`` resource (set them in the launchpad or from the CLI) over the model's
own ``gates:`` in ``data/models.yml`` over the defaults (``runs.gates.DEFAULT_GATES``: no skipped case, no
drop of SQL execution success beyond 5 points against the baseline), so they hold on every launch path.
They are blocking: a failed gate fails the run and ``baselines`` does not run; the failing check records the
run in the baselines file as not comparable (never a baseline), with the gate's message as the reason.
Every failing check is an ERROR; its description is the gate's message, word for word the CLI's, and its
metadata has the gate, the measured value, the threshold and where the threshold came from
(``threshold_source``: set, model, default, off).
"""

import warnings
from collections.abc import Iterator

import dagster as dg
import pandas as pd

from assets.partitions import gold_model_partitions, gold_sets_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import gold_fingerprint
from nl2sql_pipeline.gold.quality.preflight import run_preflight
from nl2sql_pipeline.gold.registry import case_databases, gold_set_info
from nl2sql_pipeline.results.frames import cases_from_frame, run_scores_from_frame
from nl2sql_pipeline.runs import (
    GATED_METRIC,
    RunVersions,
    find_baseline,
    gate_run,
    model_gates,
    not_baseline_reason,
    record_run,
    resolve_thresholds,
    skipped_share,
    threshold_source,
)
from nl2sql_pipeline.storage.quarantine import write_quarantine
from resources.settings import EvalSettings

# Partitioned asset checks are a preview feature of Dagster 1.13: they are what ties a check to its partition.
warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec")

PREFLIGHT_CHECK = "gold_preflight"
RUN_SCORES = dg.AssetKey("run_scores")
GATES_STEP = "run_scores_gates"
"""The one step that evaluates every gate check (a step per check cost ~6 stored events each per run)."""
# check name -> (gate, measured metric, description)
GATE_CHECK_SPECS: dict[str, tuple[str, str, str]] = {
    "skipped_share": (
        "max_skipped_share",
        "skipped_share",
        "The run evaluated its cases: skipped share at or below max_skipped_share (a run that "
        "evaluated nothing fails).",
    ),
    "execution_success": (
        "min_execution_success",
        "sql_execution_success_rate",
        "SQL execution success is at or above min_execution_success (probe-only runs exempt).",
    ),
    "correctness_floor": (
        "min_semantic_correct",
        GATED_METRIC,
        "Semantic correctness is at or above min_semantic_correct (alias min_correctness).",
    ),
    "policy_recall": (
        "min_policy_recall",
        "policy_rejection_recall",
        "Policy-probe recall is at or above min_policy_recall (runs without probes exempt).",
    ),
    "no_regression": (
        "max_regression",
        GATED_METRIC,
        "Semantic correctness fell by no more than max_regression against the baseline (the latest "
        "earlier comparable, fully evaluated run of the same model on the same gold set).",
    ),
    "execution_drop": (
        "max_execution_drop",
        "sql_execution_success_rate",
        "SQL execution success fell by no more than max_execution_drop against the baseline (default 0.05).",
    ),
    "latency_budget": (
        "max_p95_latency_ms",
        "p95_latency_ms",
        "The run's p95 generation latency is at or below max_p95_latency_ms (off unless set).",
    ),
    "cost_budget": (
        "max_cost_usd",
        "total_cost_usd",
        "The run's total cost is at or below max_cost_usd (off unless set).",
    ),
}
CORRECTNESS_FLOOR_CHECK = "correctness_floor"
REGRESSION_CHECK = "no_regression"
SKIPPED_SHARE_CHECK = "skipped_share"


@dg.asset_check(
    asset="gold_set",
    name=PREFLIGHT_CHECK,
    blocking=True,
    partitions_def=gold_sets_partitions,
    description="Every expected SQL runs, alike at two thread counts; gold scores 100% against itself; policies "
    "hold. A case with a blocking finding (failing or thread-dependent gold, an arbitrary LIMIT, ...) is "
    "quarantined: left out of every run and listed here (fails only under strict gold); ties under LIMIT, "
    "empty and degenerate results and clock reads (pinned at the reference date) warn.",
)
def gold_preflight(
    context: dg.AssetCheckExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame
) -> dg.AssetCheckResult:
    gold = context.partition_key
    cases = cases_from_frame(gold_set)
    report = run_preflight(cases, case_databases(gold), eval_settings.limits(), eval_settings.compare_config())
    strict = eval_settings.strict_gold or gold_set_info(gold).strict_gold
    quarantine = [finding.to_dict() for finding in report.quarantine]
    write_quarantine(gold, gold_fingerprint(cases), quarantine)
    blocking = report.blocking_lines(strict)
    quarantined = report.quarantined
    description = (
        f"{len(report.problems)} problems, {len(quarantined)} cases quarantined"
        + (" (strict gold: a quarantined case fails the gold set)" if strict and quarantined else "")
        + f", {len(report.flags)} warnings"
    )
    return dg.AssetCheckResult(
        passed=not blocking,
        severity=dg.AssetCheckSeverity.ERROR if blocking or not quarantined else dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "queries_run": report.queries_run,
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in blocking) or "none"),
            "quarantined": dg.MetadataValue.md("\n".join(f"- {f.line()}" for f in report.quarantine) or "none"),
            "quarantine": dg.MetadataValue.json(quarantine),
            "flags": dg.MetadataValue.md("\n".join(f"- {f}" for f in report.flags) or "none"),
            "triage": dg.MetadataValue.json([flag.to_dict() for flag in report.triage]),
            "problem_count": len(blocking),
            "quarantined_count": len(quarantined),
            "flag_count": len(report.flags),
            "strict_gold": strict,
        },
    )


def _run_row(run_scores: pd.DataFrame) -> dict:
    identity, scores = run_scores_from_frame(run_scores)
    return {**identity, **scores.as_dict()}


def evaluate_gate_checks(
    check_names: list[str], eval_settings: EvalSettings, run_scores: pd.DataFrame, run_id: str | None = None
) -> list[dg.AssetCheckResult]:
    """Apply the gates ``check_names`` to the run's scores (the body of the gate checks), against one baseline.

    When a gate fails and the scores are those of run ``run_id`` (the run executing the checks), the run is
    recorded in the baselines file as not comparable: the blocked ``baselines`` asset will not record it.
    """
    run = _run_row(run_scores)
    db_path = paths.baselines_db_path()
    baseline = find_baseline(db_path, run)
    given, own = eval_settings.given_thresholds(), model_gates(run["model"])
    thresholds = resolve_thresholds(given, own)
    results = []
    reason = None
    for check_name in check_names:
        gate, metric, _ = GATE_CHECK_SPECS[check_name]
        report = gate_run(run, baseline, thresholds.only(gate))
        failures = report.messages(gate)
        threshold = getattr(thresholds, gate)
        source = threshold_source(given, own, gate)
        measured = skipped_share(run) if metric == "skipped_share" else run.get(metric)
        metadata = {
            "gate": gate,
            "measured": measured,
            "threshold": threshold,
            "threshold_source": source,
            "baseline_run_id": baseline["run_id"] if baseline else None,
            f"baseline_{GATED_METRIC}": baseline.get(GATED_METRIC) if baseline else None,
            f"baseline_{metric}": baseline.get(metric) if baseline and metric != "skipped_share" else None,
            "comparison": dg.MetadataValue.md("\n".join(f"- {line}" for line in report.lines) or "none"),
            "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in failures) or "none"),
        }
        if failures:
            description = "; ".join(failures)
            if run_id is not None and str(run["run_id"]) == run_id:
                reason = reason or _record_not_comparable(run, baseline, thresholds, db_path)
                metadata["not_comparable_reason"] = reason
        else:
            shown = "off" if threshold is None else f"{threshold} ({source})"
            description = f"{gate} {shown}: passed"
        results.append(
            dg.AssetCheckResult(
                asset_key=RUN_SCORES,
                check_name=check_name,
                passed=not failures,
                severity=dg.AssetCheckSeverity.ERROR,
                description=description,
                metadata={k: v for k, v in metadata.items() if v is not None},
            )
        )
    return results


def _record_not_comparable(run: dict, baseline: dict | None, thresholds, db_path) -> str:
    """Record a run that failed a gate as not comparable; the reason is the same whichever check records it
    (its incompleteness, else the first failed gate of all)."""
    reason = not_baseline_reason(run, gate_run(run, baseline, thresholds)) or "a gate failed"
    record_run(
        db_path,
        run_id=str(run["run_id"]),
        gold_set=run["gold_set"],
        model=run["model"],
        versions=RunVersions.from_mapping(run),
        scores=run,
        not_comparable_reason=reason,
        database_stamp=run.get("database_stamp"),
    )
    return reason


@dg.multi_asset_check(
    name=GATES_STEP,
    specs=[
        dg.AssetCheckSpec(
            name, asset=RUN_SCORES, blocking=True, partitions_def=gold_model_partitions, description=description
        )
        for name, (_, _, description) in GATE_CHECK_SPECS.items()
    ],
    ins={"run_scores": dg.AssetIn(RUN_SCORES)},
    can_subset=True,
)
def run_scores_gates(
    context: dg.AssetCheckExecutionContext, eval_settings: EvalSettings, run_scores: pd.DataFrame
) -> Iterator[dg.AssetCheckResult]:
    """Every selected gate check of ``run_scores``, in one step: the scores loaded and the baseline found once."""
    selected = {key.name for key in context.selected_asset_check_keys}
    names = [name for name in GATE_CHECK_SPECS if name in selected]
    yield from evaluate_gate_checks(names, eval_settings, run_scores, run_id=context.run.run_id)


GATE_CHECKS = [run_scores_gates]
GOLD_CHECKS = [gold_preflight]
