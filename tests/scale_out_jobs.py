"""The project's asset graph with its steps on Celery workers (dagster-celery), for tests/test_scale_out.py.

Each function returns one job of the graph with the ``celery_executor``: the orchestrating process puts every
step on the broker and Celery workers (``dagster-celery worker start``) execute it. A worker rebuilds the job
from this file (``ReconstructableJob.for_file``), so it needs the checkout on ``PYTHONPATH`` and the same
environment as the orchestrator (``NL2SQL_HOME``, ``NL2SQL_DATA``, ``NL2SQL_ASSETS_URL``, ``DAGSTER_HOME``).
The broker and result backend come from the run config (``execution: config: broker/backend``).
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

from assets.graph import ALL_ASSETS, ASSET_CHECKS, GOLD_ASSETS, MODEL_ASSETS
from assets.partitions import gold_model_partitions, gold_sets_partitions
from resources.build import build_resources

JOB_FILE = __file__


def _job(name: str, selection: dg.AssetSelection, partitions_def=None) -> dg.JobDefinition:
    job = dg.define_asset_job(name, selection=selection, partitions_def=partitions_def, executor_def=celery_executor)
    defs = dg.Definitions(assets=ALL_ASSETS, asset_checks=ASSET_CHECKS, jobs=[job], resources=build_resources())
    return defs.resolve_job_def(name)


def sample_database_job() -> dg.JobDefinition:
    """The sample database (unpartitioned)."""
    return _job("celery_sample_database", dg.AssetSelection.keys("sample_database"))


def gold_job() -> dg.JobDefinition:
    """The gold version: gold set (blocking preflight), oracle results, database variants."""
    return _job("celery_gold", dg.AssetSelection.assets(*[a.key for a in GOLD_ASSETS]), gold_sets_partitions)


def model_job() -> dg.JobDefinition:
    """One model on one gold version: generate, execute, judge, score, record the baseline."""
    return _job("celery_model", dg.AssetSelection.assets(*[a.key for a in MODEL_ASSETS]), gold_model_partitions)
