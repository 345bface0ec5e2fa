"""Sensors: keep the dynamic partitions in step with data/models.yml and the registered gold sets."""

from __future__ import annotations

import dagster as dg

from assets.partitions import GOLD_SETS_PARTITIONS, MODELS_PARTITIONS, gold_sets_partitions, models_partitions


def partition_keys_from_registries() -> tuple[list[str], list[str]]:
    """(gold-set keys, model slugs) currently registered in data/."""
    from nl2sql_pipeline.generation.registry import load_registry
    from nl2sql_pipeline.gold.registry import list_gold_sets

    return sorted(list_gold_sets()), sorted(load_registry())


def register_partitions(instance: dg.DagsterInstance) -> tuple[list[str], list[str]]:
    """Add every registered gold set and model as a dynamic partition; returns what was added."""
    golds, models = partition_keys_from_registries()
    known_golds = set(instance.get_dynamic_partitions(GOLD_SETS_PARTITIONS))  # one query each, not one per key
    known_models = set(instance.get_dynamic_partitions(MODELS_PARTITIONS))
    new_golds = [g for g in golds if g not in known_golds]
    new_models = [m for m in models if m not in known_models]
    if new_golds:
        _add_partitions(instance, GOLD_SETS_PARTITIONS, new_golds)
    if new_models:
        _add_partitions(instance, MODELS_PARTITIONS, new_models)
    return new_golds, new_models


def _add_partitions(instance: dg.DagsterInstance, name: str, keys: list[str]) -> None:
    """Add ``keys`` to dynamic partitions ``name``; when another process (a second ``run`` started at the same
    moment) added some of them first, the unique index refuses the batch, so the rest are added one by one."""
    import sqlalchemy.exc

    try:
        instance.add_dynamic_partitions(name, keys)
    except sqlalchemy.exc.IntegrityError:
        for key in keys:
            if not instance.has_dynamic_partition(name, key):
                try:
                    instance.add_dynamic_partitions(name, [key])
                except sqlalchemy.exc.IntegrityError:  # added by the other process in between
                    pass


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers gold sets and models from data/ as dynamic partitions, removes the "
    "partitions of models no longer in models.yml (their runs stay in the baselines), and writes each "
    "provider pool's limit from models.yml into the instance.",
)
def partition_registry_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    from resources.pools import sync_pool_limits

    golds, models = partition_keys_from_registries()
    sync_pool_limits(context.instance)
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if golds:
        requests.append(gold_sets_partitions.build_add_request(golds))
    if models:
        requests.append(models_partitions.build_add_request(models))
    removed = sorted(set(context.instance.get_dynamic_partitions(MODELS_PARTITIONS)) - set(models))
    if removed:
        context.log.info("models removed from the registry: %s", ", ".join(removed))
        requests.append(models_partitions.build_delete_request(removed))
    return dg.SensorResult(dynamic_partitions_requests=requests)


def stale_evaluations(instance: dg.DagsterInstance) -> list[tuple[str, str, str, str]]:
    """(gold, model, reason, run key) for every evaluated partition whose model should be re-run.

    The versions an evaluation recorded (the latest ``run_scores`` materialization's metadata) are held
    against today's by the model's ``rerun`` policy (``nl2sql_pipeline.runs.staleness``): the same
    identity rule the gates use to pick a baseline; under ``rerun: always``, so is the stamp of the case
    databases it was judged on (``databases.stamp``).
    """
    from nl2sql_pipeline.cases import gold_fingerprint
    from nl2sql_pipeline.databases.stamp import cases_database_stamp
    from nl2sql_pipeline.generation.registry import load_registry
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.runs import RunVersions, run_versions, stale_reason
    from nl2sql_pipeline.storage.quarantine import quarantined_ids, read_quarantine

    registry = load_registry()
    golds = instance.get_dynamic_partitions(GOLD_SETS_PARTITIONS)
    stale = []
    for gold in golds:
        cases = None
        for slug, spec in sorted(registry.items()):
            if spec.rerun == "never":
                continue
            key = dg.MultiPartitionKey({"gold": gold, "model": slug})
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_scores"), asset_partitions=[key]), limit=1
            ).records
            materialization = records[0].asset_materialization if records else None
            if materialization is None:
                continue  # never evaluated: evaluating it is a user's decision, not a sensor's
            recorded = {k: v.value for k, v in materialization.metadata.items()}
            stamp = None
            if spec.rerun == "always":
                cases = cases if cases is not None else load_gold_set(gold)
                quarantine = read_quarantine(gold, gold_fingerprint(cases))  # None: not prepared at this version
                databases = case_databases(gold)
                current = run_versions(spec.config_hash, cases, None, databases, quarantined_ids(quarantine))
                stamp = cases_database_stamp(cases, databases)
            else:  # only the model's config hash matters: the other fields are taken as recorded
                current = RunVersions.from_mapping({**recorded, "model_config_hash": spec.config_hash})
            reason = stale_reason(spec.rerun, recorded, current, stamp)
            if reason is None:
                continue
            run_key = (
                f"{gold}|{slug}|{spec.config_hash}"
                if reason == "model config changed"
                else f"{gold}|{slug}|{current.digest()}" + (f"-{stamp[:8]}" if stamp else "")
            )
            stale.append((gold, slug, reason, run_key))
    return stale


@dg.sensor(
    job_name="evaluate_model",
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Re-evaluates a model on the gold sets it was evaluated on when its config (or, with "
    "rerun: always, any run version) changed since its latest scores.",
)
def model_change_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    requests = [
        dg.RunRequest(
            run_key=run_key,
            partition_key=dg.MultiPartitionKey({"gold": gold, "model": model}),
            tags={"nl2sql/rerun_reason": reason},
        )
        for gold, model, reason, run_key in stale_evaluations(context.instance)
    ]
    return dg.SensorResult(run_requests=requests, skip_reason=None if requests else "every evaluation is current")
