"""Builds the Dagster Definitions of nl2sql-eval (``assets.definitions`` holds the ones workspace.yaml loads).

The automation opt-in of data/judges.yml is read when they are built: the default ``eval_settings`` answers and
judges, and the judgement assets' automation conditions and code versions (``assets.automation``).
"""

from __future__ import annotations

import dagster as dg

from assets.automation import automation_sensor, judge_automation_sensor, with_judge_automation
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


def build_definitions() -> dg.Definitions:
    """The Definitions, with the automation opt-in of data/judges.yml (``automation:``) as it is now."""
    from nl2sql_pipeline.judges.automation import load_judge_automation

    automation = load_judge_automation()
    return dg.Definitions(
        assets=with_judge_automation(ALL_ASSETS, automation),
        asset_checks=ASSET_CHECKS,
        jobs=[prepare_gold_set_job, evaluate_model_job, measure_robustness_job, answer_and_judge_job, judge_sql_job],
        schedules=[nightly_evaluation],
        sensors=[partition_registry_sensor, model_change_sensor, automation_sensor, judge_automation_sensor],
        resources=build_resources(**automation.settings()),
    )
