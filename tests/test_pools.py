"""Provider pools: derived from the registry, written into the instance (the backfill test runs them)."""

from __future__ import annotations

import dagster as dg

from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec


def _litellm(slug: str, api_base: str | None, limit: int | None) -> ModelSpec:
    return ModelSpec(
        slug=slug, kind="litellm", model=f"openai/{slug}", api_base=api_base, limits=Limits(max_concurrency=limit)
    )


def test_one_pool_per_provider_and_server_with_the_largest_max_concurrency():
    from resources.pools import GENERATION_POOL, pool_limits, provider_pool

    registry = {
        "a": _litellm("a", None, 2),
        "b": _litellm("b", None, 5),
        "c": _litellm("c", "http://127.0.0.1:8000/v1", None),
        "echo": ModelSpec(slug="echo", kind="offline", model="nl2sql-offline/gold-echo"),
    }
    assert provider_pool(registry["a"]) == provider_pool(registry["b"]) == "llm.openai@default"
    assert provider_pool(registry["echo"]) is None
    assert pool_limits(registry) == {
        "llm.openai@default": 5,
        "llm.openai@http_127.0.0.1_8000_v1": 1,
        GENERATION_POOL: 7,
    }


def test_limits_are_written_into_the_instance_and_only_when_they_changed(isolated_home):
    from resources.instance import ensure_instance_home
    from resources.pools import sync_pool_limits

    ensure_instance_home()
    instance = dg.DagsterInstance.get()
    assert instance.get_concurrency_config().pool_config.default_pool_limit == 1  # dagster.yaml
    assert sync_pool_limits(instance, {"llm.x@default": 3, "llm_generation": 4}) == {
        "llm.x@default": 3,
        "llm_generation": 4,
    }
    assert instance.event_log_storage.get_concurrency_info("llm.x@default").slot_count == 3
    assert sync_pool_limits(instance, {"llm.x@default": 3, "llm_generation": 4}) == {}
    assert sync_pool_limits(instance, {"llm.x@default": 1}) == {"llm.x@default": 1}
    assert instance.event_log_storage.get_concurrency_info("llm.x@default").slot_count == 1


def test_the_registry_sensor_writes_the_pool_limits(isolated_home):
    from assets.sensors import partition_registry_sensor
    from nl2sql_cli.runner import get_instance
    from resources.pools import pool_limits

    instance = get_instance()
    partition_registry_sensor(dg.build_sensor_context(instance=instance))
    for pool, limit in pool_limits().items():
        assert instance.event_log_storage.get_concurrency_info(pool).slot_count == limit, pool
