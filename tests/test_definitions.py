"""The Dagster definitions: asset keys, partitions, the blocking preflight check, the IO manager."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from assets.definitions import defs
from assets.partitions import gold_model_partitions
from resources.io_manager import ParquetIOManager

EXPECTED_ASSETS = {
    "sample_database": None,
    "gold_set": "gold_sets",
    "oracle_results": "gold_sets",
    "database_variants": "gold_sets",
    "candidate_sql": "gold|model",
    "candidate_results": "gold|model",
    "case_verdicts": "gold|model",
    "candidate_answers": "gold|model",
    "answer_judgements": "gold|model",
    "sql_judgements": "gold|model",
    "run_scores": "gold|model",
    "baselines": "gold|model",
    "leaderboard": None,
    "paraphrase_verdicts": "gold|model",
    "perturbation_verdicts": "gold|model",
}


def _partitions_label(partitions_def) -> str | None:
    if partitions_def is None:
        return None
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return "|".join(d.name for d in partitions_def.partitions_defs)
    return partitions_def.name


def test_asset_keys_and_partition_definitions():
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == set(EXPECTED_ASSETS)
    for name, expected in EXPECTED_ASSETS.items():
        node = graph.get(dg.AssetKey(name))
        assert _partitions_label(node.partitions_def) == expected, name


def test_multi_partitions_are_gold_by_model_dynamic():
    dims = {d.name: d.partitions_def for d in gold_model_partitions.partitions_defs}
    assert list(dims) == ["gold", "model"]
    assert dims["gold"].name == "gold_sets" and dims["model"].name == "models"


def test_gold_preflight_is_a_blocking_check_on_gold_set():
    graph = defs.resolve_asset_graph()
    checks = {key.name: key for key in graph.asset_check_keys}
    assert "gold_preflight" in checks
    assert checks["gold_preflight"].asset_key == dg.AssetKey("gold_set")
    spec = next(s for s in defs.resolve_all_asset_specs() if s.key == dg.AssetKey("gold_set"))
    check_spec = graph.get_check_spec(checks["gold_preflight"])
    assert check_spec.blocking is True
    assert check_spec.partitions_def is not None, "one preflight status per gold version"
    assert spec.group_name == "gold"


def test_lineage_follows_the_architecture():
    graph = defs.resolve_asset_graph()
    parents = {
        k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys} for k in graph.get_all_asset_keys()
    }
    assert parents["gold_set"] == {"sample_database"}
    assert parents["oracle_results"] == {"gold_set"}
    assert parents["candidate_sql"] == {"gold_set"}
    assert parents["candidate_results"] >= {"candidate_sql"}
    assert parents["case_verdicts"] >= {"oracle_results", "candidate_results", "database_variants"}
    # answers and judgements follow candidate_results: turning them on never re-runs generation
    assert parents["candidate_answers"] == {"gold_set", "candidate_results"}
    assert parents["answer_judgements"] == {"gold_set", "oracle_results", "candidate_answers"}
    assert parents["sql_judgements"] == {"gold_set", "case_verdicts"}  # judged from the verdicts, never generated
    assert parents["database_variants"] == {"gold_set"}
    assert parents["run_scores"] >= {"case_verdicts"}
    assert parents["baselines"] == {"run_scores"}
    assert (
        parents["paraphrase_verdicts"]
        == parents["perturbation_verdicts"]
        == {
            "gold_set",
            "oracle_results",
            "case_verdicts",
        }
    )


def test_parquet_io_manager_writes_one_file_per_partition(tmp_path):
    manager = ParquetIOManager(root=str(tmp_path))
    key = dg.MultiPartitionKey({"gold": "g1", "model": "m1"})
    frame = pd.DataFrame({"a": [1, 2]})
    context = dg.build_output_context(asset_key=dg.AssetKey("run_scores"), partition_key=key)
    manager.handle_output(context, frame)
    path = tmp_path / "run_scores" / "gold=g1" / "model=m1.parquet"
    assert path.exists()
    assert pd.read_parquet(path)["a"].tolist() == [1, 2]
    single = dg.build_output_context(asset_key=dg.AssetKey("gold_set"), partition_key="g1")
    manager.handle_output(single, frame)
    assert (tmp_path / "gold_set" / "gold=g1.parquet").exists()
    assert not list(tmp_path.rglob("*.tmp"))


def test_partition_sensor_registers_gold_sets_and_models():
    from assets.sensors import partition_registry_sensor

    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance)
        result = partition_registry_sensor(context)
        added = {r.partitions_def_name: set(r.partition_keys) for r in result.dynamic_partitions_requests}
        assert "multidomain-v1" in added["gold_sets"]
        assert {"gold-echo", "sql-mutant"} <= added["models"]


def test_generation_runs_in_a_pool_and_jobs_exist():
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey("candidate_sql")).pools == {"llm_generation"}
    assert defs.resolve_job_def("evaluate_model").partitions_def == gold_model_partitions
    assert defs.resolve_job_def("prepare_gold_set") is not None
    assert defs.resolve_job_def("judge_sql").partitions_def == gold_model_partitions
    answer_job = defs.resolve_job_def("answer_and_judge")  # answers and judges from the UI, after a run
    assert answer_job.partitions_def == gold_model_partitions
    assert {k.to_user_string() for k in answer_job.asset_layer.selected_asset_keys} == {
        "candidate_answers",
        "answer_judgements",
    }
    assert {s.name for s in defs.sensors} == {
        "partition_registry_sensor",
        "model_change_sensor",
        "automation_sensor",
        "judge_automation_sensor",
    }
    assert {s.name for s in defs.schedules} == {"nightly_evaluation"}


def test_evaluate_model_runs_are_tagged_with_their_provider_and_limited_per_provider(tmp_path, monkeypatch):
    job = defs.resolve_job_def("evaluate_model")
    tags = job.partitioned_config.get_tags_for_partition_key(
        dg.MultiPartitionKey({"gold": "multidomain-v1", "model": "gold-echo"})
    )
    assert tags["nl2sql/provider"] == "nl2sql-offline" and tags["nl2sql/model"] == "gold-echo"
    openai = job.partitioned_config.get_tags_for_partition_key("multidomain-v1|gpt-4o-mini")
    assert openai["nl2sql/provider"] == "openai"

    from resources.instance import ensure_instance_home

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    ensure_instance_home()
    with dg.DagsterInstance.get() as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {"key": "nl2sql/provider", "value": {"applyLimitPerUniqueValue": True}, "limit": 2} in limits


def test_the_robustness_job_measures_both_with_its_settings_in_the_run_config():
    job = defs.resolve_job_def("measure_robustness")
    key = dg.MultiPartitionKey({"gold": "g", "model": "m"})
    config = job.partitioned_config.get_run_config_for_partition_key(key)
    assert config["resources"]["eval_settings"]["config"] == {"paraphrases": 4, "perturb": "all"}
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} >= {
        "paraphrase_verdicts",
        "perturbation_verdicts",
    }


def test_every_jobs_default_run_config_is_valid_and_the_answer_and_judge_jobs_do_something_by_default():
    """The launchpad's default config of every partitioned job validates; the answer and SQL-judge jobs, like
    measure_robustness, turn their stage on by default (an empty config answered and judged nothing)."""
    key = dg.MultiPartitionKey({"gold": "multidomain-v1", "model": "gold-echo"})
    settings = {}
    for job in defs.get_repository_def().get_all_jobs():
        if job.partitioned_config is None or job.name.startswith("__"):
            continue
        partition = key if job.partitions_def == gold_model_partitions else "multidomain-v1"
        config = job.partitioned_config.get_run_config_for_partition_key(partition)
        dg.validate_run_config(job, config)
        settings[job.name] = config.get("resources", {}).get("eval_settings", {}).get("config", {})
    assert settings["answer_and_judge"]["answers"] is True and settings["answer_and_judge"]["judges"]
    assert settings["judge_sql"]["judges"] == ["judge-oracle"]


def test_the_gate_checks_are_blocking_checks_on_run_scores_evaluated_by_one_subsettable_step():
    from assets.checks import GATE_CHECK_SPECS, GATE_CHECKS

    graph = defs.resolve_asset_graph()
    gates = {key.name: key for key in graph.asset_check_keys if key.name in GATE_CHECK_SPECS}
    assert set(gates) == set(GATE_CHECK_SPECS)
    for key in gates.values():
        assert key.asset_key == dg.AssetKey("run_scores")
        spec = graph.get_check_spec(key)
        assert spec.blocking is True and spec.partitions_def is not None, key.name
    [step] = GATE_CHECKS  # one step loads the scores and finds the baseline once for every gate
    assert set(step.check_keys) == set(gates.values())
    assert step.can_subset, "one gate can still be executed alone (the UI's per-check Execute)"
