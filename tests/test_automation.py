"""Declarative automation and the nightly schedule (sensors: tests/test_sensors.py).

A new model slug is evaluated on every prepared gold version, and a new gold version for every
registered model, by the automation conditions alone; what existed before is left alone. The nightly
schedule asks for the ``rerun: nightly`` models only.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest
from eval_support import append_models, offline_model, query_case, register_gold_set

# one xdist worker runs the module: the evaluated template is built once, and cloned per test
pytestmark = pytest.mark.xdist_group("automation")

MODEL_ASSETS = ("candidate_sql", "candidate_results", "case_verdicts", "run_scores", "baselines")
CASE = query_case("c-1", "SELECT COUNT(*) AS n FROM anime", question="How many titles?")


def _add_gold(data, key: str) -> None:
    register_gold_set(data, key, [CASE], description="t")


def _add_model(data, slug: str, rerun: str = "on_config_change") -> None:
    append_models(data, offline_model(slug, version=slug, rerun=rerun))


@pytest.fixture(scope="module")
def evaluated_template(world_factory):
    """A private data dir with tiny-v1 added, evaluated once for gold-echo and sql-mutant (instance closed)."""
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import evaluate, get_instance

    with world_factory() as world:
        _add_gold(world.data, "tiny-v1")
        with get_instance() as instance:
            register_partitions(instance)
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


def _tick(instance, cursor=None):
    from assets.definitions import defs

    return dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)


def _requested(result, asset: str) -> set[tuple[str, str] | str]:
    keys = result.get_requested_partitions(dg.AssetKey(asset))
    return {
        (k.keys_by_dimension["gold"], k.keys_by_dimension["model"]) if isinstance(k, dg.MultiPartitionKey) else k
        for k in keys
    }


def _execute_requests(instance, result) -> None:
    """Materialize what a tick requested, as the automation sensor's runs would (gold assets first)."""
    from assets.graph import ALL_ASSETS, ASSET_CHECKS
    from resources.build import build_resources

    for names in (("gold_set", "oracle_results"), MODEL_ASSETS):
        partitions = set().union(*(result.get_requested_partitions(dg.AssetKey(n)) for n in names))
        for key in sorted(partitions, key=str):
            selection = [n for n in names if key in result.get_requested_partitions(dg.AssetKey(n))]
            outcome = dg.materialize(
                [*ALL_ASSETS, *ASSET_CHECKS],
                selection=selection,
                instance=instance,
                resources=build_resources(),
                partition_key=key,
            )
            assert outcome.success, (selection, key)


@pytest.mark.e2e
def test_a_new_model_is_evaluated_on_every_prepared_gold_version_without_a_manual_step(evaluated):
    from assets.sensors import register_partitions

    data, instance = evaluated
    first = _tick(instance)
    assert not any(_requested(first, a) for a in MODEL_ASSETS)  # what was there is left alone
    _add_model(data, "echo-two")
    assert register_partitions(instance) == ([], ["echo-two"])  # what partition_registry_sensor does
    second = _tick(instance, first.cursor)
    for asset in MODEL_ASSETS:  # the whole chain in one request, for the new model only
        assert _requested(second, asset) == {("tiny-v1", "echo-two")}, asset
    _execute_requests(instance, second)
    scores = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("run_scores"),
            asset_partitions=[dg.MultiPartitionKey({"gold": "tiny-v1", "model": "echo-two"})],
        ),
        limit=1,
    ).records
    assert scores and scores[0].asset_materialization.metadata["semantic_correctness_rate"].value == 1.0
    verdicts = (
        instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("case_verdicts"),
                asset_partitions=[dg.MultiPartitionKey({"gold": "tiny-v1", "model": "echo-two"})],
            ),
            limit=1,
        )
        .records[0]
        .asset_materialization.metadata
    )
    assert [r.data["outcome"] for r in verdicts["verdicts_table"].value.records] == ["correct"]
    assert verdicts["dagster/row_count"].value == 1
    third = _tick(instance, second.cursor)
    assert not any(_requested(third, a) for a in MODEL_ASSETS)  # evaluated once, not again


@pytest.mark.e2e
def test_a_new_gold_version_is_prepared_then_evaluated_for_every_registered_model(evaluated):
    from assets.sensors import register_partitions

    data, instance = evaluated
    first = _tick(instance)
    _add_gold(data, "tiny-v2")
    assert register_partitions(instance) == (["tiny-v2"], [])
    second = _tick(instance, first.cursor)
    assert _requested(second, "gold_set") == {"tiny-v2"}
    assert not _requested(second, "candidate_sql")  # not before its blocking preflight passed
    _execute_requests(instance, second)
    third = _tick(instance, second.cursor)
    assert _requested(third, "oracle_results") == {"tiny-v2"}
    registered = set(instance.get_dynamic_partitions("models"))
    assert _requested(third, "candidate_sql") == {("tiny-v2", m) for m in registered}
    assert {m for _, m in _requested(third, "candidate_sql")} >= {"gold-echo", "sql-mutant"}


@pytest.mark.e2e
def test_a_changed_gold_set_alone_re_runs_no_model(evaluated):
    from assets.graph import ALL_ASSETS, ASSET_CHECKS
    from resources.build import build_resources

    _, instance = evaluated
    first = _tick(instance)
    assert dg.materialize(
        [*ALL_ASSETS, *ASSET_CHECKS],
        selection=["gold_set"],
        instance=instance,
        resources=build_resources(),
        partition_key="tiny-v1",
    ).success
    second = _tick(instance, first.cursor)
    assert _requested(second, "oracle_results") == {"tiny-v1"}
    assert not any(_requested(second, a) for a in MODEL_ASSETS)


@pytest.mark.e2e
def test_the_nightly_schedule_asks_for_the_nightly_models_on_every_prepared_gold_version(evaluated):
    from assets.schedules import NIGHTLY_REASON, nightly_evaluation
    from assets.sensors import register_partitions

    data, instance = evaluated
    _add_model(data, "echo-nightly", rerun="nightly")
    _add_gold(data, "tiny-unprepared")
    register_partitions(instance)
    night = dt.datetime(2026, 12, 2, 2, 0, tzinfo=dt.timezone.utc)
    requests = nightly_evaluation(dg.build_schedule_context(instance=instance, scheduled_execution_time=night))
    assert [(r.partition_key, r.run_key, r.tags["nl2sql/rerun_reason"]) for r in requests] == [
        (
            dg.MultiPartitionKey({"gold": "tiny-v1", "model": "echo-nightly"}),
            "nightly|2026-12-02|tiny-v1|echo-nightly",
            NIGHTLY_REASON,
        )
    ]
    from assets.definitions import defs

    schedule = defs.resolve_schedule_def("nightly_evaluation")
    assert schedule.cron_schedule == "0 2 * * *" and schedule.job_name == "evaluate_model"


@pytest.mark.e2e
def test_without_nightly_models_the_schedule_skips(evaluated):
    from assets.schedules import nightly_evaluation

    _, instance = evaluated
    night = dt.datetime(2026, 12, 2, 2, 0, tzinfo=dt.timezone.utc)
    result = nightly_evaluation(dg.build_schedule_context(instance=instance, scheduled_execution_time=night))
    assert isinstance(result, dg.SkipReason)


def test_assets_carry_code_versions_and_automation_conditions():
    from assets.definitions import defs

    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).code_version, key
    labels = {
        k.to_user_string(): graph.get(k).automation_condition.get_label()
        for k in graph.get_all_asset_keys()
        if graph.get(k).automation_condition is not None
    }
    assert labels["candidate_sql"] == "new_evaluation" and labels["gold_set"] == "eager"
    assert {labels[a] for a in MODEL_ASSETS[1:]} == {"follow_model"}
    assert graph.get(dg.AssetKey("case_verdicts")).code_version.endswith(
        __import__("nl2sql_pipeline.compare.model", fromlist=["COMPARATOR_VERSION"]).COMPARATOR_VERSION
    )


def test_the_automation_sensor_runs_by_default():
    from assets.definitions import defs

    sensor = defs.get_repository_def().get_sensor_def("automation_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
