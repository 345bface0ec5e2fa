"""One resolver for every ``--database`` argument: names, relative and absolute paths, what is missing.

Each case is checked on the resolver itself and on every command that takes a database reference
(``sql``, ``compare``, ``policy check``, ``gold validate``), with the message and the exit code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_OK
from nl2sql_cli.main import main
from nl2sql_pipeline.databases.registry import DatabaseEntry
from nl2sql_pipeline.databases.resolve import (
    DatabaseKind,
    NotADatabaseFileError,
    ResolvedDatabase,
    UnknownDatabaseError,
    looks_like_path,
    require_database,
    resolve_database,
    sample_database,
)
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution import release_sandboxes

CASE = {
    "id": "c1",
    "domain": "content",
    "category": "single_table",
    "question": "How many anime are there?",
    "database": "anime_platform",
    "expected_sql": "SELECT count(*) FROM anime",
}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private storage root with one built sample database, ``mini``; the cwd is ``tmp_path/work``."""
    root = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    (root / "databases").mkdir(parents=True)
    _make_db(root / "databases" / "mini.duckdb")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield root
    release_sandboxes()


def _make_db(path: Path) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE anime (anime_id INTEGER, title VARCHAR)")
        con.execute("INSERT INTO anime VALUES (1, 'A'), (2, 'B')")
    return path


# ------------------------------------------------------------------------------------------ resolver


def test_a_name_is_the_sample_database_under_the_storage_root(home: Path) -> None:
    resolved = resolve_database("mini")
    assert resolved == ResolvedDatabase(
        reference="mini", path=home.resolve() / "databases" / "mini.duckdb", kind=DatabaseKind.SAMPLE, exists=True
    )
    assert resolved.is_name and resolved.require() == resolved.path
    assert sample_database("mini") == resolved


def test_a_relative_path_is_resolved_against_the_working_directory(home: Path) -> None:
    _make_db(Path("local.duckdb"))
    resolved = resolve_database("local.duckdb")
    assert resolved.kind is DatabaseKind.FILE and not resolved.is_name
    assert resolved.path == (Path.cwd() / "local.duckdb").resolve() and resolved.path.is_absolute()
    assert resolved.exists and require_database("local.duckdb") == resolved.path
    assert resolve_database("./local.duckdb").path == resolved.path


def test_an_absolute_path_is_a_file_even_without_a_suffix(home: Path, tmp_path: Path) -> None:
    target = _make_db(tmp_path / "plain_file")
    resolved = resolve_database(str(target))
    assert resolved.kind is DatabaseKind.FILE and resolved.exists and resolved.path == target.resolve()


def test_an_existing_file_wins_over_a_name(home: Path) -> None:
    _make_db(Path("mini"))  # a file called like the sample database, in the working directory
    assert resolve_database("mini").kind is DatabaseKind.FILE


@pytest.mark.parametrize(
    "reference, is_path",
    [
        ("anime_platform", False),
        ("anime.v2", False),
        ("x.duckdb", True),
        ("x.db", True),
        ("dir/x", True),
        ("./x", True),
    ],
)
def test_what_looks_like_a_path(reference: str, is_path: bool) -> None:
    assert looks_like_path(reference) is is_path


def test_a_missing_sample_name_says_how_to_build_it(home: Path) -> None:
    resolved = resolve_database("anime_platform", entries={})  # buildable, registered or not
    assert resolved.kind is DatabaseKind.SAMPLE and not resolved.exists and not resolved.is_unknown_name
    with pytest.raises(DatabaseNotFoundError) as caught:
        resolved.require()
    message = str(caught.value)
    assert not isinstance(caught.value, NotADatabaseFileError)
    assert "sample database 'anime_platform' is not built" in message
    assert str(home.resolve() / "databases" / "anime_platform.duckdb") in message
    assert "build it with: nl2sql-eval db build --name anime_platform" in message


def test_an_unknown_name_is_not_offered_a_build(home: Path) -> None:
    """A name neither registered nor a sample database ``db build`` knows (a typo) is unknown: the closest
    registered names are suggested, never ``db build --name`` (which refuses it)."""
    resolved = resolve_database("shopp", entries={})
    assert resolved.is_unknown_name
    with pytest.raises(UnknownDatabaseError) as caught:
        resolved.require()
    message = str(caught.value)
    assert message.startswith("unknown database 'shopp' (not in ") and "not a sample database" in message
    assert "db build" not in message and "known databases: anime_platform" in message
    typo = resolve_database("shopp", entries={"shop": DatabaseEntry("shop", _make_db(home / "shop.duckdb"))})
    assert typo.is_unknown_name and str(typo.not_found_error()).endswith("not a sample database; did you mean 'shop'?)")
    assert not resolve_database("mini").is_unknown_name  # a file under the storage root is used as it is


def test_a_missing_file_says_where_it_looked_and_what_to_pass(home: Path) -> None:
    resolved = resolve_database("missing.duckdb")
    assert resolved.kind is DatabaseKind.FILE and not resolved.exists
    with pytest.raises(DatabaseNotFoundError) as caught:
        require_database("missing.duckdb")
    message = str(caught.value)
    assert f"the file {Path.cwd().resolve() / 'missing.duckdb'} does not exist" in message
    assert "pass the path of an existing .duckdb file" in message and "nl2sql-eval db build" in message


def test_a_directory_is_not_a_database_file(home: Path) -> None:
    Path("folder").mkdir()
    with pytest.raises(NotADatabaseFileError, match=r"folder is a directory, not a \.duckdb file"):
        require_database("./folder")


# ------------------------------------------------------------------------------------------ commands


def _gold_file() -> Path:
    """A gold file whose case names no database: ``gold validate --database`` fills it."""
    path = Path("gold.jsonl")
    path.write_text(json.dumps({k: v for k, v in CASE.items() if k != "database"}) + "\n", encoding="utf-8")
    return path


COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "sql": lambda db: ["sql", "--database", db, "--sql", "SELECT count(*) FROM anime"],
    "compare": lambda db: [
        "compare",
        "--database",
        db,
        "--expected-sql",
        "SELECT 1",
        "--candidate-sql",
        "SELECT 1",
    ],
    "policy": lambda db: ["policy", "check", "--database", db, "--sql", "SELECT title FROM anime"],
    "gold": lambda db: ["gold", "validate", str(_gold_file()), "--database", db],
}


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_accepts_a_name_a_relative_and_an_absolute_path(
    command: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _make_db(Path("local.duckdb"))
    for reference in ("mini", "local.duckdb", str(home / "databases" / "mini.duckdb")):
        code, _, err = _run(capsys, COMMANDS[command](reference))
        assert code == EXIT_OK, (reference, err)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_exits_3_for_a_missing_name(command: str, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, COMMANDS[command]("anime_platform"))  # a sample database, not built here
    assert code == EXIT_ENVIRONMENT and out == ""
    assert "sample database 'anime_platform' is not built" in err
    assert "nl2sql-eval db build --name anime_platform" in err
    code, out, err = _run(capsys, COMMANDS[command]("not_built"))  # no sample database has that name
    assert code == EXIT_ENVIRONMENT and out == ""
    assert "unknown database 'not_built' (not in " in err and "db build" not in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_exits_3_for_a_missing_file(command: str, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, COMMANDS[command]("nowhere/missing.duckdb"))
    assert code == EXIT_ENVIRONMENT and out == ""
    assert f"the file {Path.cwd().resolve() / 'nowhere' / 'missing.duckdb'} does not exist" in err


@pytest.mark.parametrize(
    "command, expected",
    [("sql", EXIT_BAD_INPUT), ("compare", EXIT_BAD_INPUT), ("policy", EXIT_ENVIRONMENT), ("gold", EXIT_ENVIRONMENT)],
)
def test_a_directory_keeps_each_commands_exit_code(
    command: str, expected: int, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("folder").mkdir()
    code, _, err = _run(capsys, COMMANDS[command]("./folder"))
    assert code == expected
    assert "is a directory, not a .duckdb file" in err


def test_db_info_of_an_unbuilt_sample_database(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, ["db", "info", "--name", "anime_platform"])
    assert code == EXIT_ENVIRONMENT and out == ""
    assert "sample database 'anime_platform' is not built" in err
    assert "nl2sql-eval db build --name anime_platform" in err
    code, out, err = _run(capsys, ["db", "info", "--name", "not_built"])
    assert code == EXIT_ENVIRONMENT and out == "" and "unknown database 'not_built'" in err and "db build" not in err
    code, out, _ = _run(capsys, ["db", "info", "--name", "mini", "--json"])
    assert code == EXIT_OK
    assert json.loads(out)["path"] == str(home.resolve() / "databases" / "mini.duckdb")


def test_the_module_docstring_examples_hold(home: Path) -> None:
    import doctest

    from nl2sql_pipeline.databases import resolve as databases

    assert doctest.testmod(databases).failed == 0
