"""A public benchmark as a new user runs it (issue 18's "Done when"): a Spider-layout folder with several
SQLite databases is imported, its databases and gold set registered by the import itself, and evaluated
with the CLI as the README's *Public benchmark formats* shows, with no hand edits.

The gold has what stopped such runs before: ``date('now')`` (SQLite's clock), a cartesian join (refused by
the sample database's policy, allowed by ``safety``), ties at ``ORDER BY … LIMIT`` with the sort key not
selected (one where SQLite and DuckDB keep different rows), ``avg`` over a TEXT column of digits, and
ordinary questions. Proven here: every query is kept, ``gold-echo`` scores 100% with nothing quarantined,
a replay of SQLite predictions keeping the other tied rows is correct, and a genuinely bad gold query is
quarantined and shown everywhere (or stops the run under ``--strict-gold``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from eval_support import SpiderDatabase, World, append_models, build_spider_folder

from nl2sql_cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("public_benchmark_path")]

SCHOOL_SQL = """
CREATE TABLE dorm (dorm_id INTEGER PRIMARY KEY, dorm_name TEXT, capacity INTEGER);
CREATE TABLE student (stu_id INTEGER PRIMARY KEY, name TEXT, age INTEGER, grade TEXT,
                      dorm_id INTEGER REFERENCES dorm(dorm_id));
INSERT INTO dorm VALUES (1, 'Smith Hall', 120), (2, 'Fawlty Towers', 40), (3, 'Dorm Ant', 85);
INSERT INTO student VALUES (1, 'Linda', 18, '85', 1), (2, 'Tracy', 23, '91', 1), (3, 'Shiela', 21, '78', 2),
                           (4, 'Dinesh', 23, '66', 3), (5, 'Paul', 19, '88', 2), (6, 'Andy', 20, '70', 3);
"""
FLIGHT_SQL = """
CREATE TABLE flight (flight_id INTEGER PRIMARY KEY, origin TEXT, destination TEXT, departure_date TEXT, price REAL);
INSERT INTO flight VALUES (1, 'Boston', 'Miami', '2026-05-01', 320.0), (2, 'Boston', 'Dallas', '2026-06-15', 180.5),
                          (3, 'Miami', 'Boston', '2026-06-29', 410.0), (4, 'Dallas', 'Boston', '2026-07-04', 99.0),
                          (5, 'Miami', 'Dallas', '2026-08-20', 260.0), (6, 'Boston', 'Miami', '2027-01-10', 350.0);
"""
MUSEUM_SQL = """
CREATE TABLE museum (museum_id INTEGER PRIMARY KEY, name TEXT, num_of_staff INTEGER, open_year TEXT);
INSERT INTO museum VALUES (1, 'Plaza Museum', 62, '2000'), (2, 'Capital Plaza Museum', 25, '2012'),
                          (3, 'Jefferson Development Museum', 18, '2010'), (4, 'Willow Grande Museum', 17, '2011');
"""
DATABASES = (
    SpiderDatabase("school", SCHOOL_SQL),
    SpiderDatabase("flight_log", FLIGHT_SQL),
    SpiderDatabase("museum", MUSEUM_SQL),
)
REFERENCE_DATE = "2026-06-30"
"""The set's "today": 3 flights departed before it, 2 in the 30 days up to it (other days give other counts)."""
OLDEST = "SELECT name FROM student ORDER BY age DESC LIMIT 1"
"""Tracy and Dinesh are both 23: a tie at the LIMIT, the sort key not selected."""
TOP_DORMS = "SELECT name FROM student ORDER BY dorm_id DESC LIMIT 3"
"""Shiela and Paul tie on dorm 2 at the cut: SQLite keeps Shiela, DuckDB Paul."""
DEPARTED = "SELECT count(*) FROM flight WHERE departure_date < date('now')"
QUESTIONS = [
    ("school", "How many dorms hold more than 50 students?", "SELECT count(*) FROM dorm WHERE capacity > 50"),
    ("school", "Name of the oldest student?", OLDEST),
    ("school", "Average grade of the students?", "SELECT avg(grade) FROM student"),
    ("school", "How many student and dorm pairs are there?", "SELECT count(*) FROM student JOIN dorm"),
    ("school", "Dorm names from the smallest to the largest?", "SELECT dorm_name FROM dorm ORDER BY capacity"),
    ("school", "Three students in the highest-numbered dorms?", TOP_DORMS),
    ("flight_log", "How many flights have already departed?", DEPARTED),
    (
        "flight_log",
        "How many flights left in the last 30 days?",
        "SELECT count(*) FROM flight WHERE departure_date >= date('now', '-30 days') AND departure_date < date('now')",
    ),
    ("flight_log", "Flights per origin?", "SELECT origin, count(*) FROM flight GROUP BY origin"),
    ("flight_log", "Destinations of flights over 300?", "SELECT destination FROM flight WHERE price > 300"),
    ("museum", "How many museums opened after 2010?", "SELECT count(*) FROM museum WHERE open_year > 2010"),
    (
        "museum",
        "Museums with more staff than the smallest one?",
        "SELECT name FROM museum WHERE num_of_staff > (SELECT min(num_of_staff) FROM museum)",
    ),
]
BAD_GOLD = ("museum", "Two museums?", "SELECT name FROM museum LIMIT 2")
"""A LIMIT without ORDER BY that cuts rows: which rows the gold keeps is arbitrary (ambiguous gold)."""
GOLD_SET = "spider-dev"


@dataclass(frozen=True)
class Cli:
    """What one in-process CLI call returned and printed."""

    code: int
    out: str
    err: str


def cli(*args: str) -> Cli:
    """``nl2sql-eval ARGS`` in this process, its output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Cli(code, out.getvalue(), err.getvalue())


def import_spider(world: World, source: Path) -> Cli:
    """The README's import: databases copied and registered, the gold set registered, at the reference date."""
    out = world.data / "gold" / f"{GOLD_SET}.jsonl"
    return cli(
        "gold", "import", "--format", "spider", str(source), "--out", str(out), "--register",
        "--gold-set", GOLD_SET, "--reference-date", REFERENCE_DATE,
    )  # fmt: skip


def case_id(question: int) -> str:
    """The imported case id of the ``question``-th question (1-based), as the Spider importer numbers them."""
    return f"{GOLD_SET}-{question:02d}"


@pytest.fixture(scope="module")
def imported(
    world_factory: Callable[[], contextlib.AbstractContextManager[World]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[World, Path, Cli, Cli]]:
    """A world with the benchmark imported and registered, and gold-echo run on it: (world, the benchmark
    folder, the import, the run)."""
    source = build_spider_folder(tmp_path_factory.mktemp("spider"), DATABASES, QUESTIONS)
    with world_factory() as world:
        imported = import_spider(world, source)
        run = cli("run", "--gold-set", GOLD_SET, "--model", "gold-echo", "--json")
        yield world, source, imported, run


def test_import_keeps_every_gold_query_under_the_safety_policy_at_the_reference_date(imported):
    world, source, result, _ = imported
    assert result.code == 0, result.err
    assert f"imported {len(QUESTIONS)} of {len(QUESTIONS)} questions" in result.out and "left out" not in result.err
    assert f"reference date {REFERENCE_DATE}" in result.out
    assert "kept but refused" not in result.err, "the cartesian join is allowed by the imported databases' policy"
    for db in ("school", "flight_log", "museum"):
        assert f"registered {db} -> " in result.out and f"{db}.duckdb (policy safety)" in result.out
    assert f"registered gold set {GOLD_SET} -> " in result.out

    report = json.loads((world.data / "gold" / f"{GOLD_SET}.import-report.json").read_text())
    assert report["summary"]["kept_queries_refused_by_policy"] == 0
    assert set(report["summary"]["policies"].values()) == {"safety"}
    by_id = {q["case_id"]: q for q in report["queries"]}
    assert all(q["status"] == "verified" for q in by_id.values()), [(q["case_id"], q["reason"]) for q in by_id.values()]
    # SQLite and DuckDB keep different rows tied at the cut: the same result, kept
    assert "kept other rows tied at the LIMIT" in by_id[case_id(6)]["reason"]
    # SQLite's clock became a clock read, which the run pins at the reference date
    assert by_id[case_id(7)]["fixes"] == ["now_reads_the_clock"] and "CURRENT_TIMESTAMP" in by_id[case_id(7)]["sql"]
    assert by_id[case_id(3)]["fixes"] == ["text_aggregated_as_numbers"]

    cases = [json.loads(line) for line in (world.data / "gold" / f"{GOLD_SET}.jsonl").read_text().splitlines()]
    assert {c["reference_date"] for c in cases} == {REFERENCE_DATE}

    assert cli("gold", "validate", str(world.data / "gold" / f"{GOLD_SET}.jsonl")).code == 0
    again = import_spider(world, source)
    assert again.code == 0 and f"gold set already registered: {GOLD_SET}" in again.out, "importing again is safe"


def test_gold_echo_scores_100_with_nothing_quarantined(imported):
    _, _, _, run = imported
    assert run.code == 0, run.err
    out = json.loads(run.out)
    (scores,) = [r["scores"] for r in out["runs"]]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == len(QUESTIONS)
    assert scores["quarantined_count"] == 0 and out["quarantined"] == []
    assert "QUARANTINED" not in run.err and "PREFLIGHT FAILED" not in run.err
    assert not [f for f in out["preflight_flags"] if f["blocking"]]
    assert (case_id(2), "limit_ties") in {(f["label"], f["kind"]) for f in out["preflight_flags"]}


def _replay(world: World, slug: str, answers: dict[int, str]) -> str:
    """A ``predictions`` model replaying a Spider-format file (``SQL<TAB>db_id`` per line, SQLite SQL, the
    gold order): each question's gold SQL, or ``answers[question]``."""
    path = world.data / f"{slug}.txt"
    path.write_text(
        "".join(f"{answers.get(n, sql)}\t{db}\n" for n, (db, _, sql) in enumerate(QUESTIONS, start=1)),
        encoding="utf-8",
    )
    return f"  {slug}:\n    kind: predictions\n    path: {path}\n    format: lines\n    source_dialect: sqlite\n"


def test_a_replay_keeping_the_other_tied_rows_is_correct_and_a_wrong_one_is_not(imported):
    world, _, _, _ = imported
    tie_breaks = {}
    for direction in ("ASC", "DESC"):
        tie_breaks[direction] = {
            2: f"SELECT name FROM student ORDER BY age DESC, stu_id {direction} LIMIT 1",
            6: f"SELECT name FROM student ORDER BY dorm_id DESC, stu_id {direction} LIMIT 3",
            # the same clock read written another way, pinned alike
            7: "SELECT count(*) FROM flight WHERE departure_date < strftime('%Y-%m-%d', 'now')",
        }
    with sqlite3.connect(":memory:") as con:  # the two tie breaks keep different rows
        con.executescript(SCHOOL_SQL)
        kept = {d: [con.execute(answers[n]).fetchall() for n in (2, 6)] for d, answers in tie_breaks.items()}
    assert kept["ASC"][0] != kept["DESC"][0] and kept["ASC"][1] != kept["DESC"][1]
    append_models(
        world.data,
        _replay(world, "replay-asc", tie_breaks["ASC"])
        + _replay(world, "replay-desc", tie_breaks["DESC"])
        + _replay(world, "replay-wrong", {2: "SELECT name FROM student ORDER BY age LIMIT 1"}),
    )
    run = cli(
        "run", "--gold-set", GOLD_SET, "--model", "replay-asc", "--model", "replay-desc", "--model", "replay-wrong",
        "--json",
    )  # fmt: skip
    assert run.code == 0, run.err
    rates = {r["model"]: r["scores"]["semantic_correctness_rate"] for r in json.loads(run.out)["runs"]}
    assert rates["replay-asc"] == rates["replay-desc"] == 1.0
    assert rates["replay-wrong"] == pytest.approx(1 - 1 / len(QUESTIONS)), "the youngest student is not the oldest"


def _preflight_metadata(gold_set: str) -> dict:
    key = dg.AssetCheckKey(dg.AssetKey("gold_set"), "gold_preflight")
    history = dg.DagsterInstance.get().event_log_storage.get_asset_check_execution_history(key, limit=5)
    evaluation = next(r for r in history if r.partition == gold_set).evaluation
    return {name: value.value for name, value in evaluation.metadata.items()}


def test_a_bad_gold_query_is_quarantined_and_shown_everywhere_or_stops_a_strict_run(eval_world, tmp_path):
    source = build_spider_folder(tmp_path / "spider", DATABASES, [*QUESTIONS, BAD_GOLD])
    bad = case_id(len(QUESTIONS) + 1)
    result = import_spider(eval_world, source)
    assert result.code == 0 and f"imported {len(QUESTIONS) + 1} of {len(QUESTIONS) + 1}" in result.out, result.err

    strict = cli("run", "--gold-set", GOLD_SET, "--model", "gold-echo", "--strict-gold")
    assert strict.code == 4, strict.err
    assert "PREFLIGHT FAILED" in strict.err and f"{bad}: [limit_without_order]" in strict.err

    run = cli("run", "--gold-set", GOLD_SET, "--model", "gold-echo", "--json")
    assert run.code == 0, run.err
    out = json.loads(run.out)
    (scores,) = [r["scores"] for r in out["runs"]]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == len(QUESTIONS)
    assert scores["quarantined_count"] == 1
    assert [(q["case_id"], q["kind"]) for q in out["quarantined"]] == [(bad, "limit_without_order")]
    assert [(q["case_id"], q["kind"]) for q in json.loads(scores["quarantined_cases"])] == [
        (bad, "limit_without_order")
    ]
    assert f"QUARANTINED {bad}: [limit_without_order] LIMIT 2 without ORDER BY" in run.err  # the console

    metadata = _preflight_metadata(GOLD_SET)
    assert metadata["quarantined_count"] == 1 and metadata["quarantine"][0]["case_id"] == bad

    from nl2sql_pipeline.report.html import run_report_path

    html = run_report_path(GOLD_SET, "gold-echo", scores["run_id"]).read_text(encoding="utf-8")
    assert "quarantined by the gold preflight: 1 cases" in html and bad in html

    console = cli("run", "--gold-set", GOLD_SET, "--model", "gold-echo")  # the stored run, reported again
    assert console.code == 0 and f"  ! {bad}: [limit_without_order]" in console.out
