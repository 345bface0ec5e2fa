"""The orchestrating process of tests/test_scale_out.py: an evaluation whose steps go to Celery workers.

Usage: ``python tests/scale_out_driver.py GOLD CELERY_CONFIG_JSON MODEL...`` with the deployment's environment
(``DAGSTER_HOME`` with ``deploy/dagster.yaml``, ``NL2SQL_HOME``, ``NL2SQL_ASSETS_URL``, the S3 endpoint).
It runs the sample database, then the gold version, then every model (one run each),
each with the ``celery_executor``; the generation pool is limited to one slot first. The last line of stdout
is a JSON report: each run's id and success, the workers that executed steps, each run's scores, and when
each generation step started and ended.
"""

from __future__ import annotations

import json
import sys

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob
from scale_out_jobs import JOB_FILE

from assets.sensors import register_partitions
from nl2sql_pipeline.results.read import load_scores
from resources.pools import GENERATION_POOL, sync_pool_limits


def _execute(fn_name: str, run_config: dict, tags: dict[str, str]) -> dg.JobExecutionResult:
    job = ReconstructableJob.for_file(JOB_FILE, fn_name)
    with dg.DagsterInstance.get() as instance:
        return dg.execute_job(job, instance=instance, run_config=run_config, tags=tags)


def _step_report(instance: dg.DagsterInstance, run_id: str) -> tuple[set[str], list[tuple[float, float]]]:
    """The Celery workers that executed the run's steps, and the generation step's (start, end) times."""
    workers: set[str] = set()
    starts: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None:
            continue
        if event.is_engine_event and event.engine_event_data is not None:
            hostname = event.engine_event_data.metadata.get("Celery worker")
            if hostname is not None:
                workers.add(str(hostname.value).split("@")[0])
        if event.step_key == "candidate_sql":
            if event.is_step_start:
                starts[run_id] = record.timestamp
            elif event.is_step_success or event.is_step_failure:
                spans.append((starts[run_id], record.timestamp))
    return workers, spans


def main(gold: str, celery_config: str, models: list[str]) -> int:
    run_config = {"execution": {"config": json.loads(celery_config)}}
    with dg.DagsterInstance.get() as instance:
        register_partitions(instance)
        sync_pool_limits(instance)
        instance.event_log_storage.set_concurrency_slots(GENERATION_POOL, 1)

    results: dict[str, dg.JobExecutionResult] = {}
    results["sample_database"] = _execute("sample_database_job", run_config, {})
    if results["sample_database"].success:
        results["gold"] = _execute("gold_job", run_config, {"dagster/partition": gold})
    for slug in models:  # one run per model, one after the other (runs at once from threads hang in NOT_STARTED)
        if results.get("gold") is None or not results["gold"].success:
            break
        model_config = {**run_config, "ops": {"candidate_sql": {"config": {"samples": 1}}}}
        results[slug] = _execute("model_job", model_config, {"dagster/partition": f"{gold}|{slug}"})

    report: dict = {"runs": {}, "workers": [], "scores": {}, "generation_steps": []}
    workers: set[str] = set()
    with dg.DagsterInstance.get() as instance:
        for name, result in results.items():
            report["runs"][name] = {"run_id": result.run_id, "success": result.success}
            used, spans = _step_report(instance, result.run_id)
            workers |= used
            report["generation_steps"] += spans
            if name in models and result.success:
                _identity, scores = load_scores(gold, name, run_id=result.run_id)
                report["scores"][name] = scores.as_dict()
    report["workers"] = sorted(workers)
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
