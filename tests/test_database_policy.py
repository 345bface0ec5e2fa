"""Policies per database (issue 18 item 3): the sample database keeps ``default``, any other database gets the
safety-only ``safety`` unless its registry entry names a policy, a case's own ``sql_policy`` and the run's
override win, the policy of each database is part of the run identity, and ``gold import`` checks the kept
gold against the policy its database will run under."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from nl2sql_cli.main import main
from nl2sql_pipeline.cases import Case, case_from_dict
from nl2sql_pipeline.databases.registry import load_database_registry, register_database
from nl2sql_pipeline.databases.resolve import CaseDatabases
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.gold.formats import import_benchmark
from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
from nl2sql_pipeline.policy import SQLPolicyEngine, load_policy, policies_hash, read_database_schema
from nl2sql_pipeline.policy.gate import FROM_CASE, FROM_DATABASE, FROM_OVERRIDE, PolicyGate, case_policy
from nl2sql_pipeline.runs.identity import cases_policy_hash

SHOP_DDL = """
CREATE TABLE customers (customer_id INTEGER, name VARCHAR, email VARCHAR, country VARCHAR);
CREATE TABLE orders (order_id INTEGER, customer_id INTEGER, amount INTEGER);
INSERT INTO customers VALUES (1, 'Ann', 'ann@example.com', 'FR'), (2, 'Bo', 'bo@example.com', 'SE');
INSERT INTO orders VALUES (10, 1, 5), (11, 2, 7), (12, 2, 9);
"""
# what `default` (written for the sample database) refuses and `safety` allows: a cartesian product
# and a column named like the sample's denied `users.email`
CARTESIAN = "SELECT c.name, o.amount FROM customers c, orders o"
CROSS_JOIN = "SELECT c.name, o.order_id FROM customers c CROSS JOIN orders o"
EMAIL_LIKE = "SELECT name, email FROM customers"
# what any policy refuses, whatever the schema
UNSAFE = {
    "DROP TABLE customers": "read_only",
    "INSERT INTO orders VALUES (13, 1, 1)": "read_only",
    "SELECT table_name FROM information_schema.tables": "table_scope",
    "SELECT * FROM duckdb_tables()": "table_scope",
    "SELECT getenv('HOME')": "denied_function",
    "SELECT * FROM read_csv('/etc/passwd')": "table_scope",
}
STRICT_POLICY = (
    "name: strict\nallowed_tables: '*'\ndenied_columns: [orders.amount]\nmax_limit: 100\nmax_joins: 2\n"
    "forbid_cartesian: true\ndenied_functions: []\nallowed_table_functions: []\n"
)


def _shop(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute(SHOP_DDL)
    return path


def _case(database: str, **fields: object) -> Case:
    return case_from_dict(
        {
            "id": "c1",
            "domain": "d",
            "category": "single_table",
            "question": "q",
            "database": database,
            "expected_sql": "SELECT 1",
            **fields,
        }
    )


def _decide(gate: PolicyGate, case: Case, sql: str) -> tuple[bool, str | None, str]:
    decision = gate.check(case, sql)
    return decision.allowed, decision.rule, decision.policy_name


# ---- the sample database keeps `default` -----------------------------------------------------------


@pytest.mark.parametrize("gold_set", ["multidomain-v1", "multidomain-v2"])
def test_the_built_in_sets_keep_the_default_policy_and_their_policy_hash(gold_set: str, seeded_home: Path) -> None:
    cases = load_gold_set(gold_set)
    resolver = case_databases(gold_set)
    assert {case_policy(c, resolver) for c in cases} == {case_policy(cases[0], resolver)}
    assert case_policy(cases[0], resolver).name == "default"
    assert all(c.sql_policy is None and "sql_policy" not in c.to_dict() for c in cases)  # the JSONL is unchanged
    # the run identity's policy hash is the one every stored run of these sets carries
    assert cases_policy_hash(cases, None, resolver) == policies_hash(["default"])
    assert cases_policy_hash(cases, "safety", resolver) == policies_hash(["safety"])


def test_a_probe_only_default_refuses_is_still_refused_on_the_sample_database(seeded_home: Path) -> None:
    cases = {c.id: c for c in load_gold_set("multidomain-v1")}
    resolver = case_databases("multidomain-v1")
    gate = PolicyGate(resolver)
    safety = SQLPolicyEngine(load_policy("safety"), read_database_schema(resolver("anime_platform")))
    refused_by_default_only = [
        c
        for c in cases.values()
        if c.is_probe and safety.check(c.policy_probe_sql or "").allowed  # safety lets it through ...
    ]
    assert refused_by_default_only, "the built-in set has probes only the sample's own rules refuse"
    for case in refused_by_default_only:  # ... and the sample database's policy still refuses it
        allowed, rule, name = _decide(gate, case, case.policy_probe_sql or "")
        assert not allowed and name == "default", (case.id, rule)
    assert {_decide(gate, c, c.policy_probe_sql or "")[1] for c in refused_by_default_only} >= {"column_scope"}
    # and every probe of the set is refused, as before
    assert all(not gate.check(c, c.policy_probe_sql or "").allowed for c in cases.values() if c.is_probe)


def test_a_case_without_sql_policy_round_trips_without_one_and_keeps_its_fingerprint() -> None:
    plain, explicit = _case("anime_platform"), _case("anime_platform", sql_policy="default")
    assert plain.sql_policy is None and "sql_policy" not in plain.to_dict()
    assert explicit.sql_policy == "default" and explicit.to_dict()["sql_policy"] == "default"
    assert case_from_dict(json.loads(plain.to_json())) == plain
    assert plain.fingerprint == explicit.fingerprint  # the policy is not part of a case's definition


# ---- any other database: `safety`, or the registry entry's policy ----------------------------------


def test_a_registered_database_without_a_policy_gets_safety(data_copy: Path, tmp_path: Path) -> None:
    shop = _shop(tmp_path / "dbs" / "shop.duckdb")
    entry = register_database("shop", shop)
    assert entry.policy == "safety" and entry.effective_policy == "safety"
    assert "    policy: " in (data_copy / "databases.yml").read_text()  # recorded, so the registry shows it
    # an entry written by hand without `policy:` (a registry from before) gets safety too
    registry = data_copy / "databases.yml"
    registry.write_text(registry.read_text() + f"  shop_by_hand:\n    file: {shop}\n")
    resolver = CaseDatabases.from_registry()
    assert resolver.policy_of("shop_by_hand") == "safety" and resolver.policy_of("anime_platform") == "default"
    gate = PolicyGate(resolver)
    for name in ("shop", "shop_by_hand"):
        case = _case(name)
        assert case_policy(case, resolver).origin == FROM_DATABASE
        for sql in (CARTESIAN, CROSS_JOIN, EMAIL_LIKE):
            assert _decide(gate, case, sql) == (True, None, "safety"), sql
        for sql, rule in UNSAFE.items():
            assert _decide(gate, case, sql) == (False, rule, "safety"), sql
    # the same queries over the sample database are refused by its own policy
    sample = _case("anime_platform")
    assert _decide(gate, sample, "SELECT a.title, g.name FROM anime a CROSS JOIN genres g")[:2] == (
        False,
        "cartesian_join",
    )
    assert _decide(gate, sample, "SELECT email FROM users")[:2] == (False, "column_scope")


def test_a_database_named_by_its_file_gets_safety_or_the_policy_registered_for_that_file(
    data_copy: Path, tmp_path: Path
) -> None:
    shop = _shop(tmp_path / "gold" / "databases" / "shop.duckdb")
    resolver = CaseDatabases.from_registry(base_dir=tmp_path / "gold")
    assert resolver.policy_of("databases/shop.duckdb") == "safety"
    strict = tmp_path / "strict.yml"
    strict.write_text(STRICT_POLICY)
    register_database("shop", shop, policy=str(strict))
    resolver = CaseDatabases.from_registry(base_dir=tmp_path / "gold")
    assert resolver.policy_of("databases/shop.duckdb") == str(strict)  # as an imported gold set names it
    gate = PolicyGate(resolver)
    assert _decide(gate, _case("databases/shop.duckdb"), "SELECT amount FROM orders")[:2] == (False, "column_scope")


def test_a_policy_file_in_the_registry_applies(data_copy: Path, tmp_path: Path, capsys) -> None:
    shop = _shop(tmp_path / "dbs" / "shop.duckdb")
    (tmp_path / "strict.yml").write_text(STRICT_POLICY)
    code = main(["db", "register", "shop", str(shop), "--policy", str(tmp_path / "strict.yml")])
    assert code == EXIT_OK and "policy " + str(tmp_path / "strict.yml") in capsys.readouterr().out
    assert load_database_registry()["shop"].policy == str(tmp_path / "strict.yml")
    # a relative file in an entry is relative to the registry file
    (data_copy / "policies_own").mkdir()
    (data_copy / "policies_own" / "strict.yml").write_text(STRICT_POLICY)
    registry = data_copy / "databases.yml"
    registry.write_text(registry.read_text() + f"  shop_rel:\n    file: {shop}\n    policy: policies_own/strict.yml\n")
    resolver = CaseDatabases.from_registry()
    assert resolver.policy_of("shop_rel") == str((data_copy / "policies_own" / "strict.yml").resolve())
    gate = PolicyGate(resolver)
    for name in ("shop", "shop_rel"):
        assert _decide(gate, _case(name), "SELECT amount FROM orders")[:2] == (False, "column_scope")
        assert _decide(gate, _case(name), CROSS_JOIN)[:2] == (False, "cartesian_join")
        assert _decide(gate, _case(name), "SELECT name FROM customers")[0]
    # a name of data/policies/ works the same way
    registry.write_text(registry.read_text() + f"  shop_default:\n    file: {shop}\n    policy: default\n")
    assert CaseDatabases.from_registry().policy_of("shop_default") == "default"


def test_an_unknown_policy_is_refused_where_it_is_named(data_copy: Path, tmp_path: Path, capsys) -> None:
    shop = _shop(tmp_path / "dbs" / "shop.duckdb")
    before = (data_copy / "databases.yml").read_text()
    assert main(["db", "register", "shop", str(shop), "--policy", "no_such_policy"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "unknown policy 'no_such_policy'" in err and err.count("\n") == 1
    assert (data_copy / "databases.yml").read_text() == before  # nothing written
    (data_copy / "databases.yml").write_text(before + f"  shop:\n    file: {shop}\n    policy: missing.yml\n")
    with pytest.raises(ConfigError, match=r"databases\.yml:\d+: key 'databases\.shop\.policy'"):
        load_database_registry()


# ---- resolution order -------------------------------------------------------------------------------


def test_a_cases_own_sql_policy_wins_and_the_run_override_wins_over_both(data_copy: Path, tmp_path: Path) -> None:
    register_database("shop", _shop(tmp_path / "dbs" / "shop.duckdb"))
    resolver = CaseDatabases.from_registry()
    own = _case("shop", sql_policy="default")  # the gold file names the sample's policy for this case
    assert case_policy(own, resolver) == case_policy(own, None)
    assert case_policy(own, resolver).origin == FROM_CASE
    gate = PolicyGate(resolver)
    assert _decide(gate, own, CARTESIAN)[:2] == (False, "cartesian_join")
    assert _decide(gate, _case("shop"), CARTESIAN) == (True, None, "safety")
    # `run --policy` replaces every case's policy, its own and its database's
    loose = PolicyGate(resolver, policy_override="safety")
    assert case_policy(own, resolver, "safety").origin == FROM_OVERRIDE
    assert _decide(loose, own, CARTESIAN) == (True, None, "safety")
    assert _decide(loose, _case("anime_platform"), "SELECT email FROM users") == (True, None, "safety")


def test_the_policy_of_each_database_is_part_of_the_run_identity(data_copy: Path, tmp_path: Path) -> None:
    shop = _shop(tmp_path / "dbs" / "shop.duckdb")
    (tmp_path / "strict.yml").write_text(STRICT_POLICY)
    register_database("shop", shop)
    register_database("shop2", shop, policy=str(tmp_path / "strict.yml"))
    cases = [_case("anime_platform"), _case("shop"), _case("shop2")]
    first = cases_policy_hash(cases, None, CaseDatabases.from_registry())
    # the same two policies, but the databases swap them: another version
    registry = data_copy / "databases.yml"
    text = registry.read_text()
    swapped = text.replace('policy: "safety"', "policy: SWAP").replace(
        f'policy: "{tmp_path / "strict.yml"}"', 'policy: "safety"'
    )
    registry.write_text(swapped.replace("policy: SWAP", f'policy: "{tmp_path / "strict.yml"}"') + "# swapped\n")
    assert load_database_registry()["shop"].policy == str(tmp_path / "strict.yml")
    assert cases_policy_hash(cases, None, CaseDatabases.from_registry()) != first
    # a changed policy file is a new version too
    registry.write_text(text)
    (tmp_path / "strict.yml").write_text(STRICT_POLICY.replace("max_limit: 100", "max_limit: 200"))
    assert cases_policy_hash(cases, None, CaseDatabases.from_registry()) != first


# ---- gold import -------------------------------------------------------------------------------------


def _plain_source(folder: Path) -> Path:
    _shop(folder / "shop.duckdb")
    rows = [
        {"question": "Every name with every order?", "sql": CROSS_JOIN, "database": "shop"},
        {"question": "Emails?", "sql": EMAIL_LIKE, "database": "shop"},
        {"question": "Total amount?", "sql": "SELECT sum(amount) AS total FROM orders", "database": "shop"},
        {
            "question": "How many tables?",
            "sql": "SELECT count(*) AS n FROM information_schema.tables",
            "database": "shop",
        },
    ]
    (folder / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder / "q.jsonl"


def test_the_import_report_lists_kept_gold_that_the_databases_policy_refuses(tmp_path: Path) -> None:
    out = tmp_path / "gold" / "shop.jsonl"
    result = import_benchmark("plain", _plain_source(tmp_path / "src"), out)
    assert [q.status for q in result.queries] == ["runs"] * 4 and len(result.cases) == 4  # all kept
    # under `safety` only the catalog read is refused: the cartesian product and the email column are fine
    assert [q.case_id for q in result.refused_queries] == ["q-4"]
    assert result.refused_queries[0].policy.startswith("table_scope: information_schema.tables is a system catalog")
    assert "1 kept query refused by its database's policy (safety)" in result.summary()
    report = json.loads(result.report_path.read_text())
    assert report["summary"]["kept_queries_refused_by_policy"] == 1
    assert report["summary"]["policies"] == {"shop": "safety"}
    assert report["databases"][0]["policy"] == "safety"


def test_gold_import_register_records_the_policy_and_lists_what_it_refuses(
    data_copy: Path, tmp_path: Path, capsys
) -> None:
    source = _plain_source(tmp_path / "src")
    (tmp_path / "strict.yml").write_text(STRICT_POLICY)
    out = tmp_path / "gold" / "shop.jsonl"
    argv = ["gold", "import", str(source), "--out", str(out), "--format", "plain"]
    assert main([*argv, "--policy", str(tmp_path / "strict.yml")]) == EXIT_BAD_INPUT  # needs --register
    assert "--policy" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--register", "--policy", str(tmp_path / "strict.yml")]) == EXIT_OK
    captured = capsys.readouterr()
    refused = [line for line in captured.err.splitlines() if line.startswith("kept but refused")]
    assert len(refused) == 3, captured.err  # the cartesian product, sum(amount) and the catalog read
    assert any("q-1[0]" in line and "cartesian_join" in line for line in refused)
    assert any("q-3[0]" in line and "column_scope" in line and "orders.amount" in line for line in refused)
    assert f"registered shop -> {out.parent / 'databases' / 'shop.duckdb'} (policy {tmp_path / 'strict.yml'})" in (
        captured.out
    )
    assert load_database_registry()["shop"].policy == str(tmp_path / "strict.yml")
    report = json.loads((out.parent / "shop.import-report.json").read_text())
    assert report["summary"]["kept_queries_refused_by_policy"] == 3
    # the imported cases name the copy by its file: the run finds the policy registered for that file
    resolver = CaseDatabases.from_registry(base_dir=out.parent)
    assert resolver.policy_of("databases/shop.duckdb") == str(tmp_path / "strict.yml")
    # importing again: the registered policy is the one checked (and kept), whatever --policy says
    assert main([*argv, "--register"]) == EXIT_OK
    captured = capsys.readouterr()
    assert "already registered: shop (policy " + str(tmp_path / "strict.yml") + ")" in captured.out
    assert len([line for line in captured.err.splitlines() if line.startswith("kept but refused")]) == 3


# ---- the commands show it -----------------------------------------------------------------------------


def test_policy_list_and_db_list_show_each_databases_policy(data_copy: Path, tmp_path: Path, capsys) -> None:
    register_database("shop", _shop(tmp_path / "dbs" / "shop.duckdb"))
    assert main(["policy", "list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "safety  (" in out and "default  (" in out
    assert "refuses writes, catalogs and files, and: nothing more (safety rules only)" in out
    assert "columns users.email" in out and "cartesian products" in out
    assert main(["policy", "list", "--json"]) == EXIT_OK
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["safety"]["databases"] == ["shop"] and rows["default"]["databases"] == ["anime_platform"]
    assert rows["safety"]["denied_columns"] == [] and rows["safety"]["forbid_cartesian"] is False
    assert main(["db", "list"]) == EXIT_OK
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "policy=safety" in listed["shop"] and "policy=default" in listed["anime_platform"]
    assert main(["db", "info", "shop", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["policy"] == "safety"
    # `policy check` without --policy decides by the database's own policy
    assert main(["policy", "check", "--database", "shop", "--sql", EMAIL_LIKE]) == EXIT_OK
    assert capsys.readouterr().out.startswith("ALLOWED by policy safety")
    assert main(["policy", "check", "--database", "anime_platform", "--sql", "SELECT email FROM users"]) == 1
    assert "REJECTED by policy default, rule column_scope" in capsys.readouterr().out
