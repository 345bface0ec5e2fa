"""Rewrites that make a Postgres query mean in DuckDB what it meant in Postgres (after sqlglot's transpile).

Each fix is a function ``(tree, columns) -> tree`` like ``sqlite_fixes``'s; ``POSTGRES_FIXES`` is the
ordered list applied by ``convert.convert_sql``. The text is first passed through
``keep_date_format_calls``, which keeps ``TO_CHAR``/``TO_DATE`` as written (sqlglot's own mapping of
Postgres formats loses ``Month``, ``Mon``, ``Dy``, ``FM``...), so the fixes see the format itself:

1. ``date_formats``: ``TO_CHAR(x, 'FMMonth DD, YYYY')`` becomes DuckDB ``strftime`` parts (a full month or
   day name blank-padded to 9 characters unless ``FM`` precedes it, upper/lower case as the pattern is
   written); ``TO_DATE(s, fmt)`` becomes ``CAST(strptime(s, fmt') AS DATE)``. A format with a pattern not
   known here (or not a literal) is left to sqlglot.
2. ``functionally_dependent_columns``: Postgres accepts a column neither grouped nor aggregated when the
   GROUP BY holds its table's primary key; DuckDB does not: the column is added to the GROUP BY (same
   groups: it depends on the key).
3. ``integer_division`` (``postgres_division``): ``/`` of two integers truncates in Postgres, so it becomes
   DuckDB's ``//``, the operand types read from the database's columns.

>>> from sqlglot import parse_one
>>> tree = parse_one(keep_date_format_calls("SELECT TO_CHAR(d, 'FMMonth YYYY') FROM t"), read="postgres")
>>> date_formats(tree, {}).sql("duckdb")
"SELECT STRFTIME(d, '%B %Y') FROM t"
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType

from nl2sql_pipeline.dialect.postgres_division import integer_division
from nl2sql_pipeline.dialect.sqlite_fixes import ColumnInfo, Fix, ungrouped_columns

_RAW_FUNCTIONS = ("TO_CHAR", "TO_DATE")
_RAW_PREFIX = "NL2SQL_RAW_"


def keep_date_format_calls(sql: str) -> str:
    """``sql`` with ``TO_CHAR(``/``TO_DATE(`` renamed so sqlglot keeps them as written (anonymous calls).

    sqlglot maps a Postgres format while parsing and loses ``Month``, ``Mon``, ``Dy``, ``FM``...; the
    renamed calls reach ``date_formats`` with their format intact. Strings and quoted names are untouched.

    >>> keep_date_format_calls("SELECT to_char(d, 'TO_CHAR(') FROM t")
    "SELECT NL2SQL_RAW_to_char(d, 'TO_CHAR(') FROM t"
    """
    tokens = Postgres().tokenize(sql)
    starts = [
        token.start
        for token, following in zip(tokens, tokens[1:])
        if token.token_type == TokenType.VAR
        and token.text.upper() in _RAW_FUNCTIONS
        and following.token_type == TokenType.L_PAREN
    ]
    for start in reversed(starts):
        sql = sql[:start] + _RAW_PREFIX + sql[start:]
    return sql


# Postgres template patterns -> strftime (to_char) and strptime (to_date) codes; names handled apart.
_CODES: dict[str, str] = {
    "YYYY": "%Y",
    "YY": "%y",
    "MM": "%m",
    "DDD": "%j",
    "DD": "%d",
    "HH24": "%H",
    "HH12": "%I",
    "HH": "%I",
    "MI": "%M",
    "SS": "%S",
    "MS": "%g",
    "US": "%f",
    "AM": "%p",
    "PM": "%p",
}
_FM_CODES: dict[str, str] = {
    "DD": "%-d",
    "MM": "%-m",
    "HH24": "%-H",
    "HH12": "%-I",
    "HH": "%-I",
    "MI": "%-M",
    "SS": "%-S",
}
_NAMES: dict[str, tuple[str, int]] = {"MONTH": ("%B", 9), "MON": ("%b", 0), "DAY": ("%A", 9), "DY": ("%a", 0)}
_TOKEN = re.compile(r"FM|TM|MONTH|MON|DAY|DY|YYYY|YY|HH24|HH12|HH|MI|SS|MS|US|AM|PM|DDD|DD|MM|[A-Za-z]|.", re.S)


class _UnknownPattern(Exception):
    """The format holds a pattern these fixes do not translate."""


def _parts(fmt: str, parsing: bool) -> list[str | tuple[str, int, str]]:
    """The format as strftime text pieces and names ``(code, padding, case)`` (case: upper/lower/title)."""
    parts: list[str | tuple[str, int, str]] = []
    fill = False
    position = 0
    while position < len(fmt):
        if fmt[position] == '"':  # quoted text is copied as it is
            end = fmt.find('"', position + 1)
            end = len(fmt) if end < 0 else end
            parts.append(fmt[position + 1 : end].replace("%", "%%"))
            position, fill = end + 1, False
            continue
        match = _TOKEN.match(fmt.upper(), position)
        token = match.group(0) if match else fmt[position]
        written = fmt[position : position + len(token)]
        position += len(token)
        if token in ("FM", "TM"):
            fill = fill or token == "FM"
            continue
        if token in _NAMES:
            code, width = _NAMES[token]
            case = "upper" if written.isupper() else "lower" if written.islower() else "title"
            parts.append(code if parsing else (code, 0 if fill else width, case))
        elif token in _CODES:
            parts.append(_FM_CODES.get(token, _CODES[token]) if fill and not parsing else _CODES[token])
        elif token.isalpha():
            raise _UnknownPattern(token)
        else:
            parts.append(token.replace("%", "%%"))
        fill = False
    return parts


def _to_char(value: exp.Expr, fmt: str) -> exp.Expr:
    pieces: list[exp.Expr] = []
    text = ""
    for part in _parts(fmt, parsing=False):
        if isinstance(part, str) or (part[1] == 0 and part[2] == "title"):  # strftime writes it as it is
            text += part if isinstance(part, str) else part[0]
            continue
        if text:
            pieces.append(exp.TimeToStr(this=value.copy(), format=exp.Literal.string(text)))
            text = ""
        code, width, case = part
        name: exp.Expr = exp.TimeToStr(this=value.copy(), format=exp.Literal.string(code))
        if case == "upper":
            name = exp.Upper(this=name)
        elif case == "lower":
            name = exp.Lower(this=name)
        if width:
            name = exp.Pad(
                this=name, expression=exp.Literal.number(width), fill_pattern=exp.Literal.string(" "), is_left=False
            )
        pieces.append(name)
    if text or not pieces:
        pieces.append(exp.TimeToStr(this=value.copy(), format=exp.Literal.string(text)))
    out = pieces[0]
    for piece in pieces[1:]:
        out = exp.DPipe(this=out, expression=piece)
    return out


def _as_sqlglot_reads_it(name: str, args: list[exp.Expr]) -> exp.Expr:
    """``name(args)`` parsed as sqlglot parses Postgres (a format this module does not translate)."""
    call = f"{name}({', '.join(a.sql(dialect='postgres') for a in args)})"
    return sqlglot.parse_one(f"SELECT {call}", read="postgres").expressions[0]


def date_formats(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``TO_CHAR``/``TO_DATE`` with a Postgres format written as DuckDB ``strftime``/``strptime`` (fix 1)."""
    for call in list(tree.find_all(exp.Anonymous)):
        raw = str(call.this).upper()
        if not raw.startswith(_RAW_PREFIX):
            continue
        name, args = raw[len(_RAW_PREFIX) :], list(call.expressions)
        fmt = args[1] if len(args) == 2 else None
        replacement: exp.Expr | None = None
        if isinstance(fmt, exp.Literal) and fmt.is_string:
            try:
                if name == "TO_CHAR":
                    replacement = _to_char(args[0], fmt.name)
                else:
                    pattern = "".join(p for p in _parts(fmt.name, parsing=True) if isinstance(p, str))
                    replacement = exp.Cast(
                        this=exp.StrToTime(this=args[0].copy(), format=exp.Literal.string(pattern)),
                        to=exp.DataType.build("DATE"),
                    )
            except _UnknownPattern:
                replacement = None
        call.replace(replacement if replacement is not None else _as_sqlglot_reads_it(name, args))
    return tree


def functionally_dependent_columns(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """Columns a grouped SELECT neither groups nor aggregates are added to its GROUP BY (fix 2)."""
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        if (
            group is None
            or not group.expressions
            or any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))
        ):
            continue
        added: dict[str, exp.Column] = {}
        for column in ungrouped_columns(select):
            added.setdefault(column.sql().lower(), column)
        for column in added.values():
            group.append("expressions", column.copy())
    return tree


POSTGRES_FIXES: tuple[Fix, ...] = (date_formats, functionally_dependent_columns, integer_division)
"""The fixes applied to Postgres queries, in order."""
