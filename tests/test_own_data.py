"""Evaluate on your own data: three DuckDB files (one with its tables only in a non-main schema, none
described by a semantic model) in one gold set, through `nl2sql-eval run`, with scores per database,
category and tag; the introspected prompt; the registry and its commands; the run's input errors."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from eval_support import copy_data, seed_sample_database

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_OK
from nl2sql_cli.main import main
from nl2sql_pipeline import paths


def _build_shop(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name VARCHAR, country VARCHAR)")
        con.execute("COMMENT ON COLUMN customers.country IS 'ISO country code'")
        con.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, "
            "customer_id INTEGER REFERENCES customers(customer_id), amount DOUBLE, status VARCHAR)"
        )
        con.execute("INSERT INTO customers VALUES (1, 'Ada', 'FR'), (2, 'Bo', 'DE'), (3, 'Cy', 'FR')")
        con.execute(
            "INSERT INTO orders VALUES (10, 1, 20.0, 'paid'), (11, 1, 5.5, 'open'), (12, 2, 7.0, 'paid'), "
            "(13, 3, 1.0, 'refunded')"
        )


def _build_warehouse(path: Path) -> None:
    """Tables only in schema ``sales`` (nothing in main)."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA sales")
        con.execute("CREATE TABLE sales.products (product_id INTEGER PRIMARY KEY, label VARCHAR, category VARCHAR)")
        con.execute(
            "CREATE TABLE sales.line_items (item_id INTEGER PRIMARY KEY, "
            "product_id INTEGER REFERENCES sales.products(product_id), quantity INTEGER)"
        )
        con.execute(
            "INSERT INTO sales.products VALUES (1, 'pen', 'office'), (2, 'desk', 'furniture'), (3, 'ink', 'office')"
        )
        con.execute("INSERT INTO sales.line_items VALUES (1, 1, 3), (2, 2, 1), (3, 1, 2), (4, 3, 10)")


def _build_hr(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE departments (dept_id INTEGER PRIMARY KEY, dept_name VARCHAR)")
        con.execute(
            "CREATE TABLE employees (emp_id INTEGER PRIMARY KEY, full_name VARCHAR, "
            "dept_id INTEGER REFERENCES departments(dept_id), salary INTEGER)"
        )
        con.execute("INSERT INTO departments VALUES (1, 'Research'), (2, 'Sales')")
        con.execute("INSERT INTO employees VALUES (1, 'Ann', 1, 100), (2, 'Ben', 1, 90), (3, 'Cat', 2, 80)")


CASES = [
    {
        "id": "shop-1",
        "domain": "retail",
        "category": "aggregation",
        "tags": ["count"],
        "question": "How many customers are there?",
        "database": "shop",
        "expected_sql": "SELECT count(*) AS n FROM customers",
    },
    {
        "id": "shop-2",
        "domain": "retail",
        "category": "join",
        "tags": ["join", "group_by"],
        "question": "Total paid amount per country?",
        "database": "shop",
        "expected_sql": "SELECT c.country, sum(o.amount) AS total FROM orders o JOIN customers c "
        "USING (customer_id) WHERE o.status = 'paid' GROUP BY c.country ORDER BY c.country",
    },
    {
        "id": "wh-1",
        "domain": "warehouse",
        "category": "aggregation",
        "tags": ["group_by"],
        "question": "Units sold per product category?",
        "database": "warehouse",
        "expected_sql": "SELECT p.category, sum(l.quantity) AS units FROM sales.line_items l "
        "JOIN sales.products p USING (product_id) GROUP BY p.category ORDER BY p.category",
    },
    {
        "id": "wh-2",
        "domain": "warehouse",
        "category": "lookup",
        "tags": ["filter"],
        "question": "Which office products exist?",
        "database": "warehouse",
        "expected_sql": "SELECT label FROM sales.products WHERE category = 'office' ORDER BY label",
    },
    {
        "id": "hr-1",
        "domain": "people",
        "category": "join",
        "tags": ["join"],
        "question": "Average salary per department name?",
        "database": "dbs/hr.duckdb",
        "expected_sql": "SELECT d.dept_name, avg(e.salary) AS avg_salary FROM employees e JOIN departments d "
        "USING (dept_id) GROUP BY d.dept_name ORDER BY d.dept_name",
    },
    {
        "id": "hr-probe",
        "domain": "people",
        "category": "policy_rejection",
        "database": "dbs/hr.duckdb",
        "question": "Read the catalog",
        "expected_outcome": "policy_rejection",
        "policy_probe_sql": "SELECT * FROM information_schema.tables",
    },
]


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder (copy of data/) with a gold set over three DuckDB files, and a private storage root."""
    data = copy_data(tmp_path / "data", ignore=["*.jsonl"])
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "files").mkdir()
    _build_shop(tmp_path / "files" / "shop.duckdb")
    (data / "gold" / "dbs").mkdir()
    _build_warehouse(data / "gold" / "dbs" / "warehouse.duckdb")
    _build_hr(data / "gold" / "dbs" / "hr.duckdb")
    (data / "gold" / "own.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (data / "gold" / "gold_sets.yml").write_text(
        "gold_sets:\n"
        "  own-v1:\n"
        "    file: own.jsonl\n"
        "    description: three databases of our own\n"
        "    databases:\n"
        "      warehouse: {file: dbs/warehouse.duckdb}\n",
        encoding="utf-8",
    )
    return tmp_path


def _register_shop(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "register", "shop", str(world / "files" / "shop.duckdb")]) == EXIT_OK
    assert "registered shop" in capsys.readouterr().out


@pytest.mark.e2e
def test_a_gold_set_over_three_databases_runs_end_to_end(
    world: Path, capsys: pytest.CaptureFixture[str], sample_database: Path
) -> None:
    seed_sample_database(world / "home", sample_database)  # what any run builds first (as `make run` did)
    _register_shop(world, capsys)
    assert main(["gold", "validate", str(world / "data" / "gold" / "own.jsonl")]) == EXIT_OK
    out, err = capsys.readouterr()
    assert "checked against dbs/hr.duckdb, shop, warehouse" in out
    assert "database 'shop' has no semantic model: its prompt schema is introspected" in err
    assert "add 'semantic_model: <file>' to its entry in data/databases.yml" in err

    code = main(["run", "--gold-set", "own-v1", "--model", "gold-echo", "--json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    scores = json.loads(out)["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == 5
    assert scores["policy_rejection_recall"] == 1.0
    per_database = json.loads(scores["per_database"])
    assert {k: v["query_count"] for k, v in per_database.items()} == {"dbs/hr.duckdb": 1, "shop": 2, "warehouse": 2}
    assert all(v["semantic_correctness_rate"] == 1.0 for v in per_database.values())
    assert set(json.loads(scores["per_category"])) == {"aggregation", "join", "lookup"}
    per_tag = json.loads(scores["per_tag"])
    assert per_tag["join"]["query_count"] == 2 and per_tag["group_by"]["query_count"] == 2

    # a replay of another system's SQL, scored per case: one right, one wrong, one failing, per database
    predictions = world / "preds.jsonl"
    answers = {c["id"]: c.get("expected_sql") for c in CASES if "expected_sql" in c}
    answers["shop-1"] = "SELECT count(*) - 1 AS n FROM customers"
    answers["wh-2"] = "SELECT label FROM products"  # not qualified: no such table in main
    predictions.write_text("".join(json.dumps({"case_id": k, "sql": v}) + "\n" for k, v in answers.items()))
    with (world / "data" / "models.yml").open("a", encoding="utf-8") as handle:
        handle.write(f"\n  replay:\n    kind: predictions\n    path: {predictions}\n    rerun: never\n")
    code = main(["run", "--gold-set", "own-v1", "--model", "replay", "--json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    scores = json.loads(out)["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == pytest.approx(3 / 5)
    per_database = json.loads(scores["per_database"])
    assert per_database["shop"]["semantic_correctness_rate"] == 0.5
    assert per_database["warehouse"]["sql_execution_success_rate"] == 0.5
    assert per_database["dbs/hr.duckdb"]["semantic_correctness_rate"] == 1.0
    verdicts = {row["case_id"]: row["outcome"] for row in _verdict_rows(world, "own-v1", "replay")}
    assert verdicts["shop-1"] == "wrong_result" and verdicts["wh-1"] == "correct"
    assert verdicts["wh-2"] in ("execution_error", "policy_rejected")


def _verdict_rows(world: Path, gold: str, model: str) -> list[dict]:
    import pandas as pd

    files = sorted((world / "home" / "assets").rglob("*.parquet"))
    frames = [pd.read_parquet(f) for f in files if "case_verdicts" in str(f) and gold in str(f) and model in str(f)]
    assert frames, files
    return frames[-1].to_dict("records")


def test_the_prompt_of_an_undescribed_database_is_introspected(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.generation import prompt_context_for_cases
    from nl2sql_pipeline.gold.registry import case_databases
    from nl2sql_pipeline.semantic_model.introspect import (
        NO_SEMANTIC_MODEL_TEXT,
        estimate_tokens,
        fit_to_budget,
        read_tables,
    )

    _register_shop(world, capsys)
    cases = [case_from_dict(c) for c in CASES]
    context = prompt_context_for_cases(cases, resolve_database=case_databases("own-v1"))
    shop = context.for_case(cases[0])
    assert shop.semantic_text == NO_SEMANTIC_MODEL_TEXT
    text = shop.schema_text
    assert "CREATE TABLE main.customers (" in text and "CREATE TABLE main.orders (" in text
    assert "customer_id INTEGER PRIMARY KEY" in text
    assert "customer_id INTEGER REFERENCES main.customers(customer_id)" in text
    assert "ISO country code" in text
    assert "e.g. 'DE', 'FR'" in text  # distinct, smallest first, deterministic
    assert "e.g. 'open', 'paid', 'refunded'" in text
    warehouse = context.for_case(cases[2]).schema_text
    assert "CREATE TABLE sales.products (" in warehouse and "main." not in warehouse
    assert "product_id INTEGER REFERENCES sales.products(product_id)" in warehouse
    assert estimate_tokens(text) <= 3000

    # a registry entry sets the budget of its database's prompt
    from nl2sql_pipeline.databases.registry import load_database_registry
    from nl2sql_pipeline.databases.resolve import CaseDatabases

    registry = world / "data" / "databases.yml"
    registry.write_text(registry.read_text() + "    prompt_token_budget: 100\n")
    entries = load_database_registry(registry)
    assert entries["shop"].prompt_token_budget == 100
    small = prompt_context_for_cases(cases[:1], resolve_database=CaseDatabases(entries)).for_case(cases[0])
    assert estimate_tokens(small.schema_text) <= 100 and "e.g." not in small.schema_text

    # the budget: values go first, then comments, then whole tables (named)
    tables = read_tables(world / "files" / "shop.duckdb")
    full = fit_to_budget(tables, 10_000)
    no_values = fit_to_budget(tables, estimate_tokens(full) - 1)
    assert "e.g." not in no_values and "ISO country code" in no_values
    tiny = fit_to_budget(tables, 60)
    assert estimate_tokens(tiny) <= 60 and "left out" in tiny
    assert fit_to_budget(tables, 10_000) == full  # deterministic


def test_db_list_info_and_register(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _register_shop(world, capsys)
    assert main(["db", "list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "shop" in out and "anime_platform" in out and "not built" in out
    assert main(["db", "info", "shop"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "schemas: main" in out and "customers" in out and "introspected" in out and "db build" not in out
    assert main(["db", "info", str(world / "data" / "gold" / "dbs" / "warehouse.duckdb")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "schemas: sales" in out and "sales.line_items" in out
    assert "nl2sql-eval db register" in out
    assert main(["db", "register", "shop", str(world / "files" / "shop.duckdb")]) == EXIT_BAD_INPUT
    assert "already registered" in capsys.readouterr().err
    assert main(["db", "register", "nope", str(world / "missing.duckdb")]) == EXIT_BAD_INPUT
    assert "no such database file" in capsys.readouterr().err


def test_run_with_an_invalid_gold_set_exits_2_with_file_and_line(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = world / "data" / "gold" / "own.jsonl"
    gold.write_text(gold.read_text() + '{"id": "bad", "question": "q"}\n', encoding="utf-8")
    code = main(["run", "--gold-set", "own-v1", "--model", "gold-echo"])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert f"{gold}:7: missing required field" in err and "Traceback" not in err + out
    assert main(["gold", "validate", str(gold)]) == EXIT_BAD_INPUT
    assert f"{gold}:7: missing required field" in capsys.readouterr().err


def test_run_with_a_missing_database_file_exits_3_naming_file_and_entry(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _register_shop(world, capsys)
    (world / "files" / "shop.duckdb").unlink()
    code = main(["run", "--gold-set", "own-v1", "--model", "gold-echo"])
    _, err = capsys.readouterr()
    assert code == EXIT_ENVIRONMENT
    assert str(world / "files" / "shop.duckdb") in err and "databases.yml:" in err and "'shop'" in err
    assert "Traceback" not in err


def test_a_case_naming_an_unknown_database_fails_validate_and_run_before_any_work(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo (``shopp``) passed ``gold validate`` with a note to ``db build --name shopp`` (no such sample
    database) and failed the run deep in the preflight (exit 4): both now say it is unknown, as a missing
    database is reported (exit 3), and suggest the registered name."""
    _register_shop(world, capsys)
    gold = world / "data" / "gold" / "own.jsonl"
    gold.write_text(json.dumps(dict(CASES[0], database="shopp")) + "\n", encoding="utf-8")
    message = "unknown database 'shopp' (not in "
    assert main(["gold", "validate", str(gold)]) == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert message in err and "not a sample database; did you mean 'shop'?" in err and "db build" not in err
    assert main(["run", "--gold-set", "own-v1", "--model", "gold-echo"]) == EXIT_ENVIRONMENT
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith("error: gold set 'own-v1': " + message) and "did you mean 'shop'?" in line
    assert "Traceback" not in err + out and not (world / "home" / "dagster_home").exists()
    # a sample database db build knows is still only noted by validate (the run builds it)
    gold.write_text(json.dumps(dict(CASES[0], database="anime_platform")) + "\n", encoding="utf-8")
    assert main(["gold", "validate", str(gold)]) == EXIT_OK
    assert "nl2sql-eval db build --name anime_platform" in capsys.readouterr().err


def test_gold_validate_checks_each_case_against_its_own_database(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _register_shop(world, capsys)
    gold = world / "data" / "gold" / "own.jsonl"
    broken = dict(CASES[2], expected_sql="SELECT count(*) FROM sales.nothing")
    gold.write_text("".join(json.dumps(c) + "\n" for c in [CASES[0], broken]), encoding="utf-8")
    assert main(["gold", "validate", str(gold), "--database", str(world / "files" / "shop.duckdb")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "case 'wh-1'" in err and "sales.nothing" in err and "shop-1" not in err


def test_a_registry_problem_is_located(world: Path) -> None:
    from nl2sql_pipeline.databases.registry import load_database_registry
    from nl2sql_pipeline.errors import ConfigError

    registry = world / "data" / "databases.yml"
    registry.write_text("databases:\n  x:\n    schemas: [information_schema]\n    flie: a.duckdb\n")
    with pytest.raises(ConfigError) as caught:
        load_database_registry(registry)
    assert f"{registry}:4" in str(caught.value) and "unknown key" in str(caught.value)


def test_policy_checks_qualified_tables_and_allowed_schemas(tmp_path: Path) -> None:
    import dataclasses

    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.policy import SQLPolicyEngine, load_policy, read_database_schema
    from nl2sql_pipeline.policy.loader import policy_from_mapping

    path = tmp_path / "warehouse.duckdb"
    _build_warehouse(path)
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE notes (note VARCHAR)")
        con.execute("CREATE SCHEMA hidden")
        con.execute("CREATE TABLE hidden.secrets (s VARCHAR)")
    schema = read_database_schema(path)
    assert schema.schemas == ("main", "hidden", "sales")
    default = load_policy("default")
    engine = SQLPolicyEngine(default, schema)
    assert engine.check("SELECT label, category FROM sales.products WHERE product_id = 1").allowed
    assert engine.check("SELECT p.label FROM sales.products AS p JOIN sales.line_items USING (product_id)").allowed
    assert engine.check("SELECT note FROM main.notes").allowed and engine.check("SELECT note FROM notes").allowed
    for sql, reason in [
        ("SELECT * FROM information_schema.tables", "system catalog"),
        ("SELECT * FROM pg_catalog.pg_class", "system catalog"),
        ("SELECT * FROM sales.nothing", "does not exist"),
        ("SELECT * FROM other.products", "outside the allowed schemas"),
        ("SELECT * FROM products", "does not exist"),  # not in main: must be qualified
    ]:
        decision = engine.check(sql)
        assert not decision.allowed and reason in decision.reason, (sql, decision)

    # the registry exposes fewer schemas; a policy narrows them further
    exposed = SQLPolicyEngine(default, read_database_schema(path, ("main", "sales")))
    assert "outside the allowed schemas" in exposed.check("SELECT s FROM hidden.secrets").reason
    narrow = SQLPolicyEngine(dataclasses.replace(default, allowed_schemas=("main",)), schema)
    assert "outside the allowed schemas" in narrow.check("SELECT label FROM sales.products").reason
    assert narrow.check("SELECT note FROM notes").allowed
    only_sales = SQLPolicyEngine(dataclasses.replace(default, allowed_schemas=("sales",)), schema)
    assert "not in the policy's allowed_schemas" in only_sales.check("SELECT note FROM notes").reason

    data = {**default.to_dict(), "allowed_schemas": ["main", "sales"]}
    assert policy_from_mapping(data).allowed_schemas == ("main", "sales")
    assert "allowed_schemas" not in default.to_dict()  # a policy without it keeps its content hash
    with pytest.raises(ConfigError, match="system catalog schema"):
        policy_from_mapping({**data, "allowed_schemas": ["information_schema"]})


def test_the_sample_database_entry_keeps_the_built_in_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry entry anime_platform (sample: true, semantic_model) gives the prompt the built-in
    set always had: the generation cache keys depend on it."""
    from nl2sql_pipeline.databases.resolve import CaseDatabases, DatabaseKind
    from nl2sql_pipeline.generation.prompt_context import build_prompt_context, clear_prompt_context_memo
    from nl2sql_pipeline.sample_db import build_database
    from nl2sql_pipeline.semantic_model import load_semantic_model

    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    resolver = CaseDatabases.from_registry()
    resolved = resolver.resolve("anime_platform")
    assert resolved.kind is DatabaseKind.SAMPLE and resolved.entry is not None
    assert resolved.path == paths.database_path("anime_platform")
    build_database(resolved.path, scale=0.01)
    clear_prompt_context_memo()
    through_registry = build_prompt_context(["anime_platform"], resolve_database=resolver)
    legacy = build_prompt_context(
        ["anime_platform"], resolve_database=lambda name: resolved.path, semantic_model=load_semantic_model()
    )
    assert through_registry == legacy
    assert "CREATE TABLE users" in through_registry.databases["anime_platform"].schema_text


def test_introspection_reads_no_file_through_a_view(tmp_path: Path) -> None:
    from nl2sql_pipeline.semantic_model.introspect import read_tables

    secret = tmp_path / "secret.csv"
    secret.write_text("token\nsuper-secret-value\n")
    path = tmp_path / "hostile.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE VIEW leak AS SELECT * FROM read_csv('{secret}')")
        con.execute("CREATE TABLE kept (label VARCHAR)")
        con.execute("INSERT INTO kept VALUES ('x')")
    tables = {t.qualified: t for t in read_tables(path)}
    assert tables["main.kept"].columns[0].samples == ["x"]
    assert all(not c.samples for c in tables["main.leak"].columns)  # listed, never read
