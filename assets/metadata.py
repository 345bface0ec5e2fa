"""Asset metadata helpers: a frame's row count and column schema, and the per-case verdicts as a table.

The UI shows ``dagster/row_count`` and ``dagster/column_schema`` on the asset's overview, and a
``MetadataValue.table`` as a sortable table. The verdicts table holds every case up to
``VERDICT_TABLE_ROWS`` rows, the ones that were not correct first, so a large gold set stays readable;
the Parquet (``path``) holds them all.
"""

from __future__ import annotations

import math
from typing import Any

import dagster as dg
import pandas as pd

VERDICT_TABLE_ROWS = 200
VERDICT_TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("case_id", "string", "Case id in the gold set"),
    ("sample_index", "int", "Sample (nl2sql-eval run --repeat)"),
    ("outcome", "string", "Outcome class (correct, wrong_result, execution_error, skipped, ...)"),
    ("correct", "bool", "Semantically correct"),
    ("comparison_rule", "string", "The comparison rule that decided it"),
    ("reason", "string", "Why (the rule's or the failure's words)"),
    ("error_message", "string", "The failed call in the failure's own words (e.g. HTTP 503: down)"),
    ("category", "string", "Case category"),
    ("difficulty", "string", "Case difficulty"),
    ("latency_ms", "float", "Generation latency (ms)"),
    ("cost_usd", "float", "Cost of the generation (USD)"),
    ("generated_sql", "string", "The SQL the model answered with"),
)
_SQL_CHARS = 400


def _dagster_type(dtype: Any) -> str:
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "int"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "string"


def frame_schema_metadata(frame: pd.DataFrame) -> dict[str, Any]:
    """``dagster/row_count`` and ``dagster/column_schema`` of a frame (its columns and their types)."""
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name=str(c), type=_dagster_type(frame[c].dtype)) for c in frame.columns]
    )
    return {"dagster/row_count": len(frame), "dagster/column_schema": schema}


def _cell(value: Any, kind: str) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    text = str(value)
    return text if len(text) <= _SQL_CHARS else text[: _SQL_CHARS - 1] + "…"


def verdicts_table(frame: pd.DataFrame, limit: int = VERDICT_TABLE_ROWS) -> dict[str, Any]:
    """Metadata of ``case_verdicts``: the per-case table (not-correct first, at most ``limit`` rows), its
    column schema, and how many rows it shows of how many."""
    columns = [(name, kind, text) for name, kind, text in VERDICT_TABLE_COLUMNS if name in frame.columns]
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name=name, type=kind, description=text) for name, kind, text in columns]
    )
    ordered = frame
    if "correct" in frame.columns and len(frame):
        ordered = frame.assign(_ok=frame["correct"].fillna(False).astype(bool)).sort_values(
            ["_ok", "case_id", "sample_index"] if "sample_index" in frame.columns else ["_ok", "case_id"], kind="stable"
        )
    shown = ordered.head(limit)
    records = [
        dg.TableRecord({name: _cell(row[name], kind) for name, kind, _ in columns})
        for row in shown.to_dict(orient="records")
    ]
    return {
        "verdicts_table": dg.MetadataValue.table(records=records, schema=schema),
        "verdicts_table_rows": f"{len(records)} of {len(frame)} (not-correct first)",
        **frame_schema_metadata(frame),
    }
