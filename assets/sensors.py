"""Sensors: keep the dynamic partitions in step with data/models.yml and the registered gold sets."""

from __future__ import annotations

import dagster as dg

from assets.partitions import gold_sets_partitions, models_partitions


def partition_keys_from_registries() -> tuple[list[str], list[str]]:
    """(gold-set keys, model slugs) currently registered in data/."""
    from nl2sql_pipeline.generation.registry import load_registry
    from nl2sql_pipeline.gold.registry import list_gold_sets

    return sorted(list_gold_sets()), sorted(load_registry())


def register_partitions(instance: dg.DagsterInstance) -> tuple[list[str], list[str]]:
    """Add every registered gold set and model as a dynamic partition; returns what was added."""
    golds, models = partition_keys_from_registries()
    new_golds = [g for g in golds if not instance.has_dynamic_partition(gold_sets_partitions.name, g)]
    new_models = [m for m in models if not instance.has_dynamic_partition(models_partitions.name, m)]
    if new_golds:
        instance.add_dynamic_partitions(gold_sets_partitions.name, new_golds)
    if new_models:
        instance.add_dynamic_partitions(models_partitions.name, new_models)
    return new_golds, new_models


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Registers gold sets and models from data/ as dynamic partitions.")
def partition_registry_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    golds, models = partition_keys_from_registries()
    requests = []
    if golds:
        requests.append(gold_sets_partitions.build_add_request(golds))
    if models:
        requests.append(models_partitions.build_add_request(models))
    return dg.SensorResult(dynamic_partitions_requests=requests)
