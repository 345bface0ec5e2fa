"""Gold sets as DataFrames (one row per case) and back, for storage as Parquet."""

from __future__ import annotations

import json

import pandas as pd

from nl2sql_pipeline.cases import Case, case_from_dict

GOLD_COLUMNS: tuple[str, ...] = (
    "case_id",
    "case_fingerprint",
    "domain",
    "category",
    "difficulty",
    "database",
    "is_probe",
    "tags",
    "question",
    "expected_sql",
    "policy_probe_sql",
    "sql_policy",
    "case_json",
)


def cases_to_frame(cases: list[Case]) -> pd.DataFrame:
    """One row per case; ``case_json`` keeps the full definition, the other columns are for reading."""
    rows = [
        {
            "case_id": c.id,
            "case_fingerprint": c.fingerprint,
            "domain": c.domain,
            "category": c.category,
            "difficulty": c.difficulty,
            "database": c.database,
            "is_probe": c.is_probe,
            "tags": ",".join(c.tags),
            "question": c.question,
            "expected_sql": c.canonical_sql,
            "policy_probe_sql": c.policy_probe_sql,
            "sql_policy": c.sql_policy,
            "case_json": c.to_json(),
        }
        for c in cases
    ]
    return pd.DataFrame(rows, columns=list(GOLD_COLUMNS))


def cases_from_frame(frame: pd.DataFrame) -> list[Case]:
    """The cases of a frame written by :func:`cases_to_frame`, in row order."""
    return [case_from_dict(json.loads(text)) for text in frame["case_json"]]
