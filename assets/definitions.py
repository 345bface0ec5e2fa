"""Assembles the Dagster Definitions of nl2sql-eval (loaded by workspace.yaml)."""

from __future__ import annotations

import dagster as dg

from assets.candidates import candidate_results, candidate_sql
from assets.gold import gold_set, oracle_results, sample_database
from assets.scores import baselines, run_scores
from assets.jobs import evaluate_model_job, prepare_gold_set_job
from assets.sensors import model_change_sensor, partition_registry_sensor
from assets.verdicts import case_verdicts
from resources.io_manager import ParquetIOManager
from resources.settings import EvalSettings

ALL_ASSETS = [
    sample_database,
    gold_set,
    oracle_results,
    candidate_sql,
    candidate_results,
    case_verdicts,
    run_scores,
    baselines,
]
GOLD_ASSETS = [gold_set, oracle_results]
MODEL_ASSETS = [candidate_sql, candidate_results, case_verdicts, run_scores, baselines]


def build_resources(**settings: object) -> dict[str, object]:
    """The resources every asset needs (storage under the storage root); ``settings`` go to EvalSettings."""
    return {"parquet_io_manager": ParquetIOManager(), "eval_settings": EvalSettings(**settings)}


defs = dg.Definitions(
    assets=ALL_ASSETS,
    jobs=[prepare_gold_set_job, evaluate_model_job],
    sensors=[partition_registry_sensor, model_change_sensor],
    resources=build_resources(),
)
