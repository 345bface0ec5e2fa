"""The literals the gold SQL compares columns with, and the boundary values a variant writes for them.

A query that reads ``>=`` where the gold says ``>``, or a date bound moved by a day, returns the same
rows unless some row sits on the bound. For every ``column <op> literal`` (``=``, ``<>``, ``<``, ``<=``,
``>``, ``>=``, ``BETWEEN``, ``IN``) of the expected SQL, a variant writes the literal itself and its
neighbours (one step below and above: 1 for integers, the last digit for decimals, a day for dates, a
second for timestamps; other letter cases for strings) into a few rows of that column.

    >>> from nl2sql_pipeline.variants.schema import Column, SourceSchema, Table
    >>> schema = SourceSchema([Table("main", "t", [Column("d", "DATE", True)])], [])
    >>> boundary_literals(["SELECT * FROM t WHERE d >= DATE '2026-01-01'"], schema)[0].values
    ('2025-12-31', '2026-01-01', '2026-01-02')
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from nl2sql_pipeline.sql.parse import SqlParseError, parse
from nl2sql_pipeline.variants.schema import SourceSchema, Table

logger = logging.getLogger(__name__)

MAX_VALUES_PER_COLUMN = 12
"""At most this many boundary values are written into one column (the first ones, in sorted order)."""

_INTEGER = re.compile(r"^(U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT))$")
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


@dataclass(frozen=True)
class BoundaryLiteral:
    """Boundary values (text, cast to the column's type when written) for one column of one table."""

    schema: str
    table: str
    column: str
    values: tuple[str, ...]


def _literal_text(node: exp.Expr) -> str | None:
    """The text of a literal operand (``'x'``, ``3``, ``-3``, ``DATE '2026-01-01'``), else None."""
    if isinstance(node, exp.Cast):
        node = node.this
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return f"-{node.this.this}"
    return None


def _column_of(node: exp.Expr) -> exp.Column | None:
    if isinstance(node, exp.Cast):
        node = node.this
    return node if isinstance(node, exp.Column) and node.name else None


def _comparisons(tree: exp.Expr) -> Iterable[tuple[exp.Column, str]]:
    """(column, literal text) for every comparison of a bare column with a literal."""
    for node in tree.find_all(*_COMPARISONS):
        left, right = node.this, node.expression
        for column_side, literal_side in ((left, right), (right, left)):
            column, text = _column_of(column_side), _literal_text(literal_side)
            if column is not None and text is not None:
                yield column, text
    for between in tree.find_all(exp.Between):
        column = _column_of(between.this)
        if column is not None:
            for bound in (between.args.get("low"), between.args.get("high")):
                text = _literal_text(bound) if bound is not None else None
                if text is not None:
                    yield column, text
    for in_list in tree.find_all(exp.In):
        column = _column_of(in_list.this)
        if column is not None:
            for item in in_list.expressions:
                text = _literal_text(item)
                if text is not None:
                    yield column, text


@dataclass(frozen=True)
class _TableRef:
    """One table read by a query: the names a column may qualify it by (its alias and name, lower case)."""

    names: frozenset[str]
    table: Table


def _table_refs(tree: exp.Expr, schema: SourceSchema) -> list[_TableRef]:
    """Every table of ``tree`` found in ``schema``, in the query's order (one walk of the tree)."""
    refs = []
    for node in tree.find_all(exp.Table):
        table = schema.table(node.name, node.db or None)
        if table is not None:
            refs.append(_TableRef(frozenset({node.alias_or_name.lower(), node.name.lower()}), table))
    return refs


def _tables_of(refs: list[_TableRef], column: exp.Column) -> list[Table]:
    """The source tables ``column`` may belong to: by its qualifier, else every table of the query having it.

    ``refs`` are the query's tables (``_table_refs``), found once per query rather than once per column.
    """
    qualifier = column.table.lower() if column.table else None
    found: list[Table] = []
    for ref in refs:
        if qualifier is not None and qualifier not in ref.names:
            continue
        if ref.table.column(column.name) is not None and ref.table not in found:
            found.append(ref.table)
    return found


def boundary_values(text: str, data_type: str) -> tuple[str, ...]:
    """The literal and its neighbours for a column of ``data_type`` (empty when the type is not handled).

    >>> boundary_values("10", "INTEGER")
    ('9', '10', '11')
    >>> boundary_values("9.99", "DECIMAL(10,2)")
    ('9.98', '9.99', '10.00')
    >>> boundary_values("active", "VARCHAR")
    ('ACTIVE', 'Active', 'active')
    """
    kind = data_type.upper()
    try:
        if _INTEGER.match(kind):
            integer = int(Decimal(text))
            return (str(integer - 1), str(integer), str(integer + 1))
        decimal = _DECIMAL.match(kind)
        if decimal:
            step = Decimal(1).scaleb(-int(decimal.group(2)))
            fixed = Decimal(text).quantize(step)
            return (str(fixed - step), str(fixed), str(fixed + step))
        if kind in ("FLOAT", "DOUBLE", "REAL"):
            real = float(text)
            real_step = max(abs(real), 1.0) * 1e-6
            return (repr(real - real_step), repr(real), repr(real + real_step))
        if kind == "DATE":
            day = dt.date.fromisoformat(text.strip()[:10])
            return tuple((day + dt.timedelta(days=d)).isoformat() for d in (-1, 0, 1))
        if kind.startswith("TIMESTAMP"):
            moment = dt.datetime.fromisoformat(text.strip())
            return tuple((moment + dt.timedelta(seconds=s)).isoformat(sep=" ") for s in (-1, 0, 1))
        if kind == "VARCHAR":
            return tuple(sorted({text, text.upper(), text.lower(), text.capitalize()}))
    except (ValueError, InvalidOperation, ArithmeticError):
        return ()
    return ()


def boundary_literals(expected_sqls: Iterable[str], schema: SourceSchema) -> list[BoundaryLiteral]:
    """The boundary values of every column the given queries compare with a literal (sorted, deduplicated).

    Key columns (primary, unique, foreign) are left out: changing them would break the keys a variant keeps.
    A query that does not parse contributes nothing.
    """
    values: dict[tuple[str, str, str], set[str]] = {}
    for sql in expected_sqls:
        try:
            tree = parse(sql)
        except SqlParseError as exc:
            logger.debug("no boundary literals from an unparsable query: %s", exc)
            continue
        refs = _table_refs(tree, schema)
        owners: dict[tuple[str, str], list[Table]] = {}  # (qualifier, column name): its tables, once each
        for column, text in _comparisons(tree):
            owner_key = (column.table.lower(), column.name.lower())
            if owner_key not in owners:
                owners[owner_key] = _tables_of(refs, column)
            for table in owners[owner_key]:
                source_column = table.column(column.name)
                if source_column is None or source_column.name.lower() in table.key_columns:
                    continue
                key = (table.schema, table.name, source_column.name)
                values.setdefault(key, set()).update(boundary_values(text, source_column.data_type))
    return [
        BoundaryLiteral(schema_name, table_name, column_name, tuple(sorted(found))[:MAX_VALUES_PER_COLUMN])
        for (schema_name, table_name, column_name), found in sorted(values.items())
        if found
    ]
