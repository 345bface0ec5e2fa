"""Importers for public formats: Spider, BIRD and defog directories built in a temp folder, imported,
and shown to score 100% with the expected SQL as candidates (gold-echo) through the core stages."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import duckdb
import pytest
from eval_support import SpiderDatabase, build_spider_folder, write_sqlite
from verdict_factory import make_candidate

from nl2sql_pipeline.execution import run_query
from nl2sql_pipeline.gold.formats import expand_alternatives, import_benchmark, report_path_for
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import attempts_from_candidates

CONCERT_SQL = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, capacity INT, location TEXT);
CREATE TABLE singer (singer_id INT PRIMARY KEY, name TEXT, country TEXT, age TEXT, is_male BOOL);
CREATE TABLE concert (concert_id INT PRIMARY KEY, concert_name TEXT, year TEXT,
                      stadium_id INT REFERENCES stadium(stadium_id));
CREATE TABLE singer_in_concert (concert_id INT, singer_id INT, PRIMARY KEY (concert_id, singer_id),
                                FOREIGN KEY (concert_id) REFERENCES concert(concert_id),
                                FOREIGN KEY (singer_id) REFERENCES singer(singer_id));
INSERT INTO stadium VALUES (1, 'Stark Park', 3000, 'Raith'), (2, 'Glebe Park', 4000, 'Brechin'),
                           (3, 'Hampden', 52000, 'Glasgow'), (4, 'Somerset', 1000, 'Ayr');
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', '52', 0), (2, 'Timbaland', 'United States', '32', 1),
                          (3, 'Justin Brown', 'France', '29', 1), (4, 'Rose White', 'France', '41', 0),
                          (5, 'John Nizinik', 'France', '9', 1), (6, 'Tribal King', 'France', '25', 1);
INSERT INTO concert VALUES (1, 'Auditions', '2014', 1), (2, 'Super bootcamp', '2014', 2),
                           (3, 'Home Visits', '2015', 2), (4, 'Week 1', '2014', 3), (5, 'Week 2', '2015', 3);
INSERT INTO singer_in_concert VALUES (1, 2), (1, 3), (1, 5), (2, 3), (2, 6), (3, 5), (4, 4), (5, 6);
"""

PETS_SQL = """
CREATE TABLE student (stuid INTEGER PRIMARY KEY, lname TEXT, fname TEXT, age INTEGER, sex TEXT, city_code TEXT);
CREATE TABLE pets (petid INTEGER PRIMARY KEY, pettype TEXT, pet_age INTEGER, weight REAL);
CREATE TABLE has_pet (stuid INTEGER, petid INTEGER);
INSERT INTO student VALUES (1001, 'Smith', 'Linda', 18, 'F', 'BAL'), (1002, 'Kim', 'Tracy', 19, 'F', 'HKG'),
                           (1003, 'Jones', 'Shiela', 21, 'F', 'WAS'), (1004, 'Kumar', 'Dinesh', 20, 'M', 'NYC'),
                           (1005, 'Gompers', 'Paul', 26, 'M', 'NYC'), (1006, 'Schultz', 'Andy', 22, 'M', 'BAL');
INSERT INTO pets VALUES (2001, 'cat', 3, 12.0), (2002, 'dog', 2, 13.4), (2003, 'dog', 1, 9.3);
INSERT INTO has_pet VALUES (1001, 2001), (1002, 2002), (1002, 2003);
"""

SPIDER_QUESTIONS = [
    ("concert_singer", "How many singers are there?", "SELECT count(*) FROM singer"),
    (
        "concert_singer",
        "Names, countries and ages of singers from oldest to youngest?",
        "SELECT name, country, age FROM singer ORDER BY age DESC",
    ),
    ("concert_singer", "Which singers have an a in their name?", 'SELECT name FROM singer WHERE name LIKE "%a%"'),
    (
        "concert_singer",
        "Stadium names with their number of concerts?",
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "GROUP BY T1.stadium_id",
    ),
    ("concert_singer", "Largest stadium and its capacity?", "SELECT name, max(capacity) FROM stadium"),
    ("concert_singer", "Concerts in 2014?", "SELECT concert_name FROM concert WHERE year = 2014"),
    ("concert_singer", "How many concerts after 2013?", "SELECT count(*) FROM concert WHERE year > 2013"),
    (
        "concert_singer",
        "Singers in a 2014 concert?",
        "SELECT DISTINCT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
        'JOIN concert AS T3 ON T2.concert_id = T3.concert_id WHERE T3.year = "2014"',
    ),
    (
        "concert_singer",
        "Stadiums without concerts?",
        "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
    ),
    (
        "concert_singer",
        "Countries with more than one singer?",
        "SELECT country, count(*) FROM singer GROUP BY country HAVING count(*) > 1",
    ),
    ("concert_singer", "Countries of singers older than 20?", "SELECT DISTINCT country FROM singer WHERE age > 20"),
    ("concert_singer", "Singers from france (any case)?", "SELECT name FROM singer WHERE country LIKE 'france'"),
    ("pets_1", "How many students are older than 20?", "SELECT count(*) FROM student WHERE age > 20"),
    ("pets_1", "Students living in nyc?", "SELECT fname, age FROM student WHERE city_code LIKE 'nyc'"),
    ("pets_1", "Average weight per pet type?", "SELECT pettype, avg(weight) FROM pets GROUP BY pettype"),
    (
        "pets_1",
        "First names of cat owners?",
        "SELECT T1.fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid "
        "JOIN pets AS T3 ON T3.petid = T2.petid WHERE T3.pettype = 'cat'",
    ),
    ("pets_1", "Oldest pet age per type?", "SELECT max(pet_age), pettype FROM pets GROUP BY pettype"),
    ("pets_1", "Students without pets?", "SELECT stuid FROM student EXCEPT SELECT stuid FROM has_pet"),
    ("pets_1", "Youngest student?", "SELECT fname, lname FROM student ORDER BY age LIMIT 1"),
    ("pets_1", "How many pet types?", "SELECT count(DISTINCT pettype) FROM pets"),
    (
        "pets_1",
        "Share of pets in 7 slots, as SQLite's integer division gives it?",
        "SELECT 100 * count(*) / 7 FROM pets",
    ),
    # two the importer must report and leave out:
    # SQLite's quote() (a value as an SQL literal) has no DuckDB counterpart: engine-specific
    ("concert_singer", "Singer names as SQL literals?", "SELECT quote(name) FROM singer"),
    ("pets_1", "A broken gold query?", "SELECT nosuch FROM pets"),
]
LEFT_OUT = {"spider-dev-22": "duckdb_failed", "spider-dev-23": "source_failed"}
SPIDER_DATABASES = (
    SpiderDatabase("concert_singer", CONCERT_SQL),
    SpiderDatabase(
        "pets_1",
        PETS_SQL,
        primary={"student": "stuid", "pets": "petid"},
        foreign=[(("has_pet", "stuid"), ("student", "stuid")), (("has_pet", "petid"), ("pets", "petid"))],
    ),
)


def build_spider(root: Path, databases_folder: str = "database") -> Path:
    """A Spider-format folder: two SQLite databases (one declaring its foreign keys, one declaring them
    only in tables.json), tables.json, dev.json."""
    return build_spider_folder(root, SPIDER_DATABASES, databases_folder=databases_folder)


def _gold_echo(cases, gold_dir: Path, sql_of=lambda case: case.canonical_sql):
    """Run the core stages with the expected SQL as every candidate; return verdicts and scores."""
    resolve = lambda database: gold_dir / database  # noqa: E731  (a case's database is relative to the gold file)
    candidates = [
        make_candidate(c.id, sql_of(c), case_fingerprint=c.fingerprint, model_config_hash="gold-echo") for c in cases
    ]
    oracle = run_oracle(cases, resolve)
    attempts = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(resolve))
    verdicts = judge(cases, oracle, attempts)
    return verdicts, score_run(verdicts)


def _assert_gold_echo_scores_100(cases, gold_dir: Path) -> None:
    for case in cases:
        for sql in case.expected_sql:
            result = run_query(gold_dir / case.database, sql)
            assert result.ok, (case.id, sql, result.error_message)
    verdicts, scores = _gold_echo(cases, gold_dir)
    assert [v.outcome for v in verdicts] == [outcomes.CORRECT] * len(cases), [
        (v.case_id, v.outcome, v.reason) for v in verdicts if v.outcome != outcomes.CORRECT
    ]
    assert scores["semantic_correctness_rate"] == 1.0
    assert scores["query_count"] == len(cases)


def test_spider_directory_imports_and_gold_echo_scores_100(tmp_path):
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql, "query_toks": []} for db, q, sql in SPIDER_QUESTIONS])
    )
    out = tmp_path / "gold" / "spider-dev.jsonl"
    result = import_benchmark("spider", src, out)

    cases = load_cases(out)  # a native gold file, validated like any other
    assert len(cases) == len(SPIDER_QUESTIONS) - len(LEFT_OUT) == 21
    assert {c.database for c in cases} == {"databases/concert_singer.duckdb", "databases/pets_1.duckdb"}
    assert {c.domain for c in cases} == {"concert_singer", "pets_1"}
    _assert_gold_echo_scores_100(cases, out.parent)

    report = json.loads(result.report_path.read_text())
    left_out = {q["case_id"]: q["status"] for q in report["queries"] if q["sql"] is None}
    assert left_out == LEFT_OUT
    assert report["summary"]["questions"] == 23 and report["summary"]["cases_written"] == 21
    assert "2 gold queries left out (1 duckdb_failed, 1 source_failed)" in result.summary()
    fixes = {q["case_id"]: q["fixes"] for q in report["queries"]}
    assert fixes["spider-dev-03"] == ["double_quoted_strings", "like_is_case_insensitive"]
    assert fixes["spider-dev-05"] == ["bare_columns_in_aggregates"]
    assert fixes["spider-dev-06"] == ["text_compared_with_numbers"]
    assert fixes["spider-dev-21"] == ["integer_division"]

    by_id = {c.id: c for c in cases}
    assert "ARG_MAX(name, capacity)" in by_id["spider-dev-05"].canonical_sql
    assert "ILIKE 'france'" in by_id["spider-dev-12"].canonical_sql
    assert by_id["spider-dev-04"].category == "multi_table"


def test_the_copied_databases_keep_types_and_declare_keys_from_sqlite_and_tables_json(tmp_path):
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps(
            [
                {"db_id": "pets_1", "question": "q", "query": "SELECT 1"},
                {"db_id": "concert_singer", "question": "q", "query": "SELECT 1"},
            ]
        )
    )
    out = tmp_path / "gold" / "g.jsonl"
    import_benchmark("spider", src, out)
    con = duckdb.connect(str(out.parent / "databases" / "concert_singer.duckdb"), read_only=True)
    types = dict(
        ((t, c), d)
        for t, c, d in con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
        ).fetchall()
    )
    assert types[("singer", "age")] == "VARCHAR"  # TEXT holding numbers stays text
    assert types[("stadium", "capacity")] == "BIGINT" and types[("singer", "is_male")] == "BIGINT"
    constraints = sorted(
        (t, k, tuple(cols))
        for t, k, cols in con.execute(
            "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        ).fetchall()
    )
    assert ("concert", "FOREIGN KEY", ("stadium_id",)) in constraints
    assert ("singer_in_concert", "PRIMARY KEY", ("concert_id", "singer_id")) in constraints
    con.close()
    con = duckdb.connect(str(out.parent / "databases" / "pets_1.duckdb"), read_only=True)
    fks = con.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE constraint_type = 'FOREIGN KEY' ORDER BY 2"
    ).fetchall()
    assert fks == [("has_pet", ["petid"]), ("has_pet", ["stuid"])]  # declared only in tables.json
    assert con.execute("SELECT count(*) FROM student").fetchone() == (6,)
    con.close()


BIRD_QUESTIONS = [
    {
        "question_id": 0,
        "db_id": "pets_1",
        "question": "How many young students are there?",
        "evidence": "young refers to age < 20",
        "SQL": "SELECT COUNT(*) FROM student WHERE age < 20",
        "difficulty": "simple",
    },
    {
        "question_id": 1,
        "db_id": "pets_1",
        "question": "What share of pets are dogs?",
        "evidence": "share = count(dog) / count(*) as a percentage",
        "SQL": "SELECT CAST(SUM(CASE WHEN pettype = 'dog' THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*) FROM pets",
        "difficulty": "moderate",
    },
    {
        "question_id": 2,
        "db_id": "concert_singer",
        "question": "Which stadium hosted the fewest concerts, among those that hosted any?",
        "evidence": "fewest concerts refers to MIN(COUNT(concert_id))",
        "SQL": "SELECT T2.name FROM concert AS T1 INNER JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "GROUP BY T1.stadium_id ORDER BY COUNT(T1.concert_id) LIMIT 1",
        "difficulty": "challenging",
    },
    {
        "question_id": 3,
        "db_id": "concert_singer",
        "question": "Singers from the Netherlands?",
        "evidence": "",
        "SQL": "SELECT name FROM singer WHERE country = 'Netherlands'",
        "difficulty": "simple",
    },
]


def test_bird_directory_keeps_evidence_as_the_hint_and_gold_echo_scores_100(tmp_path):
    src = tmp_path / "bird" / "dev"
    build_spider(src, databases_folder="dev_databases")
    (src / "tables.json").rename(src / "dev_tables.json")
    (src / "dev.json").write_text(json.dumps(BIRD_QUESTIONS))
    out = tmp_path / "gold" / "bird-dev.jsonl"
    result = import_benchmark("bird", tmp_path / "bird" / "dev", out)
    cases = load_cases(out)
    assert [c.id for c in cases] == ["bird-dev-0", "bird-dev-1", "bird-dev-2", "bird-dev-3"]
    assert cases[0].hint == "young refers to age < 20" and cases[3].hint is None
    assert [c.difficulty for c in cases] == ["easy", "medium", "hard", "easy"]
    assert {q.difficulty_source for q in result.queries} == {"source"}  # BIRD's own, mapped, not computed
    assert json.loads(out.read_text().splitlines()[0])["hint"] == "young refers to age < 20"
    assert cases[0].fingerprint != dataclasses.replace(cases[0], hint=None).fingerprint
    assert all(q.status == "verified" for q in result.queries)
    _assert_gold_echo_scores_100(cases, out.parent)


def test_defog_alternatives_expand_like_sql_eval():
    assert expand_alternatives("SELECT {a.x, a.y} FROM a;SELECT a.x FROM a JOIN b ON a.id = b.id") == [
        "SELECT a.x FROM a",
        "SELECT a.y FROM a",
        "SELECT a.x, a.y FROM a",
        "SELECT a.x FROM a JOIN b ON a.id = b.id",
    ]
    assert len(expand_alternatives("SELECT {a, b}, {c, d} FROM t")) == 9


def test_defog_csv_with_alternatives_imports_and_gold_echo_scores_100(tmp_path):
    data = tmp_path / "defog"
    write_sqlite(data / "pets_1.sqlite", PETS_SQL).close()
    rows = [
        {
            "db_name": "pets_1",
            "query_category": "group_by",
            "question": "Pet count per type?",
            "query": "SELECT {pets.pettype, pets.petid}, COUNT(*) AS n FROM pets GROUP BY {}",
            "instructions": "",
        },
        {
            "db_name": "pets_1",
            "query_category": "date_functions",
            "question": "Students named like Lin?",
            "query": "SELECT s.fname FROM student AS s WHERE s.fname ILIKE '%lin%';"
            "SELECT s.stuid, s.fname FROM student AS s WHERE s.fname ILIKE '%lin%'",
            "instructions": "match names case-insensitively",
        },
        {
            "db_name": "pets_1",
            "query_category": "table_join",
            "question": "Average age of pet owners?",
            "query": "SELECT AVG(s.age)::float FROM student s WHERE EXISTS (SELECT 1 FROM has_pet h WHERE h.stuid = s.stuid)",
            "instructions": "",
        },
        {
            "db_name": "pets_1",
            "query_category": "ratio",
            "question": "A query DuckDB refuses?",
            "query": "SELECT {pettype, nosuch} FROM pets",
            "instructions": "",
        },
    ]
    with (data / "questions_gen_postgres.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "gold" / "defog.jsonl"
    result = import_benchmark("defog", data / "questions_gen_postgres.csv", out)
    cases = load_cases(out)
    assert [c.id for c in cases] == ["defog-1", "defog-2", "defog-3", "defog-4"]
    assert cases[0].expected_sql == (
        "SELECT pets.pettype, COUNT(*) AS n FROM pets GROUP BY pets.pettype",
        "SELECT pets.petid, COUNT(*) AS n FROM pets GROUP BY pets.petid",
        "SELECT pets.pettype, pets.petid, COUNT(*) AS n FROM pets GROUP BY pets.pettype, pets.petid",
    )
    assert len(cases[1].expected_sql) == 2 and cases[1].hint == "match names case-insensitively"
    assert "defog:group_by" in cases[0].tags
    # the alternatives naming a missing column are reported and left out; the one that runs stays
    assert cases[3].expected_sql == ("SELECT pettype FROM pets",)
    left_out = [(q.case_id, q.alternative, q.status) for q in result.queries if q.sql is None]
    assert left_out == [("defog-4", 1, "duckdb_failed"), ("defog-4", 2, "duckdb_failed")]
    assert all(q.status == "runs" for q in result.queries if q.sql is not None)  # no Postgres to compare with
    _assert_gold_echo_scores_100(cases, out.parent)
    # any acceptable alternative is correct: a candidate choosing the second one scores too
    verdicts, _ = _gold_echo([cases[0]], out.parent, sql_of=lambda case: case.expected_sql[1])
    assert verdicts[0].outcome == outcomes.CORRECT


def test_a_conversion_that_changes_the_result_is_reported_and_left_out(tmp_path):
    """SQLite's LIKE folds ASCII case only; DuckDB's ILIKE folds every letter: 'É' matches 'é%' there."""
    data = tmp_path / "plain"
    write_sqlite(
        data / "people.sqlite",
        "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('Émile'), ('émile'), ('Anna');",
    ).close()
    (data / "q.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "accents",
                    "question": "Names starting with é?",
                    "sql": "SELECT count(*) FROM people WHERE name LIKE 'é%'",
                    "db_id": "people",
                },
                {
                    "id": "ok",
                    "question": "Names starting with a?",
                    "sql": "SELECT name FROM people WHERE name LIKE 'a%'",
                    "db_id": "people",
                },
            ]
        )
        + "\n"
    )
    out = tmp_path / "gold" / "plain.jsonl"
    result = import_benchmark("plain", data / "q.jsonl", out, source_dialect="sqlite")
    assert [c.id for c in load_cases(out)] == ["ok"]
    (differs,) = [q for q in result.queries if q.case_id == "accents"]
    assert differs.status == "result_differs" and "another result than SQLite" in differs.reason
    assert differs.fixes == ("like_is_case_insensitive",) and differs.sql is None
    assert differs.location == f"{data / 'q.jsonl'}:1"
    assert "1 gold query left out (1 result_differs)" in result.summary()
    report = json.loads(result.report_path.read_text())
    assert report["summary"]["queries_by_status"] == {"result_differs": 1, "verified": 1}


def test_a_conversion_that_fails_is_reported_and_left_out(tmp_path):
    data = tmp_path / "plain"
    write_sqlite(data / "concert_singer.sqlite", CONCERT_SQL).close()
    with (data / "q.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "query", "database"])
        writer.writerow(["Names as SQL literals?", "SELECT quote(name) FROM singer", "concert_singer"])
        writer.writerow(["Unparseable?", "SELECT FROM WHERE (", "concert_singer"])
        writer.writerow(["Singers?", "SELECT count(*) FROM singer", "concert_singer"])
    out = tmp_path / "gold" / "plain.jsonl"
    result = import_benchmark("plain", data / "q.csv", out, source_dialect="sqlite")
    assert [c.id for c in load_cases(out)] == ["q-3"]
    statuses = {q.case_id: (q.status, q.location) for q in result.queries}
    assert statuses["q-1"] == ("duckdb_failed", f"{data / 'q.csv'}:2")
    assert statuses["q-2"][0] in ("conversion_failed", "source_failed")
    assert statuses["q-3"][0] == "verified"


def test_cli_gold_import_format_writes_the_gold_file_and_reports(tmp_path, capsys):
    from nl2sql_cli.main import main

    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in SPIDER_QUESTIONS])
    )
    out = tmp_path / "gold" / "spider.jsonl"
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "imported 21 of 23 questions" in captured.out and "spider.import-report.json" in captured.out
    assert "left out spider-dev-22[0]" in captured.err and "duckdb_failed" in captured.err
    assert main(["gold", "validate", str(out)]) == 0

    (src / "dev.json").write_text(json.dumps([{"db_id": "nowhere", "question": "q", "query": "SELECT 1"}]))
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 2
    assert "no database file for nowhere" in capsys.readouterr().err
    assert main(["gold", "import", "--format", "bird", str(src), "--out", str(out), "--source-dialect", "klingon"]) == 2
    assert "unknown source dialect 'klingon'" in capsys.readouterr().err
    assert main(["gold", "import", str(src / "dev.json"), "--out", str(out), "--source-dialect", "sqlite"]) == 2
    assert "need --format" in capsys.readouterr().err
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out), "--database", "x"]) == 2
    assert "cannot be used with --format" in capsys.readouterr().err


def test_a_case_may_name_a_duckdb_file_and_carry_a_hint_which_reaches_the_prompt(tmp_path):
    from nl2sql_pipeline.errors import CaseValidationError
    from nl2sql_pipeline.generation.model_spec import ModelSpec
    from nl2sql_pipeline.generation.prompts import build_messages

    base = {
        "id": "c1",
        "domain": "d",
        "category": "single_table",
        "question": "How many pets?",
        "expected_sql": "SELECT count(*) FROM pets",
    }
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({**base, "database": "databases/pets_1.duckdb", "hint": "pets are animals"})
        + "\n"
        + json.dumps({**base, "id": "c2", "database": "pets_1"})
        + "\n"
    )
    hinted, plain_case = load_cases(good)
    assert hinted.database == "databases/pets_1.duckdb" and hinted.hint == "pets are animals"
    assert plain_case.hint is None and "hint" not in plain_case.to_dict()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**base, "database": "../secret", "hint": ""}) + "\n")
    with pytest.raises(CaseValidationError) as caught:
        load_cases(bad)
    assert any(
        "database '../secret' is neither a database name nor a path to a .duckdb file" in p
        for p in caught.value.problems
    )
    assert any("hint must be a non-empty string" in p for p in caught.value.problems)

    spec = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
    texts = {"schema_text": "CREATE TABLE pets (id INTEGER);", "semantic_text": "", "reference_date": "2026-06-30"}
    assert build_messages(hinted, spec, **texts)[-1]["content"].strip() == "How many pets?\nHint: pets are animals"
    assert build_messages(plain_case, spec, **texts)[-1]["content"].strip() == "How many pets?"


def test_plain_jsonl_over_a_duckdb_file_copies_it_and_flags_queries_its_policy_refuses(tmp_path):
    data = tmp_path / "mine"
    data.mkdir()
    con = duckdb.connect(str(data / "shop.duckdb"))
    con.execute("CREATE TABLE orders AS SELECT range AS id, range % 7 AS amount FROM range(3000)")
    con.close()
    (data / "q.jsonl").write_text(
        json.dumps(
            {
                "question": "Big orders?",
                "sql": "SELECT id FROM orders WHERE amount > 5 LIMIT 5000",
                "database": "shop",
                "tags": ["limits"],
                "difficulty": "hard",
            }
        )
        + "\n"
        + json.dumps({"question": "Order count?", "sql": "SELECT count(*) FROM orders", "database": "shop"})
        + "\n"
    )
    out = tmp_path / "gold" / "mine.jsonl"
    # the database's policy is `default` here (what `--register --policy default` records); see
    # test_database_policy.py for the safety policy an imported database gets otherwise
    result = import_benchmark("plain", data / "q.jsonl", out, policy_for=lambda db_id, file: "default")
    cases = load_cases(out)
    assert [c.id for c in cases] == ["q-1", "q-2"] and cases[0].tags == ("plain", "limits")
    assert cases[0].difficulty == "hard" and cases[1].difficulty == "easy"  # given; computed (Spider hardness)
    assert [q.difficulty_source for q in result.queries] == ["source", "spider_hardness"]
    assert (out.parent / "databases" / "shop.duckdb").is_file()
    assert [q.status for q in result.queries] == ["runs", "runs"]
    assert result.queries[0].policy and "1000" in result.queries[0].policy and result.queries[1].policy is None
    assert "1 kept query refused by its database's policy (default)" in result.summary()
    verdicts, _ = _gold_echo(cases, out.parent)
    assert [v.outcome for v in verdicts] == [outcomes.POLICY_REJECTED, outcomes.CORRECT]


def test_a_question_that_makes_an_invalid_case_is_reported_at_its_source_line(tmp_path):
    data = tmp_path / "plain"
    write_sqlite(data / "pets_1.sqlite", PETS_SQL).close()
    (data / "q.jsonl").write_text(
        json.dumps({"id": "ok", "question": "Pets?", "sql": "SELECT count(*) FROM pets", "db_id": "pets_1"})
        + "\n\n"
        + json.dumps({"id": "bad id", "question": "Pets?", "sql": "SELECT count(*) FROM pets", "db_id": "pets_1"})
        + "\n"
        + json.dumps({"id": "x", "question": "Pets?", "db_id": "pets_1"})
        + "\n"
    )
    from nl2sql_pipeline.errors import CaseValidationError

    with pytest.raises(CaseValidationError) as caught:
        import_benchmark("plain", data / "q.jsonl", tmp_path / "gold" / "g.jsonl", source_dialect="sqlite")
    assert caught.value.problems == [
        f"{data / 'q.jsonl'}:4: missing or empty sql (give every row a question, its SQL and its database name)"
    ]
    (data / "q.jsonl").write_text(
        json.dumps({"id": "bad id", "question": "Pets?", "sql": "SELECT count(*) FROM pets", "db_id": "pets_1"}) + "\n"
    )
    with pytest.raises(CaseValidationError) as caught:
        import_benchmark("plain", data / "q.jsonl", tmp_path / "gold" / "g.jsonl", source_dialect="sqlite")
    assert caught.value.problems[0].startswith(f"{data / 'q.jsonl'}:1: id 'bad id' has characters ids cannot hold")
    assert not (tmp_path / "gold" / "g.jsonl").exists()


@pytest.mark.integration
@pytest.mark.e2e
def test_an_imported_spider_directory_runs_through_nl2sql_eval_run(tmp_path, monkeypatch, capsys, seeded_home):
    """The README's three commands: import a Spider directory, register the gold set, run gold-echo on it."""
    from eval_support import copy_data

    from nl2sql_cli.main import main

    data = copy_data(tmp_path / "data", ignore=["*.jsonl"])
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in SPIDER_QUESTIONS])
    )
    assert (
        main(
            [
                "gold",
                "import",
                "--format",
                "spider",
                str(src),
                "--out",
                str(data / "gold" / "spider-dev.jsonl"),
                "--register",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "registered concert_singer -> " in out and "registered pets_1 -> " in out
    assert main(["db", "list"]) == 0 and "concert_singer" in capsys.readouterr().out
    assert (
        main(
            [
                "gold",
                "import",
                "--format",
                "spider",
                str(src),
                "--out",
                str(data / "gold" / "spider-dev.jsonl"),
                "--register",
            ]
        )
        == 0
    )
    assert "already registered: pets_1" in capsys.readouterr().out, "importing again keeps the registry as it is"
    (data / "gold" / "gold_sets.yml").write_text("gold_sets:\n  spider-dev:\n    file: spider-dev.jsonl\n")
    capsys.readouterr()
    code = main(["run", "--gold-set", "spider-dev", "--model", "gold-echo", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    scores = json.loads(captured.out)["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == 21
    assert set(json.loads(scores["per_database"])) == {"databases/concert_singer.duckdb", "databases/pets_1.duckdb"}


HARDNESS_QUESTIONS = [
    # (question, gold SQL, Spider hardness derived by hand from evaluation.py's eval_hardness)
    ("How many singers are there?", "SELECT count(*) FROM singer", "easy"),
    ("Singers from oldest to youngest?", "SELECT name, country, age FROM singer ORDER BY age DESC", "medium"),
    (
        "Stadiums without concerts?",
        "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
        "hard",
    ),
    (
        "Stadium with the fewest concerts?",
        "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "GROUP BY T1.stadium_id ORDER BY count(*) ASC LIMIT 1",
        "extra",
    ),
]


def test_spider_questions_get_spiders_hardness_as_their_difficulty(tmp_path):
    """Spider has no difficulty: each case gets Spider's hardness (extra included), the report says it was
    computed, the file validates and the per-difficulty breakdown uses the four levels."""
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": "concert_singer", "question": q, "query": sql} for q, sql, _ in HARDNESS_QUESTIONS])
    )
    out = tmp_path / "gold" / "spider-dev.jsonl"
    result = import_benchmark("spider", src, out)
    cases = load_cases(out)
    assert [c.difficulty for c in cases] == [level for _, _, level in HARDNESS_QUESTIONS]
    assert json.loads(out.read_text().splitlines()[3])["difficulty"] == "extra"
    assert all(q.difficulty_source == "spider_hardness" for q in result.queries)
    assert "difficulty computed as Spider's hardness for 4 cases" in result.summary()
    summary = json.loads(result.report_path.read_text())["summary"]
    assert summary["cases_by_difficulty"] == {"easy": 1, "medium": 1, "hard": 1, "extra": 1}
    assert summary["difficulty_sources"] == {"spider_hardness": 4}
    _, scores = _gold_echo(cases, out.parent)
    assert set(scores["per_difficulty"]) == {"easy", "medium", "hard", "extra"}


def test_cli_gold_import_errors_are_one_named_line_and_exit_2(tmp_path, capsys):
    """An --out folder blocked by a file, a --databases folder that does not exist and a Spider folder
    without its database folder: exit 2, the path named once, no traceback. No tables.json: imported with
    a warning saying what is lost."""
    from nl2sql_cli.main import main

    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": "concert_singer", "question": q, "query": sql} for q, sql, _ in HARDNESS_QUESTIONS])
    )
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    for out in (blocker / "g.jsonl", blocker / "sub" / "g.jsonl"):
        assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"error: --out {out}: ") and "Traceback" not in err
        assert f"{blocker} is a file, not a folder" in err
    (tmp_path / "team.yml").write_text("- id: c1\n  question: How many?\n  sql: SELECT 1\n")
    team = ["gold", "import", str(tmp_path / "team.yml"), "--database", "sample"]
    assert main([*team, "--out", str(blocker / "g.jsonl")]) == 2  # a team file, not a benchmark: the same
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{blocker} is a file, not a folder" in err and "Traceback" not in err

    out = tmp_path / "gold" / "g.jsonl"
    nowhere = tmp_path / "no-such-folder"
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out), "--databases", str(nowhere)]) == 2
    err = capsys.readouterr().err
    assert err.count(str(nowhere)) == 1 and "--databases" in err and "does not exist" in err
    assert err.count("\n") == 1 and not out.parent.exists()

    (src / "database").rename(src / "elsewhere")
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("no dev_database/ or database/ beside it") == 1 and "--databases" in err
    assert "concert_singer" not in err  # the folder is named, not each database
    (src / "elsewhere").rename(src / "database")

    (src / "tables.json").unlink()
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "imported 4 of 4 questions" in captured.out
    (warning,) = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert f"{src}: no dev_tables.json or tables.json beside dev.json; imported without it" in warning
    assert "primary and foreign keys declared only there are not added" in warning
    assert json.loads(report_path_for(out).read_text())["warnings"] == [warning.removeprefix("warning: ")]


def test_gold_import_gold_set_refuses_a_file_outside_the_gold_folder_and_a_taken_key(tmp_path, monkeypatch, capsys):
    """``--gold-set KEY`` is checked before anything is imported: OUT outside data/gold/, a key naming
    another file, a key that is no slug: one line each, exit 2, nothing written."""
    from eval_support import copy_data

    from nl2sql_cli.main import main

    data = copy_data(tmp_path / "data", ignore=["*.jsonl"])
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(json.dumps([{"db_id": "pets_1", "question": "How many?", "query": "SELECT 1"}]))
    before = (data / "gold" / "gold_sets.yml").read_text()
    cases = [
        (tmp_path / "elsewhere.jsonl", "mine", "is not inside the gold folder"),
        (data / "gold" / "other.jsonl", "multidomain-v1", "is already registered for"),
        (data / "gold" / "other.jsonl", "Not A Slug", "is not a slug"),
    ]
    for out, key, message in cases:
        args = ["gold", "import", "--format", "spider", str(src), "--out", str(out), "--gold-set", key]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --gold-set {key}: ") and message in err and err.count("\n") == 1
        assert not out.exists()
    assert (data / "gold" / "gold_sets.yml").read_text() == before


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failed_import_changes_nothing_under_outs_folder(tmp_path, capsys, isolated_home):
    """An import that keeps no query, and a BIRD file with a duplicate question_id over a database of the
    same id with other tables, exit 2 and leave the databases, the report and the gold file of the set
    already there byte for byte (no staging folder left behind); the failed report is kept elsewhere."""
    from nl2sql_cli.main import main

    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in SPIDER_QUESTIONS[:3]])
    )
    out = tmp_path / "gold" / "set.jsonl"
    assert main(["gold", "import", "--format", "spider", str(src), "--out", str(out)]) == 0
    before = _tree(out.parent)
    assert {"databases/concert_singer.duckdb", "set.import-report.json", "set.jsonl"} <= set(before)

    other = tmp_path / "other"  # concert_singer with other tables, and a gold query that fails on it
    write_sqlite(other / "database" / "concert_singer" / "concert_singer.sqlite", PETS_SQL).close()
    (other / "dev.json").write_text(
        json.dumps([{"db_id": "concert_singer", "question": "How many?", "query": "SELECT count(*) FROM singer"}])
    )
    capsys.readouterr()
    assert main(["gold", "import", "--format", "spider", str(other), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no gold query could be kept" in err and "Traceback" not in err
    assert _tree(out.parent) == before
    failed = isolated_home / "failed-imports" / "set.import-report.json"
    assert str(failed) in err and json.loads(failed.read_text())["summary"]["cases_written"] == 0

    bird = tmp_path / "bird"
    write_sqlite(bird / "dev_databases" / "concert_singer" / "concert_singer.sqlite", PETS_SQL).close()
    item = {"question_id": 7, "db_id": "concert_singer", "question": "Pets?", "SQL": "SELECT count(*) FROM pets"}
    (bird / "dev.json").write_text(json.dumps([item, item]))
    assert main(["gold", "import", "--format", "bird", str(bird), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bird-dev-7" in err and "Traceback" not in err
    assert _tree(out.parent) == before


def test_two_database_ids_with_one_file_name_are_refused_naming_both(tmp_path, capsys):
    """``my db`` and ``my_db`` would both be databases/my_db.duckdb: exit 2 naming both ids, nothing written."""
    from nl2sql_cli.main import main

    data = tmp_path / "plain"
    write_sqlite(data / "my db.sqlite", PETS_SQL).close()
    write_sqlite(data / "my_db.sqlite", CONCERT_SQL).close()
    rows = [
        {"question": "Pets?", "sql": "SELECT count(*) FROM pets", "database": "my db"},
        {"question": "Singers?", "sql": "SELECT count(*) FROM singer", "database": "my_db"},
    ]
    (data / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "gold" / "g.jsonl"
    assert main(["gold", "import", "--format", "plain", str(data / "q.jsonl"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "database ids 'my db'" in err and "'my_db'" in err and "databases/my_db.duckdb" in err
    assert f"{data / 'q.jsonl'}:1" in err and f"{data / 'q.jsonl'}:2" in err and "Traceback" not in err
    assert not out.parent.exists()


def test_an_import_never_silently_replaces_a_database_another_gold_set_runs_on(tmp_path, monkeypatch, capsys):
    """Imports into data/gold/ share databases/: a plain CSV whose db id concert_singer holds other tables
    is refused while gold set spider-a runs on that file (exit 2, naming the set, the folder to use instead
    and --replace-databases; nothing changed). Re-importing spider-a onto itself with changed rows, the same
    content for another set, another folder and --replace-databases go through."""
    import sqlite3

    from eval_support import copy_data

    from nl2sql_cli.main import main

    data = copy_data(tmp_path / "data", ignore=["*.jsonl"])
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    gold = data / "gold"
    src = build_spider(tmp_path / "spider")
    (src / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in SPIDER_QUESTIONS[:3]])
    )
    spider_a = ["gold", "import", "--format", "spider", str(src), "--out", str(gold / "spider-a.jsonl")]
    assert main([*spider_a, "--gold-set", "spider-a"]) == 0
    con = sqlite3.connect(src / "database" / "concert_singer" / "concert_singer.sqlite")
    con.execute("INSERT INTO singer VALUES (7, 'Ann Lee', 'Wales', '33', 0)")
    con.commit()
    con.close()
    assert main([*spider_a, "--gold-set", "spider-a"]) == 0, "re-importing a set onto itself works"

    plain = tmp_path / "plain"
    write_sqlite(plain / "concert_singer.sqlite", PETS_SQL).close()
    (plain / "q.csv").write_text("question,sql,database\nPets?,SELECT count(*) FROM pets,concert_singer\n")
    other = ["gold", "import", "--format", "plain", str(plain / "q.csv"), "--out", str(gold / "b.jsonl")]
    before = _tree(gold)
    capsys.readouterr()
    assert main(other) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {gold / 'databases' / 'concert_singer.duckdb'}: ") and err.count("\n") == 1
    assert "'spider-a'" in err and "--replace-databases" in err and f"--out {gold / 'b' / 'b.jsonl'}" in err
    assert _tree(gold) == before

    same = ["gold", "import", "--format", "spider", str(src), "--out", str(gold / "spider-c.jsonl")]
    assert main([*same, "--gold-set", "spider-c"]) == 0, "the same database for another set changes nothing"
    assert main([*other[:-1], str(gold / "b" / "b.jsonl")]) == 0, "another folder keeps its own databases"
    assert main(other) == 2 and "'spider-a', 'spider-c'" in capsys.readouterr().err
    assert main([*other, "--replace-databases"]) == 0
    con = duckdb.connect(str(gold / "databases" / "concert_singer.duckdb"), read_only=True)
    assert {t for (t,) in con.execute("SHOW TABLES").fetchall()} == {"student", "pets", "has_pet"}
    con.close()


def test_a_database_replaced_by_a_duckdb_copy_drops_the_old_sqlite_column_file(tmp_path):
    """The column file beside a SQLite copy (the types the dialect fixes read) goes when the same database is
    imported again from a DuckDB file, which has none: a stale one would type the new tables."""
    from nl2sql_pipeline.dialect.sqlite_copy import column_info_path

    (tmp_path / "q.csv").write_text("question,sql,database\nPets?,SELECT count(*) FROM pets,shop\n")
    sqlite_dir, duckdb_dir = tmp_path / "from-sqlite", tmp_path / "from-duckdb"
    write_sqlite(sqlite_dir / "shop.sqlite", PETS_SQL).close()
    out = tmp_path / "gold" / "shop.jsonl"
    import_benchmark("plain", tmp_path / "q.csv", out, databases=sqlite_dir)
    database = out.parent / "databases" / "shop.duckdb"
    assert column_info_path(database).is_file()
    duckdb_dir.mkdir()
    con = duckdb.connect(str(duckdb_dir / "shop.duckdb"))
    con.execute("CREATE TABLE pets AS SELECT range AS petid FROM range(4)")
    con.close()
    import_benchmark("plain", tmp_path / "q.csv", out, databases=duckdb_dir)
    assert not column_info_path(database).exists()
    assert duckdb.connect(str(database), read_only=True).execute("SELECT count(*) FROM pets").fetchall() == [(4,)]


@pytest.mark.parametrize(("fmt", "header"), [("plain", "question,sql,database"), ("defog", "question,query,db_name")])
def test_gold_import_of_a_plain_or_defog_file_that_is_not_utf8_is_one_line_per_bad_line_and_exit_2(
    tmp_path, capsys, fmt, header
):
    """A Latin-1 CSV: ``file:line: not valid UTF-8 ...`` as the team-file imports say it, exit 2, no traceback."""
    from nl2sql_cli.main import main

    src = tmp_path / "latin.csv"
    src.write_bytes(f"{header}\n".encode() + b"H\xe9llo,SELECT 1,concert_singer\n")
    out = tmp_path / "o" / "l.jsonl"
    assert main(["gold", "import", "--format", fmt, str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}:2: not valid UTF-8: byte 0xe9" in err and "re-save the file as UTF-8" in err
    assert "Traceback" not in err and not out.exists()


def test_defog_gold_that_does_not_tokenize_is_left_out_and_a_quoted_semicolon_separates_nothing(tmp_path):
    """Postgres gold with an unterminated quote made sqlglot's tokenizer raise TokenError (not a ParseError)
    out of the import; it is left out as ``conversion_failed``. A ``;`` or ``{`` inside a string literal is
    part of the query, not a separator or a column choice."""
    data = tmp_path / "defog"
    write_sqlite(data / "concert_singer.sqlite", CONCERT_SQL).close()
    with (data / "q.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "query", "db_name"])
        writer.writerow(["Semicolon?", "SELECT name FROM singer WHERE name <> 'a;b'", "concert_singer"])
        writer.writerow(["Unterminated?", "SELECT name FROM singer WHERE name = 'Joe", "concert_singer"])
        writer.writerow(["Braces?", "SELECT {name, country} FROM singer WHERE name <> '{x, y};'", "concert_singer"])
    out = tmp_path / "gold" / "defog.jsonl"
    result = import_benchmark("defog", data / "q.csv", out)
    statuses = {(q.case_id, q.alternative): q.status for q in result.queries}
    assert statuses == {
        ("defog-1", 0): "runs",
        ("defog-2", 0): "conversion_failed",
        ("defog-3", 0): "runs",
        ("defog-3", 1): "runs",
        ("defog-3", 2): "runs",
    }
    cases = {c.id: c for c in load_cases(out)}
    assert cases["defog-1"].expected_sql == ("SELECT name FROM singer WHERE name <> 'a;b'",)
    assert "defog-2" not in cases
    assert cases["defog-3"].expected_sql[0] == "SELECT name FROM singer WHERE name <> '{x, y};'"
    assert expand_alternatives("SELECT 'a;b' AS \"c;d\" -- x;y\n;SELECT 2") == [
        "SELECT 'a;b' AS \"c;d\" -- x;y",
        "SELECT 2",
    ]


def test_a_misspelled_keyword_does_not_parse_and_a_duplicate_bird_id_names_the_item_of_its_first_use(tmp_path):
    """``SELEC name`` (sqlglot reads it as an expression) was 'not exactly one query in sqlite (1 statements)';
    a duplicate BIRD question_id said '(first used on line 3)' for item 2 (the line of the file written)."""
    src = tmp_path / "bird" / "dev"
    build_spider(src, databases_folder="dev_databases")
    (src / "tables.json").rename(src / "dev_tables.json")
    items = [dict(BIRD_QUESTIONS[0], question_id=i) for i in range(3)] + [dict(BIRD_QUESTIONS[0], question_id=2)]
    items[1]["SQL"] = "SELEC name"
    (src / "dev.json").write_text(json.dumps(items))
    from nl2sql_pipeline.errors import CaseValidationError

    with pytest.raises(CaseValidationError) as caught:
        import_benchmark("bird", src, tmp_path / "gold" / "bird.jsonl")
    assert caught.value.problems == [
        f"{src / 'dev.json'}: item 3: duplicate id 'bird-dev-2' (first used at {src / 'dev.json'}: item 2) "
        "(give every case its own id)"
    ]
    (src / "dev.json").write_text(json.dumps(items[:3]))
    result = import_benchmark("bird", src, tmp_path / "gold" / "bird.jsonl")
    (left_out,) = [q for q in result.queries if q.sql is None]
    assert left_out.case_id == "bird-dev-1" and left_out.status == "conversion_failed"
    assert left_out.reason == (
        "the original does not parse as sqlite: it is no statement, only the expression 'SELEC AS name' "
        "(a misspelled keyword?)"
    )
