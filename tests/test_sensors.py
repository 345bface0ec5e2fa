"""The re-run sensor: a model whose config changed is re-evaluated on the gold sets it was run on."""

from __future__ import annotations

import dagster as dg
import pytest
from eval_support import query_case, register_gold_set

# one xdist worker runs the module: the evaluated template is built once, and cloned per test
pytestmark = pytest.mark.xdist_group("sensors")


@pytest.fixture(scope="module")
def evaluated_template(world_factory):
    """A private data dir with a 1-case gold set tiny-v1, evaluated once for gold-echo and sql-mutant."""
    from nl2sql_cli.runner import evaluate, get_instance

    with world_factory() as world:
        case = query_case("c-1", "SELECT COUNT(*) AS n FROM anime", question="How many titles?")
        register_gold_set(world.data, "tiny-v1", [case], description="t")
        with get_instance() as instance:
            outcome = evaluate("tiny-v1", ["gold-echo", "sql-mutant"], instance=instance)
            assert not outcome.failures
    return world


@pytest.fixture
def evaluated(evaluated_template, clone_template):
    """This test's own copy of the evaluated world: its data dir and the instance holding the evaluation."""
    from nl2sql_cli.runner import get_instance

    world = clone_template(evaluated_template)
    instance = get_instance()
    yield world.data, instance
    instance.dispose()


def _requests(instance) -> list[dg.RunRequest]:
    from assets.sensors import model_change_sensor

    return list(model_change_sensor(dg.build_sensor_context(instance=instance)).run_requests or [])


@pytest.mark.e2e
def test_nothing_changed_requests_nothing(evaluated):
    _, instance = evaluated
    assert _requests(instance) == []


@pytest.mark.e2e
def test_a_changed_model_config_requests_a_rerun_of_that_model_only(evaluated):
    data, instance = evaluated
    models = data / "models.yml"
    text = models.read_text()
    assert "params: {temperature: 0, mutation_rate: 0.5, seed: 7}" in text
    models.write_text(
        text.replace(
            "params: {temperature: 0, mutation_rate: 0.5, seed: 7}",
            "params: {temperature: 0, mutation_rate: 0.3, seed: 7}",
        )
    )
    requests = _requests(instance)
    assert len(requests) == 1
    assert requests[0].partition_key == dg.MultiPartitionKey({"gold": "tiny-v1", "model": "sql-mutant"})
    assert requests[0].tags["nl2sql/rerun_reason"] == "model config changed"
    assert requests[0].run_key and "sql-mutant" in requests[0].run_key


@pytest.mark.e2e
def test_the_requested_rerun_makes_the_evaluation_current_again(evaluated):
    from assets.definitions import defs

    data, instance = evaluated
    models = data / "models.yml"
    models.write_text(models.read_text().replace("mutation_rate: 0.5", "mutation_rate: 0.2"))
    (request,) = _requests(instance)
    job = defs.resolve_job_def("evaluate_model")
    result = job.execute_in_process(partition_key=request.partition_key, instance=instance, tags=request.tags)
    assert result.success
    run = instance.get_run_by_id(result.run_id)
    assert run.tags["nl2sql/provider"] == "nl2sql-offline" and run.tags["nl2sql/rerun_reason"] == "model config changed"
    assert _requests(instance) == []


def test_a_model_removed_from_the_registry_is_no_longer_a_partition(isolated_home):
    from assets.partitions import models_partitions
    from assets.sensors import partition_registry_sensor
    from nl2sql_cli.runner import get_instance

    instance = get_instance()
    instance.add_dynamic_partitions(models_partitions.name, ["gold-echo", "retired-model"])
    result = partition_registry_sensor(dg.build_sensor_context(instance=instance))
    deletes = [r for r in result.dynamic_partitions_requests if isinstance(r, dg.DeleteDynamicPartitionsRequest)]
    assert [(r.partitions_def_name, list(r.partition_keys)) for r in deletes] == [("models", ["retired-model"])]
    adds = [r for r in result.dynamic_partitions_requests if isinstance(r, dg.AddDynamicPartitionsRequest)]
    assert any("gold-echo" in r.partition_keys for r in adds)


@pytest.mark.e2e
def test_a_rewritten_case_database_requests_a_rerun_under_rerun_always_and_its_stale_oracle_is_refused(evaluated):
    import os

    from eval_support import append_models, offline_model

    from assets.definitions import defs
    from nl2sql_cli.runner import evaluate
    from nl2sql_pipeline import paths

    data, instance = evaluated
    append_models(data, offline_model("echo-always", rerun="always"))
    assert not evaluate("tiny-v1", ["echo-always"], instance=instance).failures
    assert _requests(instance) == []

    database = paths.database_path("anime_platform")  # written again (same size, a later modification time)
    stat = database.stat()
    os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    (request,) = _requests(instance)
    assert request.partition_key == dg.MultiPartitionKey({"gold": "tiny-v1", "model": "echo-always"})
    assert request.tags["nl2sql/rerun_reason"] == "case databases changed"

    # the requested run would judge against the oracle of the old rows: it stops, naming the fix
    job = defs.resolve_job_def("evaluate_model")
    result = job.execute_in_process(
        partition_key=request.partition_key, instance=instance, tags=request.tags, raise_on_error=False
    )
    assert not result.success
    failures = []
    for event in (e for e in result.all_events if e.is_step_failure):
        error = event.step_failure_data.error
        while error is not None:  # Dagster wraps what the asset raised
            failures.append(error.message)
            error = error.cause
    assert any("oracle_results of tiny-v1 are stale (a case database changed" in m for m in failures), failures
