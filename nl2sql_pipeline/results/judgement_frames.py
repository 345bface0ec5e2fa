"""The frame codec of the ``sql_judgements`` asset: ``SqlJudgement`` records ⇄ DataFrames.

    sql_judgements  sql_judgements_to_frame ⇄ sql_judgements_from_frame   SqlJudgement

The columns are the record's fields, led by the partition keys (``gold_set``, ``model``) when given;
missing markers become None on the way in (``results.frames.is_missing``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

import pandas as pd

from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.results.frames import FrameCodecError, is_missing

JUDGEMENT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(SqlJudgement))
_INTS = frozenset({"sample_index", "repeat_index", "input_tokens", "output_tokens"})
_FLOATS = frozenset({"latency_ms", "cost_usd"})
_BOOLS = frozenset({"test_suite_correct", "equivalent"})
_REQUIRED = ("case_id", "sample_index", "judge", "role", "repeat_index", "outcome")


def sql_judgements_to_frame(
    judgements: Iterable[SqlJudgement], *, gold_set: str | None = None, model: str | None = None
) -> pd.DataFrame:
    """The ``sql_judgements`` frame (partition keys first when given)."""
    rows = list(judgements)
    data: dict[str, list[Any]] = {}
    if gold_set is not None:
        data["gold_set"] = [gold_set] * len(rows)
    if model is not None:
        data["model"] = [model] * len(rows)
    for name in JUDGEMENT_COLUMNS:
        data[name] = [getattr(j, name) for j in rows]
    frame = pd.DataFrame(data, columns=list(data))
    for name in _BOOLS:  # nullable booleans stay booleans (not objects) in the Parquet
        frame[name] = frame[name].astype("boolean")
    return frame


def _value(name: str, value: Any) -> Any:
    if is_missing(value):
        return False if name == "cached" else None
    if name in _INTS:
        return int(value)
    if name in _FLOATS:
        return float(value)
    if name in _BOOLS or name == "cached":
        return bool(value)
    return str(value)


def sql_judgements_from_frame(frame: pd.DataFrame) -> list[SqlJudgement]:
    """The judgements of a ``sql_judgements`` frame (partition-key columns are left aside)."""
    absent = [name for name in _REQUIRED if name not in frame.columns]
    if absent and len(frame):
        raise FrameCodecError(f"stored sql_judgements frame lacks the columns {absent}")
    names = [name for name in JUDGEMENT_COLUMNS if name in frame.columns]
    columns = {name: frame[name].tolist() for name in names}
    return [SqlJudgement(**{name: _value(name, columns[name][i]) for name in names}) for i in range(len(frame))]
