"""The orchestrating process of tests/test_scale_out.py: an evaluation whose steps go to Celery workers.

Usage: ``python tests/scale_out_driver.py GOLD CELERY_CONFIG_JSON MODEL...`` with the deployment's environment
(``DAGSTER_HOME`` with ``deploy/dagster.yaml``, ``NL2SQL_HOME``, ``NL2SQL_ASSETS_URL``, the S3 endpoint).
It runs the sample database, then the gold version, then every model at once (one run each, one process each),
each with the ``celery_executor``; the pools get their limits from models.yml first. The last line of stdout
is a JSON report: each run's id and success, the workers that executed steps, each run's scores, when each
generation step started and ended, the pool slots the generation steps held (and when), and the pool limits.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob
from scale_out_jobs import JOB_FILE

from assets.sensors import register_partitions
from nl2sql_pipeline.results.read import load_scores
from resources.pools import pool_limits, sync_pool_limits


def _execute(fn_name: str, run_config: dict, tags: dict[str, str]) -> dg.JobExecutionResult:
    job = ReconstructableJob.for_file(JOB_FILE, fn_name)
    with dg.DagsterInstance.get() as instance:
        return dg.execute_job(job, instance=instance, run_config=run_config, tags=tags)


HOLDING_RE = re.compile(
    r"^(holding|giving back) (?:a|the) slot of pool (\S+) \(step ([^,)]+)(, claimed by the executor)?\)"
)


def _step_report(instance: dg.DagsterInstance, run_id: str) -> tuple[set[str], list[tuple[float, float]], list[dict]]:
    """The Celery workers that executed the run's steps, the generation step's (start, end) times, and the
    pool slots its steps held: ``{"pool", "step", "by", "start", "end"}`` from the steps' own log lines
    (``resources.pools``: "holding a slot of pool …" once held, "giving back the slot of pool …" just before
    it is freed, so the logged span lies inside the real one; a slot the executor claimed is held from before
    the step starts until after it ends: its span is the step's)."""
    workers: set[str] = set()
    starts: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    held: dict[tuple[str, str], dict] = {}
    holdings: list[dict] = []
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        match = HOLDING_RE.match(record.user_message or "") if event is None else None
        if match is not None:
            verb, pool, step, by_executor = match.groups()
            if verb == "holding":
                held[(pool, step)] = {
                    "pool": pool,
                    "step": step,
                    "by": "executor" if by_executor else "step",
                    "start": record.timestamp,
                    "end": None,
                }
            elif (pool, step) in held:
                holdings.append(held.pop((pool, step)) | {"end": record.timestamp})
            continue
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
                for key in [k for k, h in held.items() if h["by"] == "executor"]:
                    holdings.append(held.pop(key) | {"end": record.timestamp})
    holdings += list(held.values())  # never given back: end None (the test fails on it)
    return workers, spans, holdings


def main(gold: str, celery_config: str, models: list[str]) -> int:
    run_config = {"execution": {"config": json.loads(celery_config)}}
    with dg.DagsterInstance.get() as instance:
        register_partitions(instance)
        sync_pool_limits(instance)  # as `nl2sql-eval run` and the partition sensor do (models.yml's limits)

    results: dict[str, dg.JobExecutionResult] = {}
    results["sample_database"] = _execute("sample_database_job", run_config, {})
    if results["sample_database"].success:
        results["gold"] = _execute("gold_job", run_config, {"dagster/partition": gold})
    runs = {name: (result.run_id, result.success) for name, result in results.items()}
    if results.get("gold") is not None and results["gold"].success:
        # every model's run at once, one orchestrating process each (runs at once from threads of one process
        # stay NOT_STARTED): their generation steps compete for the pool's one slot on two workers
        procs = {
            slug: subprocess.Popen(
                [sys.executable, __file__, "--one", gold, celery_config, slug], stdout=subprocess.PIPE, text=True
            )
            for slug in models
        }
        for slug, proc in procs.items():
            out, _ = proc.communicate(timeout=600)
            run_id, success = json.loads(out.strip().splitlines()[-1])
            runs[slug] = (run_id, success and proc.returncode == 0)

    report: dict = {"runs": {}, "workers": [], "scores": {}, "generation_steps": [], "holdings": [], "limits": {}}
    workers: set[str] = set()
    with dg.DagsterInstance.get() as instance:
        for name, (run_id, success) in runs.items():
            report["runs"][name] = {"run_id": run_id, "success": success}
            used, spans, holdings = _step_report(instance, run_id)
            workers |= used
            report["generation_steps"] += spans
            report["holdings"] += [h | {"run": name} for h in holdings]
            if name in models and success:
                _identity, scores = load_scores(gold, name, run_id=run_id)
                report["scores"][name] = scores.as_dict()
        report["limits"] = {pool: limit for pool, limit in pool_limits().items()}
    report["workers"] = sorted(workers)
    print(json.dumps(report, default=str))
    return 0


def one_model(gold: str, celery_config: str, slug: str) -> int:
    """One model's run; prints ``[run_id, success]``."""
    run_config = {
        "execution": {"config": json.loads(celery_config)},
        "ops": {"candidate_sql": {"config": {"samples": 1}}},
    }
    result = _execute("model_job", run_config, {"dagster/partition": f"{gold}|{slug}"})
    print(json.dumps([result.run_id, result.success]))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        sys.exit(one_model(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
