"""Asset checks: the blocking gold preflight per gold version, and the gates on run scores per gold x model.

``gold_preflight`` (on ``gold_set``, blocking): every expected SQL runs, twice alike; gold scores 100%
against itself; policies hold (``nl2sql_pipeline.preflight``). When it fails, nothing downstream of the
gold version runs.

They apply exactly the gates of ``nl2sql-eval run --min-correctness/--max-regression``
(``nl2sql_pipeline.runs.gates.gate_run``), with the thresholds of the ``eval_settings`` resource
(``min_correctness`` / ``max_regression``; set them in the launchpad or the CLI). Without a threshold a
check passes and still shows the value and the baseline comparison.
"""

import warnings

import dagster as dg
import pandas as pd

from assets.partitions import gold_model_partitions, gold_sets_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.codec import cases_from_frame, run_scores_from_frame
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.preflight import run_preflight
from nl2sql_pipeline.runs import GATED_METRIC, find_baseline, gate_run
from resources.settings import EvalSettings

# Partitioned asset checks are a preview feature of Dagster 1.13: they are what ties a check to its partition.
warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec")

PREFLIGHT_CHECK = "gold_preflight"
CORRECTNESS_FLOOR_CHECK = "correctness_floor"
REGRESSION_CHECK = "no_regression"


@dg.asset_check(
    asset="gold_set",
    name=PREFLIGHT_CHECK,
    blocking=True,
    partitions_def=gold_sets_partitions,
    description="Every expected SQL runs, twice alike; gold scores 100% against itself; policies hold.",
)
def gold_preflight(
    context: dg.AssetCheckExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame
) -> dg.AssetCheckResult:
    cases = cases_from_frame(gold_set)
    report = run_preflight(
        cases, case_databases(context.partition_key), eval_settings.limits(), eval_settings.compare_config()
    )
    return dg.AssetCheckResult(
        passed=report.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "queries_run": report.queries_run,
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in report.problems) or "none"),
            "flags": dg.MetadataValue.md("\n".join(f"- {f}" for f in report.flags) or "none"),
            "problem_count": len(report.problems),
            "flag_count": len(report.flags),
        },
    )


def _run_row(run_scores: pd.DataFrame) -> dict:
    identity, scores = run_scores_from_frame(run_scores)
    return {**identity, **scores.as_dict()}


def _metadata(run: dict, baseline: dict | None, lines: list[str], failures: list[str]) -> dict:
    metadata = {
        GATED_METRIC: run.get(GATED_METRIC),
        "baseline_run_id": baseline["run_id"] if baseline else None,
        f"baseline_{GATED_METRIC}": baseline.get(GATED_METRIC) if baseline else None,
        "comparison": dg.MetadataValue.md("\n".join(f"- {line}" for line in lines) or "none"),
        "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in failures) or "none"),
    }
    return {k: v for k, v in metadata.items() if v is not None}


@dg.asset_check(
    asset="run_scores",
    name=CORRECTNESS_FLOOR_CHECK,
    partitions_def=gold_model_partitions,
    description="Semantic correctness is at or above eval_settings.min_correctness (a run that scored nothing fails).",
)
def correctness_floor(eval_settings: EvalSettings, run_scores: pd.DataFrame) -> dg.AssetCheckResult:
    run = _run_row(run_scores)
    baseline = find_baseline(paths.baselines_db_path(), run)
    report = gate_run(run, baseline, min_correctness=eval_settings.min_correctness)
    return dg.AssetCheckResult(
        passed=report.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description="no floor set" if eval_settings.min_correctness is None else f"floor {eval_settings.min_correctness}",
        metadata=_metadata(run, baseline, report.lines, report.failures),
    )


@dg.asset_check(
    asset="run_scores",
    name=REGRESSION_CHECK,
    partitions_def=gold_model_partitions,
    description="Semantic correctness fell by no more than eval_settings.max_regression against the baseline "
    "(the latest earlier comparable run of the same model on the same gold set).",
)
def no_regression(eval_settings: EvalSettings, run_scores: pd.DataFrame) -> dg.AssetCheckResult:
    run = _run_row(run_scores)
    baseline = find_baseline(paths.baselines_db_path(), run)
    report = gate_run(run, baseline, max_regression=eval_settings.max_regression)
    return dg.AssetCheckResult(
        passed=report.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description="no limit set" if eval_settings.max_regression is None else f"max regression {eval_settings.max_regression}",
        metadata=_metadata(run, baseline, report.lines, report.failures),
    )


GATE_CHECKS = [correctness_floor, no_regression]
GOLD_CHECKS = [gold_preflight]
