"""Programmatic runs of the asset graph (used by ``nl2sql-eval run``, the sensors' tests and the benchmarks).

One Dagster run cannot mix partition definitions, so a run goes in three steps against the same
persistent instance: the sample database, the gold-set assets of the gold version (the blocking preflight
decides whether anything downstream runs, and which cases it quarantines), then the per-model assets of each
model (without the quarantined cases).

Integrity under parallel runs: runs of dead processes are marked failed first; each model's
materialization holds the partition's lock (``nl2sql_pipeline.runs.locks``: another ``nl2sql-eval run``
of the same gold x model waits up to ``lock_wait_s``, then gives up with a message naming the holder),
and its scores are read back from the file this run wrote, never the partition's latest file.

What is stored is asked of the storage layer (``nl2sql_pipeline.storage``: is the gold version prepared, are
its database variants; ``nl2sql_pipeline.results.read``: the scores of a run), never read from its paths here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import dagster as dg

from assets.checks import PREFLIGHT_CHECK
from assets.gold import database_variants, sample_database
from assets.graph import ALL_ASSETS, ANSWER_ASSETS, ASSET_CHECKS, GOLD_ASSETS, MODEL_ASSETS, SQL_JUDGE_ASSETS
from assets.jobs import run_tags_for_partition
from assets.sensors import register_partitions
from nl2sql_cli.run_result import AnswerOptions, EvaluationOutcome
from nl2sql_cli.startup import imports_without_collection
from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import gold_fingerprint
from nl2sql_pipeline.databases.stamp import cases_database_stamp
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.judges.identity import (
    ANSWER_JUDGEMENTS,
    CANDIDATE_ANSWERS,
    IDENTITY_KEY,
    SQL_JUDGEMENTS,
    settings_identities,
)
from nl2sql_pipeline.results.read import RunResultsNotFoundError, load_scores, stored_results_problem
from nl2sql_pipeline.runs.gates import GateThresholds
from nl2sql_pipeline.runs.identity import run_versions
from nl2sql_pipeline.runs.locks import LockTimeoutError, partition_lock
from nl2sql_pipeline.runs.measurements import Measurements
from nl2sql_pipeline.runs.reuse import database_change, reusable_run
from nl2sql_pipeline.storage.prepared import gold_ready, mark_prepared, prepared_triage, variants_ready
from nl2sql_pipeline.storage.quarantine import quarantined_ids, read_quarantine
from resources.build import build_resources
from resources.instance import ensure_instance_home, open_instance
from resources.pools import sync_pool_limits

if TYPE_CHECKING:
    from nl2sql_pipeline.generation.model_spec import ModelSpec
from resources.stale_runs import fail_dead_runs, process_tags

DEFAULT_LOCK_WAIT_S = 3600.0  # how long a run waits for another run of the same gold x model partition

logger = logging.getLogger(__name__)


def get_instance() -> dg.DagsterInstance:
    """The persistent local instance under the storage root."""
    ensure_instance_home()
    return open_instance()


def _console_loggers() -> dict:
    """Dagster's console logger: errors with their tracebacks under ``-v`` only; otherwise silent, since a
    failed step is reported by the CLI as one ``FAILED: <step>: <message>`` line."""
    verbose = logging.getLogger().isEnabledFor(logging.INFO)
    return {"loggers": {"console": {"config": {"log_level": "ERROR" if verbose else "CRITICAL"}}}}


@contextmanager
def _partitions_remembered(instance: dg.DagsterInstance) -> Iterator[None]:
    """Inside the block, a dynamic partition ``instance`` once said exists is known to exist.

    Dagster asks the event log whether each partition key exists at every step, for every input and output
    (two SQL queries each: 150 for one model's run, an eighth of its CPU). The runner registers a run's
    partitions before it starts and nothing removes them while it runs, so a key found once is remembered
    for the run; a key not found is asked again.
    """
    ask = instance.has_dynamic_partition
    known: set[tuple[str, str]] = set()

    def has_dynamic_partition(partitions_def_name: str, partition_key: str) -> bool:
        if (partitions_def_name, partition_key) in known:
            return True
        found = ask(partitions_def_name, partition_key)
        if found:
            known.add((partitions_def_name, partition_key))
        return found

    setattr(instance, "has_dynamic_partition", has_dynamic_partition)  # noqa: B010 (shadow the method on this object only)
    try:
        yield
    finally:
        delattr(instance, "has_dynamic_partition")


def _materialize(
    assets, instance, partition_key=None, run_config=None, settings=None, tags=None
) -> dg.ExecuteInProcessResult:
    run_config = {**_console_loggers(), **(run_config or {})}
    with _partitions_remembered(instance):
        result = dg.materialize(
            [*ALL_ASSETS, *ASSET_CHECKS],
            selection=assets,
            instance=instance,
            resources=build_resources(**(settings or {})),
            partition_key=partition_key,
            run_config=run_config,
            raise_on_error=False,
            tags={"nl2sql/source": "cli", **process_tags(), **(tags or {})},
        )
    if _interrupted(result):  # Ctrl-C inside a step: Dagster records a failed step and goes on; the command stops
        raise KeyboardInterrupt(f"interrupted during run {result.run_id}")
    return result


_INTERRUPT_ERRORS = frozenset({"KeyboardInterrupt", "DagsterExecutionInterruptedError"})


def _interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """True when a step of ``result`` failed because the process was interrupted (SIGINT)."""
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error: Any = event.step_failure_data.error
            while error is not None:
                if error.cls_name in _INTERRUPT_ERRORS:
                    return True
                error = error.cause
    return False


def _failure_text(result: dg.ExecuteInProcessResult) -> str:
    messages = []
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error.cause is not None:  # Dagster wraps what the asset raised: report the asset's own error
                error = error.cause
            messages.append(f"{event.step_key}: {error.message.strip()}")
    return "; ".join(messages) or "run failed"


def _stopped_by_gates(result: dg.ExecuteInProcessResult) -> bool:
    """True when the run failed only because a blocking gate check on ``run_scores`` failed: the run scored,
    its gates decide the exit code (the check recorded it as not comparable), it is no failed materialization."""
    errors = [
        event.step_failure_data.error
        for event in result.all_events
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error
    ]
    return bool(errors) and all(error.cls_name == "DagsterAssetCheckFailedError" for error in errors)


def evaluate(
    gold_set: str,
    models: list[str],
    *,
    repeat: int = 1,
    policy: str | None = None,
    isolated: bool = False,
    thresholds: GateThresholds | None = None,
    instance: dg.DagsterInstance | None = None,
    lock_wait_s: float | None = DEFAULT_LOCK_WAIT_S,
    on_wait=None,
    force: bool = False,
    test_suite_variants: int = 3,
    strict_gold: bool = False,
    paraphrases: int = 0,
    perturb: str = "",
    measurements: Measurements | None = None,
    answers: AnswerOptions | None = None,
) -> EvaluationOutcome:
    """Materialize the graph for ``gold_set`` and each model; returns scores and what went wrong.

    ``answers`` turns on the answer stage and the judges (``candidate_answers``, ``answer_judgements``,
    downstream of ``candidate_results``; ``sql_judgements``, downstream of ``case_verdicts``, for a judge with
    a sql_equivalence or diagnosis role, ``answers.judge_repeat`` times each): a model whose run is reused gets
    only those assets, so turning judges on after a run sends no generation call (``EvaluationOutcome.answered``).

    ``policy`` (a policy name or file) overrides every case's own policy for the per-model assets;
    ``isolated`` runs candidate SQL in a killable worker process (the interrupt-proof backstop);
    ``thresholds`` are the gates of the asset checks on ``run_scores`` (``runs.gates``; their results are in
    ``EvaluationOutcome.checks``).
    ``lock_wait_s`` bounds the wait for another run of the same gold x model partition (None: no bound);
    ``on_wait(message)`` is told when a run waits. A gold version already prepared at its fingerprint is
    not prepared again while its case databases keep their stamp (``databases.stamp``: a re-imported, rebuilt
    or edited database makes it be prepared again); unless ``force``, a model whose latest fully evaluated run is
    current (``runs.reuse``) is not run again: its stored scores stand (``EvaluationOutcome.reused``), unless its
    stored results cannot be read back (a file missing or cut short) or it was judged on other database contents
    (``EvaluationOutcome.unreadable`` says why), when it is evaluated again (the generation cache serves what was
    asked before).
    ``test_suite_variants`` database variants per case measure test-suite accuracy (0: off); they are
    built once per gold version (``database_variants``) and reused by every model.
    ``paraphrases`` (K per query case) and ``perturb`` (kinds, comma-separated) switch the robustness assets
    on (``assets.robustness``): materialized for every model that has scores, after its run (or beside its
    reused one).
    Cases the gold preflight quarantined are left out of every model's run (``EvaluationOutcome.quarantine``);
    under ``strict_gold`` (or ``strict_gold: true`` in the gold-set registry) a quarantined case fails the
    gold stage instead and no model is evaluated. ``measurements``: the optional measurements of the run
    (``runs.measurements``: probe replies of live systems, ...), each off by default.
    """
    from nl2sql_pipeline.generation.readiness import model_readiness
    from nl2sql_pipeline.generation.registry import get_model
    from nl2sql_pipeline.gold.registry import case_databases, list_gold_sets, load_gold_set

    registered = list_gold_sets()
    if gold_set not in registered:
        raise ConfigError(
            f"unknown gold set '{gold_set}'; registered: {', '.join(sorted(registered))} (data/gold/gold_sets.yml)"
        )
    specs = {slug: get_model(slug) for slug in models}  # raises ConfigError for unknown slugs
    if answers is not None:
        answers.check()  # unknown judges or answer model: a ConfigError before any run
    if policy is not None:
        from nl2sql_pipeline.policy import load_policy

        load_policy(policy)  # fail fast, before any run, on a missing or invalid policy
    _check_prediction_files(gold_set, specs.values())
    outcome = EvaluationOutcome()
    if instance is None:
        with imports_without_collection():  # opening it imports ~200 modules of Dagster's storage and daemon
            instance = get_instance()
    outcome.reaped_runs = fail_dead_runs(instance)
    register_partitions(instance)
    # every pool's row exists before a step starts: otherwise two runs starting at once both ask Dagster to
    # create the default row, and on PostgreSQL the loser's step fails (a unique-key violation)
    sync_pool_limits(instance)
    limits = thresholds or GateThresholds()
    strict = strict_gold or registered[gold_set].strict_gold

    cases = load_gold_set(gold_set)
    fingerprint = gold_fingerprint(cases)
    databases = case_databases(gold_set)
    try:
        with partition_lock(gold_set, "_prepare", timeout_s=lock_wait_s, what_for="preparation"):
            if not gold_ready(gold_set, fingerprint, cases_database_stamp(cases, databases)):
                stamp_now = partial(cases_database_stamp, cases, databases)
                if not _prepare_gold(instance, gold_set, fingerprint, stamp_now, outcome, test_suite_variants, strict):
                    return outcome
            else:
                outcome.gold_prepared = True
                outcome.preflight_triage = prepared_triage(gold_set, fingerprint)
                outcome.quarantine = read_quarantine(gold_set, fingerprint) or []
            if not _quarantine_allows(gold_set, cases, outcome, strict):
                return outcome
            stamp = cases_database_stamp(cases, databases)  # after preparing: the sample database is built by then
            if not variants_ready(gold_set, fingerprint, test_suite_variants, stamp):
                if not _prepare_variants(instance, gold_set, outcome, test_suite_variants):
                    return outcome
    except LockTimeoutError as exc:
        outcome.failures.append(f"{gold_set}: {exc}")
        return outcome

    db_path = paths.baselines_db_path()
    quarantined = quarantined_ids(outcome.quarantine)
    base_versions = None if force else run_versions("", cases, policy, databases, quarantined)

    def reused(slug: str, spec: ModelSpec) -> bool:
        """Whether ``slug``'s latest stored run stands for this one (then its scores are in ``outcome``)."""
        if base_versions is None:
            return False
        versions = replace(base_versions, model_config_hash=spec.config_hash)
        stored = reusable_run(
            db_path,
            gold_set,
            slug,
            versions,
            repeat,
            test_suite_variants=test_suite_variants,
            measurements=measurements or Measurements(),
            is_system=spec.is_system,
        )
        problem = database_change(stored, stamp) if stored is not None else None
        if stored is not None and problem is None:
            problem = stored_results_problem(gold_set, slug)
        if stored is not None and problem is None:
            outcome.scores[slug] = stored
            outcome.reused[slug] = str(stored["run_id"])
            outcome.unreadable.pop(slug, None)
            return True
        if problem is not None:  # judged on other databases, or its stored results cannot be read back
            logger.info("evaluating %s on %s again: %s", slug, gold_set, problem)
            outcome.unreadable[slug] = problem
        return False

    for slug, spec in specs.items():
        if reused(slug, spec):
            if answers is not None and answers.enabled:
                _answer_and_judge(instance, gold_set, slug, answers, outcome, lock_wait_s)
            continue
        readiness = model_readiness(spec)
        if not readiness.ready:
            outcome.skipped_models[slug] = readiness.reason
            continue
        key = dg.MultiPartitionKey({"gold": gold_set, "model": slug})
        started = time.perf_counter()
        run_config = {"ops": {"candidate_sql": {"config": {"samples": repeat}}}}
        settings = {
            "policy": policy,
            "isolated": isolated,
            "test_suite_variants": test_suite_variants,
            **(measurements or Measurements()).settings(),
            **{k: v for k, v in vars(limits).items() if v is not None},
            **(answers.settings() if answers is not None else {}),
        }
        selected = [a.key for a in MODEL_ASSETS]
        if answers is not None and answers.answering:
            selected += [a.key for a in ANSWER_ASSETS]
        if answers is not None and answers.sql_judging:
            selected += [a.key for a in SQL_JUDGE_ASSETS]

        waited: list[str] = []

        def told(holder: str, slug: str = slug, waited: list[str] = waited) -> None:
            waited.append(holder)
            if on_wait is not None:
                on_wait(f"waiting for another evaluation of {gold_set}|{slug} ({holder}) to finish")

        try:
            with partition_lock(
                gold_set,
                slug,
                timeout_s=lock_wait_s,
                on_wait=told,
                owner=f"nl2sql-eval run, pid {process_tags()['nl2sql/pid']}",
            ):
                # the evaluation waited for may have been this very one: decide again once it is over
                if waited and reused(slug, spec):
                    result = None
                else:
                    result = _materialize(
                        selected,
                        instance,
                        partition_key=key,
                        run_config=run_config,
                        settings=settings,
                        tags=run_tags_for_partition(key),
                    )
        except LockTimeoutError as exc:
            outcome.failures.append(f"{slug}: {exc}")
            continue
        if result is None:
            if answers is not None and answers.enabled:
                _answer_and_judge(instance, gold_set, slug, answers, outcome, lock_wait_s)
            continue
        outcome.stage_seconds[f"model:{slug}"] = time.perf_counter() - started
        evaluations = result.get_asset_check_evaluations()
        outcome.checks[slug] = {e.check_name: e.passed for e in evaluations}
        outcome.check_messages[slug] = {e.check_name: e.description or "" for e in evaluations}
        if not result.success and not _stopped_by_gates(result):
            outcome.failures.append(f"{slug}: {_failure_text(result)}")
            continue
        try:
            identity, scores = load_scores(gold_set, slug, run_id=result.run_id)
        except RunResultsNotFoundError as exc:  # the run succeeded but its scores file is gone: a failed run
            outcome.failures.append(f"{slug}: {exc}")
            continue
        outcome.scores[slug] = {**identity, **scores.as_dict()}
        if answers is not None and answers.answering:
            outcome.answered[slug] = result.run_id
    if paraphrases > 0 or perturb:
        _measure_robustness(
            instance, gold_set, list(outcome.scores), outcome, policy, isolated, paraphrases, perturb, lock_wait_s
        )
    return outcome


def _measure_robustness(
    instance: dg.DagsterInstance,
    gold_set: str,
    slugs: list[str],
    outcome: EvaluationOutcome,
    policy: str | None,
    isolated: bool,
    paraphrases: int,
    perturb: str,
    lock_wait_s: float | None = DEFAULT_LOCK_WAIT_S,
) -> None:
    """Materialize the switched-on robustness assets of each model (downstream of its case verdicts), holding
    the partition's lock as its evaluation does."""
    from assets.robustness import paraphrase_verdicts, perturbation_verdicts

    selection = [
        a.key for a, on in ((paraphrase_verdicts, paraphrases > 0), (perturbation_verdicts, bool(perturb))) if on
    ]
    settings = {"policy": policy, "isolated": isolated, "paraphrases": paraphrases, "perturb": perturb}
    for slug in slugs:
        key = dg.MultiPartitionKey({"gold": gold_set, "model": slug})
        started = time.perf_counter()
        try:
            with partition_lock(gold_set, slug, timeout_s=lock_wait_s, what_for="robustness"):
                result = _materialize(
                    selection, instance, partition_key=key, settings=settings, tags=run_tags_for_partition(key)
                )
        except LockTimeoutError as exc:
            outcome.failures.append(f"{slug}: robustness: {exc}")
            continue
        outcome.stage_seconds[f"robustness:{slug}"] = time.perf_counter() - started
        if not result.success:
            outcome.failures.append(f"{slug}: robustness: {_failure_text(result)}")


def _answer_and_judge(
    instance: dg.DagsterInstance,
    gold_set: str,
    slug: str,
    answers: AnswerOptions,
    outcome: EvaluationOutcome,
    lock_wait_s: float | None,
) -> None:
    """Materialize only the answer and judge assets of a reused run (its candidate results and verdicts stand:
    nothing is generated or executed again). Judgements stored for this run with today's identity (the judges'
    versions and settings: ``judges.identity``) are reused (``EvaluationOutcome.judgements_reused``)."""
    key = dg.MultiPartitionKey({"gold": gold_set, "model": slug})
    started = time.perf_counter()
    owner = f"nl2sql-eval run, pid {process_tags()['nl2sql/pid']}"
    current = current_judgements(instance, gold_set, slug, answers.settings())
    answering = answers.answering and ANSWER_JUDGEMENTS not in current
    sql_judging = answers.sql_judging and SQL_JUDGEMENTS not in current
    reused = [
        name
        for name, on in ((ANSWER_JUDGEMENTS, answers.answering), (SQL_JUDGEMENTS, answers.sql_judging))
        if on and name in current
    ]
    if reused:
        outcome.judgements_reused[slug] = reused
        logger.info(
            "%s on %s: stored %s are current (same judges and versions): reused", slug, gold_set, ", ".join(reused)
        )
    if answers.answering and not answering:
        outcome.answered[slug] = current[ANSWER_JUDGEMENTS]
    if not (answering or sql_judging):
        return
    try:
        with partition_lock(gold_set, slug, timeout_s=lock_wait_s, owner=owner):
            result = _materialize(
                [
                    a.key
                    for a in [
                        *(ANSWER_ASSETS if answering else []),
                        *(SQL_JUDGE_ASSETS if sql_judging else []),
                    ]
                ],
                instance,
                partition_key=key,
                settings=answers.settings(),
                tags=run_tags_for_partition(key),
            )
    except LockTimeoutError as exc:
        outcome.failures.append(f"{slug}: {exc}")
        return
    outcome.stage_seconds[f"answers:{slug}"] = time.perf_counter() - started
    if not result.success:
        outcome.failures.append(f"{slug} answers: {_failure_text(result)}")
        return
    if answering:
        outcome.answered[slug] = result.run_id


def current_judgements(
    instance: dg.DagsterInstance, gold_set: str, slug: str, settings: dict[str, object]
) -> dict[str, str]:
    """The judgement assets of a partition whose stored judgements are current -> the run id that wrote them.

    Current: written after the partition's latest candidate results (``sql_judgements``: case verdicts), with
    today's identity (``judges.identity``: the judges' model, prompt and rubric versions, config hashes and the
    settings); ``answer_judgements`` also needs the answers of the same run, current too.
    """
    key = dg.MultiPartitionKey({"gold": gold_set, "model": slug})
    identities = settings_identities(slug, gold_set, settings)

    def latest(asset: str) -> Any:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
        ).records
        return records[0] if records else None

    def holds(record: Any, asset: str, after: Any) -> bool:
        if record is None or after is None or record.storage_id < after.storage_id:
            return False
        stored = record.asset_materialization.metadata.get(IDENTITY_KEY)
        return stored is not None and stored.value == identities[asset]

    current: dict[str, str] = {}
    results, verdicts = latest("candidate_results"), latest("case_verdicts")
    answers, judged = latest(CANDIDATE_ANSWERS), latest(ANSWER_JUDGEMENTS)
    if (
        holds(answers, CANDIDATE_ANSWERS, results)
        and holds(judged, ANSWER_JUDGEMENTS, answers)
        and answers.run_id == judged.run_id
    ):
        current[ANSWER_JUDGEMENTS] = judged.run_id
    sql = latest(SQL_JUDGEMENTS)
    if holds(sql, SQL_JUDGEMENTS, verdicts):
        current[SQL_JUDGEMENTS] = sql.run_id
    return current


def _quarantine_allows(gold_set: str, cases: list, outcome: EvaluationOutcome, strict: bool) -> bool:
    """Whether models may run with the gold version's quarantine: not under strict gold when a case is
    quarantined (a prepared gold version is held to it too), not when every case is (nothing to evaluate)."""
    if not outcome.quarantine:
        return True
    lines = [f"{f['label']}: [{f['kind']}] {f['reason']}" for f in outcome.quarantine]
    count = len(quarantined_ids(outcome.quarantine))
    if strict:
        if not outcome.preflight_problems:
            outcome.preflight_problems.append("\n".join(f"- {line}" for line in lines))
        outcome.failures.append(
            f"gold preflight of {gold_set} failed under strict gold: {count} cases quarantined; no model was "
            "evaluated (without --strict-gold they are left out and the rest is evaluated)"
        )
        return False
    if count >= len(cases):
        outcome.failures.append(
            f"every case of {gold_set} is quarantined by the gold preflight ({count}); nothing to evaluate "
            "(fix the gold: `nl2sql-eval gold validate` lists the findings)"
        )
        return False
    return True


def _prepare_variants(instance: dg.DagsterInstance, gold_set: str, outcome: EvaluationOutcome, count: int) -> bool:
    """Materialize ``database_variants`` of the gold version with ``count`` variants per database."""
    started = time.perf_counter()
    result = _materialize(
        [database_variants.key], instance, partition_key=gold_set, settings={"test_suite_variants": count}
    )
    outcome.stage_seconds["database_variants"] = time.perf_counter() - started
    if not result.success:
        outcome.failures.append(f"{gold_set}: {_failure_text(result)}")
        return False
    return True


def _prepare_gold(
    instance: dg.DagsterInstance,
    gold_set: str,
    fingerprint: str,
    database_stamp: Callable[[], str],
    outcome: EvaluationOutcome,
    test_suite_variants: int = 3,
    strict_gold: bool = False,
) -> bool:
    """Materialize the sample database, then the gold set (blocking preflight, which records the quarantine) and
    its oracle; mark it prepared on the databases' stamp (``database_stamp()``, once the sample one is built)."""
    started = time.perf_counter()
    result = _materialize([sample_database.key], instance)
    outcome.stage_seconds["sample_database"] = time.perf_counter() - started
    if not result.success:
        outcome.failures.append(f"sample_database: {_failure_text(result)}")
        return False

    started = time.perf_counter()
    result = _materialize(
        [a.key for a in GOLD_ASSETS],
        instance,
        partition_key=gold_set,
        settings={"test_suite_variants": test_suite_variants, "strict_gold": strict_gold},
    )
    outcome.stage_seconds["gold_and_oracle"] = time.perf_counter() - started
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.check_name != PREFLIGHT_CHECK:
            continue
        triage = evaluation.metadata.get("triage")
        outcome.preflight_triage = list(triage.value) if triage is not None and isinstance(triage.value, list) else []
        quarantine = evaluation.metadata.get("quarantine")
        outcome.quarantine = (
            list(quarantine.value) if quarantine is not None and isinstance(quarantine.value, list) else []
        )
        if not evaluation.passed:
            problems = evaluation.metadata.get("problems")
            outcome.preflight_problems.append(str(problems.value if problems else "preflight failed"))
    if outcome.preflight_problems:
        outcome.failures.append(f"gold preflight of {gold_set} failed; no model was evaluated")
        return False
    if not result.success:
        outcome.failures.append(f"{gold_set}: {_failure_text(result)}")
        return False
    mark_prepared(gold_set, fingerprint, result.run_id, outcome.preflight_triage, database_stamp())
    return True


def _check_prediction_files(gold_set: str, specs) -> None:
    """Fail fast (a ConfigError naming file and line) on a replay file that does not line up with the gold set.

    A replay whose file is missing is left to the readiness check (reported as skipped).
    """
    from nl2sql_pipeline.generation.predictions import read_predictions
    from nl2sql_pipeline.generation.readiness import model_readiness
    from nl2sql_pipeline.gold.registry import load_gold_set

    replays = [spec for spec in specs if spec.is_replay and model_readiness(spec).ready]
    if replays:
        cases = load_gold_set(gold_set)
        for spec in replays:
            read_predictions(spec.predictions, cases)
