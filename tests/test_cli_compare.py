"""``nl2sql-eval compare`` end to end: SQL pairs run in the sandbox on a tiny DuckDB file, every base rule."""

from __future__ import annotations

import json

import duckdb
import pytest

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
from nl2sql_cli.main import main

SCHEMA = """
CREATE TABLE anime (id INTEGER, title VARCHAR, genre VARCHAR, score DOUBLE, aired DATE, price DECIMAL(6, 2));
INSERT INTO anime VALUES
    (1, 'Gear Pilots', 'Mecha', 8.5, DATE '2024-01-01', 3.00),
    (2, 'Other World', 'Isekai', 7.25, DATE '2024-02-01', 4.50),
    (3, 'Steel Dawn', 'Mecha', 6.0, NULL, 3.00),
    (4, 'Rival Fists', 'Shonen', NULL, DATE '2023-12-31', NULL);
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A storage root holding one built database, ``mini``."""
    root = tmp_path / "home"
    (root / "databases").mkdir(parents=True)
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    con = duckdb.connect(str(root / "databases" / "mini.duckdb"))
    con.execute(SCHEMA)
    con.close()
    return root


def run(capsys, expected: str, candidate: str, *extra: str, database: str = "mini") -> tuple[int, str, str]:
    code = main(["compare", "--database", database, "--expected-sql", expected, "--candidate-sql", candidate, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def verdict(capsys, expected: str, candidate: str, *extra: str) -> tuple[int, dict]:
    code, out, _ = run(capsys, expected, candidate, "--json", *extra)
    return code, json.loads(out)


# (rule, expected SQL, candidate SQL that must match, candidate SQL that must not)
RULE_PAIRS = [
    (
        "multiset_exact",
        "SELECT id, genre FROM anime",
        "SELECT id, genre FROM anime ORDER BY genre DESC, id DESC",
        "SELECT id, genre FROM anime WHERE id < 4",
    ),
    (
        "column_reorder_by_name",
        "SELECT id, genre FROM anime",
        "SELECT genre AS GENRE, id FROM anime",
        "SELECT id AS genre, genre AS id FROM anime",
    ),
    (
        "column_positional",
        "SELECT count(*) FROM anime",
        "SELECT count(*) AS n FROM anime",
        "SELECT count(*) - 1 AS n FROM anime",
    ),
    (
        "column_permutation",
        "SELECT genre, count(*) FROM anime GROUP BY genre",
        "SELECT count(*) AS n, genre AS g FROM anime GROUP BY genre",
        "SELECT count(*) AS n, lower(genre) AS g FROM anime GROUP BY genre",
    ),
    ("numeric_value_equality", "SELECT 3 AS v", "SELECT 3.0::DOUBLE AS v", "SELECT 3.5::DOUBLE AS v"),
    ("numeric_value_equality", "SELECT 3 AS v", "SELECT 3.00::DECIMAL(5, 2) AS v", "SELECT 3.01::DECIMAL(5, 2) AS v"),
    (
        "float_tolerance",
        "SELECT 0.3::DOUBLE AS v",
        "SELECT 0.1::DOUBLE + 0.2::DOUBLE AS v",
        "SELECT 0.3001::DOUBLE AS v",
    ),
    (
        "numeric_string_coercion",
        "SELECT 42 AS a, 3.5::DOUBLE AS b",
        "SELECT '42' AS a, '3.50' AS b",
        "SELECT '042x' AS a, '3.50' AS b",
    ),
    (
        "temporal_equivalence",
        "SELECT DATE '2024-01-01' AS v",
        "SELECT TIMESTAMP '2024-01-01 00:00:00' AS v",
        "SELECT TIMESTAMP '2024-01-01 12:30:00' AS v",
    ),
    (
        "temporal_equivalence",
        "SELECT TIMESTAMP '2024-01-01 12:30:00' AS v",
        "SELECT '2024-01-01T12:30:00' AS v",
        "SELECT '2024-01-01 12:31:00' AS v",
    ),
    ("multiset_exact", "SELECT NULL::INTEGER AS v", "SELECT NULL::INTEGER AS v", "SELECT 0 AS v"),  # NULL == NULL only
    ("multiset_exact", "SELECT NULL::VARCHAR AS v", "SELECT NULL::VARCHAR AS v", "SELECT '' AS v"),
    ("multiset_exact", "SELECT 'nan'::DOUBLE AS v", "SELECT 'nan'::DOUBLE AS v", "SELECT NULL::DOUBLE AS v"),
    ("multiset_exact", "SELECT '-inf'::DOUBLE AS v", "SELECT -('inf'::DOUBLE) AS v", "SELECT 'inf'::DOUBLE AS v"),
    ("multiset_exact", "SELECT true AS v", "SELECT 1 = 1 AS v", "SELECT 1 AS v"),  # booleans are not 1
    ("multiset_exact", "SELECT 'Mecha' AS v", "SELECT 'Mech' || 'a' AS v", "SELECT 'mecha' AS v"),
    ("multiset_exact", "SELECT 'Mecha' AS v", "SELECT 'Mecha' AS v", "SELECT 'Mecha ' AS v"),
]


@pytest.mark.parametrize(("rule", "expected", "good", "bad"), RULE_PAIRS)
def test_rule_in_both_directions(home, capsys, rule, expected, good, bad):
    code, match = verdict(capsys, expected, good)
    assert (code, match["match"]) == (EXIT_OK, True), match
    assert rule in match["rule"].split("+"), match
    code, mismatch = verdict(capsys, expected, bad)
    assert (code, mismatch["match"]) == (EXIT_GATE_FAILED, False), mismatch
    assert mismatch["score"] < 1.0


def test_text_output(home, capsys):
    code, out, err = run(capsys, "SELECT 3", "SELECT 3.0::DOUBLE")
    assert code == EXIT_OK and err == ""
    lines = out.splitlines()
    assert lines[0] == "match: true"
    assert lines[1] == "rule: column_positional+numeric_value_equality"
    assert lines[2].startswith("reason: the only row matches")
    assert lines[3] == "score: 1.000"


def test_json_output_keys(home, capsys):
    code, payload = verdict(capsys, "SELECT genre FROM anime", "SELECT DISTINCT genre FROM anime")
    assert code == EXIT_GATE_FAILED
    assert {"match", "rule", "reason", "score", "comparator_version"} <= payload.keys()
    assert payload["rule"] == "row_count_mismatch"
    assert "row ('Mecha',) appears 2x in expected, 1x in candidate" in payload["reason"]
    assert payload["score"] == pytest.approx(6 / 7)
    assert (payload["expected_rows"], payload["candidate_rows"]) == (4, 3)


def test_reasons_name_what_differs(home, capsys):
    _, payload = verdict(capsys, "SELECT id, title, genre FROM anime", "SELECT id, title FROM anime")
    assert payload["rule"] == "column_count_mismatch"
    assert "column 'genre' missing from candidate" in payload["reason"]
    _, payload = verdict(capsys, "SELECT id, genre FROM anime", "SELECT id, upper(genre) AS genre FROM anime")
    assert payload["rule"] == "multiset_mismatch"
    assert "first missing: (1, 'Mecha')" in payload["reason"]
    assert "values differ in column 'genre'" in payload["reason"]


def test_tolerance_options(home, capsys):
    pair = ("SELECT 0.3::DOUBLE", "SELECT 0.1::DOUBLE + 0.2::DOUBLE")
    assert verdict(capsys, *pair)[0] == EXIT_OK
    assert verdict(capsys, *pair, "--rel-tol", "0", "--abs-tol", "0")[0] == EXIT_GATE_FAILED
    assert verdict(capsys, "SELECT 1.0::DOUBLE", "SELECT 1.001::DOUBLE", "--rel-tol", "0.01")[0] == EXIT_OK


def test_candidate_failure_is_a_mismatch(home, capsys):
    code, payload = verdict(capsys, "SELECT 1", "SELECT * FROM no_such_table")
    assert code == EXIT_GATE_FAILED
    assert payload["rule"] == "candidate_failed"
    assert "no_such_table" in payload["reason"] and "\n" not in payload["reason"]


def test_failing_expected_sql_is_bad_input(home, capsys):
    code, out, err = run(capsys, "SELECT * FROM no_such_table", "SELECT 1")
    assert code == EXIT_BAD_INPUT and out == ""
    assert "--expected-sql failed" in err and "no_such_table" in err


def test_database_by_path_and_missing_database(home, capsys, tmp_path):
    code, _, _ = run(capsys, "SELECT 1", "SELECT 1", database=str(home / "databases" / "mini.duckdb"))
    assert code == EXIT_OK
    code, out, err = run(capsys, "SELECT 1", "SELECT 1", database="not_built")
    assert code == EXIT_ENVIRONMENT and out == ""
    assert "unknown database 'not_built'" in err and "db build" not in err
    code, _, err = run(capsys, "SELECT 1", "SELECT 1", database=str(tmp_path / "nowhere.duckdb"))
    assert code == EXIT_ENVIRONMENT and "does not exist" in err


def test_sql_from_file_and_bad_arguments(home, capsys, tmp_path):
    sql_file = tmp_path / "candidate.sql"
    sql_file.write_text("SELECT count(*) AS n FROM anime\n", encoding="utf-8")
    assert run(capsys, "SELECT count(*) FROM anime", f"@{sql_file}")[0] == EXIT_OK
    code, _, err = run(capsys, "SELECT 1", f"@{tmp_path / 'missing.sql'}")
    assert code == EXIT_BAD_INPUT and "cannot read" in err
    code, _, err = run(capsys, "SELECT 1", "SELECT 1", "--rel-tol", "-1")
    assert code == EXIT_BAD_INPUT and "rel_tol" in err
    code, _, err = run(capsys, "   ", "SELECT 1")
    assert code == EXIT_BAD_INPUT and "--expected-sql is empty" in err


def test_prints_grade_order_credit_clauses_and_diagnosis(home, capsys):
    gold = "SELECT title, score FROM anime WHERE score IS NOT NULL ORDER BY score DESC"
    code, out, _ = run(capsys, gold, "SELECT title, score FROM anime WHERE score IS NOT NULL ORDER BY score")
    assert code == EXIT_GATE_FAILED
    assert "rule: row_order_mismatch" in out and "grade: partial" in out and "order: wrong" in out
    assert "rows: 3 expected, 3 candidate" in out and "cell F1 1.000" in out
    assert "clause scores (structure, not correctness): select 1.00" in out
    assert "diagnosis: wrong_order_or_direction" in out
    code, out, _ = run(capsys, gold, "SELECT title, score FROM anime WHERE score > 7 ORDER BY score DESC", "--json")
    payload = json.loads(out)
    assert code == EXIT_GATE_FAILED and payload["grade"] == "partial"
    assert (payload["row_precision"], payload["order"]["status"]) == (1.0, "not_checked")
    assert {d["label"] for d in payload["diagnosis"]} >= {"extra_filter", "missing_filter"}
    assert payload["clause_scores"]["where"] == 0.0 and payload["clause_scores"]["order_by"] == 1.0


def test_results_over_the_row_cap_are_compared_whole(home, capsys):
    code, out, _ = run(
        capsys, "SELECT id, title FROM anime", "SELECT id, title FROM anime ORDER BY id DESC", "--row-cap", "2"
    )
    assert (
        code == EXIT_OK
        and "compared whole in the engine (4 rows vs 4)" in out
        and "rows: 4 expected, 4 candidate" in out
    )
    code, out, _ = run(
        capsys,
        "SELECT id, title FROM anime ORDER BY id",
        "SELECT id, CASE WHEN id = 4 THEN 'x' ELSE title END AS title FROM anime ORDER BY id",
        "--row-cap",
        "2",
        "--json",
    )
    payload = json.loads(out)
    assert code == EXIT_GATE_FAILED and (payload["expected_rows"], payload["candidate_rows"]) == (4, 4)
    assert payload["rule"] == "multiset_mismatch" and payload["rows_fetched"] == {"expected": 2, "candidate": 2}


def test_results_that_could_not_be_compared_whole_exit_as_an_environment_error(home, capsys, monkeypatch):
    """Both results over the row cap and the in-engine comparison timed out: no verdict (exit 3), not exit 1."""
    from nl2sql_pipeline.compare import engine

    def timed_out(*args, **kwargs):
        raise engine.EngineComparisonError("the in-engine comparison failed (timeout: query exceeded the 2 s timeout)")

    monkeypatch.setattr(engine, "engine_counts", timed_out)
    code, out, _ = run(
        capsys, "SELECT id, title FROM anime", "SELECT id, title FROM anime ORDER BY id DESC", "--row-cap", "2"
    )
    assert code == EXIT_ENVIRONMENT
    assert "rule: comparison_undetermined" in out and "grade: undetermined" in out and "diagnosis" not in out


@pytest.mark.parametrize(
    ("infinite", "extreme"),
    [
        ("'infinity'::DATE", "DATE '9999-12-31'"),
        ("'-infinity'::TIMESTAMP", "TIMESTAMP '0001-01-01 00:00:00'"),
        ("'infinity'::TIMESTAMP", "TIMESTAMP '9999-12-31 23:59:59.999999'"),
    ],
)
def test_infinite_dates_are_not_the_extreme_finite_ones(home, capsys, infinite, extreme):
    """Python's DuckDB client fetches an infinity as the extreme finite value: both paths keep them apart."""
    for row_cap in ("10000", "0"):  # compared in Python, then whole in the engine
        code, payload = verdict(capsys, f"SELECT {infinite} AS a", f"SELECT {extreme} AS a", "--row-cap", row_cap)
        assert (code, payload["match"], payload["rule"]) == (EXIT_GATE_FAILED, False, "multiset_mismatch")
        assert "infinity" in payload["reason"], payload["reason"]
        code, payload = verdict(capsys, f"SELECT {infinite} AS a", f"SELECT {infinite} AS a", "--row-cap", row_cap)
        assert (code, payload["match"]) == (EXIT_OK, True)
    code, payload = verdict(capsys, "SELECT 'infinity'::DATE AS a", "SELECT 'infinity'::TIMESTAMP AS a")
    assert (code, payload["rule"]) == (EXIT_OK, "temporal_equivalence")


def test_text_output_when_the_columns_differ(home, capsys):
    """No row precision exists when the column counts differ: the text report still prints in full."""
    code, out, err = run(capsys, "SELECT 1 AS a, 1 AS b", "SELECT 1 AS a")
    assert code == EXIT_GATE_FAILED and err == ""
    assert "rule: column_count_mismatch" in out and "grade: partial" in out
    assert "partial credit: cell F1" in out and "row precision" not in out


@pytest.mark.parametrize("candidate", ["SELECT 1 AS a /* unterminated", "SELECT 'abc", 'SELECT "abc'])
def test_candidate_that_does_not_tokenize_is_a_failed_candidate(home, capsys, candidate):
    """A truncated answer (an unclosed comment or quote) is a syntax failure, not a crash."""
    code, out, err = run(capsys, "SELECT 1 AS a", candidate)
    assert code == EXIT_GATE_FAILED and err == ""
    assert "rule: candidate_failed" in out and "grade: fail" in out
    assert "rows: 1 expected, the candidate failed" in out and "over the row cap" not in out
