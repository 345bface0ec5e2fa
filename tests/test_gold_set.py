"""The built-in gold set multidomain-v1: determinism, composition, SQL structure, and behaviour on data.

SQL facts are checked on the syntax tree (sqlglot) or by executing on a database built once per session
at the builder's default seed and scale, never by trusting the templates' own tags.
"""

from __future__ import annotations

import collections
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
import yaml
from sqlglot import exp

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case, case_from_dict
from nl2sql_pipeline.gold.builtin import generator
from nl2sql_pipeline.gold.builtin.generator import (
    CATEGORY_PLAN,
    DOMAIN_PREFIXES,
    TAG_VOCABULARY,
    GoldTemplateError,
    generate_multidomain_v1,
    render_jsonl,
    write_builtin_gold,
)

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = pytest.mark.xdist_group("gold_set")

CHECKED_IN = paths.PROJECT_ROOT / "data" / "gold" / "nl2sql_multidomain.jsonl"
REGISTRY = paths.PROJECT_ROOT / "data" / "gold" / "gold_sets.yml"
MAX_ROWS = 400
DIALECT = "duckdb"


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return generate_multidomain_v1()


@pytest.fixture(scope="module")
def query_cases(cases: list[Case]) -> list[Case]:
    return [case for case in cases if not case.is_probe]


@pytest.fixture(scope="session")
def sample_db(sample_database: Path) -> Path:
    """The session's built sample database (opened read-only here)."""
    return sample_database


@pytest.fixture(scope="module")
def con(sample_db: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(sample_db), read_only=True)
    yield connection
    connection.close()


def parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, dialect=DIALECT)


def has_top_level_order(tree: exp.Expression) -> bool:
    return tree.args.get("order") is not None


def comparable(tree: exp.Expression, rows: list[tuple[Any, ...]]) -> list[Any]:
    """Rows as compared by a grader: in order when the query orders them, else as a sorted multiset."""
    return list(rows) if has_top_level_order(tree) else sorted(rows, key=repr)


def skeleton(sql: str) -> str:
    stripped = parse(sql).transform(lambda n: exp.Placeholder() if isinstance(n, exp.Literal) else n)
    return stripped.sql(dialect=DIALECT, normalize=True)


def conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    inner = condition.this if isinstance(condition, exp.Paren) else condition
    if isinstance(inner, exp.And):
        return conjuncts(inner.this) + conjuncts(inner.expression)
    return [condition]


def _nth(tree: exp.Expression, kind: type | tuple[type, ...], index: int) -> exp.Expression:
    return [node for node in tree.walk() if isinstance(node, kind)][index]


def mutations(sql: str) -> list[tuple[str, str]]:
    """Plausible mistakes: drop one WHERE/HAVING/FILTER predicate, swap an aggregate, INNER -> LEFT JOIN."""
    tree = parse(sql)
    out: list[tuple[str, str]] = []

    for kind in (exp.Where, exp.Having):
        for i, clause in enumerate(node for node in tree.walk() if isinstance(node, kind)):
            for j, predicate in enumerate(conjuncts(clause.this)):
                mutant = tree.copy()
                target = _nth(mutant, kind, i)
                rest = [p.copy() for k, p in enumerate(conjuncts(target.this)) if k != j]
                if rest:
                    target.set("this", exp.and_(*rest))
                elif isinstance(target.parent, exp.Filter):
                    target.parent.replace(target.parent.this.copy())
                else:
                    target.pop()
                out.append((f"drop {kind.__name__} predicate {predicate.sql(DIALECT)}", mutant.sql(DIALECT)))

    swaps: dict[type, type] = {exp.Sum: exp.Avg, exp.Avg: exp.Sum, exp.Min: exp.Max, exp.Max: exp.Min}
    aggregates = (exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Count)
    for i, agg in enumerate(node for node in tree.walk() if isinstance(node, aggregates)):
        mutant = tree.copy()
        target = _nth(mutant, aggregates, i)
        if isinstance(target, exp.Count):
            if not isinstance(target.this, exp.Distinct):
                continue
            target.set("this", target.this.expressions[0].copy())
            out.append(("COUNT(DISTINCT) -> COUNT", mutant.sql(DIALECT)))
        else:
            target.replace(swaps[type(target)](this=target.this.copy()))
            out.append((f"{type(agg).__name__} -> {swaps[type(agg)].__name__}", mutant.sql(DIALECT)))

    for i, join in enumerate(node for node in tree.walk() if isinstance(node, exp.Join)):
        if join.side or (join.kind and join.kind.upper() != "INNER"):
            continue
        mutant = tree.copy()
        target = _nth(mutant, exp.Join, i)
        target.set("kind", None)
        target.set("side", "LEFT")
        out.append((f"LEFT JOIN {join.this.sql(DIALECT)}", mutant.sql(DIALECT)))
    return out


def find(tree: exp.Expression, predicate: Callable[[exp.Expression], bool]) -> bool:
    return any(predicate(node) for node in tree.walk())


# ---------------------------------------------------------------- determinism and files


def test_regeneration_is_byte_identical_to_checked_in_file(tmp_path: Path) -> None:
    expected = CHECKED_IN.read_bytes()
    assert render_jsonl(generate_multidomain_v1()).encode("utf-8") == expected
    written = write_builtin_gold(tmp_path / "out" / "gold.jsonl")
    assert written.read_bytes() == expected
    assert b"\r" not in expected and expected.endswith(b"\n")
    expected.decode("utf-8")  # valid UTF-8


def test_write_builtin_gold_defaults_to_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.DATA_ENV_VAR, str(tmp_path))
    written = write_builtin_gold()
    assert written == tmp_path.resolve() / "gold" / "nl2sql_multidomain.jsonl"
    assert written.read_bytes() == CHECKED_IN.read_bytes()


def test_lines_round_trip_through_case_contract(cases: list[Case]) -> None:
    lines = CHECKED_IN.read_text(encoding="utf-8").splitlines()
    assert [case_from_dict(json.loads(line)) for line in lines] == cases


def test_seed_drives_choices_and_nothing_else(cases: list[Case]) -> None:
    again = generate_multidomain_v1()
    other = generate_multidomain_v1(seed=7)
    assert again == cases
    assert [c.id for c in other] == [c.id for c in cases]
    changed = [c.id for c, o in zip(cases, other) if c.question != o.question]
    assert changed, "a different seed should pick different literals for some templates"
    assert all(c.tags == o.tags and c.category == o.category for c, o in zip(cases, other))


def test_registry_lists_the_builtin_set() -> None:
    registry = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    entry = registry["gold_sets"]["multidomain-v1"]
    assert entry["file"] == CHECKED_IN.name
    assert (REGISTRY.parent / entry["file"]).is_file()
    assert "120" in entry["description"]


# ---------------------------------------------------------------- composition


def test_composition_per_domain_and_category(cases: list[Case]) -> None:
    counts = collections.Counter((c.domain, c.category) for c in cases)
    expected = {(d, cat): n for d in DOMAIN_PREFIXES for cat, (_, n) in CATEGORY_PLAN.items()}
    assert dict(counts) == expected
    assert len(cases) == 120
    assert {CATEGORY_PLAN[cat][1] for cat in CATEGORY_PLAN} == {10, 8, 6, 4}


def test_ids_and_common_fields(cases: list[Case]) -> None:
    assert len({c.id for c in cases}) == len(cases)
    for case in cases:
        prefix, infix = DOMAIN_PREFIXES[case.domain], CATEGORY_PLAN[case.category][0]
        assert case.id.startswith(f"{prefix}-{infix}-"), case.id
        assert case.database == "anime_platform" and case.semantic_model == "anime_platform"
        assert case.difficulty in {"easy", "medium", "hard"}
        assert case.tags and set(case.tags) <= set(TAG_VOCABULARY), case.id
    assert {"content-single-01", "engagement-time-03", "monetization-probe-08"} <= {c.id for c in cases}
    assert {c.difficulty for c in cases} == {"easy", "medium", "hard"}


def test_follow_up_cases_carry_context(cases: list[Case]) -> None:
    for case in cases:
        if case.category != "follow_up":
            assert not case.follow_up_context, case.id
            continue
        assert case.follow_up_context, case.id
        for turn in case.follow_up_context:
            assert turn.question.strip() and parse(turn.sql) is not None
        # The final turn depends on the context, so it differs from the last earlier answer.
        assert skeleton(case.canonical_sql) != skeleton(case.follow_up_context[-1].sql), case.id


def test_candidate_selection_on_a_handful_of_cases(cases: list[Case]) -> None:
    selected = [c for c in cases if c.candidate_selection is not None]
    assert 5 <= len(selected) <= 7
    assert all(isinstance(c.candidate_selection, int) and c.candidate_selection >= 2 for c in selected)
    assert {c.domain for c in selected} == set(DOMAIN_PREFIXES)
    assert not any(c.is_probe for c in selected)


def test_rejection_cases_cover_every_policy_rule(cases: list[Case]) -> None:
    probes = [c for c in cases if c.category == "policy_rejection"]
    assert len(probes) == 24
    kinds: set[str] = set()
    for case in probes:
        assert case.is_probe and case.policy_probe_sql and not case.expected_sql, case.id
        sql = case.policy_probe_sql
        types = {str(s.type).split(".")[-1] for s in duckdb.extract_statements(sql)}
        lowered = sql.lower()
        if types & {"DELETE", "UPDATE", "INSERT"}:
            kinds.add("write")
        if types & {"DROP", "CREATE", "ALTER"}:
            kinds.add("ddl")
        if "information_schema" in lowered or "duckdb_settings()" in lowered:
            kinds.add("out_of_scope")
        if ".email" in lowered or "email from users" in lowered or "select * from users" in lowered:
            kinds.add("sensitive_column")
        tree = parse(sql.split(";")[0])
        limit = tree.args.get("limit") if isinstance(tree, exp.Select) else None
        if limit is not None and int(limit.expression.name) > 1000:
            kinds.add("row_limit")
        if "read_csv" in lowered or "read_parquet" in lowered or "'/etc/passwd'" in lowered:
            kinds.add("file_access")
        if types & {"ATTACH", "COPY", "LOAD"}:  # INSTALL parses as a LOAD statement
            kinds.add("external_access")
        if len(duckdb.extract_statements(sql)) > 1 and "--" in sql:
            kinds.add("multi_statement")
        if isinstance(tree, exp.Select) and find(
            tree, lambda n: isinstance(n, exp.CTE) and isinstance(n.this, (exp.Delete, exp.Update, exp.Insert))
        ):
            kinds.add("data_modifying_cte")
    assert kinds == {
        "write",
        "ddl",
        "out_of_scope",
        "sensitive_column",
        "row_limit",
        "file_access",
        "external_access",
        "multi_statement",
        "data_modifying_cte",
    }
    # users.email directly, through an alias, and through SELECT * from users
    trees = [parse(c.policy_probe_sql.split(";")[0]) for c in probes]
    assert any(
        find(t, lambda n: isinstance(n, exp.Alias) and isinstance(n.this, exp.Column) and n.this.name == "email")
        for t in trees
    )
    assert any(
        find(t, lambda n: isinstance(n, exp.Select) and isinstance(n.expressions[0], exp.Star))
        and find(t, lambda n: isinstance(n, exp.Table) and n.name == "users")
        for t in trees
    )


# ---------------------------------------------------------------- SQL structure (syntax tree)


def test_no_two_query_cases_of_a_domain_share_a_skeleton(query_cases: list[Case]) -> None:
    seen: dict[tuple[str, str], str] = {}
    for case in query_cases:
        key = (case.domain, skeleton(case.canonical_sql))
        assert key not in seen, f"{case.id} has the same SQL skeleton as {seen.get(key)}"
        seen[key] = case.id


def test_construct_coverage(query_cases: list[Case]) -> None:
    trees = [parse(c.canonical_sql) for c in query_cases]

    def anywhere(predicate: Callable[[exp.Expression], bool]) -> bool:
        return any(find(tree, predicate) for tree in trees)

    def window_of(kind: type) -> Callable[[exp.Expression], bool]:
        return lambda n: isinstance(n, exp.Window) and isinstance(n.this, kind)

    def date_literal(n: exp.Expression) -> bool:
        return (
            isinstance(n, exp.Cast) and isinstance(n.this, exp.Literal) and n.to.is_type(*exp.DataType.TEMPORAL_TYPES)
        )

    coverage = {
        "bridge multi-hop": any(
            any(t.name == "anime_genres" for t in tree.find_all(exp.Table)) and len(list(tree.find_all(exp.Join))) >= 2
            for tree in trees
        ),
        "RANK": anywhere(window_of(exp.Rank)),
        "ROW_NUMBER": anywhere(window_of(exp.RowNumber)),
        "LAG": anywhere(window_of(exp.Lag)),
        "running sum": anywhere(
            lambda n: isinstance(n, exp.Window) and isinstance(n.this, exp.Sum) and n.args.get("order") is not None
        ),
        "HAVING": anywhere(lambda n: isinstance(n, exp.Having)),
        "scalar subquery": anywhere(
            lambda n: isinstance(n, exp.Subquery) and not isinstance(n.parent, (exp.From, exp.Join, exp.In))
        ),
        "IN subquery": anywhere(lambda n: isinstance(n, exp.In) and n.args.get("query") is not None),
        "EXISTS": anywhere(lambda n: isinstance(n, exp.Exists)),
        "CASE": anywhere(lambda n: isinstance(n, exp.Case)),
        "COUNT DISTINCT": anywhere(lambda n: isinstance(n, exp.Count) and isinstance(n.this, exp.Distinct)),
        "IS NULL": anywhere(lambda n: isinstance(n, exp.Is) and isinstance(n.expression, exp.Null)),
        "COALESCE": anywhere(lambda n: isinstance(n, exp.Coalesce)),
        "date_trunc": anywhere(lambda n: isinstance(n, (exp.DateTrunc, exp.TimestampTrunc))),
        "literal date range": anywhere(
            lambda n: (
                isinstance(n, (exp.GTE, exp.LT, exp.Between)) and any(date_literal(a) for a in n.iter_expressions())
            )
        ),
        "top-N": any(tree.args.get("order") is not None and tree.args.get("limit") is not None for tree in trees),
        "ratio": anywhere(lambda n: isinstance(n, exp.Div)),
        "UNION": anywhere(lambda n: isinstance(n, exp.Union)),
        "INTERSECT": anywhere(lambda n: isinstance(n, exp.Intersect)),
        "EXCEPT": anywhere(lambda n: isinstance(n, exp.Except)),
        "CTE": anywhere(lambda n: isinstance(n, exp.With)),
        "LEFT JOIN": anywhere(lambda n: isinstance(n, exp.Join) and n.side == "LEFT"),
    }
    missing = [name for name, present in coverage.items() if not present]
    assert not missing, f"constructs not covered: {missing}"


STRUCTURAL_CHECKS: dict[str, Callable[[exp.Expression], bool]] = {
    "join": lambda n: isinstance(n, exp.Join),
    "window": lambda n: isinstance(n, exp.Window),
    "having": lambda n: isinstance(n, exp.Having),
    "distinct": lambda n: isinstance(n, exp.Distinct),
    "subquery": lambda n: isinstance(n, (exp.Subquery, exp.Exists)),
    "case_when": lambda n: isinstance(n, exp.Case),
}


@pytest.mark.parametrize("tag", sorted(STRUCTURAL_CHECKS))
def test_structural_tags_are_truthful(query_cases: list[Case], tag: str) -> None:
    wrong = [
        case.id for case in query_cases if (tag in case.tags) != find(parse(case.canonical_sql), STRUCTURAL_CHECKS[tag])
    ]
    assert not wrong, f"tag {tag!r} disagrees with the SQL of {wrong}"


def test_no_clock_functions_anywhere(cases: list[Case]) -> None:
    clock = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.CurrentDatetime)
    for case in cases:
        for sql in list(case.expected_sql) + [t.sql for t in case.follow_up_context]:
            tree = parse(sql)
            assert not find(tree, lambda n: isinstance(n, clock)), case.id
            assert not find(tree, lambda n: isinstance(n, exp.Anonymous) and n.name.lower() in {"now", "today"}), (
                case.id
            )


# ---------------------------------------------------------------- behaviour on the sample database


def test_every_expected_sql_returns_small_non_null_results_twice(
    query_cases: list[Case], con: duckdb.DuckDBPyConnection
) -> None:
    for case in query_cases:
        for sql in list(case.expected_sql) + [t.sql for t in case.follow_up_context]:
            first = con.execute(sql).fetchall()
            assert first, f"{case.id}: empty result"
            assert len(first) <= MAX_ROWS, f"{case.id}: {len(first)} rows"
            assert any(value is not None for row in first for value in row), f"{case.id}: all NULL"
            assert con.execute(sql).fetchall() == first, f"{case.id}: result changed between runs"


def _order_keys_query(tree: exp.Expression) -> str:
    """COUNT(*) and COUNT(DISTINCT order keys) over the query without its ORDER BY/LIMIT."""
    keys = [ordered.this for ordered in tree.args["order"].expressions]
    body = tree.copy()
    body.set("order", None)
    body.set("limit", None)
    if isinstance(body, exp.Select):
        aliases = {s.alias: s.this for s in body.expressions if isinstance(s, exp.Alias)}
        extra = []
        for i, key in enumerate(keys):
            is_alias = isinstance(key, exp.Column) and not key.table and key.name in aliases
            extra.append(exp.alias_((aliases[key.name] if is_alias else key).copy(), f"_key{i}"))
        body.set("expressions", body.expressions + extra)
        columns = ", ".join(f"_key{i}" for i in range(len(keys)))
    else:  # a set operation orders by output column names
        columns = ", ".join(key.name for key in keys)
    return f"SELECT COUNT(*), COUNT(DISTINCT ({columns},)) FROM ({body.sql(DIALECT)}) AS q"


def test_order_by_keys_are_unique_so_limits_are_deterministic(
    query_cases: list[Case], con: duckdb.DuckDBPyConnection
) -> None:
    ordered = 0
    for case in query_cases:
        tree = parse(case.canonical_sql)
        if not has_top_level_order(tree):
            continue
        ordered += 1
        rows, distinct_keys = con.execute(_order_keys_query(tree)).fetchone()
        assert rows == distinct_keys, f"{case.id}: ORDER BY keys tie ({rows} rows, {distinct_keys} keys)"
    assert ordered >= 60


def test_plausible_mistakes_change_the_result(query_cases: list[Case], con: duckdb.DuckDBPyConnection) -> None:
    insensitive: list[str] = []
    without_mutation: list[str] = []
    for case in query_cases:
        tree = parse(case.canonical_sql)
        expected = comparable(tree, con.execute(case.canonical_sql).fetchall())
        applicable = mutations(case.canonical_sql)
        if not applicable:
            without_mutation.append(case.id)
            continue
        changed = []
        for label, mutant in applicable:
            try:
                got = comparable(tree, con.execute(mutant).fetchall())
            except duckdb.Error:
                continue  # a mutant that does not run is not a plausible wrong answer
            if got != expected:
                changed.append(label)
        if not changed:
            insensitive.append(f"{case.id} ({', '.join(label for label, _ in applicable)})")
    assert not without_mutation, f"no mutation applies to: {without_mutation}"
    assert not insensitive, f"no mutation changes the result of: {insensitive}"


def test_mutation_helper_produces_each_kind() -> None:
    sql = (
        "SELECT a.format, SUM(e.duration_minutes), COUNT(DISTINCT a.anime_id) FROM anime AS a "
        "JOIN episodes AS e ON e.anime_id = a.anime_id WHERE a.status = 'finished' AND e.air_date IS NOT NULL "
        "GROUP BY a.format"
    )
    labels = [label for label, _ in mutations(sql)]
    assert sum(label.startswith("drop Where") for label in labels) == 2
    assert "Sum -> Avg" in labels and "COUNT(DISTINCT) -> COUNT" in labels
    assert any(label.startswith("LEFT JOIN") for label in labels)
    for _, mutant in mutations(sql):
        assert mutant != parse(sql).sql(DIALECT)


# ---------------------------------------------------------------- generator errors


@pytest.fixture()
def template_copy(tmp_path: Path) -> Path:
    target = tmp_path / "templates"
    shutil.copytree(generator.TEMPLATE_DIR, target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_copied_templates_generate_the_same_set(template_copy: Path, cases: list[Case]) -> None:
    assert generate_multidomain_v1(template_dir=template_copy) == cases


def test_untruthful_tag_is_rejected(template_copy: Path) -> None:
    _edit(
        template_copy / "anime_content.yml",
        "tags: [filter, null_handling, order_by]",
        "tags: [filter, order_by, window]",
    )
    with pytest.raises(GoldTemplateError) as info:
        generate_multidomain_v1(template_dir=template_copy)
    assert any("content-single-04" in p and "tags do not match" in p for p in info.value.problems)


def test_unknown_slot_is_rejected(template_copy: Path) -> None:
    _edit(template_copy / "viewer_engagement.yml", "WHERE u.age_band = {age_band}", "WHERE u.age_band = {age_bnad}")
    with pytest.raises(GoldTemplateError, match=r"slot \{age_bnad\} has no value"):
        generate_multidomain_v1(template_dir=template_copy)


def test_duplicate_skeleton_and_wrong_count_are_rejected(template_copy: Path) -> None:
    path = template_copy / "platform_monetization.yml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    clone = dict(document["cases"][0], id="monetization-single-11")
    document["cases"].insert(1, clone)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    with pytest.raises(GoldTemplateError) as info:
        generate_multidomain_v1(template_dir=template_copy)
    text = "\n".join(info.value.problems)
    assert "monetization-single-11: same SQL skeleton as monetization-single-01" in text
    assert "platform_monetization/single_table: 11 cases, expected 10" in text


def test_missing_template_file_is_reported(template_copy: Path) -> None:
    (template_copy / "anime_content.yml").unlink()
    with pytest.raises(GoldTemplateError, match="anime_content.yml: template file missing"):
        generate_multidomain_v1(template_dir=template_copy)


def test_sql_literal_rendering() -> None:
    assert generator.sql_literal("O'Brien") == "'O''Brien'"
    assert generator.sql_literal(True) == "TRUE" and generator.sql_literal(42) == "42"
    import datetime

    assert generator.sql_literal(datetime.date(2026, 6, 30)) == "'2026-06-30'"


def test_a_jsonl_gold_set_is_validated_once_per_content_and_read_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_support import copy_data, query_case, register_gold_set

    from nl2sql_pipeline.gold import registry

    data = copy_data(tmp_path / "data")
    path = register_gold_set(data, "memo-set", [query_case("c-1", "SELECT 1 AS a")])
    validated = []
    real = registry.load_cases
    monkeypatch.setattr(registry, "load_cases", lambda p: validated.append(p) or real(p))

    first = registry.load_gold_set("memo-set", data_dir=data)
    again = registry.load_gold_set("memo-set", data_dir=data)
    assert first == again and len(validated) == 1, "a run's repeated loads validate the file once"
    again.clear()  # each caller gets its own list
    assert len(registry.load_gold_set("memo-set", data_dir=data)) == 1

    path.write_text(path.read_text(encoding="utf-8").replace("SELECT 1 AS a", "SELECT 2 AS a"), encoding="utf-8")
    changed = registry.load_gold_set("memo-set", data_dir=data)  # same size, maybe the same mtime: the content counts
    assert changed[0].expected_sql == ("SELECT 2 AS a",) and len(validated) == 2
