"""The pinned clock: clock reads rewritten in the AST into literals at the case's reference date, applied
wherever a case's SQL runs (oracle, candidates, test-suite variants, the preflight), stated in the prompt,
and part of the gold version's identity; imported sets get the import date unless told otherwise.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import duckdb
import pytest
from sqlglot import exp, parse_one
from verdict_factory import make_candidate

from nl2sql_cli import main as cli
from nl2sql_pipeline.cases import DEFAULT_REFERENCE_DATE, Case, case_from_dict, gold_fingerprint
from nl2sql_pipeline.errors import CaseValidationError, ConfigError
from nl2sql_pipeline.execution import release_sandboxes, run_query
from nl2sql_pipeline.generation import CandidateRecord
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext
from nl2sql_pipeline.gold.formats import import_benchmark
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.sample_db import REFERENCE_DATE
from nl2sql_pipeline.semantic_model import default_semantic_model_path, load_semantic_model
from nl2sql_pipeline.sql import clock
from nl2sql_pipeline.sql.clock import clock_reads, pin_clock
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import attempts_from_candidates
from nl2sql_pipeline.stages.variant_suite import run_variant_oracle
from nl2sql_pipeline.variants.cache import VariantSet

REF = datetime.date(2001, 3, 31)
"""A reference date far from the real one: a query reading the real clock answers otherwise."""

FORMS = [
    # (clock read as written, the literal it becomes, its type in DuckDB)
    ("CURRENT_DATE", "CAST('2001-03-31' AS DATE)", "DATE"),
    ("current_date()", "CAST('2001-03-31' AS DATE)", "DATE"),
    ("today()", "CAST('2001-03-31' AS DATE)", "DATE"),
    ("now()", "CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ)", "TIMESTAMP WITH TIME ZONE"),
    ("current_timestamp", "CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ)", "TIMESTAMP WITH TIME ZONE"),
    ("current_timestamp()", "CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ)", None),  # sqlglot reads it; DuckDB has not
    ("get_current_timestamp()", "CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ)", "TIMESTAMP WITH TIME ZONE"),
    ("transaction_timestamp()", "CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ)", "TIMESTAMP WITH TIME ZONE"),
    ("localtimestamp", "CAST('2001-03-31 00:00:00' AS TIMESTAMP)", "TIMESTAMP"),
    ("current_localtimestamp()", "CAST('2001-03-31 00:00:00' AS TIMESTAMP)", "TIMESTAMP"),
    ("current_time", "CAST('00:00:00' AS TIMETZ)", "TIME WITH TIME ZONE"),
    ("get_current_time()", "CAST('00:00:00' AS TIMETZ)", "TIME WITH TIME ZONE"),
    ("localtime", "CAST('00:00:00' AS TIME)", "TIME"),
    ("current_localtime()", "CAST('00:00:00' AS TIME)", "TIME"),
]


@pytest.mark.parametrize(("form", "literal", "duckdb_type"), FORMS, ids=[f for f, _, _ in FORMS])
def test_each_clock_read_becomes_a_literal_of_the_type_duckdb_returns(form, literal, duckdb_type):
    sql = f"SELECT {form} AS v"
    pinned = pin_clock(sql, REF)
    assert pinned == f"SELECT {literal} AS v"
    assert clock_reads(parse_one(pinned, read="duckdb")) == []
    con = duckdb.connect()
    try:
        if duckdb_type is not None:  # the type the real function returns
            assert con.execute(f"SELECT typeof({form})").fetchone() == (duckdb_type,)
        assert con.execute(f"SELECT typeof(v) FROM ({pinned})").fetchone() == (
            duckdb_type or "TIMESTAMP WITH TIME ZONE",
        )
    finally:
        con.close()


def test_wrapped_forms_keep_their_wrapper_and_read_the_reference_instant():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    try:
        sql = "SELECT epoch_ms(now()) AS ms, now()::DATE AS d, date_trunc('month', now()) AS m, today() - 30 AS back"
        pinned = pin_clock(sql, REF)
        assert "EPOCH_MS(CAST('2001-03-31 00:00:00' AS TIMESTAMPTZ))" in pinned
        ms, day, month, back = con.execute(pinned).fetchone()
        assert ms == int(datetime.datetime(2001, 3, 31, tzinfo=datetime.UTC).timestamp() * 1000)
        assert day == REF and month.date() == datetime.date(2001, 3, 1) and back == datetime.date(2001, 3, 1)
        # midnight in the session's time zone: now()::DATE is CURRENT_DATE whatever the zone
        con.execute("SET TimeZone = 'America/New_York'")
        assert con.execute(pin_clock("SELECT now()::DATE = CURRENT_DATE", REF)).fetchone() == (True,)
    finally:
        con.close()


def test_clock_reads_nested_in_subqueries_ctes_set_operations_and_windows_are_all_rewritten():
    sql = (
        "WITH recent AS (SELECT * FROM t WHERE d > CURRENT_DATE - INTERVAL 7 DAY) "
        "SELECT a, (SELECT max(now()) FROM u) AS m, CASE WHEN d < today() THEN 1 END AS past, "
        "sum(x) OVER (PARTITION BY d = current_date) AS s FROM recent "
        "WHERE EXISTS (SELECT 1 FROM v WHERE v.ts < get_current_timestamp()) "
        "UNION ALL SELECT 1, localtimestamp, 0, 0 FROM w WHERE w.d IN (SELECT today())"
    )
    pinned = pin_clock(sql, REF)
    tree = parse_one(pinned, read="duckdb")
    assert clock_reads(tree) == []
    assert len(clock_reads(parse_one(sql, read="duckdb"))) == 7
    dates = [n for n in tree.find_all(exp.Cast) if n.this.name.startswith("2001-03-31")]
    assert len(dates) == 7


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM t WHERE d <= DATE '2026-06-30'",
        "SELECT 'now()' AS label, now_col, \"current_date\" FROM t",  # a string and columns, not calls
        "SELECT  a  FROM   t -- today()",  # formatting and comments kept: the text is not re-written
        "SELEC broken FROM",  # does not parse: the sandbox reports its error as for any query
        "SELECT 1; SELECT now()",  # two statements: passed through for the sandbox to refuse
    ],
)
def test_sql_without_a_clock_read_or_that_does_not_parse_comes_back_unchanged(sql):
    assert pin_clock(sql, REF) == sql


def test_the_default_reference_date_is_the_built_in_sets_and_the_sample_databases():
    assert DEFAULT_REFERENCE_DATE == REFERENCE_DATE.isoformat() == "2026-06-30"
    assert load_semantic_model(default_semantic_model_path()).reference_date == REFERENCE_DATE
    assert pin_clock("SELECT today()") == "SELECT CAST('2026-06-30' AS DATE)"


# ------------------------------------------------------------------------------------------- the case contract


def _case(**overrides) -> Case:
    values = dict(
        id="c1", domain="d", category="time", question="q", database="db", expected_sql=("SELECT CURRENT_DATE",)
    )
    return Case(**{**values, **overrides})


def test_the_reference_date_is_part_of_the_case_and_the_gold_version_identity():
    plain = _case()
    assert plain.reference_instant == datetime.date(2026, 6, 30) and "reference_date" not in plain.to_dict()
    same = _case(reference_date="2026-06-30")
    assert same.fingerprint == plain.fingerprint  # the default date keeps the fingerprints the sets had
    moved = _case(reference_date="2001-03-31")
    assert moved.fingerprint != plain.fingerprint
    assert gold_fingerprint([moved]) != gold_fingerprint([plain])
    assert case_from_dict(moved.to_dict()) == moved and moved.to_dict()["reference_date"] == "2001-03-31"


def test_a_gold_file_may_set_a_reference_date_per_case_and_a_bad_one_is_named_with_its_line(tmp_path):
    good = tmp_path / "mine.yml"
    good.write_text(
        "- id: a\n  question: q\n  sql: SELECT today()\n  reference_date: 2001-03-31\n"  # YAML reads a date
        "- id: b\n  question: q\n  sql: SELECT 1\n",
        encoding="utf-8",
    )
    cases = load_cases_with(good, database="db")
    assert [c.reference_date for c in cases] == ["2001-03-31", None]
    bad = tmp_path / "bad.jsonl"
    line = {"id": "a", "domain": "d", "category": "c", "question": "q", "database": "db", "expected_sql": "SELECT 1"}
    bad.write_text(json.dumps(line) + "\n" + json.dumps({**line, "id": "b", "reference_date": "31/03/2001"}) + "\n")
    with pytest.raises(CaseValidationError) as raised:
        load_cases(bad)
    assert raised.value.problems == [
        f"{bad}:2: reference_date '31/03/2001' is not a date (write the date the question's 'today' is, "
        "as YYYY-MM-DD (e.g. 2026-06-30), or remove the field)"
    ]


def load_cases_with(path: Path, database: str) -> list[Case]:
    from nl2sql_pipeline.gold.formats.team_files import import_cases

    return import_cases(path, database=database)


def test_a_registry_entry_gives_its_reference_date_to_the_cases_naming_none(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    line = {"id": "a", "domain": "d", "category": "c", "question": "q", "database": "db", "expected_sql": "SELECT 1"}
    (gold / "s.jsonl").write_text(
        json.dumps(line) + "\n" + json.dumps({**line, "id": "b", "reference_date": "2020-01-01"}) + "\n"
    )
    (gold / "gold_sets.yml").write_text("gold_sets:\n  s-v1:\n    file: s.jsonl\n    reference_date: 2001-03-31\n")
    assert [c.reference_date for c in load_gold_set("s-v1", tmp_path)] == ["2001-03-31", "2020-01-01"]
    (gold / "gold_sets.yml").write_text("gold_sets:\n  s-v1:\n    file: s.jsonl\n    reference_date: soon\n")
    with pytest.raises(ConfigError, match=r"gold_sets.yml:4: key 'gold_sets.s-v1.reference_date': must be a date"):
        load_gold_set("s-v1", tmp_path)


# ----------------------------------------------------------------------------------------------------- prompts


def test_the_prompt_states_the_cases_reference_date_also_without_a_semantic_model():
    from nl2sql_pipeline.semantic_model.introspect import NO_REFERENCE_DATE

    context = PromptContext({"db": DatabasePromptText("schema", "none", NO_REFERENCE_DATE)})
    assert context.for_case(_case(reference_date="2001-03-31")).reference_date == "2001-03-31"
    assert context.for_case(_case()).reference_date == "2026-06-30"


def test_cases_of_one_database_at_two_reference_dates_get_two_openings():
    from nl2sql_pipeline.generation.conversation import plan_calls
    from nl2sql_pipeline.generation.registry import get_model

    context = PromptContext({"db": DatabasePromptText("schema", "none", "CURRENT_DATE")})
    cases = [_case(id="a", reference_date="2001-03-31"), _case(id="b")]
    requests = plan_calls(cases, get_model("gold-echo"), context)
    systems = [request.opening[0]["content"] for request in requests]
    assert "Treat 2001-03-31 as today" in systems[0] and "Treat 2026-06-30 as today" in systems[1]


# ------------------------------------------------------------------------------- judged on two different days


@pytest.fixture
def events_db(tmp_path) -> Path:
    """``events``: one row a day from 2001-01-01 to 2001-06-30, with a timestamp at 12:00."""
    path = tmp_path / "events.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE events AS SELECT i AS id, DATE '2001-01-01' + i::INTEGER AS day, "
        "TIMESTAMP '2001-01-01 12:00:00' + i * INTERVAL 1 DAY AS ts FROM range(181) t(i)"
    )
    con.close()
    yield path
    release_sandboxes(path)


CLOCK_CASES = [
    # (gold, a candidate computing the same another way, the answer at REF counted by hand)
    (
        "SELECT count(*) AS n FROM events WHERE day >= CURRENT_DATE - INTERVAL 30 DAY AND day <= CURRENT_DATE",
        "SELECT count(*) AS n FROM events WHERE day BETWEEN today() - 30 AND today()",
        31,  # 2001-03-01 .. 2001-03-31
    ),
    (
        "SELECT count(*) AS n FROM events WHERE ts >= now() - INTERVAL 7 DAY AND ts < now()",
        "SELECT count(*) AS n FROM events WHERE ts::DATE BETWEEN current_date - 7 AND current_date - 1",
        7,  # noon of 2001-03-24 .. 2001-03-30
    ),
    (
        "SELECT id FROM events WHERE day = CURRENT_DATE",
        "SELECT id FROM events WHERE day = CAST(get_current_timestamp() AS DATE)",
        89,  # 2001-03-31 is day 89 of the table
    ),
]


def _candidates(cases: list[Case], sqls: list[str]) -> list[CandidateRecord]:
    return [
        make_candidate(case.id, sql, case_fingerprint=case.fingerprint, model_config_hash="replay")
        for case, sql in zip(cases, sqls)
    ]


class _Day(datetime.date):
    """``datetime.date`` whose ``today()`` the test sets: the process's clock moved."""

    fixed = datetime.date(2001, 1, 1)

    @classmethod
    def today(cls):
        return cls.fixed


def _evaluate(cases: list[Case], db: Path) -> list[tuple[str, str, object]]:
    resolve = lambda _name: db  # noqa: E731
    oracle = run_oracle(cases, resolve)
    attempts = execute_attempts(
        cases, attempts_from_candidates(_candidates(cases, [sql for _, sql, _ in CLOCK_CASES])), PolicyGate(resolve)
    )
    verdicts = judge(cases, oracle, attempts, resolve_database=resolve)
    answers = {row.case_id: row.result.rows[0][0] for row in oracle}
    return [(v.case_id, v.outcome, answers[v.case_id]) for v in verdicts]


def test_clock_dependent_gold_and_a_candidate_computing_it_otherwise_agree_on_two_days(events_db, monkeypatch):
    """The Done-when of the pinned clock: the gold reads ``CURRENT_DATE``/``now()``, the candidate
    ``today()``/``get_current_timestamp()``; judged on two days (the process's clock moved, and DuckDB's real
    clock is decades after the reference date), both verdicts are correct, equal, and answer at the set's
    date: the counts are the ones at 2001-03-31, not at the real date (where the window holds no row)."""
    cases = [
        Case(
            id=f"clock-{i}",
            domain="d",
            category="time",
            question=f"q{i}",
            database=str(events_db),
            expected_sql=(gold,),
            reference_date=REF.isoformat(),
        )
        for i, (gold, _, _) in enumerate(CLOCK_CASES)
    ]
    expected = [(case.id, outcomes.CORRECT, answer) for case, (_, _, answer) in zip(cases, CLOCK_CASES)]
    days = []
    for day in (datetime.date(2031, 1, 15), datetime.date(2032, 7, 1)):
        _Day.fixed = day
        monkeypatch.setattr(clock, "date", _Day)
        pin_clock.cache_clear()
        assert clock.today() == day
        days.append(_evaluate(cases, events_db))
    assert days[0] == days[1] == expected
    unpinned = run_query(events_db, CLOCK_CASES[0][0])  # the real clock, which no longer matters
    assert unpinned.ok and unpinned.rows[0][0] != CLOCK_CASES[0][2]


def test_test_suite_variants_run_the_gold_at_the_reference_date(events_db):
    case = Case(
        id="v",
        domain="d",
        category="time",
        question="q",
        database="db",
        expected_sql=(CLOCK_CASES[0][0],),
        reference_date=REF.isoformat(),
    )
    suites = {"db": VariantSet(source=events_db, fingerprint="f", paths=(events_db,))}
    [row] = run_variant_oracle([case], suites)
    assert row.result.ok and row.result.rows == [(31,)]


# ------------------------------------------------------------------------------------------------------ import


def _plain_source(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    con = duckdb.connect(str(folder / "shop.duckdb"))
    con.execute("CREATE TABLE orders AS SELECT range AS id, DATE '2001-03-01' + range::INTEGER AS day FROM range(60)")
    con.close()
    rows = [
        {"question": "Orders in the last 7 days?", "sql": "SELECT count(*) FROM orders WHERE day > CURRENT_DATE - 7"},
        {"question": "Order count?", "sql": "SELECT count(*) FROM orders"},
    ]
    (folder / "q.jsonl").write_text("".join(json.dumps({**row, "database": "shop"}) + "\n" for row in rows))
    return folder / "q.jsonl"


def test_an_import_writes_the_import_date_as_reference_date_unless_given(tmp_path, monkeypatch):
    source = _plain_source(tmp_path)
    _Day.fixed = datetime.date(2001, 3, 31)
    monkeypatch.setattr(clock, "date", _Day)  # date.today() of the import
    result = import_benchmark("plain", source, tmp_path / "gold" / "a.jsonl")
    cases = load_cases(tmp_path / "gold" / "a.jsonl")
    assert [c.reference_date for c in cases] == ["2001-03-31", "2001-03-31"]
    assert result.reference_date == datetime.date(2001, 3, 31)
    assert "reference date 2001-03-31" in result.summary()
    assert json.loads(result.report_path.read_text())["reference_date"] == "2001-03-31"

    given = import_benchmark("plain", source, tmp_path / "gold" / "b.jsonl", reference_date=datetime.date(2001, 3, 10))
    assert {c.reference_date for c in given.cases} == {"2001-03-10"}
    assert gold_fingerprint(given.cases) != gold_fingerprint(result.cases)


def test_cli_gold_import_takes_reference_date_and_refuses_a_bad_one(tmp_path, capsys, monkeypatch):
    source = _plain_source(tmp_path)
    out = tmp_path / "gold" / "c.jsonl"
    code = cli.main(
        ["gold", "import", "--format", "plain", str(source), "--out", str(out), "--reference-date", "2001-03-31"]
    )
    assert code == 0
    assert "reference date 2001-03-31" in capsys.readouterr().out
    assert {c.reference_date for c in load_cases(out)} == {"2001-03-31"}
    with pytest.raises(SystemExit) as raised:
        cli.main(
            ["gold", "import", "--format", "plain", str(source), "--out", str(out), "--reference-date", "tomorrow"]
        )
    assert raised.value.code == 2
    assert "'tomorrow' is not a date (write YYYY-MM-DD, e.g. 2026-06-30)" in capsys.readouterr().err

    team = tmp_path / "team.yml"
    team.write_text("- id: a\n  question: q\n  sql: SELECT today()\n", encoding="utf-8")
    _Day.fixed = datetime.date(2001, 2, 2)
    monkeypatch.setattr(clock, "date", _Day)
    assert cli.main(["gold", "import", str(team), "--out", str(tmp_path / "team.jsonl"), "--database", "db"]) == 0
    assert [c.reference_date for c in load_cases(tmp_path / "team.jsonl")] == ["2001-02-02"]
