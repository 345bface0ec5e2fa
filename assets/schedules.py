"""The nightly schedule: re-evaluates every model whose registry entry says ``rerun: nightly``.

Each night (02:00 UTC) it requests one ``evaluate_model`` run per prepared gold version (a gold set
partition with a materialized ``gold_set``) and per registered ``rerun: nightly`` model; the run key
carries the night, so a tick evaluated twice requests nothing twice. Runs are tagged
``nl2sql/rerun_reason=nightly schedule`` and queue under the same limits as every other run.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg

from assets.jobs import evaluate_model_job
from assets.partitions import GOLD_SETS_PARTITIONS, MODELS_PARTITIONS

NIGHTLY_CRON = "0 2 * * *"
NIGHTLY_REASON = "nightly schedule"


def nightly_models() -> list[str]:
    """Slugs of the registry whose ``rerun`` policy is ``nightly``."""
    from nl2sql_pipeline.generation.model_spec import RERUN_NIGHTLY
    from nl2sql_pipeline.generation.registry import load_registry

    return sorted(slug for slug, spec in load_registry().items() if spec.rerun == RERUN_NIGHTLY)


def nightly_requests(instance: dg.DagsterInstance, night: dt.date) -> list[dg.RunRequest]:
    """One run request per prepared gold version and registered nightly model, keyed by ``night``."""
    registered = set(instance.get_dynamic_partitions(MODELS_PARTITIONS))
    golds = set(instance.get_dynamic_partitions(GOLD_SETS_PARTITIONS))
    prepared = sorted(golds & set(instance.get_materialized_partitions(dg.AssetKey("gold_set"))))
    return [
        dg.RunRequest(
            run_key=f"nightly|{night.isoformat()}|{gold}|{model}",
            partition_key=dg.MultiPartitionKey({"gold": gold, "model": model}),
            tags={"nl2sql/rerun_reason": NIGHTLY_REASON},
        )
        for gold in prepared
        for model in nightly_models()
        if model in registered
    ]


@dg.schedule(
    cron_schedule=NIGHTLY_CRON,
    job=evaluate_model_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Each night, re-evaluates every model with rerun: nightly in data/models.yml on every prepared "
    "gold version.",
)
def nightly_evaluation(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    night = context.scheduled_execution_time.date()
    requests = nightly_requests(context.instance, night)
    if not requests:
        return dg.SkipReason("no registered model has rerun: nightly, or no gold version is prepared")
    return requests
