"""The model registry: strict validation of models.yml, config hashes, readiness."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.registry import (
    KIND_LITELLM,
    KIND_OFFLINE,
    Limits,
    ModelSpec,
    Prices,
    RetryPolicy,
    get_model,
    load_registry,
)

VALID = """\
models:
  gold-echo:
    kind: offline
    model: nl2sql-offline/gold-echo
    description: Calibration model.
    prompt_template: nl2sql-v1
    params: {temperature: 0}
    version: "1"
  remote.model_1:
    kind: litellm
    model: openai/gpt-4o-mini
    api_key_env: NL2SQL_TEST_KEY
    params: {temperature: 0, max_tokens: 256}
    price_input_per_mtok: 0.15
    price_output_per_mtok: 0.6
    limits: {requests_per_minute: 60, tokens_per_minute: 10000, max_concurrency: 2}
    candidates: 3
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def entry(tmp_path: Path, body: str, slug: str = "m1") -> Path:
    """A registry with one entry whose body is ``body`` (YAML lines of the entry)."""
    lines = "\n".join("    " + line for line in textwrap.dedent(body).strip().splitlines())
    return write(tmp_path, f"models:\n  {slug}:\n{lines}\n")


def test_valid_registry_loads_every_field(tmp_path):
    specs = load_registry(write(tmp_path, VALID))
    assert list(specs) == ["gold-echo", "remote.model_1"]
    echo, remote = specs["gold-echo"], specs["remote.model_1"]
    assert echo.kind == KIND_OFFLINE and echo.model == "nl2sql-offline/gold-echo" and echo.is_offline
    assert dict(echo.params) == {"temperature": 0} and echo.candidates == 1 and echo.prices is None
    assert remote.kind == KIND_LITELLM and remote.api_key_env == "NL2SQL_TEST_KEY"
    assert remote.prices == Prices(0.15, 0.6)
    assert remote.limits == Limits(requests_per_minute=60, tokens_per_minute=10000, max_concurrency=2)
    assert remote.candidates == 3 and remote.version == "1" and remote.prompt_template == "nl2sql-v1"
    with pytest.raises(TypeError):
        remote.params["temperature"] = 1  # read-only


def test_shipped_registry_is_valid_and_offline_models_are_ready():
    specs = load_registry()
    assert {"gold-echo", "sql-mutant", "gpt-4o-mini"} <= set(specs)
    assert specs["sql-mutant"].params["mutation_rate"] == 0.5
    assert any(s.api_base and "127.0.0.1" in s.api_base for s in specs.values())
    for slug in ("gold-echo", "sql-mutant"):
        assert model_readiness(specs[slug]).ready


@pytest.mark.parametrize(
    ("body", "slug", "expected"),
    [
        ("kind: offline\nmodel: nl2sql-offline/gold-echo", "Bad_Slug", "model slug 'Bad_Slug' is invalid"),
        ("kind: offline\nmodel: nl2sql-offline/gold-echo", "-x", "model slug '-x' is invalid"),
        ("kind: magic\nmodel: a/b", "m1", "key 'kind': unknown kind 'magic'"),
        ("model: a/b", "m1", "key 'kind': missing"),
        ("kind: litellm", "m1", "key 'model': missing"),
        ("kind: offline\nmodel: nl2sql-offline/oracle", "m1", "not a built-in offline model"),
        ("kind: litellm\nmodel: nl2sql-offline/gold-echo", "m1", "use kind: offline"),
        ("kind: litellm\nmodel: a/b\ncolour: red", "m1", "key 'colour': unknown key"),
        ("kind: litellm\nmodel: a/b\ncandidates: 0", "m1", "key 'candidates': must be > 0"),
        ("kind: litellm\nmodel: a/b\ncandidates: 1.5", "m1", "key 'candidates': must be an integer"),
        ("kind: litellm\nmodel: a/b\nprice_input_per_mtok: 1", "m1", "key 'price_output_per_mtok': missing"),
        (
            "kind: litellm\nmodel: a/b\nprice_input_per_mtok: -1\nprice_output_per_mtok: 1",
            "m1",
            "key 'price_input_per_mtok': must be >= 0",
        ),
        ("kind: litellm\nmodel: a/b\nlimits: {requests_per_minute: 0}", "m1", "limits.requests_per_minute"),
        ("kind: litellm\nmodel: a/b\nlimits: {burst: 3}", "m1", "key 'limits.burst': unknown key"),
        ("kind: litellm\nmodel: a/b\nparams: {temperature: -1}", "m1", "params.temperature"),
        ("kind: litellm\nmodel: a/b\nparams: [1, 2]", "m1", "key 'params': must be a mapping"),
        ("kind: offline\nmodel: nl2sql-offline/sql-mutant\nparams: {mutation_rate: 1.5}", "m1", "mutation_rate"),
        ("kind: offline\nmodel: nl2sql-offline/sql-mutant\nparams: {seed: x}", "m1", "params.seed"),
        ("kind: litellm\nmodel: a/b\napi_base: ftp://host/v1", "m1", "key 'api_base'"),
        ("kind: litellm\nmodel: a/b\napi_key_env: 'NOT A VAR'", "m1", "key 'api_key_env'"),
        ("kind: litellm\nmodel: a/b\nprompt_template: no-such-template", "m1", "no template file"),
        ("kind: offline\nmodel: nl2sql-offline/gold-echo\napi_key_env: KEY", "m1", "not used by offline models"),
    ],
)
def test_invalid_entries_name_file_slug_and_key(tmp_path, body, slug, expected):
    path = entry(tmp_path, body, slug=slug)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    message = str(info.value)
    assert expected in message
    assert str(path) in message


def test_duplicate_slug_is_rejected_with_line_numbers(tmp_path):
    path = write(
        tmp_path,
        """\
        models:
          a:
            kind: offline
            model: nl2sql-offline/gold-echo
          a:
            kind: offline
            model: nl2sql-offline/sql-mutant
        """,
    )
    with pytest.raises(ConfigError, match=r"models.yml:5: invalid YAML: duplicate key 'a' \(first defined on line 2\)"):
        load_registry(path)


def test_duplicate_key_inside_an_entry_is_rejected(tmp_path):
    path = entry(tmp_path, "kind: offline\nmodel: nl2sql-offline/gold-echo\nkind: litellm")
    with pytest.raises(ConfigError, match="duplicate key 'kind'"):
        load_registry(path)


@pytest.mark.parametrize(
    "text",
    ["", "models: {}\n", "models: [a]\n", "other: 1\n", "models:\n  a: 1\n", "models: {a: {kind: [}\n"],
)
def test_malformed_documents_are_config_errors(tmp_path, text):
    with pytest.raises(ConfigError):
        load_registry(write(tmp_path, text))


def test_missing_registry_file_says_where(tmp_path):
    with pytest.raises(ConfigError, match="model registry not found"):
        load_registry(tmp_path / "nope.yml")


def test_get_model_unknown_lists_known(tmp_path):
    specs = load_registry(write(tmp_path, VALID))
    assert get_model("gold-echo", specs).slug == "gold-echo"
    with pytest.raises(ConfigError, match=r"unknown model 'gpt-9'.*gold-echo, remote.model_1"):
        get_model("gpt-9", specs)


def spec(**overrides) -> ModelSpec:
    fields = {"slug": "m", "kind": KIND_LITELLM, "model": "openai/x", "params": {"temperature": 0}}
    fields.update(overrides)
    return ModelSpec(**fields)


def test_config_hash_tracks_outputs_not_description():
    base = spec()
    assert len(base.config_hash) == 16 and int(base.config_hash, 16) >= 0
    assert spec(description="something else").config_hash == base.config_hash
    assert spec(prices=Prices(1, 2), limits=Limits(max_concurrency=1)).config_hash == base.config_hash
    assert spec(params={"temperature": 0.7}).config_hash != base.config_hash
    assert spec(params={"temperature": 0, "seed": 1}).config_hash != base.config_hash
    assert spec(model="openai/y").config_hash != base.config_hash
    assert spec(version="2").config_hash != base.config_hash
    assert spec(prompt_template="nl2sql-v2").config_hash != base.config_hash
    assert spec(api_base="http://127.0.0.1:1/v1").config_hash != base.config_hash


def test_config_hash_is_stable_across_key_order(tmp_path):
    one = entry(tmp_path, "kind: litellm\nmodel: a/b\nparams: {temperature: 0, seed: 3}")
    first = load_registry(one)["m1"].config_hash
    two = entry(tmp_path, "params: {seed: 3, temperature: 0}\nmodel: a/b\nkind: litellm\ndescription: x")
    assert load_registry(two)["m1"].config_hash == first


def test_readiness_needs_the_key_variable(monkeypatch):
    keyed = spec(api_key_env="NL2SQL_TEST_KEY")
    monkeypatch.delenv("NL2SQL_TEST_KEY", raising=False)
    state = model_readiness(keyed)
    assert not state.ready and "NL2SQL_TEST_KEY" in state.reason
    monkeypatch.setenv("NL2SQL_TEST_KEY", "sk-test")
    assert model_readiness(keyed).ready


def test_readiness_probes_a_loopback_server():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert model_readiness(spec(api_base=f"http://127.0.0.1:{port}/v1")).ready
    # the socket is closed: nothing listens on that port any more
    state = model_readiness(spec(api_base=f"http://127.0.0.1:{port}/v1"), timeout_s=0.2)
    assert not state.ready and f"127.0.0.1:{port}" in state.reason


def test_readiness_never_contacts_a_remote_server():
    state = model_readiness(spec(api_base="https://api.example.invalid/v1"))
    assert state.ready and "not probed" in state.reason


# ---------------------------------------------------------------- re-run policy, retries, few-shot, predictions


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("kind: litellm\nmodel: a/b\nrerun: sometimes", "key 'rerun': unknown value 'sometimes'"),
        ("kind: litellm\nmodel: a/b\nretry: {max_retries: -1}", "key 'retry.max_retries': must be >= 0"),
        ("kind: litellm\nmodel: a/b\nretry: {jitter: 1}", "key 'retry.jitter': unknown key"),
        ("kind: litellm\nmodel: a/b\nretry: {base_delay_s: 5, max_delay_s: 1}", "below base_delay_s"),
        ("kind: litellm\nmodel: a/b\ntimeout_s: 0", "key 'timeout_s': must be > 0"),
        ("kind: litellm\nmodel: a/b\nparams: {timeout: 5}", "use the entry's timeout_s key"),
        ("kind: litellm\nmodel: a/b\nparams: {max_retries: 0}", "retry: {max_retries: N}"),
        ("kind: litellm\nmodel: a/b\nparams: {api_key: sk-1}", "never write a key here"),
        ("kind: litellm\nmodel: a/b\nfew_shot: missing-set", "few-shot file 'missing-set' not found"),
        ("kind: litellm\nmodel: a/b\npath: x.jsonl", "key 'path': only used by kind: predictions"),
        ("kind: predictions", "key 'path': missing"),
        ("kind: predictions\npath: p.jsonl\nformat: csv", "key 'format': unknown value 'csv'"),
        ("kind: predictions\npath: p.jsonl\nmodel: a/b", "key 'model': not used by kind: predictions"),
        ("kind: offline\nmodel: nl2sql-offline/gold-echo\ntimeout_s: 3", "not used by offline models"),
    ],
)
def test_invalid_new_keys_name_the_key_and_the_fix(tmp_path, body, expected):
    path = entry(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert expected in str(info.value) and str(path) in str(info.value)


def test_rerun_retry_and_timeout_are_read_but_not_hashed(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = load_registry(entry(tmp_path / "plain", "kind: litellm\nmodel: a/b"))["m1"]
    assert plain.rerun == "on_config_change" and plain.retry == RetryPolicy() and plain.timeout_s == 120.0
    tuned = load_registry(
        entry(
            tmp_path,
            "kind: litellm\nmodel: a/b\nrerun: never\nretry: {max_retries: 0, base_delay_s: 0.5}\ntimeout_s: 9",
        )
    )["m1"]
    assert tuned.rerun == "never" and tuned.retry == RetryPolicy(0, 0.5, 60.0) and tuned.timeout_s == 9.0
    assert tuned.config_hash == plain.config_hash


def test_shipped_models_declare_a_rerun_policy():
    specs = load_registry()
    assert {spec.rerun for spec in specs.values()} <= {"on_config_change", "always", "never"}
    # the hashes of the shipped offline models did not move (their caches and baselines stay valid)
    assert "few_shot" not in specs["gold-echo"].canonical_config()


def test_few_shot_set_is_loaded_and_its_content_is_hashed(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "prompts" / "few_shot").mkdir(parents=True)
    (data / "prompts" / "nl2sql-v1.txt").write_text("=== system ===\nS\n=== user ===\n${question}\n")
    shots = data / "prompts" / "few_shot" / "basics.yml"
    shots.write_text("examples:\n  - question: How many?\n    sql: SELECT 1\n")
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    (tmp_path / "plain").mkdir()
    without = load_registry(entry(tmp_path / "plain", "kind: litellm\nmodel: a/b"))["m1"]
    path = entry(tmp_path, "kind: litellm\nmodel: a/b\nfew_shot: basics")
    first = load_registry(path)["m1"]
    assert first.few_shot is not None and first.few_shot.examples[0].sql == "SELECT 1"
    assert first.config_hash != without.config_hash
    shots.write_text("examples:\n  - question: How many?\n    sql: SELECT 2\n")
    assert load_registry(path)["m1"].config_hash != first.config_hash
    shots.write_text("examples:\n  - question: How many?\n")
    with pytest.raises(ConfigError, match=r"basics.yml:2: key 'examples\[0\].sql': missing required key"):
        load_registry(path)


def test_predictions_entry_hashes_the_file_and_reports_readiness(tmp_path):
    predictions = tmp_path / "preds.jsonl"
    path = entry(tmp_path, f"kind: predictions\npath: {predictions}\nformat: jsonl")
    missing = load_registry(path)["m1"]
    assert missing.is_replay and missing.predictions.format == "jsonl"
    state = model_readiness(missing)
    assert not state.ready and "not found" in state.reason
    predictions.write_text('{"case_id": "a", "sql": "SELECT 1"}\n')
    first = load_registry(path)["m1"]
    assert model_readiness(first).ready and first.config_hash != missing.config_hash
    predictions.write_text('{"case_id": "a", "sql": "SELECT 2"}\n')
    assert load_registry(path)["m1"].config_hash != first.config_hash
    assert not model_readiness(first).ready  # the file changed under a loaded spec


def test_relative_predictions_path_is_under_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NL2SQL_DATA", str(tmp_path))
    (tmp_path / "prompts").mkdir()
    spec_ = load_registry(entry(tmp_path, "kind: predictions\npath: predictions/run.txt\nformat: lines"))["m1"]
    assert spec_.predictions.path == tmp_path.resolve() / "predictions" / "run.txt"


def test_every_problem_of_every_entry_is_reported_at_once_with_its_line(tmp_path):
    path = write(
        tmp_path,
        """\
        models:
          m1:
            kind: litellm
            model: a/b
            candidates: 0
            colour: red
          m2:
            kind: offline
            model: nl2sql-offline/gold-echo
            timeout_s: 3
            rerun: sometimes
        """,
    )
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    problems = str(info.value).splitlines()
    assert problems == [
        f"{path}:6: model 'm1', key 'colour': unknown key (remove it; allowed keys: "
        "kind, model, description, prompt_template, params, version, api_base, api_key_env, price_input_per_mtok, "
        "price_output_per_mtok, limits, candidates, few_shot, rerun, retry, timeout_s, gates, answer_model)",
        f"{path}:5: model 'm1', key 'candidates': must be > 0, got 0 (use a value > 0)",
        f"{path}:11: model 'm2', key 'rerun': unknown value 'sometimes' (use one of: on_config_change, always, nightly, never)",
        f"{path}:10: model 'm2', key 'timeout_s': not used by offline models (remove it or use kind: litellm)",
    ]


def test_a_registry_read_before_is_reused_only_while_its_files_are_unchanged(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "prompts").mkdir(parents=True)
    template = data / "prompts" / "nl2sql-v1.txt"
    template.write_text("=== system ===\nS\n=== user ===\n${question}\n")
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    path = entry(tmp_path, "kind: litellm\nmodel: a/b1")
    first = load_registry(path)
    again = load_registry(path)
    assert again["m1"] is first["m1"] and again is not first  # the memo, handed out as a new dict
    again.clear()
    assert list(load_registry(path)) == ["m1"]
    path.write_text(path.read_text().replace("a/b1", "a/b2"))  # same size, maybe the same mtime
    assert load_registry(path)["m1"].model == "a/b2"
    template.unlink()
    with pytest.raises(ConfigError, match="no template file"):
        load_registry(path)
