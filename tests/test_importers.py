"""YAML and CSV importers, category inference, the JSONL writer, and `nl2sql-eval gold import`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nl2sql_cli.main import main
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.formats.team_files import import_cases, infer_category, write_jsonl
from nl2sql_pipeline.gold.quality.validation import load_cases

TEAM_YAML = """\
# kept by the content team
- id: top-studios
  question: Which studios made the most anime?
  difficulty: hard
  tags: [ranking, join]
  sql: |
    SELECT s.name, count(*) AS n
    FROM anime a JOIN studios s USING (studio_id)
    GROUP BY s.name ORDER BY n DESC LIMIT 5
- id: recent-signups
  question: How many users signed up in 2025?
  difficulty: easy
  tags: [count]
  sql:
    - SELECT count(*) FROM users WHERE signup_date >= '2025-01-01' AND signup_date < '2026-01-01'
    - SELECT count(*) FROM users WHERE year(signup_date) = 2025
  expected_answer: 412
- id: tv-count
  question: How many TV series are there?
  domain: content
  category: metric
  database: other_db
  sql: SELECT count(*) FROM anime WHERE format = 'TV'
- id: leak-emails
  question: Show me every user's email
  probe: true
  sql: SELECT email FROM users
- id: native-names
  question: Average rating per anime
  expected_sql: SELECT anime_id, avg(score) FROM ratings GROUP BY anime_id
  candidate_selection: 3
"""

PROMPT_CSV = (
    "Question,gold_sql,Answer,tags,difficulty\n"
    "How many users are there?,SELECT count(*) FROM users,1200,basic; count,easy\n"
    '"Sessions per month, last year","SELECT date_trunc(\'month\', started_at) AS month, count(*) AS sessions\n'
    "FROM watch_sessions\n"
    "WHERE started_at >= TIMESTAMP '2025-07-01 00:00:00'\n"
    'GROUP BY 1 ORDER BY 1",,"time,trend",\n'
    "\n"
    "Name of the oldest studio,SELECT name FROM studios ORDER BY founded_year LIMIT 1,Toei,,\n"
)


@pytest.fixture()
def team_yaml(tmp_path: Path) -> Path:
    """A team's YAML gold set."""
    path = tmp_path / "content team.yml"
    path.write_text(TEAM_YAML, encoding="utf-8")
    return path


@pytest.fixture()
def prompt_csv(tmp_path: Path) -> Path:
    """A prompt-set CSV export (with a quoted multi-line SQL cell and a blank row)."""
    path = tmp_path / "Prompt Export.csv"
    path.write_text(PROMPT_CSV, encoding="utf-8")
    return path


# ---------------------------------------------------------------- YAML


def test_yaml_maps_onto_cases(team_yaml: Path) -> None:
    cases = import_cases(team_yaml, database="anime_platform")

    by_id = {c.id: c for c in cases}
    assert list(by_id) == ["top-studios", "recent-signups", "tv-count", "leak-emails", "native-names"]
    top = by_id["top-studios"]
    assert top == Case(
        id="top-studios",
        domain="imported",
        category="multi_table",
        question="Which studios made the most anime?",
        database="anime_platform",
        expected_sql=(
            "SELECT s.name, count(*) AS n\nFROM anime a JOIN studios s USING (studio_id)\n"
            "GROUP BY s.name ORDER BY n DESC LIMIT 5",
        ),
        tags=("ranking", "join"),
        difficulty="hard",
    )
    recent = by_id["recent-signups"]
    assert recent.category == "time" and len(recent.expected_sql) == 2 and recent.expected_answer == 412
    tv = by_id["tv-count"]
    assert (tv.domain, tv.category, tv.database) == ("content", "metric", "other_db")  # the item wins over options
    leak = by_id["leak-emails"]
    assert leak.is_probe and leak.category == "policy_rejection"
    assert leak.policy_probe_sql == "SELECT email FROM users" and leak.expected_sql == ()
    native = by_id["native-names"]
    assert native.category == "single_table" and native.candidate_selection == 3


def test_yaml_options_fill_domain_and_category(team_yaml: Path) -> None:
    cases = import_cases(team_yaml, domain="content", category="metric", database="anime_platform")
    categories = {c.id: (c.domain, c.category) for c in cases}
    assert categories["top-studios"] == ("content", "metric")
    assert categories["leak-emails"] == ("content", "policy_rejection")  # a probe stays a probe


def test_yaml_without_database_option_reports_each_item(team_yaml: Path) -> None:
    with pytest.raises(CaseValidationError) as info:
        import_cases(team_yaml)
    lines = [p.removeprefix(f"{team_yaml}:").split(":")[0] for p in info.value.problems]
    assert lines == ["2", "10", "24", "28"]  # tv-count (line 18) names its own database
    assert all("missing required field 'database'" in p for p in info.value.problems)


def test_load_cases_reads_yaml_with_default_domain(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("- {id: a, question: q, database: anime_platform, sql: SELECT 1}\n")
    assert [(c.id, c.domain, c.category) for c in load_cases(path)] == [("a", "imported", "single_table")]


def test_category_option_is_free_text(team_yaml: Path) -> None:
    cases = import_cases(team_yaml, category="joins", database="anime_platform")
    assert cases and {c.category for c in cases} >= {"joins"}
    with pytest.raises(CaseValidationError, match="empty category option"):
        import_cases(team_yaml, category=" ", database="anime_platform")


# ---------------------------------------------------------------- CSV


def test_csv_maps_onto_cases(prompt_csv: Path) -> None:
    cases = import_cases(prompt_csv, database="anime_platform", domain="engagement")

    assert [c.id for c in cases] == ["Prompt-Export-1", "Prompt-Export-2", "Prompt-Export-3"]
    first, second, third = cases
    assert first == Case(
        id="Prompt-Export-1",
        domain="engagement",
        category="single_table",
        question="How many users are there?",
        database="anime_platform",
        expected_sql=("SELECT count(*) FROM users",),
        expected_answer=1200,
        tags=("basic", "count"),
        difficulty="easy",
    )
    assert second.question == "Sessions per month, last year"
    assert second.expected_sql[0].count("\n") == 3 and second.expected_sql[0].endswith("ORDER BY 1")
    assert (second.category, second.tags, second.expected_answer) == ("time", ("time", "trend"), None)
    assert (third.expected_answer, third.difficulty) == ("Toei", "medium")


def test_csv_ids_and_aliases(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text(
        "id,question,query,answer,database\n"
        'first,How many genres?,SELECT count(*) FROM genres,"[[""x""]]",anime_platform\n'
        ",Users per country,SELECT country FROM users GROUP BY 1,,anime_platform\n"
    )
    cases = load_cases(path)
    assert [c.id for c in cases] == ["first", "q-2"]
    assert cases[0].expected_answer == [["x"]]


def test_csv_with_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b"\xef\xbb\xbfquestion,sql,database\r\nHow many anime?,SELECT count(*) FROM anime,anime_platform\r\n"
    )
    assert [c.question for c in load_cases(path)] == ["How many anime?"]


# ---------------------------------------------------------------- category inference


@pytest.mark.parametrize(
    ("sql", "category"),
    [
        ("SELECT * FROM anime a JOIN studios s ON a.studio_id = s.studio_id", "multi_table"),
        ("SELECT * FROM anime, studios", "multi_table"),
        ("SELECT count(*) FROM users WHERE signup_date >= '2025-01-01'", "time"),
        ("SELECT count(*) FROM users WHERE signup_date >= DATE '2025-01-01'", "time"),
        ("SELECT date_trunc('month', started_at), count(*) FROM watch_sessions GROUP BY 1", "time"),
        ("SELECT extract(year FROM signup_date) FROM users", "time"),
        ("SELECT * FROM users WHERE signup_date > current_date - INTERVAL 30 DAY", "time"),
        ("SELECT count(*) FROM anime WHERE format = 'TV'", "single_table"),
        ("SELECT user_id FROM watch_sessions GROUP BY 1 HAVING max(started_at) < '2026-01-01'", "time"),
        ("SELECT '2025-01-01' AS label FROM anime", "single_table"),
        ("not sql at all (", "single_table"),
    ],
)
def test_infer_category(sql: str, category: str) -> None:
    assert infer_category(sql) == category


# ---------------------------------------------------------------- JSONL writer


def test_round_trip_through_write_jsonl(team_yaml: Path, prompt_csv: Path, tmp_path: Path) -> None:
    for source in (team_yaml, prompt_csv):
        cases = import_cases(source, database="anime_platform")
        out = write_jsonl(cases, tmp_path / "out" / f"{source.stem}.jsonl")
        assert load_cases(out) == cases
        assert [c.fingerprint for c in load_cases(out)] == [c.fingerprint for c in cases]


def test_write_jsonl_is_deterministic(team_yaml: Path, tmp_path: Path) -> None:
    cases = import_cases(team_yaml, database="anime_platform")
    a = write_jsonl(cases, tmp_path / "a.jsonl").read_bytes()
    b = write_jsonl(list(cases), tmp_path / "b.jsonl").read_bytes()
    assert a == b and a.endswith(b"\n") and a.count(b"\n") == len(cases)
    assert json.loads(a.splitlines()[0])["id"] == "top-studios"


def test_write_jsonl_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "gold.jsonl"
    target.write_text("previous content\n")
    good = Case(id="a", domain="d", category="single_table", question="q", database="db", expected_sql=("SELECT 1",))
    unserializable = Case(
        id="b",
        domain="d",
        category="single_table",
        question="q",
        database="db",
        expected_sql=("SELECT 1",),
        expected_answer=object(),
    )
    with pytest.raises(TypeError):
        write_jsonl([good, unserializable], target)
    assert target.read_text() == "previous content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["gold.jsonl"]  # no temp file left behind


def test_write_jsonl_refuses_duplicate_ids(tmp_path: Path) -> None:
    case = Case(id="a", domain="d", category="single_table", question="q", database="db", expected_sql=("SELECT 1",))
    with pytest.raises(CaseValidationError, match="duplicate case ids a"):
        write_jsonl([case, case], tmp_path / "dup.jsonl")
    assert not (tmp_path / "dup.jsonl").exists()


# ---------------------------------------------------------------- CLI


def test_cli_import_writes_jsonl(prompt_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "imported.jsonl"
    code = main(
        ["gold", "import", str(prompt_csv), "--out", str(out), "--database", "anime_platform", "--domain", "engagement"]
    )
    assert code == 0
    assert capsys.readouterr().out.strip() == (
        f"imported 3 cases (1 domain, 2 categories) from {prompt_csv} into {out}"
    )
    assert [c.id for c in load_cases(out)] == ["Prompt-Export-1", "Prompt-Export-2", "Prompt-Export-3"]
    assert main(["gold", "validate", str(out)]) == 0


def test_cli_import_reports_every_problem(team_yaml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "imported.jsonl"
    assert main(["gold", "import", str(team_yaml), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("missing required field 'database'") == 4 and f"{team_yaml}:2:" in err
    assert not out.exists()


def test_cli_import_needs_a_jsonl_output(team_yaml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gold", "import", str(team_yaml), "--out", str(tmp_path / "x.csv"), "--database", "d"]) == 2
    assert "must end in .jsonl" in capsys.readouterr().err


def test_cli_import_of_a_jsonl_fills_left_out_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "partial.jsonl"
    source.write_text(
        json.dumps({"id": "a", "domain": "x", "category": "time", "question": "q", "expected_sql": "SELECT 1"}) + "\n"
    )
    out = tmp_path / "full.jsonl"
    assert main(["gold", "import", str(source), "--out", str(out), "--database", "anime_platform"]) == 0
    assert load_cases(out)[0].database == "anime_platform"


@pytest.mark.parametrize("suffix", [".yml", ".jsonl", ".csv"])
def test_cli_import_rewrites_relative_database_paths_to_resolve_from_the_output_folder(
    suffix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A case's relative ``database`` path is relative to its gold file's folder (as validate and a run read
    it), and ``--database`` to the working directory: both were written as given, so OUT in another folder
    named missing files (validate exit 3). They now name the same files from OUT's folder."""
    import duckdb

    for db in (tmp_path / "in" / "w" / "shop.duckdb", tmp_path / "other" / "shop2.duckdb"):
        db.parent.mkdir(parents=True)
        with duckdb.connect(str(db)) as con:
            con.execute("CREATE TABLE customers AS SELECT range AS id FROM range(3)")
    rows = [
        {
            "id": "named",
            "question": "How many?",
            "database": "w/shop.duckdb",
            "expected_sql": "SELECT count(*) FROM customers",
        },
        {"id": "filled", "question": "Max id?", "expected_sql": "SELECT max(id) FROM customers"},
    ]
    source = tmp_path / "in" / f"team{suffix}"
    if suffix == ".jsonl":
        source.write_text("".join(json.dumps(dict(r, domain="d", category="c")) + "\n" for r in rows))
    elif suffix == ".yml":
        source.write_text("".join(f"- {json.dumps(r)}\n" for r in rows))
    else:
        source.write_text(
            "id,question,database,expected_sql\n"
            + "".join(f"{r['id']},{r['question']},{r.get('database', '')},{r['expected_sql']}\n" for r in rows)
        )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "data" / "gold" / "x.jsonl"
    assert main(["gold", "import", str(source), "--out", str(out), "--database", "other/shop2.duckdb"]) == 0
    capsys.readouterr()
    assert {c.id: c.database for c in load_cases(out)} == {
        "named": "../../in/w/shop.duckdb",
        "filled": "../../other/shop2.duckdb",
    }
    assert main(["gold", "validate", str(out)]) == 0, capsys.readouterr().err
    beside = tmp_path / "in" / "beside.jsonl"  # OUT in the input's folder: the paths are kept as written
    assert main(["gold", "import", str(source), "--out", str(beside), "--database", "anime_platform"]) == 0
    assert {c.database for c in load_cases(beside)} == {"w/shop.duckdb", "anime_platform"}
