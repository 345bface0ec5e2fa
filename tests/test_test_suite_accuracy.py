"""Test-suite accuracy: seeded database variants, and candidates judged on the database and every variant."""

from __future__ import annotations

import doctest
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from eval_support import seed_sample_database

from nl2sql_pipeline.cases import Case, case_from_dict
from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import SandboxLimits, run_query
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import judge
from nl2sql_pipeline.stages.records import SOURCE_MODEL, Attempt, OracleRow
from nl2sql_pipeline.stages.variant_suite import VariantSuite, build_suites, check_on_variants, run_variant_oracle
from nl2sql_pipeline.variants import boundary_literals, ensure_variants, literals
from nl2sql_pipeline.variants.build import (
    BUILD_CATALOG,
    VariantBuilder,
    build_connection,
    build_variant,
    read_source_schema,
)

LIMITS = SandboxLimits(timeout_s=10)
GOLD = "SELECT count(*) AS n FROM orders WHERE amount >= 100"


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    """customers 1-n orders (FK), nullable columns, and no order with an amount of exactly 99, 100 or 101."""
    path = tmp_path_factory.mktemp("shop") / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("""
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, country VARCHAR);
        CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
                             customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
                             amount INTEGER NOT NULL, note VARCHAR);
        INSERT INTO customers SELECT i, 'c' || i, CASE WHEN i % 3 = 0 THEN 'JP' ELSE 'FR' END FROM range(1, 301) t(i);
        INSERT INTO orders SELECT i, 1 + (i * 7) % 300, CASE WHEN i % 2 = 0 THEN 50 ELSE 150 END, 'n' || i
        FROM range(1, 2001) t(i);
        CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > 120;
    """)
    con.close()
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One storage root for the module: variants are built once and shared, as in a real run."""
    with pytest.MonkeyPatch.context() as patch:
        root = tmp_path_factory.mktemp("nl2sql-home")
        patch.setenv("NL2SQL_HOME", str(root))
        yield root


def _case(sql: str = GOLD, case_id: str = "q1", database: str = "shop") -> Case:
    return case_from_dict(
        {
            "id": case_id,
            "domain": "shop",
            "category": "single_table",
            "question": "How many?",
            "database": database,
            "expected_sql": sql,
        }
    )


def _content(path: Path) -> dict[str, list]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in ("customers", "orders")}
    finally:
        con.close()


def _variants(shop: Path, count: int = 3, sqls=(GOLD,), seed: int = 0):
    return ensure_variants(shop, list(sqls), count, seed=seed)


def test_literals_doctests():
    assert doctest.testmod(literals).failed == 0


def test_boundary_literals_of_a_long_in_list_look_the_query_tables_up_once(shop, monkeypatch):
    """``id IN (0, ..., n)`` made one walk of the whole tree per literal (quadratic: minutes for 20,000);
    the query's tables are found once per query, and the values are the same as with one literal each."""
    schema = read_source_schema(shop)
    lookups: list[str] = []
    table = schema.table
    monkeypatch.setattr(schema, "table", lambda name, db=None: lookups.append(name) or table(name, db))
    many = ", ".join(str(i) for i in range(2000))
    sql = f"SELECT count(*) FROM orders AS o JOIN customers AS c USING (customer_id) WHERE o.amount IN ({many})"
    lits = boundary_literals([sql, "SELECT count(*) FROM orders WHERE note = 'x' OR note = 'y'"], schema)
    assert sorted(lookups) == ["customers", "orders", "orders"]  # each table of each query, once
    monkeypatch.undo()
    amounts = [lit.values for lit in lits if lit.column == "amount"]
    assert amounts == [tuple(sorted({str(v) for i in range(2000) for v in (i - 1, i, i + 1)}))[:12]]
    assert [lit.values for lit in lits if lit.column == "note"] == [("X", "Y", "x", "y")]


def test_variants_are_built_deterministically(shop, tmp_path, home):
    lits = boundary_literals([GOLD], read_source_schema(shop))
    build_variant(shop, tmp_path / "a.duckdb", 1, 0, lits)
    build_variant(shop, tmp_path / "b.duckdb", 1, 0, lits)
    build_variant(shop, tmp_path / "c.duckdb", 2, 0, lits)
    a, b, c = (_content(tmp_path / f"{x}.duckdb") for x in "abc")
    assert a == b  # same seed and index: the same rows in the same order
    assert a != c  # another variant differs
    assert a != _content(shop)


def test_one_builder_builds_every_variant_as_a_builder_of_its_own_would(shop, tmp_path, home):
    """``VariantBuilder`` opens the source once for several variants: each is the file ``build_variant`` writes
    alone (rows in storage order, row ids, views), and the manifests say the same."""
    lits = boundary_literals([GOLD], read_source_schema(shop))
    alone = {index: build_variant(shop, tmp_path / f"alone-{index}.duckdb", index, 0, lits) for index in range(3)}
    with VariantBuilder(shop) as builder:
        assert boundary_literals([GOLD], builder.schema) == lits
        shared = {index: builder.build(tmp_path / f"shared-{index}.duckdb", index, 0, lits) for index in range(3)}
    assert shared == alone
    for index in range(3):
        a, b = (duckdb.connect(str(tmp_path / f"{k}-{index}.duckdb"), read_only=True) for k in ("alone", "shared"))
        try:
            for query in (
                "SELECT rowid, * FROM customers",
                "SELECT rowid, * FROM orders",
                "SELECT * FROM big_orders",
                "SELECT sql FROM duckdb_views() WHERE NOT internal",
            ):
                assert a.execute(query).fetchall() == b.execute(query).fetchall(), query
        finally:
            a.close()
            b.close()
    assert not list(tmp_path.glob(".*.tmp*"))  # no temporary file left behind


def test_one_build_instance_serves_source_after_source(shop, tmp_path, home):
    """A build instance shared by several sources (``build_suites``) builds what a builder of its own would."""
    lits = boundary_literals([GOLD], read_source_schema(shop))
    build_variant(shop, tmp_path / "own.duckdb", 2, 0, lits)
    con = build_connection()
    try:
        for round_ in range(2):  # the second source finds the instance as the first left it
            with VariantBuilder(shop, con) as builder:
                builder.build(tmp_path / f"shared-{round_}.duckdb", 2, 0, lits)
        assert con.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall() == [
            (BUILD_CATALOG,)
        ]
    finally:
        con.close()
    own = _content(tmp_path / "own.duckdb")
    assert _content(tmp_path / "shared-0.duckdb") == own and _content(tmp_path / "shared-1.duckdb") == own


def test_foreign_keys_hold_in_every_variant_while_rows_are_sampled(shop, home):
    for path in _variants(shop).paths:
        con = duckdb.connect(str(path), read_only=True)
        orphans = con.execute(
            "SELECT count(*) FROM orders o WHERE NOT EXISTS "
            "(SELECT 1 FROM customers c WHERE c.customer_id = o.customer_id)"
        ).fetchone()[0]
        customers = con.execute("SELECT count(*) FROM customers").fetchone()[0]
        con.close()
        assert orphans == 0
        assert customers < 300 + 30  # sampled (some dropped), a few duplicated
    source = duckdb.connect(str(shop), read_only=True)  # the check itself can fail: the source has no orphans either
    assert (
        source.execute(
            "SELECT count(*) FROM orders o LEFT JOIN customers c USING (customer_id) WHERE c.customer_id IS NULL"
        ).fetchone()[0]
        == 0
    )
    source.close()


def test_a_self_reference_is_kept_too(tmp_path, home):
    path = tmp_path / "org.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE staff (id INTEGER PRIMARY KEY, boss INTEGER REFERENCES staff (id), name VARCHAR)")
    for level in range(9):  # DuckDB checks the key per statement: one level of the tree at a time
        con.execute(
            "INSERT INTO staff SELECT i, CASE WHEN i = 1 THEN NULL ELSE i // 2 END, 's' || i "
            f"FROM range({2**level}, {min(2 ** (level + 1), 501)}) t(i)"
        )
    con.close()
    variant = ensure_variants(path, [], 1).paths[0]
    con = duckdb.connect(str(variant), read_only=True)
    rows, orphans = con.execute(
        "SELECT count(*), count(*) FILTER (boss IS NOT NULL AND boss NOT IN (SELECT id FROM staff)) FROM staff"
    ).fetchone()
    con.close()
    assert 0 < rows < 500 and orphans == 0  # a kept row's boss was kept, level by level


def test_variants_hold_duplicates_nulls_boundary_values_and_views(shop, home):
    path = _variants(shop).paths[0]
    con = duckdb.connect(str(path), read_only=True)
    duplicated = con.execute(
        "SELECT count(*) FROM (SELECT customer_id, amount, note FROM orders GROUP BY ALL HAVING count(*) > 1)"
    ).fetchone()[0]
    nulls = con.execute(
        "SELECT count(*) FILTER (note IS NULL), count(*) FILTER (amount IS NULL) FROM orders"
    ).fetchone()
    boundary = {
        r[0] for r in con.execute("SELECT DISTINCT amount FROM orders WHERE amount BETWEEN 99 AND 101").fetchall()
    }
    view_rows = con.execute("SELECT count(*) FROM big_orders").fetchone()[0]
    con.close()
    assert duplicated > 0  # copies under a fresh id
    assert nulls[0] > 0 and nulls[1] == 0  # NULLs in the nullable column only
    assert boundary == {99, 100, 101}  # the gold's literal and its neighbours; the source has none of them
    assert view_rows > 0


def test_variants_are_cached_and_a_larger_k_builds_only_the_missing_ones(shop, home):
    first = _variants(shop, 2, seed=5)  # a seed no other test uses: nothing cached yet
    assert not (first.paths[0].parent / "variant-2.duckdb").exists()
    stamps = [p.stat().st_mtime_ns for p in first.paths]
    again = _variants(shop, 3, seed=5)
    assert again.paths[:2] == first.paths
    assert [p.stat().st_mtime_ns for p in again.paths[:2]] == stamps
    assert again.paths[2].is_file()
    assert _variants(shop, 1, seed=6).fingerprint != first.fingerprint  # another seed: other variants
    other = ensure_variants(shop, ["SELECT * FROM orders WHERE amount < 60"], 1, seed=0)
    assert other.fingerprint != first.fingerprint  # other literals: other variants


def _suite(shop: Path, case: Case, count: int = 3) -> VariantSuite:
    suites = build_suites([case], lambda name: shop, count)
    return VariantSuite.from_rows(run_variant_oracle([case], suites, LIMITS), count, LIMITS)


def _verdict(shop: Path, case: Case, candidate_sql: str, suite: VariantSuite | None):
    oracle = [OracleRow(case.id, case.fingerprint, 0, run_query(shop, case.expected_sql[0], LIMITS))]
    attempt = Attempt(
        case.id,
        case.fingerprint,
        SOURCE_MODEL,
        0,
        0,
        candidate_sql,
        policy_allowed=True,
        executed=True,
        result=run_query(shop, candidate_sql, LIMITS),
    )
    [verdict] = judge(
        [case], oracle, [attempt], CompareConfig(), resolve_database=lambda name: shop, limits=LIMITS, suite=suite
    )
    return verdict


def test_a_mutant_execution_accuracy_accepts_is_caught_by_a_variant(shop, home):
    case = _case()
    verdict = _verdict(shop, case, "SELECT count(*) AS n FROM orders WHERE amount > 100", _suite(shop, case))
    assert verdict.correct  # no row sits on the bound in the original database
    assert verdict.test_suite_correct is False
    assert verdict.test_suite_reason.startswith("variant ")
    assert verdict.test_suite_variants == 3


def test_a_correct_rewrite_is_accepted_on_every_variant(shop, home):
    case = _case()
    suite = _suite(shop, case)
    verdict = _verdict(shop, case, "SELECT count(*) AS n FROM orders WHERE 100 <= amount", suite)
    assert verdict.correct and verdict.test_suite_correct is True and verdict.test_suite_reason is None
    check = check_on_variants(
        case, "SELECT count(*) AS n FROM orders WHERE 100 <= amount", suite.variants[case.id], CompareConfig(), LIMITS
    )
    assert check.correct and check.checked == 3


def test_a_wrong_candidate_is_wrong_under_both_without_running_on_variants(shop, home):
    case = _case()
    verdict = _verdict(shop, case, "SELECT count(*) AS n FROM orders", _suite(shop, case))
    assert not verdict.correct and verdict.test_suite_correct is False and verdict.test_suite_reason is None


def test_test_suite_off(shop, home):
    case = _case()
    assert build_suites([case], lambda name: shop, 0) == {}
    verdict = _verdict(shop, case, "SELECT count(*) AS n FROM orders WHERE amount > 100", None)
    assert verdict.correct and verdict.test_suite_correct is None
    scores = score_run([verdict])
    assert scores["test_suite_accuracy"] is None and scores["test_suite_variants"] == 0
    assert scores["test_suite_disagreements"] == []
    # a suite without variants for the case (K=0 rows): test-suite accuracy falls back to execution accuracy
    empty = _verdict(shop, case, "SELECT count(*) AS n FROM orders WHERE amount > 100", VariantSuite.from_rows([], 0))
    assert empty.test_suite_correct is True and empty.test_suite_variants == 0
    assert any("checked on no database variant" in w for w in score_run([empty]).warnings)  # and the scores say so
    assert not any("variant" in w for w in scores.warnings)


def test_a_database_whose_variants_cannot_be_built_is_left_out(tmp_path, home):
    broken = tmp_path / "broken.duckdb"
    broken.write_text("not a database")
    assert build_suites([_case(database="broken")], lambda name: broken, 3) == {}


def test_a_variant_where_the_gold_fails_is_left_out(shop, home):
    case = _case(
        "SELECT count(*) AS n FROM orders WHERE CASE WHEN amount = 99 THEN error('on the bound') ELSE amount >= 100 END"
    )
    suite = _suite(shop, case)
    usable = [v.usable for v in suite.variants[case.id]]
    assert usable.count(False) >= 1  # amount = 99 on every variant: the gold raises there...
    verdict = _verdict(shop, case, case.expected_sql[0], suite)
    assert verdict.test_suite_correct is True and verdict.test_suite_variants == usable.count(True)  # ...and is skipped


def test_scores_report_test_suite_accuracy_the_disagreements_and_grade_rates(shop, home):
    case_a, case_b = _case(case_id="a"), _case(case_id="b")
    suite = _suite(shop, case_a)
    suite.variants["b"] = suite.variants["a"]
    good = _verdict(shop, case_a, GOLD, suite)
    caught = _verdict(shop, case_b, "SELECT count(*) AS n FROM orders WHERE amount > 100", suite)
    wrong = replace(_verdict(shop, case_a, "SELECT 1 AS n", suite), case_id="c")
    scores = score_run([good, caught, wrong])
    assert scores["semantic_correctness_rate"] == pytest.approx(2 / 3)
    assert scores["test_suite_accuracy"] == pytest.approx(1 / 3)
    assert scores["test_suite_variants"] == 3
    assert [d["case_id"] for d in scores["test_suite_disagreements"]] == ["b"]
    assert scores["pass_rate"] == pytest.approx(2 / 3) and scores["fail_rate"] + scores[
        "partial_rate"
    ] == pytest.approx(1 / 3)

    from nl2sql_pipeline.report.console import console_run_report
    from nl2sql_pipeline.report.html import run_html
    from nl2sql_pipeline.report.tables import build_run_report

    report = build_run_report([good, caught, wrong], model="m", gold_set="g")
    text = console_run_report(report)
    assert "test-suite accuracy" in text and "! b: variant" in text and "grades" in text
    page = run_html([report])
    assert "test-suite accuracy" in page and 'class="suite"' in page and "grade pass" in page
    assert "not test-suite correct: variant" in page  # the per-case table says why


@pytest.mark.integration
def test_on_the_built_in_gold_set_tsa_catches_a_mutant_ea_misses_and_never_rejects_gold_echo(home, sample_database):
    from nl2sql_pipeline.generation.offline_provider import OfflineRequest, answer
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.sample_db import ensure_database
    from nl2sql_pipeline.stages import run_oracle

    seed_sample_database(home, sample_database)
    ensure_database()  # current: the copy is used
    cases = load_gold_set("multidomain-v1")
    resolve = case_databases("multidomain-v1")
    suite = VariantSuite.from_rows(run_variant_oracle(cases, build_suites(cases, resolve, 3), LIMITS), 3, LIMITS)
    oracle = run_oracle(cases, resolve, LIMITS)

    def verdicts(model: str, params: dict):
        attempts = []
        for case in cases:
            if not case.is_probe:
                sql, _ = answer(model, OfflineRequest(case.id, case.canonical_sql, 0, 0), params)
                attempts.append(
                    Attempt(
                        case.id,
                        case.fingerprint,
                        SOURCE_MODEL,
                        0,
                        0,
                        sql,
                        policy_allowed=True,
                        executed=True,
                        result=run_query(resolve(case.database), sql, LIMITS),
                    )
                )
        return [
            v for v in judge(cases, oracle, attempts, CompareConfig(), resolve, LIMITS, suite=suite) if not v.is_probe
        ]

    echo = verdicts("gold-echo", {})
    assert echo and all(v.correct and v.test_suite_correct for v in echo)  # never rejects gold-echo
    mutants = verdicts("sql-mutant", {"mutation_rate": 1.0, "seed": 7})
    only_tsa = [v.case_id for v in mutants if v.correct and not v.test_suite_correct]
    assert len(only_tsa) >= 1  # a mutant execution accuracy accepts, test-suite accuracy rejects
    assert not [v for v in mutants if not v.correct and v.test_suite_correct]  # never the other way round


def test_a_stored_run_is_reused_only_for_the_same_number_of_variants():
    from nl2sql_pipeline.runs.reuse import _same_variants

    measured = {"query_count": 96, "test_suite_variants": 3}
    assert _same_variants(measured, 3) and not _same_variants(measured, 0) and not _same_variants(measured, 5)
    assert _same_variants({"query_count": 96, "test_suite_variants": None}, 0)  # a run before test-suite accuracy
    assert not _same_variants({"query_count": 96, "test_suite_variants": None}, 3)
    assert _same_variants({"query_count": 0}, 3)  # probes only: nothing to measure
    assert _same_variants(measured, None)  # callers that do not ask


def test_the_run_command_refuses_a_negative_k(capsys):
    from nl2sql_cli import main as cli

    assert cli.main(["run", "--test-suite-variants", "-1"]) == 2
    assert "--test-suite-variants must be >= 0" in capsys.readouterr().err


def test_stored_variants_must_fit_the_run(shop, home):
    from nl2sql_pipeline.stages.variant_suite import StoredVariantsError, stored_suite

    case = _case()
    rows = run_variant_oracle([case], build_suites([case], lambda name: shop, 2), LIMITS)
    assert stored_suite(rows, 0) is None  # off
    assert len(stored_suite(rows, 2).variants[case.id]) == 2
    assert len(stored_suite(rows, 1).variants[case.id]) == 1  # variant i does not depend on K: a prefix is fine
    with pytest.raises(StoredVariantsError, match="2 variants per database, 3 asked"):
        stored_suite(rows, 3)
    gone = [replace(r, variant_path=str(shop.parent / "gone.duckdb")) for r in rows]
    with pytest.raises(StoredVariantsError, match="missing"):
        stored_suite(gone, 2)


def test_variant_queries_run_on_sandboxes_held_for_the_stage(shop, home, monkeypatch):
    from nl2sql_pipeline.execution import pool

    case = _case()
    suite = _suite(shop, case)
    verdict = _verdict(shop, case, "SELECT count(*) AS n FROM orders WHERE 100 <= amount", None)
    acquired: list[Path] = []
    real_acquire = pool.POOL._acquire
    monkeypatch.setattr(pool.POOL, "_acquire", lambda path, limits: acquired.append(path) or real_acquire(path, limits))
    rewrites = (
        "SELECT count(*) AS n FROM orders WHERE 100 <= amount",
        "SELECT count(*) AS n FROM orders WHERE amount >= 100",
    )
    with suite.held():
        fields = [suite.verdict_fields(case, replace(verdict, generated_sql=sql), CompareConfig()) for sql in rewrites]
    assert all(f["test_suite_correct"] is True and f["test_suite_variants"] == 3 for f in fields)
    variant_paths = {v.path for v in suite.variants[case.id]}
    assert sorted(acquired) == sorted(variant_paths)  # each variant acquired once for both candidates
    assert suite._runner is None  # the hold ended with the block


def test_a_source_schema_named_memory_builds(tmp_path, home):
    """A source schema called ``memory`` builds: an in-memory build instance's catalog has that name, and every
    statement naming the schema was an ambiguous reference (the build instance is file-backed for this)."""
    path = tmp_path / "mem.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("INSERT INTO items SELECT i, 'item ' || i FROM range(1, 101) t(i)")
    con.execute("CREATE SCHEMA memory")
    con.execute("CREATE TABLE memory.notes (id INTEGER, body VARCHAR)")
    con.execute("INSERT INTO memory.notes SELECT i, 'note ' || i FROM range(1, 21) t(i)")
    con.close()
    shared = build_connection()
    try:
        with VariantBuilder(path, shared) as builder:
            builder.build(tmp_path / "shared.duckdb", 1, 0)
        assert shared.execute("SELECT current_database()").fetchone() == (BUILD_CATALOG,)
    finally:
        shared.close()
    build_variant(path, tmp_path / "own.duckdb", 1, 0)
    contents = []
    for name in ("shared", "own"):
        variant = duckdb.connect(str(tmp_path / f"{name}.duckdb"), read_only=True)
        try:
            contents.append(
                [variant.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in ("items", "memory.notes")]
            )
        finally:
            variant.close()
    assert contents[0] == contents[1] and all(contents[0])  # the same variant either way, both tables kept
