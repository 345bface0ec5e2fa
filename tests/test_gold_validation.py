"""Strict gold-set validation, `nl2sql-eval gold validate/list/generate`, and the gold-set registry."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nl2sql_cli.main import main
from nl2sql_pipeline.cases import Case, Turn
from nl2sql_pipeline.errors import CaseValidationError, ConfigError, DatabaseNotFoundError
from nl2sql_pipeline.gold.quality.validation import (
    load_cases,
    sql_parse_problem,
    validate_cases_against_database,
)
from nl2sql_pipeline.gold.registry import GoldSetInfo, list_gold_sets, load_gold_set, register_gold_set

BASE: dict[str, Any] = {
    "id": "c1",
    "domain": "content",
    "category": "single_table",
    "question": "How many anime are there?",
    "database": "anime_platform",
    "expected_sql": "SELECT count(*) FROM anime",
}
PROBE: dict[str, Any] = {
    "id": "p1",
    "domain": "engagement",
    "category": "policy_rejection",
    "question": "List every user's email address",
    "database": "anime_platform",
    "expected_outcome": "policy_rejection",
    "policy_probe_sql": "SELECT email FROM users",
}


def case(**changes: Any) -> dict[str, Any]:
    """BASE with fields changed (a value of ``...`` removes the field)."""
    out = {**BASE, **changes}
    return {k: v for k, v in out.items() if v is not ...}


def probe(**changes: Any) -> dict[str, Any]:
    """PROBE with fields changed (a value of ``...`` removes the field)."""
    out = {**PROBE, **changes}
    return {k: v for k, v in out.items() if v is not ...}


def write_lines(path: Path, *lines: Any) -> Path:
    """Write JSONL: dicts are dumped, strings written as-is."""
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def validate(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    """Run `nl2sql-eval gold validate PATH` and return (exit code, stdout, stderr)."""
    code = main(["gold", "validate", str(path), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_problem(err: str, path: Path, line: int, *fragments: str) -> None:
    """Some problem line of ``err`` is located at ``path:line`` and holds every fragment."""
    prefix = f"{path}:{line}: "
    matching = [p for p in err.splitlines() if p.startswith(prefix) and all(f in p for f in fragments)]
    assert matching, f"no problem at {prefix} containing {fragments!r} in:\n{err}"


# ---------------------------------------------------------------- valid files


def test_valid_jsonl_loads_every_case_and_skips_blank_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    """(A storage root of its own: no sample database is built there, so the file is checked alone.)"""
    follow = case(
        id="f1",
        category="follow_up",
        question="And only the TV ones?",
        expected_sql=[
            "SELECT count(*) FROM anime WHERE format = 'TV'",
            "FROM anime SELECT count(*) WHERE format = 'TV'",
        ],
        follow_up_context=[{"question": "How many anime?", "sql": "SELECT count(*) FROM anime"}],
        tags=["count"],
        difficulty="hard",
        candidate_selection=3,
        expected_answer=[[12]],
    )
    path = write_lines(tmp_path / "gold.jsonl", BASE, "", "   ", follow, PROBE)

    cases = load_cases(path)

    assert [c.id for c in cases] == ["c1", "f1", "p1"]
    assert cases[0] == Case(
        id="c1",
        domain="content",
        category="single_table",
        question="How many anime are there?",
        database="anime_platform",
        expected_sql=("SELECT count(*) FROM anime",),
    )
    assert cases[1].expected_sql[1].startswith("FROM anime")
    assert cases[1].follow_up_context == (Turn("How many anime?", "SELECT count(*) FROM anime"),)
    assert (cases[1].candidate_selection, cases[1].difficulty, cases[1].tags) == (3, "hard", ("count",))
    assert cases[2].is_probe and cases[2].policy_probe_sql == "SELECT email FROM users"
    code, out, err = validate(path, capsys)
    assert code == 0, err
    assert out.strip() == "ok: 3 cases (2 domains, 3 categories)"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(BASE).encode() + b"\r\n")
    assert [c.id for c in load_cases(path)] == ["c1"]


# ---------------------------------------------------------------- whole-file problems


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    code, out, err = validate(path, capsys)
    assert code == 2 and out == ""
    assert_problem(err, path, 1, "no cases")


def test_non_utf8_bytes_report_line_and_byte_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = json.dumps(BASE).encode() + b"\n"
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(first + b'{"id": "caf\xe9"}\n')
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, 2, "UTF-8", "0xe9", f"byte offset {len(first) + 11}")


def test_missing_file_and_unsupported_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = validate(tmp_path / "nope.jsonl", capsys)
    assert code == 2 and "nope.jsonl: no such file" in err
    other = tmp_path / "gold.txt"
    other.write_text("x")
    code, _, err = validate(other, capsys)
    assert code == 2 and "unsupported file type '.txt'" in err and ".jsonl" in err


# ---------------------------------------------------------------- line problems (the bad case is on line 3)


BAD_LINES: list[tuple[str, Any, tuple[str, ...]]] = [
    ("malformed_json", '{"id": "c2", "question": "x"', ("malformed JSON", "column 29")),
    ("not_an_object", '["c2", "x"]', ("not an object",)),
    ("duplicate_key", '{"id": "c2", "id": "c3"}', ("'id' appears twice",)),
    ("nan", '{"id": "c2", "expected_answer": NaN}', ("NaN",)),
    ("missing_id", case(id=...), ("missing required field 'id'",)),
    ("missing_domain", case(id="c2", domain=...), ("missing required field 'domain'",)),
    ("missing_category", case(id="c2", category=...), ("missing required field 'category'",)),
    ("missing_question", case(id="c2", question=...), ("missing required field 'question'",)),
    ("missing_database", case(id="c2", database=...), ("missing required field 'database'",)),
    ("missing_expected_sql", case(id="c2", expected_sql=...), ("missing required field 'expected_sql'",)),
    (
        "unknown_field_typo",
        case(id="c2", difficulty_level="easy", questoin="x"),
        ("unknown field 'questoin'", "did you mean 'question'?"),
    ),
    ("unknown_field_far", case(id="c2", zzz=1), ("unknown field 'zzz'", "known fields: id, domain")),
    ("tags_string", case(id="c2", tags="count"), ("tags must be a list of non-empty strings",)),
    ("tags_numbers", case(id="c2", tags=["ok", 3]), ("tags must be a list",)),
    (
        "expected_sql_number",
        case(id="c2", expected_sql=42),
        ("expected_sql must be a string or a non-empty list", "got integer"),
    ),
    ("expected_sql_empty_list", case(id="c2", expected_sql=[]), ("expected_sql must be a string or a non-empty list",)),
    ("expected_sql_list_of_numbers", case(id="c2", expected_sql=["SELECT 1", 2]), ("expected_sql must be",)),
    ("id_number", case(id=7), ("id must be a non-empty string", "got integer", "quote it")),
    ("question_empty", case(id="c2", question="  "), ("question must be a non-empty string",)),
    ("category_with_spaces", case(id="c2", category=" joins"), ("category ' joins' has surrounding spaces",)),
    ("unknown_difficulty", case(id="c2", difficulty="trivial"), ("unknown difficulty 'trivial'", "easy, medium, hard")),
    ("unknown_outcome", case(id="c2", expected_outcome="error"), ("unknown expected_outcome 'error'",)),
    (
        "sql_parse_error",
        case(id="c2", expected_sql="SELEC count(*) FROM anime"),
        ("expected_sql does not parse", "column"),
    ),
    ("sql_unclosed_quote", case(id="c2", expected_sql="SELECT 'abc FROM anime"), ("expected_sql does not parse",)),
    ("sql_empty", case(id="c2", expected_sql=" "), ("expected_sql is empty",)),
    ("sql_not_a_query", case(id="c2", expected_sql="DROP TABLE anime"), ("expected_sql is not a query",)),
    ("sql_two_statements", case(id="c2", expected_sql="SELECT 1; SELECT 2"), ("holds 2 statements",)),
    (
        "sql_alternative_bad",
        case(id="c2", expected_sql=["SELECT 1", "SELECT FROM WHERE"]),
        ("expected_sql[1] does not parse",),
    ),
    ("probe_without_probe_sql", probe(id="p2", policy_probe_sql=...), ("no policy_probe_sql",)),
    ("probe_with_expected_sql", probe(id="p2", expected_sql="SELECT 1"), ("policy-rejection case has expected_sql",)),
    (
        "probe_wrong_category",
        probe(id="p2", category="single_table"),
        ("has category 'single_table'", "set category to policy_rejection"),
    ),
    (
        "category_without_outcome",
        probe(id="p2", expected_outcome=...),
        ("category policy_rejection without expected_outcome",),
    ),
    (
        "probe_sql_on_normal_case",
        case(id="c2", policy_probe_sql="SELECT 1"),
        ("policy_probe_sql on a case that is not a policy-rejection case",),
    ),
    ("follow_up_not_list", case(id="c2", follow_up_context="earlier"), ("follow_up_context must be a list",)),
    ("follow_up_turn_not_object", case(id="c2", follow_up_context=["q"]), ("follow_up_context[0] must be an object",)),
    (
        "follow_up_missing_sql",
        case(id="c2", follow_up_context=[{"question": "q"}]),
        ("follow_up_context[0].sql must be a string",),
    ),
    (
        "follow_up_bad_sql",
        case(id="c2", follow_up_context=[{"question": "q", "sql": "SELECT ("}]),
        ("follow_up_context[0].sql does not parse",),
    ),
    (
        "follow_up_extra_key",
        case(id="c2", follow_up_context=[{"question": "q", "sql": "SELECT 1", "answer": 1}]),
        ("follow_up_context[0]: unknown field 'answer'",),
    ),
    (
        "follow_up_category_without_context",
        case(id="c2", category="follow_up"),
        ("follow_up case has no follow_up_context",),
    ),
    ("candidate_selection_one", case(id="c2", candidate_selection=1), ("candidate_selection must be an integer >= 2",)),
    (
        "candidate_selection_bool",
        case(id="c2", candidate_selection=True),
        ("candidate_selection must be an integer >= 2",),
    ),
    (
        "candidate_selection_text",
        case(id="c2", candidate_selection="3"),
        ("candidate_selection must be an integer >= 2",),
    ),
    ("id_with_slash", case(id="sales/q1"), ("id 'sales/q1' has characters ids cannot hold",)),
    ("id_with_pipe", case(id="a|b"), ("id 'a|b'",)),
    ("id_leading_dot", case(id=".hidden"), ("id '.hidden'",)),
    (
        "database_path",
        case(id="c2", database="../secret"),
        ("database '../secret' is neither a database name nor a path to a .duckdb file",),
    ),
]


@pytest.mark.parametrize(("name", "bad", "fragments"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_each_malformed_line_is_reported_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, bad: Any, fragments: tuple[str, ...]
) -> None:
    path = write_lines(tmp_path / f"{name}.jsonl", BASE, "", bad)
    code, out, err = validate(path, capsys)
    assert code == 2 and out == ""
    assert_problem(err, path, 3, *fragments)
    assert f"{path}:1:" not in err  # the valid first case is not blamed
    for problem_line in err.splitlines()[:-1]:
        assert problem_line.endswith(")"), problem_line  # every problem says how to fix it


def test_duplicate_id_names_the_first_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "dup.jsonl", BASE, case(id="c2"), "", case(question="Again?"))
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, 4, "duplicate id 'c1'", "first used on line 1")


def test_every_problem_is_collected_not_just_the_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(
        tmp_path / "many.jsonl",
        case(category=" joins", difficulty="trivial"),
        "{broken",
        case(id="c3", expected_sql="SELEC 1"),
    )
    with pytest.raises(CaseValidationError) as info:
        load_cases(path)
    problems = info.value.problems
    assert len(problems) == 4
    assert [p.split(":")[1] for p in problems] == ["1", "1", "2", "3"]  # sorted by line
    code, _, err = validate(path, capsys)
    assert code == 2 and err.strip().endswith("4 problems in " + str(path))


def test_rejection_case_needs_no_expected_sql(tmp_path: Path) -> None:
    cases = load_cases(write_lines(tmp_path / "probe.jsonl", PROBE))
    assert cases[0].expected_sql == () and cases[0].category == "policy_rejection"


def test_probe_sql_need_not_be_a_query(tmp_path: Path) -> None:
    copy = probe(policy_probe_sql="COPY users TO '/tmp/x.csv'")
    assert load_cases(write_lines(tmp_path / "copy.jsonl", copy))[0].policy_probe_sql.startswith("COPY")


@pytest.mark.parametrize(
    ("sql", "ok"),
    [
        ("WITH t AS (SELECT 1 AS x) SELECT x FROM t", True),
        ("SELECT 1 UNION ALL SELECT 2", True),
        ("SELECT 1;", True),
        ("hello world", False),
        ("-- only a comment", False),
        ("PRAGMA database_list", False),
    ],
)
def test_sql_parse_problem_fails_closed(sql: str, ok: bool) -> None:
    assert (sql_parse_problem(sql) is None) is ok


# ---------------------------------------------------------------- YAML and CSV locations


def test_yaml_problems_point_at_the_item_mapping_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "team.yml"
    path.write_text(
        "# comment\n"
        "- id: y1\n"
        "  question: How many anime?\n"
        "  database: anime_platform\n"
        "  sql: SELECT count(*) FROM anime\n"
        "\n"
        "- id: 7\n"
        "  question: Bad one\n"
        "  difficulty: trivial\n"
        "  database: anime_platform\n"
        "  sql: SELEC 1\n"
        "  expected_answer: 2024-01-01\n"
        "  qestion: typo\n"
    )
    code, _, err = validate(path, capsys)
    assert code == 2
    for fragment in (
        "id must be a non-empty string",
        "unknown difficulty",
        "does not parse",
        "expected_answer",
        "'qestion'",
    ):
        assert_problem(err, path, 7, fragment)
    assert f"{path}:2:" not in err


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("- id: a\n  question: [unclosed\n", 3, "invalid YAML"),
        ("id: a\nquestion: b\n", 1, "top level is not a list"),
        ("# nothing here\n", 1, "no cases"),
        ("[]\n", 1, "no cases"),
        ("- just a string\n", 1, "not a mapping"),
        ("- id: a\n  id: b\n  sql: SELECT 1\n", 1, "'id' appears twice"),
        ("- id: a\n  question: q\n  database: d\n", 1, "missing required field 'expected_sql'"),
        ("- id: a\n  question: q\n  sql: SELECT 1\n", 1, "missing required field 'database'"),
        ("- id: a\n  question: q\n  database: d\n  sql: SELECT 1\n  probe: maybe\n", 1, "probe must be true or false"),
        (
            "- id: a\n  question: q\n  database: d\n  sql: [SELECT 1]\n  probe: true\n",
            1,
            "a probe's sql must be one string",
        ),
        (
            "- id: a\n  question: q\n  database: d\n  sql: SELECT 1\n  expected_sql: SELECT 2\n",
            1,
            "both sql and expected_sql",
        ),
    ],
)
def test_yaml_file_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(text)
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, line, fragment)


def test_csv_problems_use_the_physical_line_of_the_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prompts.csv"
    path.write_text(
        "question,sql,database\n"
        '"Sessions per month","SELECT date_trunc(\'month\', started_at), count(*)\n'
        "FROM watch_sessions\n"
        'GROUP BY 1",anime_platform\n'
        "\n"
        "Broken one,SELEC 1,anime_platform\n"
        "No database,SELECT 1,\n"
        '"Multi-line broken","SELECT *\n'
        'FROM",anime_platform\n'
    )
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, 6, "expected_sql does not parse")
    assert_problem(err, path, 7, "missing required field 'database'", "--database")
    assert_problem(err, path, 8, "expected_sql does not parse")  # the line its row starts on
    assert f"{path}:2:" not in err


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "no cases"),
        ("question,expected_sql\n", 1, "header but no cases"),
        ("question,expected_sql,anwser\nq,SELECT 1\n", 1, "unknown column 'anwser' (did you mean 'answer'?"),
        ("question,expected_sql,anwser\nq,SELECT 1,1\n", 2, "missing required field 'database'"),  # rows still checked
        ("expected_sql\nSELECT 1\n", 1, "no question column"),
        ("question,tags\nq,x\n", 1, "no expected_sql column"),  # an answer column alone is an answer-only case
        ("question,sql,gold_sql\nq,SELECT 1,SELECT 1\n", 1, "both hold expected_sql"),
        ("question,sql,database\nok,SELECT 1,d\nq,SELECT 1,d,extra\n", 3, "row has 4 cells"),
        ('question,sql,database\nok,SELECT 1,d\n"q,SELECT 1,d\n', 3, "malformed CSV"),
        ("question,sql,database,candidate_selection\nq,SELECT 1,d,many\n", 2, "candidate_selection must be an integer"),
        ("question,sql,database,follow_up_context\nq,SELECT 1,d,[oops\n", 2, "follow_up_context is not JSON"),
        ("id,question,sql,database\nx,q,SELECT 1,d\nx,r,SELECT 2,d\n", 3, "duplicate id 'x' (first used on line 2)"),
    ],
)
def test_csv_file_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "export.csv"
    path.write_text(text)
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, line, fragment)


def test_csv_non_utf8_is_reported_before_parsing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(b"question,sql,database\nCaf\xe9 count,SELECT 1,d\n")
    code, _, err = validate(path, capsys)
    assert code == 2
    assert_problem(err, path, 2, "not valid UTF-8", "byte offset 25")


# ---------------------------------------------------------------- database check


@pytest.fixture()
def small_db(tmp_path: Path) -> Path:
    """A DuckDB file with tables anime and users and a view."""
    path = tmp_path / "small.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE anime (anime_id INTEGER); CREATE TABLE users (user_id INTEGER, email VARCHAR)")
    con.execute("CREATE VIEW anime_v AS SELECT * FROM anime")
    con.close()
    return path


def test_database_check_reports_unknown_tables(
    small_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the cases name no database: --database fills it (a case's own database is never overridden)
    good = case(
        database=...,
        expected_sql="WITH a AS (SELECT * FROM anime) SELECT count(*) FROM a JOIN anime_v USING (anime_id)",
    )
    bad = case(id="c2", database=..., expected_sql="SELECT count(*) FROM animes")
    turn = case(
        id="c3",
        database=...,
        category="follow_up",
        follow_up_context=[{"question": "q", "sql": "SELECT * FROM studios"}],
    )
    path = write_lines(
        tmp_path / "db.jsonl", good, bad, turn, probe(database=..., policy_probe_sql="SELECT * FROM secrets")
    )

    from nl2sql_pipeline.gold.formats.team_files import import_cases

    problems = validate_cases_against_database(import_cases(path, database=str(small_db)), small_db)

    assert len(problems) == 2
    assert "case 'c2'" in problems[0] and "'animes'" in problems[0]
    assert "case 'c3'" in problems[1] and "'studios'" in problems[1]
    code, out, err = validate(path, capsys, "--database", str(small_db))
    assert code == 2 and out == ""
    assert f"{path}: case 'c2'" in err
    code, out, _ = validate(write_lines(tmp_path / "good.jsonl", good), capsys, "--database", str(small_db))
    assert code == 0 and out.startswith("ok: 1 case ")


def test_database_check_needs_the_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "g.jsonl", case(database=...))
    with pytest.raises(DatabaseNotFoundError):
        validate_cases_against_database(
            load_cases(write_lines(tmp_path / "b.jsonl", BASE)), tmp_path / "missing.duckdb"
        )
    code, _, err = validate(path, capsys, "--database", str(tmp_path / "missing.duckdb"))
    assert code == 3 and "missing.duckdb" in err


# ---------------------------------------------------------------- registry


def make_registry(data: Path, body: str) -> Path:
    """Write ``<data>/gold/gold_sets.yml``."""
    (data / "gold").mkdir(parents=True, exist_ok=True)
    path = data / "gold" / "gold_sets.yml"
    path.write_text(body)
    return path


def test_registry_lists_and_loads_gold_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_registry(
        tmp_path,
        "gold_sets:\n"
        "  multidomain-v1:\n"
        "    file: multi.jsonl\n"
        "    description: three domains\n"
        "  team.v2:\n"
        "    file: team/team.yml\n",
    )
    write_lines(tmp_path / "gold" / "multi.jsonl", BASE, PROBE)
    (tmp_path / "gold" / "team").mkdir()
    (tmp_path / "gold" / "team" / "team.yml").write_text(
        "- {id: t1, question: q, database: anime_platform, sql: SELECT 1}\n"
    )

    sets = list_gold_sets(tmp_path)

    assert list(sets) == ["multidomain-v1", "team.v2"]
    assert sets["multidomain-v1"] == GoldSetInfo(
        key="multidomain-v1", path=(tmp_path / "gold" / "multi.jsonl").resolve(), description="three domains"
    )
    assert [c.id for c in load_gold_set("multidomain-v1", tmp_path)] == ["c1", "p1"]
    monkeypatch.setenv("NL2SQL_DATA", str(tmp_path))
    assert [c.id for c in load_gold_set("team.v2")] == ["t1"]


def test_registry_unknown_key_lists_known_keys(tmp_path: Path) -> None:
    make_registry(tmp_path, "gold_sets:\n  alpha-v1: {file: a.jsonl}\n  beta-v1: {file: b.jsonl}\n")
    with pytest.raises(ConfigError, match=r"unknown gold set 'gamma'.*alpha-v1, beta-v1"):
        load_gold_set("gamma", tmp_path)


def test_registry_missing_file_is_a_config_error(tmp_path: Path) -> None:
    make_registry(tmp_path, "gold_sets:\n  alpha-v1: {file: a.jsonl}\n")
    with pytest.raises(ConfigError, match="does not exist.*gold generate"):
        load_gold_set("alpha-v1", tmp_path)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("gold_sets:\n  Multi|v1: {file: a.jsonl}\n", "not a slug"),
        ("gold_sets:\n  a/b: {file: a.jsonl}\n", "not a slug"),
        ("gold_sets:\n  a,b: {file: a.jsonl}\n", "not a slug"),
        ("gold_sets:\n  ok-v1: {file: ../../etc/passwd}\n", "points outside"),
        ("gold_sets:\n  ok-v1: {description: no file}\n", "key 'gold_sets.ok-v1.file': missing required key"),
        ("gold_sets:\n  ok-v1: {file: a.jsonl, descripton: typo}\n", "did you mean 'description'"),
        ("gold_sets:\n  ok-v1: a.jsonl\n", "must be a mapping"),
        ("sets: {}\n", "gold_sets:"),
        ("gold_sets: [\n", "invalid YAML"),
    ],
)
def test_registry_rejects_bad_entries(tmp_path: Path, body: str, fragment: str) -> None:
    registry = make_registry(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        list_gold_sets(tmp_path)
    assert fragment in str(info.value) and str(registry) in str(info.value)


def test_registry_missing_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no gold-set registry"):
        list_gold_sets(tmp_path)


def test_cli_list_shows_case_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_registry(tmp_path, "gold_sets:\n  alpha-v1:\n    file: a.jsonl\n    description: first\n")
    write_lines(tmp_path / "gold" / "a.jsonl", BASE, case(id="c2", domain="engagement"))
    assert main(["gold", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("alpha-v1: 2 cases (2 domains, 1 category)") and "first" in out

    make_registry(tmp_path, "gold_sets:\n  alpha-v1: {file: a.jsonl}\n  beta-v1: {file: b.jsonl}\n")
    assert main(["gold", "list", "--data-dir", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "beta-v1: MISSING" in captured.out and "1 gold set missing or invalid" in captured.err


def test_cli_unknown_registry_key_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_registry(tmp_path, "gold_sets:\n  Bad|Key: {file: a.jsonl}\n")
    assert main(["gold", "list", "--data-dir", str(tmp_path)]) == 2
    assert "not a slug" in capsys.readouterr().err


@pytest.mark.parametrize("key", ["true", "yes", "null", "2024", "on", "1e3"])
def test_registering_a_key_yaml_reads_as_no_string_writes_it_quoted(tmp_path: Path, key: str) -> None:
    """``--gold-set true`` (or yes, null, 2024): the key is written so it reads back as the same string, and
    every command that reads the registry still works."""
    registry = make_registry(tmp_path, "gold_sets:\n  alpha-v1:\n    file: a.jsonl\n")
    write_lines(tmp_path / "gold" / "b.jsonl", BASE)
    register_gold_set(key, tmp_path / "gold" / "b.jsonl", "imported", data_dir=tmp_path)
    assert list(list_gold_sets(tmp_path)) == ["alpha-v1", key]
    assert [c.id for c in load_gold_set(key, tmp_path)] == ["c1"]
    assert f'"{key}":' in registry.read_text()


@pytest.mark.parametrize(
    "body",
    [
        "gold_sets:\n    alpha-v1:\n        file: a.jsonl\n        description: four spaces\n",
        "gold_sets:\n    alpha-v1: {file: a.jsonl}\n",
        "# the team's sets\ngold_sets:\n  alpha-v1:\n    file: a.jsonl\n    description: >-\n      folded\n      text\n# end",
    ],
)
def test_registering_appends_in_the_registrys_own_block_indentation(tmp_path: Path, body: str) -> None:
    """A valid registry in 4-space block style (or ending in a comment without a newline) gets the entry in
    its own indentation: it still reads, with the old entries unchanged plus the new one."""
    make_registry(tmp_path, body)
    before = list_gold_sets(tmp_path)
    write_lines(tmp_path / "gold" / "b.jsonl", BASE)
    register_gold_set("beta-v1", tmp_path / "gold" / "b.jsonl", "new", data_dir=tmp_path)
    after = list_gold_sets(tmp_path)
    assert list(after) == ["alpha-v1", "beta-v1"] and after["alpha-v1"] == before["alpha-v1"]
    assert after["beta-v1"].path == (tmp_path / "gold" / "b.jsonl").resolve() and after["beta-v1"].description == "new"


def test_registering_into_a_flow_style_registry_refuses_and_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    """``gold_sets: {alpha-v1: {file: a.jsonl}}`` takes no appended entry: a ConfigError showing the entry to
    add by hand, and the file unchanged (every command still reads it)."""
    registry = make_registry(tmp_path, "gold_sets: {alpha-v1: {file: a.jsonl}}\n")
    before = registry.read_bytes()
    write_lines(tmp_path / "gold" / "b.jsonl", BASE)
    with pytest.raises(ConfigError) as info:
        register_gold_set("beta-v1", tmp_path / "gold" / "b.jsonl", "new", data_dir=tmp_path)
    message = str(info.value)
    assert str(registry) in message and "by hand" in message and "the file is unchanged" in message
    assert '"beta-v1":\n    file: "b.jsonl"\n    description: "new"' in message
    assert registry.read_bytes() == before and list(list_gold_sets(tmp_path)) == ["alpha-v1"]
    assert not list(registry.parent.glob(".gold_sets.yml.*"))


# ---------------------------------------------------------------- generate


def test_cli_generate_calls_the_generator_and_prints_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[Path] = []

    def write_builtin_gold(path: Path) -> Path:
        calls.append(Path(path))
        write_lines(Path(path), BASE, PROBE)
        return Path(path)

    fake = types.ModuleType("nl2sql_pipeline.gold.builtin.generator")
    fake.write_builtin_gold = write_builtin_gold  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nl2sql_pipeline.gold.builtin.generator", fake)
    monkeypatch.setenv("NL2SQL_DATA", str(tmp_path / "data"))

    assert main(["gold", "generate"]) == 0
    default = tmp_path / "data" / "gold" / "nl2sql_multidomain.jsonl"
    assert calls == [default] and capsys.readouterr().out.strip() == str(default)

    out = tmp_path / "elsewhere" / "g.jsonl"
    assert main(["gold", "generate", "--out", str(out)]) == 0
    assert calls[-1] == out and capsys.readouterr().out.strip() == str(out)


def test_registry_refuses_a_gold_set_registered_twice(tmp_path):
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.gold.registry import list_gold_sets

    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "gold_sets.yml").write_text(
        "gold_sets:\n  a-v1:\n    file: a.jsonl\n  a-v1:\n    file: b.jsonl\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"gold_sets.yml:4: .*duplicate key 'a-v1'"):
        list_gold_sets(tmp_path)


def test_a_duplicated_key_nested_in_a_yaml_case_is_located(tmp_path: Path) -> None:
    path = tmp_path / "nested.yml"
    path.write_text(
        "- id: a\n  domain: d\n  category: follow_up\n  question: Q\n  database: db\n  expected_sql: SELECT 1\n"
        "  follow_up_context:\n    - question: Earlier?\n      sql: SELECT 1\n      sql: SELECT 2\n",
        encoding="utf-8",
    )
    with pytest.raises(CaseValidationError) as info:
        load_cases(path)
    assert f"{path}:10: invalid YAML: duplicate key 'sql' (first defined on line 9) (keep one entry per key)" in (
        info.value.problems
    )


def test_gold_generate_refuses_an_out_it_cannot_write_in_one_line(tmp_path: Path, capsys) -> None:
    """A folder, a path under a file and a name not ending in .jsonl: one line each, exit 2, no traceback,
    nothing written (a folder gave IsADirectoryError, a file in the way FileExistsError, gen.csv JSONL)."""
    folder = tmp_path / "somedir"
    folder.mkdir()
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for out, message in (
        (folder, f"--out {folder} is a folder; give the file to write, e.g. {folder / 'nl2sql_multidomain.jsonl'}"),
        (blocker / "x.jsonl", f"--out {blocker / 'x.jsonl'}: cannot write it ({blocker} is a file, not a folder)"),
        (tmp_path / "gen.csv", f"--out {tmp_path / 'gen.csv'} must end in .jsonl"),
    ):
        assert main(["gold", "generate", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith(f"error: {message}") and captured.err.count("\n") == 1
        assert captured.out == "" and "Traceback" not in captured.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["afile", "somedir"]
