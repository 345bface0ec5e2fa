"""Rewrites that make a SQLite query mean in DuckDB what it meant in SQLite (after sqlglot's transpile).

Each fix is a function ``(tree, columns) -> tree``: ``columns`` maps lower-case table names to their
columns (``sqlite_to_duckdb.SourceColumn``: declared affinity and DuckDB type). ``SQLITE_FIXES`` is the
ordered list applied by ``convert.convert_sql``:

1. ``double_quoted_strings``: SQLite reads ``"x"`` as the string 'x' when no column x exists.
2. ``bare_columns_in_aggregates``: SQLite accepts selected columns neither grouped nor aggregated; with
   one MIN/MAX they come from that row (``arg_min``/``arg_max``), else from any row (``any_value``).
3. ``like_is_case_insensitive``: SQLite's LIKE ignores ASCII case: ILIKE.
4. ``text_compared_with_numbers``: a TEXT column compared with a number is compared as text in SQLite
   (the number becomes a string); a numeric column that also holds text, or a text column compared
   with a numeric column (a join on keys declared with different types), is cast with TRY_CAST.
5. ``numbers_compared_with_text``: a number compared with a string. A numeric column turns a string that
   looks like a number into that number (its affinity); any other string, and any string compared with a
   number that has no affinity (``count(*)``, ``sum(x)``, ``n + 1``), is greater than every number, so the
   comparison is decided by the types (``n BETWEEN 'abc' AND 'abc'`` is empty, not an error).
6. ``in_subquery_across_types``: ``x IN (SELECT y ...)`` with one side an integer column and the other a
   text column: compared as SQLite does (the integer as text; a real side against the text as a number).
7. ``text_aggregated_as_numbers``: ``avg``/``sum``/``total`` of a text column: each text a number when it
   is one, else 0.0 (SQLite reads a text's numeric prefix; a prefix such as a date's year gives another
   result, which the check against SQLite then reports).
8. ``strftime_of_a_time``: ``strftime`` of a text holding only a time (``'10:30'``) reads it on 2000-01-01;
   a text that is no date gives NULL, as in SQLite.
9. ``integer_division``: ``/`` of two integers truncates in SQLite, not in DuckDB.
10. ``now_reads_the_clock``: ``date('now')``, ``datetime('now', '-30 days')``, ``strftime('%Y', 'now')``
    read SQLite's clock through the string ``'now'``: they become DuckDB clock reads (``CURRENT_TIMESTAMP``
    with the modifiers as intervals or ``date_trunc``, formatted as the text SQLite returns), which the
    pinned clock (``sql.clock``) evaluates at the gold set's reference date. A modifier not known here
    is left as it is (the conversion then fails, and the import says so).

>>> from sqlglot import parse_one
>>> double_quoted_strings(parse_one('SELECT a FROM t WHERE b = "x"', read="sqlite"), {"t": {"a": 0, "b": 0}}).sql("duckdb")
"SELECT a FROM t WHERE b = 'x'"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from sqlglot import exp

ColumnInfo = Mapping[str, Mapping[str, Any]]
"""Lower-case table name -> lower-case column name -> column (``SourceColumn``) or anything."""
Fix = Callable[[exp.Expr, ColumnInfo], exp.Expr]

_SCOPE_BOUNDARIES = (exp.Select, exp.Subquery, exp.Union, exp.Intersect, exp.Except)


def _own_nodes(node: exp.Expr, skip: tuple[type, ...] = ()) -> Iterator[exp.Expr]:
    """``node`` and its descendants in the same query scope (subqueries not entered; ``skip`` types
    yielded but not entered)."""
    yield node
    if isinstance(node, skip):
        return
    for child in node.iter_expressions():
        if isinstance(child, _SCOPE_BOUNDARIES):
            continue
        yield from _own_nodes(child, skip)


def _aliases(select: exp.Select) -> set[str]:
    return {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias) and p.alias}


def double_quoted_strings(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``"x"`` that names no column of any table nor any alias becomes the string literal 'x'."""
    known = {name for table in columns.values() for name in table}
    aliases = {a.lower() for a in (n.alias for n in tree.find_all(exp.Alias)) if a}
    for column in list(tree.find_all(exp.Column)):
        identifier = column.this
        if (
            isinstance(identifier, exp.Identifier)
            and identifier.quoted
            and not column.table
            and identifier.name.lower() not in known
            and identifier.name.lower() not in aliases
        ):
            column.replace(exp.Literal.string(identifier.name))
    return tree


def _aggregates(select: exp.Select) -> list[exp.AggFunc]:
    """Aggregate calls of ``select``'s own scope (projections, HAVING, ORDER BY; windows left out)."""
    parts = list(select.expressions) + [select.args.get("having"), select.args.get("order")]
    found: list[exp.AggFunc] = []
    for part in parts:
        if part is None:
            continue
        for node in _own_nodes(part, skip=(exp.Window, exp.AggFunc)):
            if isinstance(node, exp.AggFunc) and not isinstance(node.parent, exp.Window):
                found.append(node)
    return found


def _grouped(select: exp.Select) -> tuple[list[exp.Expr], set[str]]:
    """Every GROUP BY expression (positions and projection aliases resolved) and the grouped columns as
    lower-case ``qualifier.name`` (``.name`` when unqualified)."""
    group = select.args.get("group")
    exprs: list[exp.Expr] = list(group.expressions) if group else []
    by_alias = {p.alias.lower(): p.this for p in select.expressions if isinstance(p, exp.Alias)}
    resolved = []
    for item in exprs:
        if isinstance(item, exp.Literal) and item.is_int and 0 < int(item.name) <= len(select.expressions):
            target = select.expressions[int(item.name) - 1]
            resolved.append(target.this if isinstance(target, exp.Alias) else target)
        elif isinstance(item, exp.Column) and not item.table and item.name.lower() in by_alias:
            resolved.append(by_alias[item.name.lower()])
        else:
            resolved.append(item)
    names = {f"{c.table.lower()}.{c.name.lower()}" for e in resolved for c in e.find_all(exp.Column)}
    return resolved, names


def _is_grouped(column: exp.Column, grouped_names: set[str]) -> bool:
    """True when ``column`` is a grouped column: same qualifier and name, or either one unqualified."""
    name, table = column.name.lower(), column.table.lower()
    if f"{table}.{name}" in grouped_names or f".{name}" in grouped_names:
        return True
    return not table and any(g.endswith(f".{name}") for g in grouped_names)


def _bare_columns(
    part: exp.Expr, grouped_sql: Callable[[], set[str]], grouped_names: set[str], aliases: set[str]
) -> list[exp.Column]:
    """Columns of ``part`` outside any aggregate and not grouped (none when ``part`` is itself a GROUP BY
    expression: ``grouped_sql()`` is the SQL of each, asked only of a part with such columns)."""
    found = []
    for node in _own_nodes(part, skip=(exp.AggFunc, exp.Window)):
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            name = node.name.lower()
            if _is_grouped(node, grouped_names) or (not node.table and name in aliases):
                continue
            if any(isinstance(a, (exp.AggFunc, exp.Window)) for a in _ancestors(node, part)):
                continue
            found.append(node)
    if found and part.sql().lower() in grouped_sql():
        return []
    return found


def _ancestors(node: exp.Expr, stop: exp.Expr) -> Iterator[exp.Expr]:
    current = node.parent
    while current is not None and current is not stop:
        yield current
        current = current.parent
    if current is stop:
        yield stop


def ungrouped_columns(select: exp.Select) -> list[exp.Column]:
    """The columns ``select`` uses outside any aggregate in its projection, HAVING and ORDER BY that its
    GROUP BY does not hold (positions, projection aliases and grouped expressions resolved), in order."""
    grouped, grouped_names = _grouped(select)
    written: list[set[str]] = []

    def grouped_sql() -> set[str]:  # the GROUP BY expressions' SQL, written once and only when asked
        if not written:
            written.append({e.sql().lower() for e in grouped})
        return written[0]

    aliases = _aliases(select)
    parts = [p.this if isinstance(p, exp.Alias) else p for p in select.expressions]
    for extra in ("having", "order"):
        if select.args.get(extra) is not None:
            parts.append(select.args[extra])
    return [c for part in parts for c in _bare_columns(part, grouped_sql, grouped_names, aliases)]


def bare_columns_in_aggregates(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """Wrap columns an aggregated SELECT neither groups nor aggregates, as SQLite evaluates them."""
    for select in list(tree.find_all(exp.Select)):
        aggregates = _aggregates(select)
        if not aggregates and not select.args.get("group"):
            continue
        bare = ungrouped_columns(select)
        if not bare:
            continue
        extreme = aggregates[0] if len(aggregates) == 1 and isinstance(aggregates[0], (exp.Max, exp.Min)) else None
        for column in bare:
            if extreme is not None:
                wrapper = exp.ArgMax if isinstance(extreme, exp.Max) else exp.ArgMin
                replacement: exp.Expr = wrapper(this=column.copy(), expression=extreme.this.copy())
            else:
                replacement = exp.AnyValue(this=column.copy())
            if column.parent is select:
                replacement = exp.alias_(replacement, column.name)
            column.replace(replacement)
    return tree


def like_is_case_insensitive(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``a LIKE b`` becomes ``a ILIKE b`` (SQLite's LIKE ignores ASCII case; DuckDB's does not)."""
    for like in list(tree.find_all(exp.Like)):
        like.replace(exp.ILike(this=like.this.copy(), expression=like.expression.copy()))
    return tree


def _table_names(tree: exp.Expr) -> dict[str, str]:
    """Alias or name (lower case) -> table name (lower case) of every table the query reads."""
    names: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        names[table.alias_or_name.lower()] = table.name.lower()
        names.setdefault(table.name.lower(), table.name.lower())
    return names


def _column_of(column: exp.Column, tables: Mapping[str, str], columns: ColumnInfo) -> Any:
    """The source column a query column reads, when it can be told (None otherwise)."""
    name = column.name.lower()
    if column.table:
        table = columns.get(tables.get(column.table.lower(), column.table.lower()), {})
        return table.get(name)
    found = {id(columns[t][name]): columns[t][name] for t in set(tables.values()) if name in columns.get(t, {})}
    return next(iter(found.values())) if len(found) == 1 else None


def _is_number(node: exp.Expr) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_number


def _as_text(node: exp.Expr) -> exp.Expr:
    text = node.this.name if isinstance(node, exp.Neg) else node.name
    return exp.Literal.string(f"-{text}" if isinstance(node, exp.Neg) else text)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def text_compared_with_numbers(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """Comparisons of a column holding text with a number literal, made as SQLite makes them."""
    tables = _table_names(tree)

    def fix(column: exp.Column, literals: list[exp.Expr]) -> None:
        source = _column_of(column, tables, columns)
        if source is None or getattr(source, "duckdb_type", None) != "VARCHAR":
            return
        if getattr(source, "affinity", None) == "TEXT":
            for literal in literals:
                literal.replace(_as_text(literal))
        else:
            column.replace(exp.TryCast(this=column.copy(), to=exp.DataType.build("DOUBLE")))

    def numeric(column: exp.Column) -> bool:
        return getattr(_column_of(column, tables, columns), "duckdb_type", None) in ("BIGINT", "DOUBLE")

    def text(column: exp.Column) -> bool:
        return getattr(_column_of(column, tables, columns), "duckdb_type", None) == "VARCHAR"

    for node in list(tree.find_all(*_COMPARISONS)):
        left, right = node.this, node.expression
        if isinstance(left, exp.Column) and _is_number(right):
            fix(left, [right])
        elif isinstance(right, exp.Column) and _is_number(left):
            fix(right, [left])
        elif isinstance(left, exp.Column) and isinstance(right, exp.Column):
            # SQLite compares a text column with a numeric one as numbers (numeric affinity wins)
            for one, other in ((left, right), (right, left)):
                if text(one) and numeric(other):
                    one.replace(exp.TryCast(this=one.copy(), to=exp.DataType.build("DOUBLE")))
    for in_list in list(tree.find_all(exp.In)):
        values = list(in_list.expressions)
        if isinstance(in_list.this, exp.Column) and values and all(_is_number(v) for v in values):
            fix(in_list.this, values)
    for between in list(tree.find_all(exp.Between)):
        low, high = between.args.get("low"), between.args.get("high")
        if (
            isinstance(between.this, exp.Column)
            and low is not None
            and high is not None
            and _is_number(low)
            and _is_number(high)
        ):
            fix(between.this, [low, high])
    return tree


_NUMERIC_TYPES = ("BIGINT", "DOUBLE")
_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")
_FLIPPED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
}
# number OP text, where every number is less than every text
_NUMBER_VS_TEXT: dict[type[exp.Expr], bool] = {
    exp.EQ: False,
    exp.NEQ: True,
    exp.LT: True,
    exp.LTE: True,
    exp.GT: False,
    exp.GTE: False,
}
_UNAFFINED_NUMBERS = (exp.Count, exp.Sum, exp.Avg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def _decided(operand: exp.Expr, value: bool) -> exp.Expr:
    """``value`` when ``operand`` is not NULL, else NULL (a comparison with NULL is unknown)."""
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=operand.copy(), expression=exp.Null()), true=exp.Null())],
        default=exp.Boolean(this=value),
    )


def _string(node: exp.Expr | None) -> str | None:
    return node.name if isinstance(node, exp.Literal) and node.is_string else None


def numbers_compared_with_text(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """A number compared with a string, as SQLite compares them (see the module doc, fix 5).

    >>> from sqlglot import parse_one
    >>> numbers_compared_with_text(parse_one("SELECT 1 FROM t WHERE n > 'abc'"), {}).sql("duckdb")
    "SELECT 1 FROM t WHERE n > 'abc'"
    """
    tables = _table_names(tree)

    def kind(node: exp.Expr) -> str | None:
        """'column' (a numeric column: has affinity), 'number' (a number without affinity) or None."""
        if isinstance(node, exp.Column):
            return (
                "column" if getattr(_column_of(node, tables, columns), "duckdb_type", None) in _NUMERIC_TYPES else None
            )
        if isinstance(node, (exp.Count, exp.Sum, exp.Avg)):
            return "number"
        if isinstance(node, _UNAFFINED_NUMBERS) and (kind(node.this) or _is_number(node.this)):
            return "number"
        return None

    for between in list(tree.find_all(exp.Between)):
        low, high = between.args.get("low"), between.args.get("high")
        if kind(between.this) and (_string(low) is not None or _string(high) is not None):
            between.replace(
                exp.Paren(
                    this=exp.and_(
                        exp.GTE(this=between.this.copy(), expression=low.copy() if low else exp.Null()),
                        exp.LTE(this=between.this.copy(), expression=high.copy() if high else exp.Null()),
                    )
                )
            )
    for node in list(tree.find_all(*_COMPARISONS)):
        left, right = node.this, node.expression
        op: type[exp.Expr] = type(node)
        if _string(right) is not None and kind(left):
            number, text = left, right
        elif _string(left) is not None and kind(right):
            number, text, op = right, left, _FLIPPED[op]
        else:
            continue
        value = _string(text) or ""
        if kind(number) == "column" and _NUMBER_TEXT.match(value):
            text.replace(exp.Literal.number(value.strip()))
        else:
            node.replace(_decided(number, _NUMBER_VS_TEXT[op]))
    for in_list in list(tree.find_all(exp.In)):
        values = list(in_list.expressions)
        strings = [v for v in values if _string(v) is not None]
        if not strings or not kind(in_list.this):
            continue
        affined = kind(in_list.this) == "column"
        kept: list[exp.Expr] = []
        for value in values:
            text = _string(value)
            if text is None:
                kept.append(value.copy())
            elif affined and _NUMBER_TEXT.match(text):
                kept.append(exp.Literal.number(text.strip()))
        if kept:
            in_list.set("expressions", kept)
        else:  # no value can equal a number
            in_list.replace(_decided(in_list.this, False))
    return tree


def in_subquery_across_types(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``x IN (SELECT y ...)`` where one side is an integer column and the other a text column (fix 6)."""
    for in_query in list(tree.find_all(exp.In)):
        query = in_query.args.get("query")
        select = query.this if isinstance(query, exp.Subquery) else query
        left = in_query.this
        if not isinstance(select, exp.Select) or len(select.expressions) != 1 or not isinstance(left, exp.Column):
            continue
        projected = select.expressions[0]
        inner = projected.this if isinstance(projected, exp.Alias) else projected
        if not isinstance(inner, exp.Column):
            continue
        outer_type = getattr(_column_of(left, _table_names(tree), columns), "duckdb_type", None)
        inner_type = getattr(_column_of(inner, _table_names(select), columns), "duckdb_type", None)
        types = {outer_type, inner_type}
        if types == {"BIGINT", "VARCHAR"}:
            integer = left if outer_type == "BIGINT" else inner
            integer.replace(exp.Cast(this=integer.copy(), to=exp.DataType.build("VARCHAR")))
        elif types == {"DOUBLE", "VARCHAR"}:
            text = left if outer_type == "VARCHAR" else inner
            text.replace(exp.TryCast(this=text.copy(), to=exp.DataType.build("DOUBLE")))
    return tree


def _as_sqlite_number(column: exp.Expr) -> exp.Expr:
    """A text value as SQLite's arithmetic reads it: the number it spells, else 0.0 (NULL stays NULL)."""
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=column.copy(), expression=exp.Null()), true=exp.Null())],
        default=exp.Coalesce(
            this=exp.TryCast(this=column.copy(), to=exp.DataType.build("DOUBLE")),
            expressions=[exp.Literal.number("0.0")],
        ),
    )


def text_aggregated_as_numbers(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``avg``/``sum``/``total`` of a text column: its values read as numbers, as SQLite does (fix 7)."""
    tables = _table_names(tree)
    for aggregate in list(tree.find_all(exp.Avg, exp.Sum)):
        argument = aggregate.this
        if isinstance(argument, exp.Distinct) or not isinstance(argument, exp.Column):
            continue
        if getattr(_column_of(argument, tables, columns), "duckdb_type", None) == "VARCHAR":
            argument.replace(_as_sqlite_number(argument))
    return tree


def strftime_of_a_time(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``strftime(fmt, x)`` of a text column: a time alone is read on 2000-01-01, no date gives NULL (fix 8)."""
    tables = _table_names(tree)
    for to_text in list(tree.find_all(exp.TimeToStr)):
        stamp = to_text.this
        if not isinstance(stamp, exp.TsOrDsToTimestamp) or not isinstance(stamp.this, exp.Column):
            continue
        source = _column_of(stamp.this, tables, columns)
        if getattr(source, "duckdb_type", None) != "VARCHAR":
            continue
        text = exp.Cast(this=stamp.this.copy(), to=exp.DataType.build("VARCHAR"))
        timestamp = exp.DataType.build("TIMESTAMP")
        stamp.replace(
            exp.Coalesce(
                this=exp.TryCast(this=text, to=timestamp),
                expressions=[
                    exp.TryCast(
                        this=exp.DPipe(this=exp.Literal.string("2000-01-01 "), expression=text.copy()), to=timestamp
                    )
                ],
            )
        )
    return tree


_BIGINT = exp.DataType.build("BIGINT")


def _is_integer(node: exp.Expr, tables: Mapping[str, str], columns: ColumnInfo) -> bool:
    """True when SQLite computes ``node`` as an integer (integer columns, literals, counts, sums of those)."""
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _is_integer(node.this, tables, columns)
    if isinstance(node, exp.Literal):
        return node.is_int
    if isinstance(node, exp.Column):
        return getattr(_column_of(node, tables, columns), "duckdb_type", None) == "BIGINT"
    if isinstance(node, exp.Count):
        return True
    if isinstance(node, (exp.Sum, exp.Max, exp.Min)):
        return _is_integer(node.this, tables, columns)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return _is_integer(node.this, tables, columns) and _is_integer(node.expression, tables, columns)
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.INTEGER_TYPES)
    return False


def integer_division(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``a / b`` of two integers truncates in SQLite: typed so sqlglot writes DuckDB's truncating form."""
    tables = _table_names(tree)
    for div in list(tree.find_all(exp.Div)):
        if _is_integer(div.this, tables, columns) and _is_integer(div.expression, tables, columns):
            div.this.type = _BIGINT
            div.expression.type = _BIGINT
    return tree


_NOW = "now"
_TEXT_FORMATS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%d %H:%M:%S", "time": "%H:%M:%S"}
"""The text each SQLite time function returns, as a DuckDB ``strftime`` format."""
_SHIFT = re.compile(r"([+-]?\d+(?:\.\d+)?)\s+(second|minute|hour|day|month|year)s?", re.IGNORECASE)
_START_OF = re.compile(r"start\s+of\s+(day|month|year)", re.IGNORECASE)


def _is_now(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_string and node.this.strip().lower() == _NOW


def _clock_timestamp(modifiers: list[exp.Expr]) -> exp.Expr | None:
    """SQLite's ``'now'`` with ``modifiers`` as a DuckDB TIMESTAMP expression; None for a modifier not known."""
    stamp: exp.Expr = exp.cast(exp.CurrentTimestamp(), "TIMESTAMP")
    for modifier in modifiers:
        text = _string(modifier)
        shift = _SHIFT.fullmatch(text.strip()) if text is not None else None
        start = _START_OF.fullmatch(text.strip()) if text is not None else None
        if shift is not None:
            interval = exp.Interval(this=exp.Literal.string(shift.group(1)), unit=exp.var(shift.group(2).upper()))
            stamp = exp.cast(exp.Add(this=stamp, expression=interval), "TIMESTAMP")
        elif start is not None:
            stamp = exp.cast(
                exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(start.group(1)), stamp]), "TIMESTAMP"
            )
        else:
            return None
    return stamp


def now_reads_the_clock(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``date('now', ...)`` and its kin: DuckDB clock reads giving SQLite's text (fix 10).

    >>> from sqlglot import parse_one
    >>> now_reads_the_clock(parse_one("SELECT date('now', '-30 days')", read="sqlite"), {}).sql("duckdb")
    "SELECT STRFTIME(CAST(CAST(CURRENT_TIMESTAMP AS TIMESTAMP) + INTERVAL '-30' DAY AS TIMESTAMP), '%Y-%m-%d')"
    """
    for node in list(tree.find_all(exp.Date, exp.Anonymous, exp.TsOrDsToTimestamp)):
        if isinstance(node, exp.TsOrDsToTimestamp):  # strftime(fmt, 'now'): the timestamp it formats
            if _is_now(node.this):
                node.replace(exp.cast(exp.CurrentTimestamp(), "TIMESTAMP"))
            continue
        if isinstance(node, exp.Date):
            name, arguments = "date", [node.this, *node.expressions]
        else:
            name, arguments = str(node.this).lower(), list(node.expressions)
        if name not in _TEXT_FORMATS or not arguments or not _is_now(arguments[0]):
            continue
        stamp = _clock_timestamp(arguments[1:])
        if stamp is not None:
            node.replace(exp.TimeToStr(this=stamp, format=exp.Literal.string(_TEXT_FORMATS[name])))
    return tree


SQLITE_FIXES: tuple[Fix, ...] = (
    double_quoted_strings,
    bare_columns_in_aggregates,
    like_is_case_insensitive,
    text_compared_with_numbers,
    numbers_compared_with_text,
    in_subquery_across_types,
    text_aggregated_as_numbers,
    strftime_of_a_time,
    integer_division,
    now_reads_the_clock,
)
"""The fixes applied to SQLite queries, in order (later fixes see the literals earlier ones made)."""
