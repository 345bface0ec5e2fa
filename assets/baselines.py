"""The versioned baselines table: every scored run appended with the versions that produced it."""

import dagster as dg
import pandas as pd

from assets.partitions import gold_model_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.runs import VERSION_FIELDS, RunVersions, record_run


@dg.asset(
    group_name="scores",
    partitions_def=gold_model_partitions,
    description="Appends the run's scores with its version fields to the DuckDB baselines file.",
)
def baselines(context: dg.AssetExecutionContext, run_scores: pd.DataFrame) -> dg.MaterializeResult:
    row = run_scores.iloc[0].to_dict()
    row = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    versions = RunVersions.from_mapping({name: row[name] for name in VERSION_FIELDS})
    db_path = paths.baselines_db_path()
    record_run(db_path, run_id=str(row["run_id"]), gold_set=row["gold_set"], model=row["model"], versions=versions, scores=row)
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(db_path)), "run_id": str(row["run_id"])})
