"""The rules of the SQL policy, one small function each, run in the order of ``RULES``.

A rule takes the ``QueryContext`` of one SQL text and returns None when the query passes it, or a
sentence saying what is wrong (and how to fix it). The first rule that returns a sentence names the
decision. A parse failure met by any rule is reported under ``PARSE_RULE`` (fail closed).

LIMIT budget choice: every LIMIT/FETCH anywhere in the statement (outer query, subquery, CTE) must
be an integer literal no larger than ``max_limit``. Only the outer LIMIT bounds the result size, but
an inner LIMIT above the budget is a bulk-extraction signal and can flow to the result unchanged;
a non-literal or PERCENT limit cannot be checked and is rejected. A query without LIMIT passes this
rule: the sandbox's row cap bounds its result.

Join budget choice: ``max_joins`` counts every join of the statement (explicit joins, comma-separated
FROM items, LATERAL and UNNEST joins) across all SELECTs, CTEs and subqueries, so splitting a wide
join into CTEs does not evade it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import duckdb
from sqlglot import exp

from nl2sql_pipeline.policy.columns import denied_column_violation
from nl2sql_pipeline.policy.context import (
    QueryContext,
    TableRef,
    function_aliases,
    function_name,
    looks_like_path,
)
from nl2sql_pipeline.policy.joins import cartesian_violation

PARSE_RULE = "parse"

SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog"})
SYSTEM_CATALOGS = frozenset({"system", "temp"})
SYSTEM_NAME_PREFIXES: tuple[str, ...] = ("duckdb_", "pragma_", "sqlite_", "pg_", "information_schema")


def _forbidden_node_types() -> tuple[type[exp.Expr], ...]:
    names = (
        "DML",
        "DDL",
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "TruncateTable",
        "Into",
        "Copy",
        "Set",
        "Pragma",
        "Use",
        "Transaction",
        "Commit",
        "Rollback",
        "Describe",
        "Show",
        "Summarize",
        "Attach",
        "Detach",
        "Install",
        "Export",
        "Analyze",
        "Cache",
        "Uncache",
        "Refresh",
        "LoadData",
        "Grant",
        "Revoke",
        "Declare",
        "Execute",
        "Kill",
    )
    return tuple(getattr(exp, name) for name in names if isinstance(getattr(exp, name, None), type))


FORBIDDEN_NODE_TYPES = _forbidden_node_types()
ALLOWED_ROOT_TYPES: tuple[type[exp.Expr], ...] = (exp.Query, exp.Values)
FROM_ITEM_TYPES: tuple[type[exp.Expr], ...] = (exp.Table, exp.Subquery, exp.Unnest, exp.Lateral, exp.Values)


class Rule(NamedTuple):
    """A named rule: ``check(ctx)`` returns None (pass) or the reason it fails."""

    name: str
    check: Callable[[QueryContext], str | None]


def parses(ctx: QueryContext) -> str | None:
    """DuckDB's parser accepts the text and finds at least one statement."""
    if not ctx.statements:
        return "the SQL is empty (no statement); send one SELECT query"
    return None


def single_statement(ctx: QueryContext) -> str | None:
    """Exactly one statement (a second one smuggled after ``;`` or a comment is rejected)."""
    count = len(ctx.statements)
    if count != 1:
        kinds = ", ".join(s.type.name for s in ctx.statements)
        return f"{count} statements ({kinds}); send exactly one query"
    return None


def read_only(ctx: QueryContext) -> str | None:
    """A read-only query by DuckDB's statement type, with no data-modifying or catalog node inside."""
    statement_type = ctx.statements[0].type
    if statement_type != duckdb.StatementType.SELECT:
        return (
            f"{statement_type.name} statements are not allowed; only read-only queries "
            f"(SELECT, WITH, set operations, FROM-first)"
        )
    tree = ctx.tree
    if not isinstance(tree, ALLOWED_ROOT_TYPES):
        kind = str(tree.this).split()[0] if isinstance(tree, exp.Command) and tree.this else type(tree).__name__
        return f"{kind.upper()} is not a query; only SELECT, WITH, set operations and FROM-first"
    forbidden = ctx.nodes(*FORBIDDEN_NODE_TYPES)
    if forbidden:
        node = forbidden[0]
        return (
            f"{type(node).__name__.upper()} inside the query ({node.sql(dialect='duckdb')[:60]!r}) is not "
            f"read-only; remove it"
        )
    return None


def table_scope(ctx: QueryContext) -> str | None:
    """Only allowed tables/views of the exposed, allowed schemas; no paths, URLs, system catalogs or other table functions."""
    for ref in ctx.table_refs:
        if ref.kind == "cte":
            continue
        if ref.kind == "relation" and not isinstance(ref.node.this, exp.Identifier):
            return f"unsupported table reference {ref.node.sql(dialect='duckdb')[:60]!r}; name a table of the database"
        problem = _table_function_problem(ctx, ref.name) if ref.kind == "function" else _relation_problem(ctx, ref)
        if problem:
            return problem
    for node in ctx.nodes(exp.Unnest):
        if isinstance(node.parent, (exp.From, exp.Join, exp.Lateral)):
            problem = _table_function_problem(ctx, "unnest")
            if problem:
                return problem
    for lateral in ctx.nodes(exp.Lateral):
        if isinstance(lateral.this, exp.Func) and not isinstance(lateral.this, exp.Unnest):
            problem = _table_function_problem(ctx, function_name(lateral.this))
            if problem:
                return problem
    for clause in ctx.nodes(exp.From, exp.Join):
        if not isinstance(clause.this, FROM_ITEM_TYPES):
            return f"unsupported FROM item {clause.this.sql(dialect='duckdb')[:60]!r}; read tables of the database"
    return None


def column_scope(ctx: QueryContext) -> str | None:
    """No reference to a denied column, direct or through ``*``, ``COLUMNS``, whole rows or aliases."""
    return denied_column_violation(ctx)


def denied_functions(ctx: QueryContext) -> str | None:
    """No dangerous function (file readers, environment, settings, dynamic SQL, the policy's additions)."""
    policy = ctx.policy
    for func in ctx.nodes(exp.Func):
        for name in function_aliases(func):
            pattern = policy.denied_function_pattern(name)
            if pattern:
                return _function_message(name, pattern)
    for name, written in ctx.called_names():
        pattern = policy.denied_function_pattern(name)
        if pattern:
            return _function_message(written, pattern)
    return None


def limit_budget(ctx: QueryContext) -> str | None:
    """Every LIMIT/FETCH is an integer literal within ``max_limit`` (see the module docstring)."""
    max_limit = ctx.policy.policy.max_limit
    if max_limit is None:
        return None
    for node in ctx.nodes(exp.Limit, exp.Fetch):
        options = node.args.get("limit_options")
        if isinstance(options, exp.LimitOptions) and options.args.get("percent"):
            return f"{node.sql(dialect='duckdb')} is a percentage, not a row budget; use LIMIT n with n <= {max_limit}"
        value_node = node.expression if isinstance(node, exp.Limit) else node.args.get("count")
        if value_node is None and isinstance(node, exp.Fetch):
            continue  # FETCH FIRST ROW ONLY: one row
        value = _int_literal(value_node)
        if value is None:
            return (
                f"LIMIT {value_node.sql(dialect='duckdb') if value_node is not None else ''} is not an integer "
                f"literal, so the row budget cannot be checked; use LIMIT n with n <= {max_limit}"
            )
        if value > max_limit:
            return f"LIMIT {value} exceeds the policy's budget of {max_limit} rows; use LIMIT {max_limit} or less"
    return None


def join_budget(ctx: QueryContext) -> str | None:
    """At most ``max_joins`` joins in the whole statement (see the module docstring)."""
    max_joins = ctx.policy.policy.max_joins
    if max_joins is None:
        return None
    count = len(ctx.nodes(exp.Join))
    if count > max_joins:
        return f"{count} joins exceed the policy's budget of {max_joins}; simplify the query"
    return None


def cartesian_joins(ctx: QueryContext) -> str | None:
    """With ``forbid_cartesian``: no CROSS JOIN, constant ON, or FROM item left unlinked."""
    if not ctx.policy.policy.forbid_cartesian:
        return None
    return cartesian_violation(ctx)


RULES: tuple[Rule, ...] = (
    Rule("parse", parses),
    Rule("single_statement", single_statement),
    Rule("read_only", read_only),
    Rule("table_scope", table_scope),
    Rule("column_scope", column_scope),
    Rule("denied_function", denied_functions),
    Rule("max_limit", limit_budget),
    Rule("max_joins", join_budget),
    Rule("cartesian_join", cartesian_joins),
)
RULE_NAMES: tuple[str, ...] = (PARSE_RULE,) + tuple(rule.name for rule in RULES if rule.name != PARSE_RULE)


# ---- helpers ---------------------------------------------------------------------------------


def _relation_problem(ctx: QueryContext, ref: TableRef) -> str | None:
    name, db, catalog = ref.name, ref.db, ref.catalog
    if not db and not catalog and ctx.schema.has_relation(name) and ctx.policy.policy.allows_schema("main"):
        return None if ctx.policy.policy.allows_table(name) else f"table {name} is not in the policy's allowed_tables"
    written = ref.node.sql(dialect="duckdb")
    if db in SYSTEM_SCHEMAS or catalog in SYSTEM_CATALOGS or (not catalog and db in SYSTEM_CATALOGS):
        return f"{written} is a system catalog; query the database's own tables"
    main_catalog = ctx.schema.catalog
    if catalog and catalog != main_catalog:
        return f"{written} is outside the database; query tables of {main_catalog}"
    if db and db not in ("main", main_catalog):
        return _qualified_problem(ctx, written, db, name)
    if not ctx.policy.policy.allows_schema("main"):
        return f"{written} is in schema main, which is not in the policy's allowed_schemas"
    if not ctx.schema.has_relation(name):
        if looks_like_path(name):
            return f"{written} is a file path or URL used as a table; only tables of the database may be read"
        if name.startswith(SYSTEM_NAME_PREFIXES):
            return f"{written} is a system catalog; query the database's own tables"
        return f"table {written} does not exist in the database; use one of its tables or a CTE"
    if not ctx.policy.policy.allows_table(name):
        return f"table {name} is not in the policy's allowed_tables"
    return None


def _qualified_problem(ctx: QueryContext, written: str, schema: str, name: str) -> str | None:
    """A ``schema.table`` outside main: the schema must be exposed, allowed, and hold the table."""
    exposed = [s for s in ctx.schema.schemas if ctx.policy.policy.allows_schema(s)]
    if schema not in ctx.schema.schemas or not ctx.policy.policy.allows_schema(schema):
        return f"{written} is outside the allowed schemas; query tables of {', '.join(exposed) or 'no schema'}"
    if not ctx.schema.has_qualified(schema, name):
        return f"table {written} does not exist in the database; use one of its tables or a CTE"
    if not (ctx.policy.policy.allows_table(name) or ctx.policy.policy.allows_table(f"{schema}.{name}")):
        return f"table {schema}.{name} is not in the policy's allowed_tables"
    return None


def _table_function_problem(ctx: QueryContext, name: str) -> str | None:
    if name.startswith(SYSTEM_NAME_PREFIXES):
        return f"{name}() is a system catalog function; query the database's own tables"
    pattern = ctx.policy.denied_function_pattern(name)
    if pattern:
        return f"table function {name}() is a denied function (matches {pattern!r}): it reads files or runs dynamic SQL"
    if name not in ctx.policy.allowed_table_functions:
        allowed = ", ".join(sorted(ctx.policy.allowed_table_functions)) or "none"
        return f"table function {name}() is not in the policy's allowed_table_functions ({allowed})"
    return None


def _function_message(name: str, pattern: str) -> str:
    return f"function {name}() is denied (matches {pattern!r}); it reads files, the environment or runs dynamic SQL"


def _int_literal(node: exp.Expr | None) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None
