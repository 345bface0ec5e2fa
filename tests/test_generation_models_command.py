"""``nl2sql-eval models list``."""

from __future__ import annotations

import json

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from nl2sql_cli.main import main


def test_models_list_json_reports_readiness(capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["models", "list", "--json"]) == EXIT_OK
    rows = {row["slug"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["gold-echo"]["ready"] is True and rows["gold-echo"]["kind"] == "offline"
    assert rows["gold-echo"]["model"] == "nl2sql-offline/gold-echo"
    assert rows["gpt-4o-mini"]["ready"] is False and "OPENAI_API_KEY" in rows["gpt-4o-mini"]["reason"]
    assert all(len(row["config_hash"]) == 16 for row in rows.values())
    assert (
        rows["gold-echo"]["rerun"] == "on_config_change" and rows["gpt-4o-mini-fewshot"]["few_shot"] == "anime-basics"
    )


def test_models_list_reports_a_local_server_and_a_predictions_file(tmp_path, capsys):
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        registry = tmp_path / "models.yml"
        registry.write_text(
            "models:\n"
            f"  up:\n    kind: litellm\n    model: openai/x\n    api_base: http://127.0.0.1:{port}/v1\n"
            "  replay:\n    kind: predictions\n    path: " + str(tmp_path / "missing.jsonl") + "\n    rerun: never\n"
        )
        assert main(["models", "list", "--json", "--registry", str(registry)]) == EXIT_OK
    rows = {row["slug"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["up"]["ready"] is True and f"127.0.0.1:{port}" in rows["up"]["reason"]
    assert rows["replay"]["ready"] is False and "missing.jsonl" in rows["replay"]["reason"]
    assert rows["replay"]["kind"] == "predictions" and rows["replay"]["rerun"] == "never"


def test_models_list_table(capsys):
    assert main(["models", "list"]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["slug", "kind", "model", "api_base", "$/1M", "in/out", "limits", "rerun", "ready"]
    echo = next(line for line in lines if line.startswith("gold-echo "))
    assert echo.split()[1:] == ["offline", "nl2sql-offline/gold-echo", "-", "free", "-", "on_config_change", "yes"]
    mini = next(line for line in lines if line.startswith("gpt-4o-mini "))
    assert "0.15/0.6" in mini and "rpm 500, tpm 200000, conc 8" in mini
    local = next(line for line in lines if line.startswith("local-qwen-coder "))
    assert "http://127.0.0.1:8000/v1" in local and "conc 2" in local


def test_models_list_shows_api_base_prices_and_limits(tmp_path, capsys):
    registry = tmp_path / "models.yml"
    registry.write_text(
        "models:\n"
        "  priced:\n    kind: litellm\n    model: openai/custom-thing\n    api_base: http://127.0.0.1:9/v1\n"
        "    price_input_per_mtok: 1.25\n    price_output_per_mtok: 10\n"
        "    limits: {requests_per_minute: 60, tokens_per_minute: 30000, max_concurrency: 3}\n"
        "  mapped:\n    kind: litellm\n    model: openai/gpt-4o-mini\n"
        "  unmapped:\n    kind: litellm\n    model: openai/no-such-model-anywhere\n"
        "  echo:\n    kind: offline\n    model: nl2sql-offline/gold-echo\n"
    )
    assert main(["models", "list", "--json", "--registry", str(registry)]) == EXIT_OK
    rows = {row["slug"]: row for row in json.loads(capsys.readouterr().out)}
    priced = rows["priced"]
    assert priced["api_base"] == "http://127.0.0.1:9/v1"
    assert (priced["input_usd_per_mtok"], priced["output_usd_per_mtok"], priced["prices_from"]) == (
        1.25,
        10.0,
        "models.yml",
    )
    assert (priced["requests_per_minute"], priced["tokens_per_minute"], priced["max_concurrency"]) == (60, 30000, 3)
    assert priced["ready"] is False and "127.0.0.1:9" in priced["reason"]
    # no prices in the registry: litellm's bundled price map (gpt-4o-mini: $0.15 / $0.60 per 1M tokens)
    assert (rows["mapped"]["input_usd_per_mtok"], rows["mapped"]["output_usd_per_mtok"]) == (0.15, 0.6)
    assert rows["mapped"]["prices_from"] == "litellm"
    assert (rows["unmapped"]["input_usd_per_mtok"], rows["unmapped"]["prices_from"]) == (None, None)
    assert (rows["echo"]["input_usd_per_mtok"], rows["echo"]["prices_from"]) == (0.0, "offline")
    assert rows["echo"]["api_base"] is None and rows["echo"]["max_concurrency"] is None
    assert main(["models", "list", "--registry", str(registry)]) == EXIT_OK
    table = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "1.25/10 " in table["priced"] and "rpm 60, tpm 30000, conc 3" in table["priced"]
    assert "0.15/0.6 (litellm)" in table["mapped"] and " unknown " in table["unmapped"]


def test_models_list_bad_registry_exits_2_naming_the_problem(tmp_path, capsys):
    path = tmp_path / "models.yml"
    path.write_text("models:\n  echo:\n    kind: offline\n    model: nl2sql-offline/gold-echo\n    colour: red\n")
    assert main(["models", "list", "--registry", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(path) in err and "'echo'" in err and "'colour'" in err


def test_models_without_action_prints_usage(capsys):
    assert main(["models"]) == EXIT_BAD_INPUT
    assert "list" in capsys.readouterr().out
