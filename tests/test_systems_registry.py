"""Systems as registry entries: the strict checker, the config hash, readiness, ``models list``, the contract."""

from __future__ import annotations

import json

import pytest

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.generation.systems import contract

GOOD = """\
models:
  my-http:
    kind: http
    url: http://127.0.0.1:9/nl2sql
    headers: {Authorization: "Bearer ${MY_TOKEN}", X-Team: analytics}
    timeout_s: 30
    version: "2026-06-01"
  my-python:
    kind: python
    target: nl2sql_pipeline.reference_system.service:answer
    options: {model: gold-echo}
    calibration: true
    cache: false
  my-command:
    kind: command
    command: ["{python}", -m, nl2sql_pipeline.reference_system.command]
    limits: {requests_per_minute: 60, max_concurrency: 2}
    retry: {max_retries: 1}
"""


def write(tmp_path, text: str):
    path = tmp_path / "models.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_system_entries_load_beside_models(tmp_path):
    specs = load_registry(write(tmp_path, GOOD))
    http, python, command = specs["my-http"], specs["my-python"], specs["my-command"]
    assert (http.kind, http.system.url, http.timeout_s, http.version) == (
        "http",
        "http://127.0.0.1:9/nl2sql",
        30.0,
        "2026-06-01",
    )
    assert http.system.verify_tls is True and http.system.method == "POST"
    assert (python.system.target, dict(python.system.options), python.system.cache) == (
        "nl2sql_pipeline.reference_system.service:answer",
        {"model": "gold-echo"},
        False,
    )
    assert command.system.command == ("{python}", "-m", "nl2sql_pipeline.reference_system.command")
    assert (command.limits.requests_per_minute, command.retry.max_retries) == (60, 1)
    assert all(spec.is_system and not spec.is_offline for spec in specs.values())


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("kind: http\n    url: ftp://x/y", "models.yml:4: model 'bad', key 'url': 'ftp://x/y' is not an http(s) URL"),
        ("kind: http", "model 'bad', key 'url': missing required key"),
        (
            "kind: http\n    url: http://x/\n    headers: {Authorization: Bearer abc}",
            "key 'headers.Authorization': a credential written in the file",
        ),
        ("kind: http\n    url: http://x/\n    verify_tls: maybe", "key 'verify_tls': must be true or false"),
        ("kind: python\n    target: no_colon", "key 'target': 'no_colon' does not match"),
        ("kind: python\n    target: a.b:c\n    url: http://x/", "key 'url': unknown key"),
        ("kind: command\n    command: []", "key 'command': is empty"),
        ("kind: command\n    command: [run]\n    timout_s: 3", "did you mean 'timeout_s'?"),
    ],
)
def test_bad_system_entries_are_refused_with_file_line_and_fix(tmp_path, entry, expected):
    with pytest.raises(ConfigError) as info:
        load_registry(write(tmp_path, f"models:\n  bad:\n    {entry}\n"))
    assert expected in str(info.value)


def test_config_hash_covers_what_changes_answers_only(tmp_path):
    base = load_registry(write(tmp_path, GOOD))["my-http"].config_hash
    changed = {
        "version": GOOD.replace('"2026-06-01"', '"2026-07-01"'),
        "url": GOOD.replace("127.0.0.1:9/nl2sql", "127.0.0.1:9/v2"),
    }
    for name, text in changed.items():
        assert load_registry(write(tmp_path, text))["my-http"].config_hash != base, name
    same = GOOD.replace("timeout_s: 30", "timeout_s: 90")
    assert load_registry(write(tmp_path, same))["my-http"].config_hash == base


def test_readiness_of_each_kind(tmp_path, monkeypatch):
    specs = load_registry(write(tmp_path, GOOD))
    monkeypatch.delenv("MY_TOKEN", raising=False)
    state = model_readiness(specs["my-http"])
    assert not state.ready and "MY_TOKEN" in state.reason
    monkeypatch.setenv("MY_TOKEN", "x")
    state = model_readiness(specs["my-http"])
    assert not state.ready and "no server at 127.0.0.1:9" in state.reason
    assert model_readiness(specs["my-python"]).ready
    assert model_readiness(specs["my-command"]).ready
    missing = load_registry(write(tmp_path, "models:\n  m:\n    kind: python\n    target: no_such_pkg.mod:f\n"))["m"]
    assert "cannot be imported" in model_readiness(missing).reason


def test_models_list_shows_systems_with_readiness(capsys):
    from nl2sql_cli import main as cli

    assert cli.main(["models", "list", "--json"]) == 0
    rows = {row["slug"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["reference-python"]["kind"] == "python" and rows["reference-python"]["ready"] is True
    assert rows["reference-command"]["ready"] is True
    assert rows["reference-http"]["kind"] == "http"


def test_the_contract_round_trips_and_validates():
    request = contract.SystemRequest("r1", "c1", "How many?", "db", history=(contract.Turn("before?", "SELECT 1"),))
    data = json.loads(json.dumps(request.to_json_dict()))
    assert data["contract"] == contract.CONTRACT_VERSION and "calibration" not in data
    assert contract.SystemRequest.from_json_dict(data) == request
    response = contract.parse_response(
        {
            "sql": " SELECT 1 ",
            "answer": "one",
            "columns": ["a"],
            "rows": [[1]],
            "usage": {"input_tokens": 3, "output_tokens": 4},
            "cost_usd": 0.5,
            "timings_ms": {"total": 7},
            "extra": "ignored",
        }
    )
    assert (response.rows, response.usage.output_tokens, response.system_latency_ms) == (((1,),), 4, 7.0)
    assert contract.parse_response({"sql": "  "}).sql is None
    with pytest.raises(contract.SystemReportedError) as info:
        contract.parse_response({"error": {"message": "slow down", "status": 429}})
    assert info.value.status_code == 429
    with pytest.raises(contract.ContractError, match='"columns" names 2'):
        contract.parse_response({"sql": "x", "columns": ["a", "b"], "rows": [[1]]})


def test_the_answer_columns_round_trip_through_the_codec():
    import dataclasses

    from nl2sql_pipeline.generation.candidate_record import CandidateRecord
    from nl2sql_pipeline.results.frames import (
        candidates_from_frame,
        candidates_to_frame,
        verdicts_from_frame,
        verdicts_to_frame,
    )
    from nl2sql_pipeline.stages.records import Verdict

    record = CandidateRecord(
        case_id="c",
        case_fingerprint="f",
        sample_index=0,
        candidate_index=0,
        generated_sql="SELECT 1",
        raw_reply="{}",
        error_class=None,
        error_message=None,
        latency_ms=3.0,
        input_tokens=None,
        output_tokens=None,
        token_source=None,
        cost_usd=0.5,
        cached=False,
        mutation=None,
        model_config_hash="h",
        prompt_hash="p",
        answer="one",
        system_rows='{"columns": ["a"], "rows": [[1]]}',
        system_latency_ms=2.0,
        cost_source="reported",
    )
    assert candidates_from_frame(candidates_to_frame([record])) == [record]
    values = {f.name: None for f in dataclasses.fields(Verdict)}
    values.update(
        case_id="c",
        case_fingerprint="f",
        domain="d",
        category="k",
        tags=(),
        is_probe=False,
        sample_index=0,
        outcome="correct",
        correct=True,
        score_exact=1.0,
        score_partial=1.0,
        candidate_count=1,
        selected_candidate_index=0,
        first_candidate_correct=True,
        cold_start=False,
        answer="one",
        system_rows_vs_sql="mismatch",
        system_rows_disagree=True,
        system_rows_reason="r",
    )
    verdict = Verdict(**values)
    assert verdicts_from_frame(verdicts_to_frame([verdict])) == [verdict]


def test_systems_are_model_partitions_like_models():
    from assets.jobs import run_tags_for_partition
    from assets.sensors import partition_keys_from_registries

    _, slugs = partition_keys_from_registries()
    assert {"reference-python", "reference-command", "reference-http", "gold-echo"} <= set(slugs)
    tags = run_tags_for_partition("multidomain-v1|reference-python")
    assert tags["nl2sql/model"] == "reference-python" and tags["nl2sql/provider"] == "system:reference-python"


def test_the_provider_tag_of_an_http_system_is_its_server(tmp_path):
    from assets.jobs import provider_of_spec

    specs = load_registry(
        write(
            tmp_path,
            GOOD
            + """\
  my-http-v2:
    kind: http
    url: HTTP://127.0.0.1:9/v2/nl2sql
    options: {variant: b}
  other-port:
    kind: http
    url: http://127.0.0.1:10/nl2sql
  tls:
    kind: http
    url: https://nl2sql.example.com/ask
""",
        )
    )
    tags = {slug: provider_of_spec(spec) for slug, spec in specs.items()}
    assert tags["my-http"] == tags["my-http-v2"] == "system@http://127.0.0.1:9"  # one server: one run queue
    assert tags["other-port"] == "system@http://127.0.0.1:10"
    assert tags["tls"] == "system@https://nl2sql.example.com:443"
    assert tags["my-python"] == "system:my-python"  # in-process: its own
