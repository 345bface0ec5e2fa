"""The versioned baselines table: every scored run appended with the versions that produced it."""

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS, FOLLOW_MODEL
from assets.partitions import gold_model_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.results.frames import run_scores_from_frame
from nl2sql_pipeline.runs import RunVersions, find_baseline, gate_run, not_baseline_reason, record_run
from resources.settings import EvalSettings


@dg.asset(
    code_version=CODE_VERSIONS["baselines"],
    automation_condition=FOLLOW_MODEL,
    group_name="scores",
    partitions_def=gold_model_partitions,
    description="Appends the run's scores with its version fields to the DuckDB baselines file; a run that "
    "skipped cases, evaluated nothing or failed a gate is recorded as not comparable (never a baseline). The "
    "blocking gate checks on run_scores stop it first when a gate fails (the check records the run).",
)
def baselines(
    context: dg.AssetExecutionContext, eval_settings: EvalSettings, run_scores: pd.DataFrame
) -> dg.MaterializeResult:
    identity, scores = run_scores_from_frame(run_scores)
    if str(identity["run_id"]) != context.run_id:
        raise dg.Failure(
            description=f"run_scores read by run {context.run_id} belong to run {identity['run_id']}; "
            "refusing to record another run's scores"
        )
    versions = RunVersions.from_mapping(identity)
    db_path = paths.baselines_db_path()
    run = {**identity, **scores.as_dict()}
    # the gates again: a run materialized without its checks (e.g. baselines alone) is held to them too
    gates = gate_run(run, find_baseline(db_path, run), eval_settings.gate_thresholds(identity["model"]))
    reason = not_baseline_reason(run, gates)
    record_run(
        db_path,
        run_id=str(identity["run_id"]),
        gold_set=identity["gold_set"],
        model=identity["model"],
        versions=versions,
        scores=scores.as_dict(),
        not_comparable_reason=reason,
        database_stamp=identity.get("database_stamp"),
    )
    if reason is not None:
        context.log.warning("run %s recorded as NOT comparable (never a baseline): %s", context.run_id, reason)
    metadata: dict[str, dg.MetadataValue | str | bool] = {
        "path": dg.MetadataValue.path(str(db_path)),
        "run_id": str(identity["run_id"]),
        "comparable": reason is None,
    }
    if reason is not None:
        metadata["not_comparable_reason"] = reason
    return dg.MaterializeResult(metadata=metadata)
