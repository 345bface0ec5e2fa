"""The transformations that make a variant, one function each, applied in the order of ``build.STEPS``.

Every step works inside the variant file (the source attached read-only as ``src``) and draws its
randomness from DuckDB's ``hash`` of the row and the variant's seed, so a variant is the same file on
every build (with the same DuckDB version, which is part of the cache fingerprint). Each returns a short
summary for the variant's manifest.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from nl2sql_pipeline.sql.identifiers import quote_identifier as quote
from nl2sql_pipeline.variants.literals import BoundaryLiteral
from nl2sql_pipeline.variants.schema import SOURCE_ALIAS, Column, SourceSchema, Table

logger = logging.getLogger(__name__)

BUCKETS = 1_000_000
"""Resolution of the hash draws (a fraction f selects hash % BUCKETS < f * BUCKETS)."""
KEEP_RANGE = (0.5, 0.9)
"""Share of each table's rows a variant keeps before keys are re-established (drawn per variant)."""
DUPLICATE_SHARE = 0.05
NULL_SHARE = 0.1
BOUNDARY_ROWS = (3, 50, 0.005)
"""Rows that receive each boundary value: at least 3, at most 50, else 0.5% of the table's rows."""
_INTEGER_KEY = re.compile(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")
_INTEGER_MAX = {
    "TINYINT": 2**7 - 1,
    "SMALLINT": 2**15 - 1,
    "INTEGER": 2**31 - 1,
    "BIGINT": 2**63 - 1,
    "HUGEINT": 2**127 - 1,
}


@dataclass
class VariantContext:
    """What every step sees: the variant's connection, the source's shape, the seed and the literals."""

    con: duckdb.DuckDBPyConnection
    schema: SourceSchema
    index: int
    seed: int
    literals: list[BoundaryLiteral]
    keep_share: float
    notes: dict[str, Any] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict)
    """What does not depend on the variant, shared by the variants of one source (``build.VariantBuilder``)."""

    def draw(self, salt: str, *parts: str) -> str:
        """A SQL expression: a deterministic integer in [0, BUCKETS) from ``parts`` and this variant's seed."""
        args = ", ".join([*parts, str(self.seed), _sql_string(salt)])
        return f"(hash({args}) % {BUCKETS})"


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _changed(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """Run an INSERT, DELETE or CREATE TABLE AS and return how many rows it wrote or removed."""
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def parents_first(tables: list[Table]) -> tuple[list[Table], set[tuple[str, str, int]]]:
    """Tables ordered so that each comes after the tables its foreign keys point at, and the foreign keys
    (schema, child, position) that point at a table not before their child (self-references and cycles)."""
    by_name = {(t.schema, t.name.lower()): t for t in tables}
    ordered: list[Table] = []
    placed: set[tuple[str, str]] = set()
    pending = list(tables)
    while pending:
        ready = [
            t
            for t in pending
            if all(
                (t.schema, fk.parent.lower()) in placed
                or (t.schema, fk.parent.lower()) not in by_name
                or fk.parent.lower() == t.name.lower()
                for fk in t.foreign_keys
            )
        ]
        batch = ready or pending[:1]  # a cycle: break it at the first table
        for table in batch:
            ordered.append(table)
            placed.add((table.schema, table.name.lower()))
        pending = [t for t in pending if t not in batch]
    position = {(t.schema, t.name.lower()): i for i, t in enumerate(ordered)}
    late = {
        (t.schema, t.name, i)
        for t in ordered
        for i, fk in enumerate(t.foreign_keys)
        if (t.schema, fk.parent.lower()) in position
        and position[(t.schema, fk.parent.lower())] >= position[(t.schema, t.name.lower())]
    }
    return ordered, late


def _parent_present(table: Table, index: int, parent: Table, child_alias: str) -> str:
    """SQL: the child row's foreign key ``index`` is NULL or its parent row is in the variant."""
    fk = table.foreign_keys[index]
    present = " AND ".join(f"{child_alias}.{quote(c)} IS NOT NULL" for c in fk.columns)
    joined = " AND ".join(f"p.{quote(pc)} = {child_alias}.{quote(cc)}" for cc, pc in zip(fk.columns, fk.parent_columns))
    return f"(NOT ({present}) OR EXISTS (SELECT 1 FROM {parent.qualified} AS p WHERE {joined}))"


def sample_rows(ctx: VariantContext) -> dict[str, Any]:
    """Copy each table, parents first, keeping about ``keep_share`` of its rows (by a hash of the row id)
    and only rows whose foreign keys point at parent rows that were kept."""
    kept: dict[str, int] = {}
    threshold = int(ctx.keep_share * BUCKETS)
    for schema_name in sorted({t.schema for t in ctx.schema.tables} - {"main"}):  # a new file has main
        ctx.con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(schema_name)}")
    ordered, late = parents_first(ctx.schema.tables)
    tables = {(t.schema, t.name.lower()): t for t in ctx.schema.tables}
    for table in ordered:
        source = f"{SOURCE_ALIAS}.{table.qualified}"
        conditions = [f"{ctx.draw('sample:' + table.name, 's.rowid')} < {threshold}"]
        for index, fk in enumerate(table.foreign_keys):
            parent = tables.get((table.schema, fk.parent.lower()))
            if parent is not None and (table.schema, table.name, index) not in late:
                conditions.append(_parent_present(table, index, parent, "s"))
        kept[f"{table.schema}.{table.name}"] = _changed(  # CREATE TABLE AS answers with its row count
            ctx.con,
            f"CREATE TABLE {table.qualified} AS SELECT s.* FROM {source} AS s "
            f"WHERE {' AND '.join(conditions)} ORDER BY s.rowid",
        )
    ctx.notes["late_foreign_keys"] = late
    return {"keep_share": round(ctx.keep_share, 4), "rows_kept": kept}


def keep_foreign_keys(ctx: VariantContext) -> dict[str, Any]:
    """Delete rows whose foreign key points at a row left out, until none is left (needed only for
    self-references and cycles: ``sample_rows`` already kept parents before children)."""
    removed: dict[str, int] = {}
    late = ctx.notes.get("late_foreign_keys", set())
    tables = {(t.schema, t.name.lower()): t for t in ctx.schema.tables}
    while late:  # every pass deletes rows or ends: a chain of references is undone level by level
        changed = 0
        for table in ctx.schema.tables:
            for index, fk in enumerate(table.foreign_keys):
                parent = tables.get((table.schema, fk.parent.lower()))
                if parent is None or (table.schema, table.name, index) not in late:
                    continue
                gone = _changed(
                    ctx.con,
                    f"DELETE FROM {table.qualified} AS c WHERE NOT {_parent_present(table, index, parent, 'c')}",
                )
                if gone:
                    key = f"{table.schema}.{table.name}"
                    removed[key] = removed.get(key, 0) + gone
                    changed += gone
        if not changed:
            break
    return {"rows_removed": removed}


def _duplicable(table: Table) -> str | None:
    """How rows of ``table`` can be duplicated: 'exact' (no key), 'new_key' (one integer key), else None."""
    if table.unique:
        return None
    if not table.primary_key:
        return "exact"
    if len(table.primary_key) == 1:
        column = table.column(table.primary_key[0])
        if column is not None and _INTEGER_KEY.match(column.data_type.upper()):
            return "new_key"
    return None


def duplicate_rows(ctx: VariantContext) -> dict[str, Any]:
    """Append copies of a few rows: exact copies without a key, copies under a fresh id with one integer key.

    A copy under a fresh id is a second row with the same content (two equal ratings, two equal orders): it
    tells COUNT from COUNT(DISTINCT) and a missing DISTINCT. Tables with composite or unique keys keep theirs.
    """
    threshold = int(DUPLICATE_SHARE * BUCKETS)
    added: dict[str, int] = {}
    for table in ctx.schema.tables:
        how = _duplicable(table)
        if how is None:
            continue
        where = f"WHERE {ctx.draw('duplicate:' + table.name, 'rowid')} < {threshold}"
        if how == "exact":
            select = f"SELECT * FROM {table.qualified} {where}"
        else:
            key = table.primary_key[0]
            key_column = table.column(key)
            if key_column is None:  # not so: _duplicable found the key among the columns
                continue
            kind = key_column.data_type.upper()
            largest_key = ("source_max", table.qualified, key)  # of the source: the same for every variant
            if largest_key not in ctx.cache:
                [(ctx.cache[largest_key],)] = ctx.con.execute(
                    f"SELECT max({quote(key)}) FROM {SOURCE_ALIAS}.{table.qualified}"
                ).fetchall()
            top = ctx.cache[largest_key] or 0
            offset = int(top) + 1
            if top < 0 or 2 * offset > _INTEGER_MAX[kind]:
                continue
            select = f"SELECT * REPLACE ({quote(key)} + {offset} AS {quote(key)}) FROM {table.qualified} {where}"
        count = _changed(
            ctx.con, f"INSERT INTO {table.qualified} {select} ORDER BY {ctx.draw('copy:' + table.name, 'rowid')}"
        )
        if count:
            added[f"{table.schema}.{table.name}"] = count
    return {"rows_duplicated": added}


def inject_nulls(ctx: VariantContext) -> dict[str, Any]:
    """Set about ``NULL_SHARE`` of the values of each nullable, non-key column to NULL.

    Each column's rows are drawn on their own (by the row id, salted with the column); one UPDATE per table.
    """
    threshold = int(NULL_SHARE * BUCKETS)
    columns: list[str] = []
    for table in ctx.schema.tables:
        keys = table.key_columns - {c.lower() for fk in table.foreign_keys for c in fk.columns}
        draws: list[tuple[str, str]] = []
        for column in table.columns:
            if not column.nullable or column.name.lower() in keys:
                continue
            drawn = f"{ctx.draw('null:' + table.name + '.' + column.name, 'rowid')} < {threshold}"
            draws.append((quote(column.name), drawn))
            columns.append(f"{table.schema}.{table.name}.{column.name}")
        if draws:
            ctx.con.execute(
                f"UPDATE {table.qualified} SET "
                + ", ".join(f"{name} = CASE WHEN {drawn} THEN NULL ELSE {name} END" for name, drawn in draws)
                + " WHERE "
                + " OR ".join(drawn for _, drawn in draws)
            )
    return {"null_columns": columns}


def write_boundary_values(ctx: VariantContext) -> dict[str, Any]:
    """Write each boundary value of the gold's literals into a few rows of its column (``BOUNDARY_ROWS``).

    The rows (distinct for each value of a column) are drawn by a ``random.Random`` seeded by the variant
    and the column; one UPDATE per table (``_write_boundaries``).
    """
    written: list[str] = []
    planned: list[_Boundaries] = []
    row_ids: dict[str, Sequence[int]] = {}
    for literal in ctx.literals:
        table = ctx.schema.table(literal.table, literal.schema)
        column = table.column(literal.column) if table is not None else None
        if table is None or column is None:
            continue
        if table.qualified not in row_ids:
            [(top, count)] = ctx.con.execute(f"SELECT max(rowid), count(*) FROM {table.qualified}").fetchall()
            row_ids[table.qualified] = (
                range(count)
                if top is None or top + 1 == count
                else [r[0] for r in ctx.con.execute(f"SELECT rowid FROM {table.qualified} ORDER BY rowid").fetchall()]
            )
        candidates = row_ids[table.qualified]
        cast_key = ("boundary_casts", literal.values, column.data_type)
        casts = ctx.cache.get(cast_key)
        if casts is None:
            [casts] = ctx.con.execute(
                "SELECT " + ", ".join(f"TRY_CAST(? AS {column.data_type})" for _ in literal.values),
                list(literal.values),
            ).fetchall()
            ctx.cache[cast_key] = casts
        values = [v for v, cast in zip(literal.values, casts) if cast is not None]
        rng = random.Random(f"{ctx.seed}:{table.qualified}.{column.name}")
        per_value = max(BOUNDARY_ROWS[0], min(BOUNDARY_ROWS[1], int(len(candidates) * BOUNDARY_ROWS[2])))
        chosen = rng.sample(candidates, min(per_value * len(values), len(candidates)))
        cases, params, targets = [], [], []
        for position, value in enumerate(values):
            rows = chosen[position * per_value : (position + 1) * per_value]
            if rows:
                cases.append(f"WHEN rowid IN ({', '.join(map(str, rows))}) THEN CAST(? AS {column.data_type})")
                params.append(value)
                targets += rows
        if targets:
            planned.append(_Boundaries(table, column, cases, params, targets))
    for _, same_table in itertools.groupby(planned, key=lambda plan: plan.table.qualified):
        written += _write_boundaries(ctx, list(same_table))
    return {"boundary_values": written}


@dataclass
class _Boundaries:
    """The boundary values to write into one column: CASE branches (``WHEN rowid IN (...) THEN CAST(? ...)``),
    their values and every row they write."""

    table: Table
    column: Column
    cases: list[str]
    params: list[str]
    targets: list[int]

    def written(self) -> list[str]:
        return [f"{self.table.schema}.{self.table.name}.{self.column.name}={value}" for value in self.params]


def _write_boundaries(ctx: VariantContext, plans: list[_Boundaries]) -> list[str]:
    """Write the boundary values of one table's columns: one UPDATE for all of them, or, should it fail, one per
    column, a column that refuses its values keeping its own (every column's rows are its own draw, so the
    result is the same either way)."""
    table = plans[0].table
    if len(plans) > 1:
        sets = ", ".join(
            f"{quote(plan.column.name)} = CASE {' '.join(plan.cases)} ELSE {quote(plan.column.name)} END"
            for plan in plans
        )
        targets = sorted({row for plan in plans for row in plan.targets})
        try:
            ctx.con.execute(
                f"UPDATE {table.qualified} SET {sets} WHERE rowid IN ({', '.join(map(str, targets))})",
                [value for plan in plans for value in plan.params],
            )
            return [line for plan in plans for line in plan.written()]
        except duckdb.Error as exc:
            logger.debug("boundary values of %s not written at once, column by column instead: %s", table.name, exc)
    written: list[str] = []
    for plan in plans:
        try:
            ctx.con.execute(
                f"UPDATE {table.qualified} SET {quote(plan.column.name)} = CASE {' '.join(plan.cases)} END "
                f"WHERE rowid IN ({', '.join(map(str, sorted(plan.targets)))})",
                plan.params,
            )
        except duckdb.Error as exc:  # a CHECK constraint or a type the cast accepts but the column refuses
            logger.debug("boundary values not written to %s.%s: %s", table.name, plan.column.name, exc)
            continue
        written += plan.written()
    return written


def shuffle_rows(ctx: VariantContext) -> dict[str, Any]:
    """Store every table's rows in a new order (queries that rely on storage order show it)."""
    for table in ctx.schema.tables:
        ctx.con.execute(
            f"CREATE OR REPLACE TABLE {table.qualified} AS SELECT * FROM {table.qualified} "
            f"ORDER BY {ctx.draw('shuffle:' + table.name, 'rowid')}, rowid"
        )
    return {"shuffled_tables": len(ctx.schema.tables)}


def copy_views(ctx: VariantContext) -> dict[str, Any]:
    """Create the source's views over the variant's tables (in dependency order, by retrying)."""
    pending = list(ctx.schema.views)
    created: list[str] = []
    for _ in range(len(pending) + 1):
        failed = []
        for schema_name, name, sql in pending:
            try:
                ctx.con.execute(f"USE {quote(ctx.notes['database'])}.{quote(schema_name)}")
                ctx.con.execute(sql)
                created.append(f"{schema_name}.{name}")
            except duckdb.Error:
                failed.append((schema_name, name, sql))
        if not failed or len(failed) == len(pending):
            pending = failed
            break
        pending = failed
    ctx.con.execute(f"USE {quote(ctx.notes['database'])}.main")
    for schema_name, name, _ in pending:
        logger.warning(
            "view %s.%s could not be created in the variant; queries on it will fail there", schema_name, name
        )
    return {"views": created, "views_missing": [f"{s}.{n}" for s, n, _ in pending]}
