"""The re-run sensor: a model whose config changed is re-evaluated on the gold sets it was run on."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import pytest

from nl2sql_pipeline.paths import PROJECT_ROOT


@pytest.fixture
def evaluated(tmp_path, monkeypatch, isolated_home):
    """A private data dir with a 2-case gold set, evaluated once for gold-echo and sql-mutant."""
    data = tmp_path / "data"
    shutil.copytree(PROJECT_ROOT / "data", data)
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    case = {"id": "c-1", "domain": "d", "category": "single_table", "question": "How many titles?",
            "database": "anime_platform", "expected_sql": "SELECT COUNT(*) AS n FROM anime", "tags": ["aggregate"],
            "difficulty": "easy"}
    (data / "gold" / "tiny-v1.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    registry = data / "gold" / "gold_sets.yml"
    registry.write_text(registry.read_text() + "  tiny-v1:\n    file: tiny-v1.jsonl\n    description: t\n")
    from assets.runner import evaluate, get_instance

    instance = get_instance()
    outcome = evaluate("tiny-v1", ["gold-echo", "sql-mutant"], instance=instance)
    assert not outcome.failures
    return data, instance


def _requests(instance) -> list[dg.RunRequest]:
    from assets.sensors import model_change_sensor

    return list(model_change_sensor(dg.build_sensor_context(instance=instance)).run_requests or [])


def test_nothing_changed_requests_nothing(evaluated):
    _, instance = evaluated
    assert _requests(instance) == []


def test_a_changed_model_config_requests_a_rerun_of_that_model_only(evaluated):
    data, instance = evaluated
    models = data / "models.yml"
    text = models.read_text()
    assert "params: {temperature: 0, mutation_rate: 0.5, seed: 7}" in text
    models.write_text(text.replace("params: {temperature: 0, mutation_rate: 0.5, seed: 7}",
                                   "params: {temperature: 0, mutation_rate: 0.3, seed: 7}"))
    requests = _requests(instance)
    assert len(requests) == 1
    assert requests[0].partition_key == dg.MultiPartitionKey({"gold": "tiny-v1", "model": "sql-mutant"})
    assert requests[0].tags["nl2sql/rerun_reason"] == "model config changed"
    assert requests[0].run_key and "sql-mutant" in requests[0].run_key
