"""Programmatic runs of the asset graph (used by ``nl2sql-eval run``, the sensors' tests and the benchmarks).

One Dagster run cannot mix partition definitions, so a run goes in three steps against the same
persistent instance: the sample database, the gold-set assets of the gold version (the blocking preflight
decides whether anything downstream runs), then the per-model assets of each model.

Integrity under parallel runs: runs of dead processes are marked failed first; each model's
materialization holds the partition's lock (``nl2sql_pipeline.runs.locks``: another ``nl2sql-eval run``
of the same gold x model waits up to ``lock_wait_s``, then gives up with a message naming the holder),
and its scores are read back from the file this run wrote, never the partition's latest file.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import dagster as dg
import pandas as pd

from assets.graph import ALL_ASSETS, ASSET_CHECKS, GOLD_ASSETS, MODEL_ASSETS
from resources.build import build_resources
from assets.gold import PREFLIGHT_CHECK
from assets.jobs import run_tags_for_partition
from assets.sensors import register_partitions
from nl2sql_pipeline.codec import run_scores_from_frame
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.runs.gates import GateThresholds
from nl2sql_pipeline.runs.locks import LockTimeoutError, partition_lock
from resources.instance import ensure_instance_home
from resources.io_manager import ParquetIOManager
from resources.stale_runs import fail_dead_runs, process_tags

DEFAULT_LOCK_WAIT_S = 3600.0  # how long a run waits for another run of the same gold x model partition

logger = logging.getLogger(__name__)


@dataclass
class EvaluationOutcome:
    """What one ``evaluate`` did: scores per model, models skipped, stage timings, failures.

    ``scores[slug]`` is the run's identity (gold set, model, run id, versions) and every metric, read back
    through the codec: breakdowns, warnings and outcome counts are real dicts and lists.
    """

    scores: dict[str, dict] = field(default_factory=dict)
    skipped_models: dict[str, str] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    preflight_problems: list[str] = field(default_factory=list)
    checks: dict[str, dict[str, bool]] = field(default_factory=dict)  # model -> asset check name -> passed
    check_messages: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> check -> description
    reaped_runs: list[str] = field(default_factory=list)  # runs of dead processes marked failed at start


def get_instance() -> dg.DagsterInstance:
    """The persistent local instance under the storage root."""
    ensure_instance_home()
    return dg.DagsterInstance.get()


QUIET_LOGGERS = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


def _materialize(assets, instance, partition_key=None, run_config=None, settings=None, tags=None) -> dg.ExecuteInProcessResult:
    run_config = {**QUIET_LOGGERS, **(run_config or {})}
    return dg.materialize(
        [*ALL_ASSETS, *ASSET_CHECKS],
        selection=assets,
        instance=instance,
        resources=build_resources(**(settings or {})),
        partition_key=partition_key,
        run_config=run_config,
        raise_on_error=False,
        tags={"nl2sql/source": "cli", **process_tags(), **(tags or {})},
    )


def _failure_text(result: dg.ExecuteInProcessResult) -> str:
    messages = []
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            messages.append(f"{event.step_key}: {error.message.strip()}")
    return "; ".join(messages) or "run failed"


def evaluate(
    gold_set: str,
    models: list[str],
    *,
    repeat: int = 1,
    policy: str | None = None,
    isolated: bool = False,
    min_correctness: float | None = None,
    max_regression: float | None = None,
    thresholds: GateThresholds | None = None,
    instance: dg.DagsterInstance | None = None,
    lock_wait_s: float | None = DEFAULT_LOCK_WAIT_S,
    on_wait=None,
) -> EvaluationOutcome:
    """Materialize the graph for ``gold_set`` and each model; returns scores and what went wrong.

    ``policy`` (a policy name or file) overrides every case's own policy for the per-model assets;
    ``isolated`` runs candidate SQL in a killable worker process (the interrupt-proof backstop);
    ``min_correctness`` / ``max_regression`` are the gate thresholds of the asset checks on ``run_scores``
    (their results are in ``EvaluationOutcome.checks``); ``thresholds`` sets every gate (``runs.gates``).
    ``lock_wait_s`` bounds the wait for another run of the same gold x model partition (None: no bound);
    ``on_wait(message)`` is told when a run waits.
    """
    from nl2sql_pipeline.generation.registry import get_model, model_readiness
    from nl2sql_pipeline.gold.registry import list_gold_sets

    if gold_set not in list_gold_sets():
        raise ConfigError(f"unknown gold set '{gold_set}'; registered: {', '.join(sorted(list_gold_sets()))} (data/gold/gold_sets.yml)")
    specs = {slug: get_model(slug) for slug in models}  # raises ConfigError for unknown slugs
    if policy is not None:
        from nl2sql_pipeline.policy import load_policy

        load_policy(policy)  # fail fast, before any run, on a missing or invalid policy
    _check_prediction_files(gold_set, specs.values())
    outcome = EvaluationOutcome()
    instance = instance or get_instance()
    outcome.reaped_runs = fail_dead_runs(instance)
    register_partitions(instance)
    limits = (thresholds or GateThresholds()).over({"min_semantic_correct": min_correctness,
                                                    "max_regression": max_regression})

    started = time.perf_counter()
    result = _materialize(["sample_database"], instance)
    outcome.stage_seconds["sample_database"] = time.perf_counter() - started
    if not result.success:
        outcome.failures.append(f"sample_database: {_failure_text(result)}")
        return outcome

    started = time.perf_counter()
    result = _materialize([a.key for a in GOLD_ASSETS], instance, partition_key=gold_set)
    outcome.stage_seconds["gold_and_oracle"] = time.perf_counter() - started
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.check_name == PREFLIGHT_CHECK and not evaluation.passed:
            problems = evaluation.metadata.get("problems")
            outcome.preflight_problems.append(str(problems.value if problems else "preflight failed"))
    if outcome.preflight_problems:
        outcome.failures.append(f"gold preflight of {gold_set} failed; no model was evaluated")
        return outcome
    if not result.success:
        outcome.failures.append(f"{gold_set}: {_failure_text(result)}")
        return outcome

    io = ParquetIOManager()
    for slug, spec in specs.items():
        readiness = model_readiness(spec)
        if not readiness.ready:
            outcome.skipped_models[slug] = readiness.reason
            continue
        key = dg.MultiPartitionKey({"gold": gold_set, "model": slug})
        started = time.perf_counter()
        run_config = {"ops": {"candidate_sql": {"config": {"samples": repeat}}}}
        settings = {"policy": policy, "isolated": isolated, **{k: v for k, v in vars(limits).items() if v is not None}}

        def told(holder: str, slug: str = slug) -> None:
            if on_wait is not None:
                on_wait(f"waiting for another evaluation of {gold_set}|{slug} ({holder}) to finish")

        try:
            with partition_lock(gold_set, slug, timeout_s=lock_wait_s, on_wait=told,
                                owner=f"nl2sql-eval run, pid {process_tags()['nl2sql/pid']}"):
                result = _materialize(
                    [a.key for a in MODEL_ASSETS], instance, partition_key=key, run_config=run_config,
                    settings=settings, tags=run_tags_for_partition(key),
                )
        except LockTimeoutError as exc:
            outcome.failures.append(f"{slug}: {exc}")
            continue
        outcome.stage_seconds[f"model:{slug}"] = time.perf_counter() - started
        evaluations = result.get_asset_check_evaluations()
        outcome.checks[slug] = {e.check_name: e.passed for e in evaluations}
        outcome.check_messages[slug] = {e.check_name: e.description or "" for e in evaluations}
        if not result.success:
            outcome.failures.append(f"{slug}: {_failure_text(result)}")
            continue
        own = io.run_path(io.partition_path(dg.AssetKey("run_scores"), key), result.run_id)
        identity, scores = run_scores_from_frame(pd.read_parquet(own))
        outcome.scores[slug] = {**identity, **scores.as_dict()}
    return outcome


def _check_prediction_files(gold_set: str, specs) -> None:
    """Fail fast (a ConfigError naming file and line) on a replay file that does not line up with the gold set.

    A replay whose file is missing is left to the readiness check (reported as skipped).
    """
    from nl2sql_pipeline.generation.predictions import read_predictions
    from nl2sql_pipeline.generation.registry import model_readiness
    from nl2sql_pipeline.gold.registry import load_gold_set

    replays = [spec for spec in specs if spec.is_replay and model_readiness(spec).ready]
    if replays:
        cases = load_gold_set(gold_set)
        for spec in replays:
            read_predictions(spec.predictions, cases)
