"""The value rules as SQL: the comparison key of each cell of an aligned column pair, by DuckDB type.

The keys follow the Python value rules (``values``) so that the engine and the Python comparator give
the same verdict: NULL only equals NULL (``GROUP BY`` puts NULLs together), numbers by value across
integer/decimal types (the ``UNION ALL`` widens them exactly), floats canonical (``-0.0`` is ``0.0``,
NaN groups with NaN, ±inf with itself) and keyed by a bucket of log2|x| narrower than ``rel_tol`` (rows of one
bucket are always within tolerance; the rest is paired in Python), a DATE equals a TIMESTAMP at
midnight, ISO and numeric strings equal temporal and numeric values when the paired column holds them,
strings exactly, and any other type pair is tagged with its type so that ``TRUE`` never equals ``1``.

A column pair the engine cannot key exactly as the Python rules do (e.g. ISO strings with offsets
against ``TIMESTAMP WITH TIME ZONE``) raises ``UnsupportedPairError``; the caller then says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nl2sql_pipeline.compare.values import _NUMBER_RE, _TIME_RE

_INT_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)
_FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE", "REAL"})
_NAIVE_DATETIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?")
_NUMERIC = frozenset({"int", "decimal", "float"})
_TEMPORAL_NAIVE = frozenset({"date", "timestamp"})
_INFINITE_FAMILIES = frozenset({"date", "timestamp", "timestamptz"})


class UnsupportedPairError(Exception):
    """This column pair has no SQL key that reproduces the Python value rules."""


def family(duckdb_type: str) -> str | None:
    """The value family of a DuckDB column type: ``int``, ``decimal``, ``float``, ``str``, ``bool``,
    ``date``, ``timestamp``, ``timestamptz``, ``time``, ``timetz``; None for the NULL type; else the type."""
    name = duckdb_type.strip().upper()
    if name in ('"NULL"', "NULL"):
        return None
    if name in _INT_TYPES:
        return "int"
    if name.startswith("DECIMAL") or name.startswith("NUMERIC"):
        return "decimal"
    if name in _FLOAT_TYPES:
        return "float"
    if name == "VARCHAR" or name.startswith("VARCHAR("):
        return "str"
    if name == "BOOLEAN":
        return "bool"
    if name == "DATE":
        return "date"
    if name in ("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"):
        return "timestamptz"
    if name.startswith("TIMESTAMP"):
        return "timestamp"
    if name == "TIME":
        return "time"
    if name in ("TIME WITH TIME ZONE", "TIMETZ"):
        return "timetz"
    return name


PYTHON_KIND = {
    "int": "int",
    "decimal": "decimal",
    "float": "float",
    "str": "str",
    "bool": "bool",
    "date": "date",
    "timestamp": "timestamp",
    "timestamptz": "timestamp",
    "time": "time",
    "timetz": "time",
}
"""The Python value kind (``values.kind_of``) of each family, for naming the value rules a match used."""


@dataclass(frozen=True)
class PairKeys:
    """The SQL key expressions of one aligned column pair (one or two keys per side).

    ``float_key``: the first key is a float bucket and ``raw_*`` the canonical DOUBLE it came from.
    A second key holds, for a string column coerced to numbers or dates, the strings that were not.
    """

    expected: tuple[str, ...]
    candidate: tuple[str, ...]
    float_key: bool = False
    raw_expected: str | None = None
    raw_candidate: str | None = None
    infinities: bool | None = None
    """A temporal pair whose second key holds 'infinity'/'-infinity' (True: with a time zone)."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


BUCKET_FILL = 0.9
"""A bucket spans at most this share of ``rel_tol`` (the rest is margin for the error of ``log2``)."""


def bucket_scale(rel_tol: float) -> float | None:
    """The log2 buckets' scale: a bucket is ``1 / scale`` wide in log2|x| (None: keep floats exact).

    Two floats of one bucket differ by less than ln(2) / scale = ``BUCKET_FILL * rel_tol`` relative, plus
    the error of log2 (about 1e-13 relative), always within ``rel_tol``; below rel_tol 1e-11 that error
    would matter, so floats are then keyed exactly. The wider the bucket, the fewer pairs of nearly equal
    floats fall on either side of a bucket edge (those are paired in Python).
    """
    if rel_tol < 1e-11:
        return None
    return math.log(2) / (BUCKET_FILL * rel_tol)


def float_bucket(raw: str, scale: float | None) -> str:
    """SQL for the bucket of a canonical DOUBLE ``raw``: ``round(log2|x| * scale)``, sign in the last bit.

    Normal buckets are whole numbers; 0 is keyed 0.5 and NaN/±inf by themselves, so nothing collides.
    """
    if scale is None:
        return raw
    return (
        f"CASE WHEN {raw} = 0 THEN 0.5 WHEN NOT isfinite({raw}) THEN {raw} "
        f"ELSE round(log2(abs({raw})) * {scale!r}) * 2 + CAST({raw} < 0 AS INTEGER) END"
    )


def _tagged(column: str, fam: str | None) -> str:
    """A key that equals only keys of the same family and value (NULL stays NULL)."""
    return f"({_literal(str(fam) + ':')} || CAST({column} AS VARCHAR))"


def pair_keys(exp_col: str, exp_type: str, cand_col: str, cand_type: str, rel_tol: float) -> PairKeys:
    """The keys of expected column ``exp_col`` and candidate column ``cand_col`` (SQL identifiers)."""
    fe, fc = family(exp_type), family(cand_type)
    # an all-NULL column (no family) takes the other side's family: NULL only equals NULL
    if fe is None:
        if fc is None:
            return PairKeys((exp_col,), (cand_col,))
        fe = fc
    elif fc is None:
        fc = fe
    kinds = {fe, fc}
    if kinds <= _NUMERIC:
        if "float" not in kinds:
            return PairKeys((exp_col,), (cand_col,))
        return _float_pair(_as_double(exp_col, fe), _as_double(cand_col, fc), rel_tol)
    if fe == fc and fe in _INFINITE_FAMILIES:
        return _temporal_pair(exp_col, cand_col, fe == "timestamptz")
    if fe == fc:
        return PairKeys((exp_col,), (cand_col,))
    if kinds <= _TEMPORAL_NAIVE:
        return _temporal_pair(f"CAST({exp_col} AS TIMESTAMP)", f"CAST({cand_col} AS TIMESTAMP)", False)
    if "str" in kinds:
        other = (kinds - {"str"}).pop()
        str_col, other_col = (exp_col, cand_col) if fe == "str" else (cand_col, exp_col)
        keys = _string_coercion(str_col, other_col, other, rel_tol)
        if keys is not None:
            return keys if fe == "str" else _swap(keys)
        if other in ("timestamptz", "timetz"):  # Python parses ISO strings with offsets as instants
            raise UnsupportedPairError(f"a string column against {exp_type if fe != 'str' else cand_type}")
    return PairKeys((_tagged(exp_col, fe),), (_tagged(cand_col, fc),))


def _temporal_pair(exp_value: str, cand_value: str, aware: bool) -> PairKeys:
    """Keys of a DATE/TIMESTAMP pair: the finite value, and 'infinity'/'-infinity' for an infinite one (the
    rows that come back show it, where the fetched value would be the extreme finite one)."""

    def keys(value: str) -> tuple[str, str]:
        return (
            f"CASE WHEN NOT isinf({value}) THEN {value} END",
            f"CASE WHEN isinf({value}) THEN CAST({value} AS VARCHAR) END",
        )

    return PairKeys(keys(exp_value), keys(cand_value), infinities=aware)


def _as_double(column: str, fam: str | None) -> str:
    """A numeric column as DOUBLE (``-0.0`` groups and hashes with ``0.0`` in DuckDB already)."""
    return column if fam == "float" else f"CAST({column} AS DOUBLE)"


def _float_pair(raw_expected: str, raw_candidate: str, rel_tol: float) -> PairKeys:
    scale = bucket_scale(rel_tol)
    return PairKeys(
        (float_bucket(raw_expected, scale),), (float_bucket(raw_candidate, scale),), True, raw_expected, raw_candidate
    )


def _swap(keys: PairKeys) -> PairKeys:
    return PairKeys(keys.candidate, keys.expected, keys.float_key, keys.raw_candidate, keys.raw_expected)


def _string_coercion(str_col: str, other_col: str, other: str, rel_tol: float) -> PairKeys | None:
    """Keys for a string column against numbers or dates (first key: the coerced value; second: the rest)."""
    if other in ("int", "decimal", "float"):
        pattern, target = _NUMBER_RE.pattern, "DOUBLE" if other == "float" else "DECIMAL(38,18)"
    elif other in ("date", "timestamp"):
        pattern, target = _NAIVE_DATETIME_RE.pattern, "TIMESTAMP"
    elif other == "time":
        pattern, target = _TIME_RE.pattern, "TIME"
    else:
        return None
    coerced = f"CASE WHEN regexp_full_match({str_col}, {_literal(pattern)}) THEN TRY_CAST({str_col} AS {target}) END"
    rest = f"CASE WHEN ({coerced}) IS NULL THEN {str_col} END"
    other_value = f"CAST({other_col} AS {target})"
    if other == "float":
        raw_str, raw_other = f"(({coerced}) + 0.0)", f"({other_value} + 0.0)"
        scale = bucket_scale(rel_tol)
        return PairKeys(
            (float_bucket(raw_str, scale), rest),
            (float_bucket(raw_other, scale), "NULL::VARCHAR"),
            True,
            raw_str,
            raw_other,
        )
    return PairKeys((coerced, rest), (other_value, "NULL::VARCHAR"))
