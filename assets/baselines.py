"""The versioned baselines table: every scored run appended with the versions that produced it."""

import dagster as dg
import pandas as pd

from assets.partitions import gold_model_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.codec import run_scores_from_frame
from nl2sql_pipeline.runs import RunVersions, record_run


@dg.asset(
    group_name="scores",
    partitions_def=gold_model_partitions,
    description="Appends the run's scores with its version fields to the DuckDB baselines file.",
)
def baselines(context: dg.AssetExecutionContext, run_scores: pd.DataFrame) -> dg.MaterializeResult:
    identity, scores = run_scores_from_frame(run_scores)
    versions = RunVersions.from_mapping(identity)
    db_path = paths.baselines_db_path()
    record_run(db_path, run_id=str(identity["run_id"]), gold_set=identity["gold_set"], model=identity["model"],
               versions=versions, scores=scores.as_dict())
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(db_path)), "run_id": str(identity["run_id"])})
