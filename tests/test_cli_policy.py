"""``nl2sql-eval policy check``: decisions, output formats and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
from nl2sql_cli.main import main
from nl2sql_pipeline import paths

DDL = """
CREATE TABLE anime (anime_id INTEGER PRIMARY KEY, title VARCHAR NOT NULL, season_year INTEGER);
CREATE TABLE users (user_id INTEGER PRIMARY KEY, username VARCHAR NOT NULL, email VARCHAR NOT NULL, country VARCHAR);
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(folder))
    return folder


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(DDL)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["policy", "check", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_allowed_query_exits_zero(capsys: pytest.CaptureFixture[str], db_file: Path) -> None:
    code, out, _ = run(
        capsys,
        "--database",
        str(db_file),
        "--policy",
        "default",
        "--sql",
        "SELECT country, count(*) FROM users GROUP BY 1",
    )
    assert code == EXIT_OK
    assert out.startswith("ALLOWED by policy default")


def test_rejected_query_exits_one_and_names_the_rule(capsys: pytest.CaptureFixture[str], db_file: Path) -> None:
    code, out, _ = run(capsys, "--database", str(db_file), "--policy", "default", "--sql", 'SELECT "EMAIL" FROM Users')
    assert code == EXIT_GATE_FAILED
    assert "REJECTED by policy default, rule column_scope" in out
    assert "users.email" in out


def test_json_output(capsys: pytest.CaptureFixture[str], db_file: Path) -> None:
    code, out, _ = run(
        capsys,
        "--database",
        str(db_file),
        "--policy",
        "default",
        "--sql",
        "SELECT title FROM anime LIMIT 5000",
        "--json",
    )
    assert code == EXIT_GATE_FAILED
    decision = json.loads(out)
    assert decision["allowed"] is False
    assert decision["rule"] == "max_limit"
    assert decision["policy_name"] == "default"
    assert "5000" in decision["reason"]


def test_database_by_sample_name(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    target = paths.database_path("tiny_sample")
    assert str(target).startswith(str(home))
    with duckdb.connect(str(target)) as con:
        con.execute(DDL)
    code, out, _ = run(capsys, "--database", "tiny_sample", "--sql", "SELECT title FROM anime", "--json")
    assert code == EXIT_OK
    assert json.loads(out)["allowed"] is True


def test_missing_database_exits_three(capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path) -> None:
    code, out, err = run(capsys, "--database", "never_built", "--sql", "SELECT 1")
    assert code == EXIT_ENVIRONMENT
    assert out == ""
    assert "unknown database 'never_built'" in err and "nl2sql-eval db register never_built PATH" in err
    assert "db build" not in err  # only a sample database can be built
    code, _, err = run(capsys, "--database", str(tmp_path / "nope.duckdb"), "--sql", "SELECT 1")
    assert code == EXIT_ENVIRONMENT
    assert "nope.duckdb" in err


def test_bad_policy_file_exits_two(capsys: pytest.CaptureFixture[str], db_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\nallowed_tables: '*'\nmax_limit: lots\n", encoding="utf-8")
    code, out, err = run(capsys, "--database", str(db_file), "--policy", str(bad), "--sql", "SELECT 1")
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert "bad.yml" in err and "missing required key" in err


def test_unknown_policy_name_exits_two(capsys: pytest.CaptureFixture[str], db_file: Path) -> None:
    code, _, err = run(capsys, "--database", str(db_file), "--policy", "no_such_policy", "--sql", "SELECT 1")
    assert code == EXIT_BAD_INPUT
    assert "unknown policy 'no_such_policy'" in err


def test_policy_given_as_a_path(capsys: pytest.CaptureFixture[str], db_file: Path, tmp_path: Path) -> None:
    policy = tmp_path / "tight.yml"
    policy.write_text(
        "name: tight\nallowed_tables: [anime]\ndenied_columns: []\nmax_limit: 10\nmax_joins: 0\n"
        "forbid_cartesian: true\ndenied_functions: [upper]\nallowed_table_functions: []\n",
        encoding="utf-8",
    )
    common = ("--database", str(db_file), "--policy", str(policy), "--json")
    code, out, _ = run(capsys, *common, "--sql", "SELECT upper(title) FROM anime")
    assert code == EXIT_GATE_FAILED
    assert json.loads(out)["rule"] == "denied_function"
    assert json.loads(out)["policy_name"] == "tight"
    code, out, _ = run(capsys, *common, "--sql", "SELECT user_id FROM users")
    assert (code, json.loads(out)["rule"]) == (EXIT_GATE_FAILED, "table_scope")


def test_sql_from_standard_input(
    capsys: pytest.CaptureFixture[str], db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT 1;\nDROP TABLE users;\n"))
    code, out, _ = run(capsys, "--database", str(db_file), "--sql", "-", "--json")
    assert code == EXIT_GATE_FAILED
    assert json.loads(out)["rule"] == "single_statement"


def test_missing_arguments_and_bare_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["policy", "check", "--sql", "SELECT 1"])
    assert info.value.code == 2
    assert "--database" in capsys.readouterr().err
    assert main(["policy"]) == EXIT_BAD_INPUT
    assert "check" in capsys.readouterr().err
