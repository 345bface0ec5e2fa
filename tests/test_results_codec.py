"""Results codec: exact round trips of every DuckDB Python value type, readable plain JSON, whole results."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import duckdb
import pandas as pd
import pytest

from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.execution.result_json import (
    ResultsCodecError,
    decode_rows,
    encode_rows,
    from_json_value,
    to_json_value,
)
from nl2sql_pipeline.results.frames import decode_result, encode_result

PARIS = ZoneInfo("Europe/Paris")

VALUES = [
    None,
    True,
    False,
    0,
    -1,
    2**63 - 1,
    -(2**63),
    2**63,
    -(2**63) - 1,
    2**127 - 1,
    -(2**127),
    2**128 - 1,
    1.5,
    -0.0,
    5e-324,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
    0.1 + 0.2,
    Decimal("1.50"),
    Decimal("-0.000"),
    Decimal("1E+3"),
    Decimal("12345678901234567890.1234567890123456"),
    Decimal("NaN"),
    "",
    "plain",
    "h\u00e9llo \U0001f986",
    "nul\x00byte\nnewline",
    "$dec",
    '{"$dec": "1"}',
    b"",
    b"\x00\xffbinary",
    dt.date(1, 1, 1),
    dt.date(9999, 12, 31),
    dt.date(2024, 2, 29),
    dt.datetime(2024, 1, 31, 12, 30, 45, 123456),
    dt.datetime(1, 1, 1),
    dt.datetime(2024, 1, 31, 12, 0, tzinfo=dt.timezone.utc),
    dt.datetime(2024, 1, 31, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
    dt.datetime(2024, 7, 1, 9, 15, tzinfo=PARIS),
    dt.datetime(2024, 10, 27, 2, 30, tzinfo=PARIS),  # ambiguous hour, first occurrence
    dt.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=PARIS),  # ambiguous hour, second occurrence
    dt.datetime(2024, 1, 1, tzinfo=ZoneInfo("Etc/UTC")),
    dt.time(0, 0),
    dt.time(23, 59, 59, 999999),
    dt.time(12, 0, tzinfo=dt.timezone(dt.timedelta(hours=-3))),
    dt.timedelta(0),
    dt.timedelta(days=-1, seconds=5),
    dt.timedelta(days=400, seconds=3, microseconds=7),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    [],
    [1, None, [2, [3.5]], "x"],
    [math.nan, Decimal("2.0")],
    (),
    (1, "a", None),
    ((1, 2), [3, (4,)]),
    {},
    {"a": 1, "b": [1.5, None], "c": {"d": dt.date(2024, 1, 1)}},
    {"$dec": 1},  # a STRUCT whose field name looks like a tag
    {"$tz": "x", "plain": 2},
    {1: "a", 2: "b"},  # MAP(INTEGER, VARCHAR)
    {Decimal("1.5"): [1], None: 2},
    {"key": [[1], [2]], "value": [3, 4]},  # how DuckDB returns a MAP with list keys
]


def same(a, b) -> bool:
    """Equal in value, type, scale, tz and fold (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(map(repr, a)) == list(map(repr, b)) and all(same(x, y) for x, y in zip(a.values(), b.values()))
    if isinstance(a, (dt.datetime, dt.time)):
        return repr(a) == repr(b) and a.tzinfo == b.tzinfo
    return a == b


@pytest.mark.parametrize("value", VALUES, ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(VALUES)])
def test_value_round_trips_exactly(value):
    text = encode_rows([(value,)])
    json.loads(text)  # valid JSON (no NaN/Infinity literals)
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text
    [(back,)] = decode_rows(text)
    assert same(value, back), (value, back, text)


def test_rows_round_trip_as_tuples():
    rows = [tuple(VALUES[i : i + 5]) for i in range(0, len(VALUES), 5)]
    back = decode_rows(encode_rows(rows))
    assert all(type(row) is tuple for row in back)
    assert all(same(a, b) for a, b in zip(rows, back)) and len(back) == len(rows)


def test_plain_values_stay_plain_and_readable():
    text = encode_rows([(1, "caf\u00e9", None, True, 1.25, [1, 2], {"a": "b"})])
    assert text == '[[1, "caf\u00e9", null, true, 1.25, [1, 2], {"a": "b"}]]'


def test_tagged_forms_are_documented_shapes():
    assert to_json_value(Decimal("1.50")) == {"$dec": "1.50"}
    assert to_json_value(2**64) == {"$int": "18446744073709551616"}
    assert to_json_value(math.nan) == {"$float": "nan"}
    assert to_json_value(b"\x00") == {"$bytes": "AA=="}
    assert to_json_value(dt.datetime(2024, 7, 1, 9, 15, tzinfo=PARIS)) == {
        "$dt": "2024-07-01T09:15:00+02:00",
        "$tz": "Europe/Paris",
    }
    assert to_json_value((1, 2)) == {"$tup": [1, 2]}
    assert to_json_value({1: "a"}) == {"$map": [[1, "a"]]}
    assert from_json_value({"a": {"$dec": "2"}}) == {"a": Decimal("2")}


def test_infinite_dates_and_timestamps_round_trip_apart_from_the_extreme_ones():
    from nl2sql_pipeline.execution.infinity import InfiniteDate, InfiniteTimestamp

    rows = [(InfiniteDate(False), InfiniteTimestamp(True), InfiniteTimestamp(False, aware=True), dt.date.max)]
    assert to_json_value(InfiniteDate(True)) == {"$inf": ["date", "-infinity"]}
    assert decode_rows(encode_rows(rows)) == rows


@pytest.mark.parametrize("timezone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_every_duckdb_type_round_trips(timezone):
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{timezone}'")
    rows = con.execute("SELECT * FROM test_all_types()").fetchall()
    extra = con.execute(
        "SELECT TIMESTAMPTZ '2024-03-10 06:30:00+00', INTERVAL '1 month 2 days 3 hours', "
        "MAP {1: 'a'}, [{'k': 1.5::DECIMAL(4,2)}], uuid(), 'x'::BLOB, 1e400::DOUBLE IS NULL"
    ).fetchall()
    con.close()
    for batch in (rows, extra):
        back = decode_rows(encode_rows(batch))
        for original, decoded in zip(batch, back):
            for a, b in zip(original, decoded):
                assert same(a, b), (a, b)


def test_unencodable_value_is_a_type_error():
    with pytest.raises(TypeError, match="object"):
        encode_rows([(object(),)])


@pytest.mark.parametrize("text", ["not json", "{}", '[[{"$dec": "abc"}]]', '[[{"$float": "big"}]]', '[[{"$zz": 1}]]'])
def test_corrupt_text_raises_codec_error(text):
    with pytest.raises(ResultsCodecError):
        decode_rows(text)


def results() -> list[QueryResult]:
    return [
        QueryResult(
            ok=True,
            columns=["n", "price", "day"],
            column_types=["BIGINT", "DECIMAL(6,2)", "DATE"],
            rows=[(1, Decimal("9.90"), dt.date(2024, 1, 1)), (2**70, None, None)],
            truncated=True,
            error_class=None,
            error_message=None,
            elapsed_ms=1.25,
        ),
        QueryResult.failure("timeout", "query exceeded the 0.5 s timeout", elapsed_ms=501.0),
        QueryResult.failure("forbidden", "statement type DROP is not a query"),
    ]


def assert_same_result(a: QueryResult, b: QueryResult) -> None:
    assert (a.ok, a.columns, a.column_types, a.truncated) == (b.ok, b.columns, b.column_types, b.truncated)
    assert (a.error_class, a.error_message, a.elapsed_ms) == (b.error_class, b.error_message, b.elapsed_ms)
    assert same(a.rows, b.rows)


def test_result_encodes_to_scalars_and_back():
    for result in results():
        encoded = encode_result(result)
        assert all(v is None or isinstance(v, (str, int, float, bool)) for v in encoded.values())
        assert encoded["row_count"] == len(result.rows)
        assert_same_result(result, decode_result(encoded))


def test_results_survive_a_parquet_round_trip(tmp_path):
    frame = pd.DataFrame([{"case_id": f"c{i}", **encode_result(r)} for i, r in enumerate(results())])
    path = tmp_path / "results.parquet"
    frame.to_parquet(path, index=False)
    back = pd.read_parquet(path)
    for original, row in zip(results(), back.to_dict("records")):
        assert_same_result(original, decode_result(row))


def test_decode_result_reports_missing_fields():
    with pytest.raises(ResultsCodecError, match="rows"):
        decode_result({"ok": True, "columns": "[]", "column_types": "[]"})


def test_rows_without_objects_decode_as_plain_json_and_tagged_ones_as_values():
    plain = [(1, "a {b", None, [1, [2.5, "x"]], True)]
    assert decode_rows(encode_rows(plain)) == plain  # a brace inside a string: still exact
    assert decode_rows('[[1, "a", [1, 2]]]') == [(1, "a", [1, 2])]
    assert decode_rows('[[{"$dec": "1.50"}, [{"$int": "99999999999999999999"}]]]') == [
        (Decimal("1.50"), [99999999999999999999])
    ]
    with pytest.raises(ResultsCodecError):
        decode_rows("[1, 2]")  # rows that are not arrays


def test_decoded_column_names_are_new_lists_each_time():
    encoded = encode_result(QueryResult(ok=True, columns=["a", "b"], column_types=["INTEGER", "VARCHAR"], rows=[]))
    first, second = decode_result(encoded), decode_result(encoded)
    assert first.columns == second.columns == ["a", "b"] and first.columns is not second.columns
    first.columns.append("c")
    assert decode_result(encoded).columns == ["a", "b"]


def test_frame_columns_turn_every_missing_marker_into_none():
    from nl2sql_pipeline.results.frames import _columns

    frame = pd.DataFrame(
        {
            "plain": ["a", "b", "c"],
            "holes": ["a", None, float("nan")],
            "na": pd.array([1, None, 3], dtype="Int64"),
            "floats": [1.5, float("nan"), 2.0],
            "ints": [1, 2, 3],
            "times": [pd.Timestamp("2026-01-01"), pd.NaT, pd.Timestamp("2026-01-02")],
        }
    )
    columns = _columns(frame)
    assert columns["plain"] == ["a", "b", "c"] and columns["ints"] == [1, 2, 3]
    assert columns["holes"] == ["a", None, None] and columns["na"] == [1, None, 3]
    assert columns["floats"] == [1.5, None, 2.0] and columns["times"][1] is None
