"""The per-case verdicts table and the frame schema shown in the asset metadata."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from assets.metadata import verdicts_table


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "gold_set": ["g"] * n,
            "model": ["m"] * n,
            "case_id": [f"c-{i:02d}" for i in range(n)],
            "sample_index": [0] * n,
            "outcome": ["correct" if i % 3 else "wrong_result" for i in range(n)],
            "correct": [bool(i % 3) for i in range(n)],
            "comparison_rule": ["exact"] * n,
            "reason": [None] * n,
            "error_message": ["HTTP 503: down" if i == 0 else None for i in range(n)],
            "latency_ms": [float(i) for i in range(n)],
            "cost_usd": [None] * n,
            "generated_sql": ["SELECT " + "x, " * 300 + "1"] * n,
        }
    )


def test_the_table_has_a_schema_and_shows_the_not_correct_cases_first():
    metadata = verdicts_table(_frame(10))
    table = metadata["verdicts_table"]
    assert isinstance(table, dg.TableMetadataValue)
    names = [c.name for c in table.schema.columns]
    assert names[:4] == ["case_id", "sample_index", "outcome", "correct"] and "generated_sql" in names
    assert len(table.records) == 10
    outcomes = [r.data["outcome"] for r in table.records]
    assert outcomes[:4] == ["wrong_result"] * 4 and set(outcomes[4:]) == {"correct"}
    assert len(table.records[0].data["generated_sql"]) <= 400  # long SQL is cut in the table, not in the Parquet
    assert metadata["dagster/row_count"] == 10
    schema = metadata["dagster/column_schema"]
    types = {c.name: c.type for c in schema.columns}
    assert types["correct"] == "bool" and types["latency_ms"] == "float" and types["case_id"] == "string"
    assert len(schema.columns) == 12
    by_case = {r.data["case_id"]: r.data for r in table.records}
    assert by_case["c-00"]["error_message"] == "HTTP 503: down"  # the failure's words reach the UI table


def test_a_large_run_shows_a_bounded_table_and_says_so():
    metadata = verdicts_table(_frame(500), limit=50)
    assert len(metadata["verdicts_table"].records) == 50
    assert metadata["verdicts_table_rows"] == "50 of 500 (not-correct first)"
    assert metadata["dagster/row_count"] == 500
