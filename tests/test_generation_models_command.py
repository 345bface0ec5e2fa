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
    assert rows["gold-echo"]["rerun"] == "on_config_change" and rows["gpt-4o-mini-fewshot"]["few_shot"] == "anime-basics"


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
    assert lines[0].split() == ["slug", "kind", "model", "rerun", "ready"]
    echo = next(line for line in lines if line.startswith("gold-echo "))
    assert echo.split()[1:] == ["offline", "nl2sql-offline/gold-echo", "on_config_change", "yes"]


def test_models_list_bad_registry_exits_2_naming_the_problem(tmp_path, capsys):
    path = tmp_path / "models.yml"
    path.write_text("models:\n  echo:\n    kind: offline\n    model: nl2sql-offline/gold-echo\n    colour: red\n")
    assert main(["models", "list", "--registry", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(path) in err and "'echo'" in err and "'colour'" in err


def test_models_without_action_prints_usage(capsys):
    assert main(["models"]) == EXIT_BAD_INPUT
    assert "list" in capsys.readouterr().out
