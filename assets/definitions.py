"""Assembles the Dagster Definitions of nl2sql-eval (loaded by workspace.yaml). Nothing is defined here."""

from __future__ import annotations

import dagster as dg

from assets.automation import automation_sensor
from assets.graph import ALL_ASSETS, ASSET_CHECKS
from assets.jobs import (
    answer_and_judge_job,
    evaluate_model_job,
    judge_sql_job,
    measure_robustness_job,
    prepare_gold_set_job,
)
from assets.schedules import nightly_evaluation
from assets.sensors import model_change_sensor, partition_registry_sensor
from resources.build import build_resources

defs = dg.Definitions(
    assets=ALL_ASSETS,
    asset_checks=ASSET_CHECKS,
    jobs=[prepare_gold_set_job, evaluate_model_job, measure_robustness_job, answer_and_judge_job, judge_sql_job],
    schedules=[nightly_evaluation],
    sensors=[partition_registry_sensor, model_change_sensor, automation_sensor],
    resources=build_resources(),
)
