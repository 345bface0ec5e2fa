"""Column scope: find any reference to a denied column, however it is spelled or smuggled.

The analysis is deliberately global and conservative. Once a query reads a table that has denied
columns (a "denied relation", not a CTE of the same name), every spelling that *could* reach a
denied column anywhere in the statement is a violation:

- a column whose name is a denied one (or its new name under ``AS u(a, b, c)``), unqualified or
  qualified by the denied relation's alias or name, or by a qualifier the query does not define;
- the relation's whole row: ``SELECT u FROM users u``, ``to_json(u)``, ``(u).email``;
- ``*`` and ``COLUMNS(*)`` in a SELECT reading the relation, and ``u.*``, unless ``EXCLUDE`` or
  ``REPLACE`` removes every denied column (a qualified ``EXCLUDE (u.email)`` removes it from ``u``
  only); ``COLUMNS('regex')`` matching a denied name (searched by DuckDB's own regex engine, case
  folded; inline flags are refused); ``COLUMNS(lambda)``, ``#n`` positional columns;
- ``JOIN ... USING (email)``, a NATURAL join with the relation, PIVOT/UNPIVOT over the query.

Identifiers compare case-insensitively (DuckDB folds even quoted ones). A query that reads no
denied relation cannot reach a denied column, so the analysis stops there: CTEs and derived tables
are safe sources because their own bodies are checked by the same pass.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

import duckdb
from sqlglot import exp

from nl2sql_pipeline.policy.context import (
    QueryContext,
    TableRef,
    enclosing_select,
    from_items,
    is_join_tree,
    tables_of_join_tree,
)


def denied_column_violation(ctx: QueryContext) -> str | None:
    """A sentence naming the first denied-column reference found, or None when there is none."""
    refs = ctx.denied_refs
    if not refs:
        return None
    scope = _DeniedScope(ctx, refs)
    for check in (
        scope.check_columns,
        scope.check_stars,
        scope.check_columns_expressions,
        scope.check_positional,
        scope.check_joins,
        scope.check_pivots,
        scope.check_loose_names,
    ):
        problem = check()
        if problem:
            return problem
    return None


class _DeniedScope:
    """Lookups over the denied relations of one query."""

    def __init__(self, ctx: QueryContext, refs: list[TableRef]) -> None:
        self.ctx = ctx
        schema, denied = ctx.schema, ctx.policy.denied_by_table
        self.denied_names: dict[str, str] = {}  # usable name -> "table.column"
        self.names_by_ref: dict[int, dict[str, str]] = {}
        self.refs_by_alias: dict[str, list[TableRef]] = {}
        self.refs = refs
        for ref in refs:
            names = ref.effective_names(schema, denied[ref.name])
            self.names_by_ref[id(ref.node)] = names
            for name, original in names.items():
                self.denied_names.setdefault(name, f"{ref.name}.{original}")
            for name in {ref.alias, ref.name}:
                self.refs_by_alias.setdefault(name, []).append(ref)
        for tree in ctx.nodes(exp.Subquery):  # (users JOIN ratings USING (...)) AS j: j reaches users
            if is_join_tree(tree) and tree.alias:
                inner = [ref for ref in refs if any(ref.node is table for table in tables_of_join_tree(tree))]
                if inner:
                    self.refs_by_alias.setdefault(tree.alias.lower(), []).extend(inner)
        known = {alias.name.lower() for alias in ctx.nodes(exp.TableAlias)}
        known |= {ref.alias for ref in ctx.table_refs if ref.kind != "relation" or ref.name not in denied}
        self.other_aliases = known - set(self.refs_by_alias)

    # ---- individual checks ---------------------------------------------------------------------

    def check_columns(self) -> str | None:
        """Named columns: denied names, whole rows, qualified stars."""
        for column in self.ctx.nodes(exp.Column):
            if isinstance(column.parent, exp.Star) and column.arg_key == "except_":
                continue  # SELECT * EXCLUDE (email): naming it to drop it is fine
            parts = [part.name.lower() for part in column.parts]
            if isinstance(column.this, exp.Star):
                problem = self._qualified_star(column, parts)
            else:
                problem = self._named_column(column, parts)
            if problem:
                return problem
        return None

    def check_stars(self) -> str | None:
        """Bare ``*`` (and ``COLUMNS(*)``, ``* LIKE ...``) over a denied relation."""
        for star in self.ctx.nodes(exp.Star):
            parent = star.parent
            if isinstance(parent, exp.Column):
                continue  # t.* : handled with the columns
            if isinstance(parent, exp.Count) or (
                isinstance(parent, exp.Distinct) and isinstance(parent.parent, exp.Count)
            ):
                continue  # COUNT(*) reads no column
            select = enclosing_select(star)
            if select is not None and isinstance(select.parent, exp.Exists) and parent is select:
                continue  # EXISTS (SELECT * ...) returns no column
            for ref in self._refs_read_by(select):
                if not self._star_hides_denied(star, ref):
                    return (
                        f"{self._star_text(star)} expands to denied column "
                        f"{self._denied_of(ref)} of {ref.name}; list the columns you need"
                    )
        return None

    def check_columns_expressions(self) -> str | None:
        """``COLUMNS('regex')`` and ``COLUMNS(lambda)``; ``COLUMNS(*)`` is a star."""
        for node in self.ctx.nodes(exp.Columns):
            arg = node.this
            if isinstance(arg, exp.Star) or (isinstance(arg, exp.Column) and isinstance(arg.this, exp.Star)):
                continue
            refs = self._refs_read_by(enclosing_select(node))
            if not refs:
                continue
            if isinstance(arg, exp.Literal) and arg.is_string:
                names = {name: qualified for ref in refs for name, qualified in self._names_of(ref).items()}
                matched = _columns_regex_matches(arg.this, names)
                if matched is None:
                    return f"COLUMNS({arg.sql()}) is not a regular expression the engine can check; list the columns"
                if matched:
                    return f"COLUMNS({arg.sql()}) matches denied column {names[matched[0]]}; list the columns you need"
                continue
            return (
                f"COLUMNS({arg.sql(dialect='duckdb')}) over {refs[0].name} may select denied column "
                f"{self._denied_of(refs[0])}; list the columns you need"
            )
        return None

    def check_positional(self) -> str | None:
        """``#n`` positional references over a denied relation."""
        for node in self.ctx.nodes(exp.PositionalColumn):
            refs = self._refs_read_by(enclosing_select(node))
            if refs:
                return (
                    f"positional column {node.sql(dialect='duckdb')} over {refs[0].name} may be denied column "
                    f"{self._denied_of(refs[0])}; name the columns"
                )
        return None

    def check_joins(self) -> str | None:
        """``USING (denied)`` and NATURAL joins involving a denied relation."""
        for join in self.ctx.nodes(exp.Join):
            for identifier in join.args.get("using") or []:
                name = identifier.name.lower()
                if name in self.denied_names:
                    return f"JOIN ... USING ({identifier.name}) references denied column {self.denied_names[name]}"
            if join.method.upper() == "NATURAL":
                select = join.parent if isinstance(join.parent, exp.Select) else enclosing_select(join)
                refs = self._refs_read_by(select)
                if refs:
                    return (
                        f"NATURAL JOIN with {refs[0].name} compares its columns implicitly, denied column "
                        f"{self._denied_of(refs[0])} included; join with ON or USING"
                    )
        return None

    def check_pivots(self) -> str | None:
        """PIVOT/UNPIVOT group or spread every remaining column, denied ones included."""
        pivots = self.ctx.nodes(exp.Pivot)
        if pivots:
            ref = self.refs[0]
            return f"PIVOT/UNPIVOT in a query reading {ref.name} may expose denied column {self._denied_of(ref)}"
        return None

    def check_loose_names(self) -> str | None:
        """Denied names and whole rows spelled without ``exp.Column``: bare words, method calls.

        sqlglot keeps ``email.upper()``, ``(u).upper()`` and ``u.email.len()`` as identifiers under
        ``exp.Dot``/``exp.Paren`` rather than columns, yet DuckDB reads the column or the row.
        """
        for var in self.ctx.nodes(exp.Var):
            name = var.name.lower()
            if name in self.denied_names:
                return f"{var.name!r} may reference denied column {self.denied_names[name]}"
        for identifier in self.ctx.nodes(exp.Identifier):
            if identifier.arg_key == "alias" or isinstance(identifier.parent, _DECLARING_PARENTS):
                continue
            name = identifier.name.lower()
            parent = identifier.parent
            if name in self.denied_names:
                return (
                    f"{identifier.name!r} in {(parent or identifier).sql(dialect='duckdb')[:60]!r} references denied column "
                    f"{self.denied_names[name]}"
                )
            qualifies_a_field = (
                isinstance(parent, exp.Dot)
                and identifier.arg_key == "this"
                and isinstance(parent.expression, exp.Identifier)
            )
            if name in self.refs_by_alias and not qualifies_a_field:
                ref = self.refs_by_alias[name][0]
                return (
                    f"{(parent or identifier).sql(dialect='duckdb')[:60]!r} uses the whole row of {ref.name}, denied column "
                    f"{self._denied_of(ref)} included; select the columns you need"
                )
        return None

    # ---- helpers -------------------------------------------------------------------------------

    def _named_column(self, column: exp.Column, parts: list[str]) -> str | None:
        if len(parts) == 1 and _orders_by_select_alias(column):
            return None  # ORDER BY <alias>: DuckDB binds the SELECT list's alias first
        last = len(parts) - 1
        for index, part in enumerate(parts):
            if part in self.denied_names:
                qualifier = parts[index - 1] if index else None
                if qualifier is None or qualifier in self.refs_by_alias or qualifier not in self.other_aliases:
                    return f"column {column.sql(dialect='duckdb')} references denied column {self.denied_names[part]}"
            if index == last and part in self.refs_by_alias:
                ref = self.refs_by_alias[part][0]
                return (
                    f"{column.sql(dialect='duckdb')} packs the whole row of {ref.name}, denied column "
                    f"{self._denied_of(ref)} included; select the columns you need"
                )
        return None

    def _qualified_star(self, column: exp.Column, parts: list[str]) -> str | None:
        qualifier = parts[-2] if len(parts) >= 2 else None
        if qualifier is None:
            return None
        refs = self.refs_by_alias.get(qualifier)
        if refs is None and qualifier in self.other_aliases:
            return None
        for ref in refs or self.refs:  # an unknown qualifier may be any of them
            if not self._star_hides_denied(column.this, ref):
                return (
                    f"{column.sql(dialect='duckdb')} expands to denied column {self._denied_of(ref)}; "
                    f"list the columns you need"
                )
        return None

    def _refs_read_by(self, select: exp.Select | None) -> list[TableRef]:
        """The denied relations a SELECT reads directly (all of them when it has no FROM)."""
        if select is None or not select.args.get("from_"):
            return list(self.refs)
        refs = []
        for item in from_items(select):
            ref = self.ctx.ref_of(item)
            if ref is not None and id(ref.node) in self.names_by_ref:
                refs.append(ref)
        return refs

    def _names_of(self, ref: TableRef) -> dict[str, str]:
        return {name: f"{ref.name}.{original}" for name, original in self.names_by_ref[id(ref.node)].items()}

    def _denied_of(self, ref: TableRef) -> str:
        return ", ".join(sorted(set(self._names_of(ref).values())))

    def _star_hides_denied(self, star: exp.Expr, ref: TableRef) -> bool:
        """True when the star's EXCLUDE/REPLACE lists remove every denied column of ``ref``."""
        if not isinstance(star, exp.Star):
            return False
        removed = {  # EXCLUDE (u.email) removes u's email only: in a self-join v.email stays
            column.name.lower()
            for column in star.args.get("except_") or []
            if not isinstance(column, exp.Column) or not column.table or column.table.lower() == ref.alias
        }
        removed |= {alias.alias.lower() for alias in star.args.get("replace") or [] if isinstance(alias, exp.Alias)}
        originals = self.names_by_ref[id(ref.node)]
        current = dict(zip(self.ctx.schema.columns(ref.name), ref.column_names(self.ctx.schema)))
        return all(current.get(original, original) in removed for original in set(originals.values()))

    @staticmethod
    def _star_text(star: exp.Star) -> str:
        parent = star.parent
        if isinstance(parent, exp.Columns):
            return parent.sql(dialect="duckdb")
        return "*"


# Inline flags ``(?-i)``, ``(?s:...)``: the search below folds case, and a flag turning that off could make a
# pattern match only a spelling of the column the schema reader (which lower-cases names) never sees.
_INLINE_FLAGS = re.compile(r"\(\?[imsU-]+[:)]")
_RE2_LOCK = threading.Lock()
_re2: duckdb.DuckDBPyConnection | None = None


def _columns_regex_matches(pattern: str, names: Iterable[str]) -> list[str] | None:
    """The names ``COLUMNS(pattern)`` may select, in order; None when the pattern cannot be checked.

    DuckDB matches ``COLUMNS`` patterns with RE2, whose syntax differs from Python's ``re`` (``[[:alpha:]]``
    is a letter class in RE2 and a plain character set in ``re``), so the pattern is searched by DuckDB
    itself, ignoring case (the engine is case sensitive; names here are lower case, the database's may not
    be). A pattern RE2 rejects, or one with inline flags, cannot be checked.
    """
    global _re2
    if _INLINE_FLAGS.search(pattern):
        return None
    matched = []
    with _RE2_LOCK:
        if _re2 is None:
            _re2 = duckdb.connect(config={"enable_external_access": False})
        for name in names:
            try:
                row = _re2.execute("SELECT regexp_matches($name, $pattern, 'i')", {"name": name, "pattern": pattern})
                found = row.fetchone()
            except duckdb.Error:
                return None
            if found and found[0]:
                matched.append(name)
    return matched


# Parents under which an identifier names something (a column of its own, a table, a table alias, a
# CTE, a lambda parameter, a struct key, a window) instead of reading a column or a row. Alias names
# are skipped by their arg key.
_DECLARING_PARENTS: tuple[type[exp.Expr], ...] = (
    exp.Column,
    exp.Table,
    exp.TableAlias,
    exp.CTE,
    exp.Join,
    exp.Lambda,
    exp.PropertyEQ,
    exp.Window,
)


def _orders_by_select_alias(column: exp.Column) -> bool:
    """True for ``ORDER BY name`` where ``name`` is an alias of the same query's SELECT list.

    Only a whole ORDER BY item of the query itself counts (not a window's ORDER BY, not an
    expression): that is the one place where DuckDB prefers the alias to a table column or row.
    """
    ordered = column.parent
    order = ordered.parent if isinstance(ordered, exp.Ordered) else None
    query = order.parent if isinstance(order, exp.Order) else None
    if not isinstance(query, (exp.Select, exp.SetOperation)):
        return False
    return column.name.lower() in {name.lower() for name in query.named_selects}
