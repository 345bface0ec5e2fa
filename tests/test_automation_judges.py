"""The judges.yml automation opt-in: answers and judges that the automation runs after every evaluation.

With ``automation: {answers: true, judges: [judge-oracle]}`` in ``data/judges.yml``, the default
``eval_settings`` carries them and the automation asks for ``candidate_answers``, ``answer_judgements`` and
``sql_judgements`` of a partition once its evaluation was written (whatever launched it), never generating again.
Without the block nothing changes. A judge's versions are part of the judgement assets' code versions.
"""

from __future__ import annotations

import dagster as dg
import pytest
from eval_support import append_models, offline_model, query_case, register_gold_set, set_judge_automation

pytestmark = pytest.mark.xdist_group("automation_judges")

MODEL_ASSETS = ("candidate_sql", "candidate_results", "case_verdicts", "run_scores", "baselines")
JUDGE_ASSETS = ("candidate_answers", "answer_judgements", "sql_judgements")
CASE = query_case("c-1", "SELECT COUNT(*) AS n FROM anime", question="How many titles?")


@pytest.fixture(scope="module")
def evaluated_template(world_factory):
    """tiny-v1 evaluated once for gold-echo (no judges; instance closed)."""
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import evaluate, get_instance

    with world_factory() as world:
        register_gold_set(world.data, "tiny-v1", [CASE], description="t")
        with get_instance() as instance:
            register_partitions(instance)
            assert not evaluate("tiny-v1", ["gold-echo"], instance=instance).failures
    return world


@pytest.fixture
def evaluated(evaluated_template, clone_template):
    from nl2sql_cli.runner import get_instance

    world = clone_template(evaluated_template)
    instance = get_instance()
    yield world.data, instance
    instance.dispose()


def _tick(defs, instance, cursor=None):
    return dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)


def _requested(result, asset: str) -> set[tuple[str, str]]:
    keys = result.get_requested_partitions(dg.AssetKey(asset))
    return {tuple(str(k).split("|")) for k in keys}  # type: ignore[misc]  # a multi-partition key is "gold|model"


def _materialize(defs, instance, selection, key) -> None:
    """Materialize ``selection`` of one partition with the Definitions' resources (what an automation run uses)."""
    from assets.graph import ALL_ASSETS, ASSET_CHECKS

    outcome = dg.materialize(
        [*ALL_ASSETS, *ASSET_CHECKS],
        selection=list(selection),
        instance=instance,
        resources=defs.resources,
        partition_key=key,
    )
    assert outcome.success, (selection, key)


def _latest_metadata(instance, asset: str, key) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
    ).records
    assert records, (asset, key)
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def _materializations(instance, asset: str) -> int:
    return len(instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=100).records)


def test_without_the_block_the_judgement_assets_are_not_automated(data_copy):
    from assets.assemble import build_definitions
    from assets.automation import CODE_VERSIONS

    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    for asset in JUDGE_ASSETS:
        assert graph.get(dg.AssetKey(asset)).automation_condition is None, asset
        assert graph.get(dg.AssetKey(asset)).code_version == CODE_VERSIONS[asset], asset
    settings = defs.resources["eval_settings"]
    assert settings.answers is False and settings.judges == []


def test_the_block_sets_the_default_eval_settings_and_the_conditions(data_copy):
    from assets.assemble import build_definitions

    set_judge_automation(data_copy, answers=False, judges=["judge-oracle"])
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    labels = {a: graph.get(dg.AssetKey(a)).automation_condition for a in JUDGE_ASSETS}
    assert {a: c.get_label() for a, c in labels.items()} == dict.fromkeys(JUDGE_ASSETS, "judge_after_evaluation")
    assert defs.resources["eval_settings"].judges == ["judge-oracle"]
    assert graph.get(dg.AssetKey("candidate_sql")).automation_condition.get_label() == "new_evaluation"


def test_a_sql_only_judge_automates_sql_judgements_alone(data_copy):
    from assets.assemble import build_definitions

    set_judge_automation(data_copy, answers=False, judges=["sql-judge"])
    graph = build_definitions().resolve_asset_graph()
    automated = {a for a in JUDGE_ASSETS if graph.get(dg.AssetKey(a)).automation_condition is not None}
    assert automated == {"sql_judgements"}


def test_a_changed_judge_version_changes_the_judgement_code_versions_only(data_copy):
    from assets.assemble import build_definitions

    set_judge_automation(data_copy, answers=True, judges=["judge-oracle"])
    before = build_definitions().resolve_asset_graph()
    registry = data_copy / "judges.yml"
    registry.write_text(
        registry.read_text(encoding="utf-8").replace(
            "    roles: [answer, sql_equivalence, diagnosis]\n",
            '    roles: [answer, sql_equivalence, diagnosis]\n    version: "2"\n',
            1,
        ),
        encoding="utf-8",
    )
    after = build_definitions().resolve_asset_graph()
    changed = {
        k.to_user_string()
        for k in after.get_all_asset_keys()
        if after.get(k).code_version != before.get(k).code_version
    }
    assert changed == {"answer_judgements", "sql_judgements"}  # generation and answers are not stale


def test_an_unknown_judge_in_the_block_names_the_file_and_line(data_copy):
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.judges.automation import load_judge_automation

    set_judge_automation(data_copy, judges=["no-such-judge"])
    with pytest.raises(ConfigError, match=r"judges\.yml:\d+: .*unknown judge 'no-such-judge'"):
        load_judge_automation()


@pytest.mark.e2e
def test_the_automation_answers_and_judges_a_new_evaluation_without_a_manual_step(evaluated):
    from assets.assemble import build_definitions
    from assets.sensors import register_partitions

    data, instance = evaluated
    set_judge_automation(data, answers=True, judges=["judge-oracle"])
    defs = build_definitions()
    first = _tick(defs, instance)
    assert not any(_requested(first, a) for a in (*MODEL_ASSETS, *JUDGE_ASSETS))  # nothing judged before is asked
    append_models(data, offline_model("echo-two", version="echo-two"))
    register_partitions(instance)
    second = _tick(defs, instance, first.cursor)
    new = {("tiny-v1", "echo-two")}
    for asset in (*MODEL_ASSETS, *JUDGE_ASSETS):  # the evaluation and its judgements, for the new model only
        assert _requested(second, asset) == new, asset
    key = dg.MultiPartitionKey({"gold": "tiny-v1", "model": "echo-two"})
    _materialize(defs, instance, (*MODEL_ASSETS, *JUDGE_ASSETS), key)
    answers = _latest_metadata(instance, "answer_judgements", key)
    assert answers["judge-oracle_answer_correct_rate"] == 1.0
    assert _latest_metadata(instance, "sql_judgements", key)["judges"] == "judge-oracle"
    third = _tick(defs, instance, second.cursor)
    assert not any(_requested(third, a) for a in (*MODEL_ASSETS, *JUDGE_ASSETS))  # judged once, not again


@pytest.mark.e2e
def test_a_re_evaluation_is_judged_again_and_generates_nothing_more(evaluated):
    from assets.assemble import build_definitions

    data, instance = evaluated
    set_judge_automation(data, answers=True, judges=["judge-oracle"])
    defs = build_definitions()
    first = _tick(defs, instance)
    key = dg.MultiPartitionKey({"gold": "tiny-v1", "model": "gold-echo"})
    # a run of the evaluate_model job (what the model-change sensor, the nightly schedule and the launchpad start)
    _materialize(defs, instance, MODEL_ASSETS, key)
    generated = _materializations(instance, "candidate_sql")
    second = _tick(defs, instance, first.cursor)
    assert not any(_requested(second, a) for a in MODEL_ASSETS)  # generation is never asked again
    for asset in JUDGE_ASSETS:
        assert _requested(second, asset) == {("tiny-v1", "gold-echo")}, asset
    _materialize(defs, instance, JUDGE_ASSETS, key)
    assert _materializations(instance, "candidate_sql") == generated
    assert _latest_metadata(instance, "answer_judgements", key)["judge-oracle_answer_correct_rate"] == 1.0
    assert not any(_requested(_tick(defs, instance, second.cursor), a) for a in JUDGE_ASSETS)


@pytest.mark.e2e
def test_without_the_block_an_evaluation_is_not_judged(evaluated):
    from assets.assemble import build_definitions

    data, instance = evaluated
    defs = build_definitions()
    first = _tick(defs, instance)
    key = dg.MultiPartitionKey({"gold": "tiny-v1", "model": "gold-echo"})
    _materialize(defs, instance, MODEL_ASSETS, key)
    second = _tick(defs, instance, first.cursor)
    assert not any(_requested(second, a) for a in JUDGE_ASSETS)


def test_the_judgement_assets_have_their_own_sensor_evaluated_in_the_code_server():
    from assets.definitions import defs

    repository = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    judging = repository.get_sensor_def("judge_automation_sensor")
    assert isinstance(judging, dg.AutomationConditionSensorDefinition)
    assert judging.default_status == dg.DefaultSensorStatus.RUNNING
    assert judging.asset_selection.resolve(graph) == {dg.AssetKey(a) for a in JUDGE_ASSETS}
    assert not repository.get_sensor_def("automation_sensor").asset_selection.resolve(graph) & {
        dg.AssetKey(a) for a in JUDGE_ASSETS
    }
