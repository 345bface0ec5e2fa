"""The frame codec at the storage edge: stage records ⇄ DataFrames (one Parquet file per asset partition).

Every conversion between a record and a frame happens here, and only here: missing values that pandas
and pyarrow put in a frame (NaN, NA, NaT) become None once, on the way in; nested values (query results,
score breakdowns, warnings) become JSON text on the way out and real values on the way in. The column
names are the storage contract: readers of the Parquet files (and the README's "every number traces to
the verdict rows") rely on them.

    asset     frame                      records
    gold_set  cases_to_frame           ⇄ cases_from_frame            Case (case_json keeps the definition)
    candidate_sql  candidates_to_frame ⇄ candidates_from_frame       CandidateRecord
    oracle_results oracle_rows_to_frame ⇄ oracle_rows_from_frame      OracleRow
    database_variants variant_rows_to_frame ⇄ variant_rows_from_frame VariantOracleRow
    candidate_results attempts_to_frame ⇄ attempts_from_frame        Attempt (generation part included)
    case_verdicts verdicts_to_frame    ⇄ verdicts_from_frame         Verdict
    run_scores run_scores_to_frame     ⇄ run_scores_from_frame        RunScores (+ run identity)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import pandas as pd

from nl2sql_pipeline.cases import Case, case_from_dict
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.execution.result_json import ResultsCodecError, decode_rows, encode_rows
from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.scoring.metrics import METRICS
from nl2sql_pipeline.scoring.run_scores import RunScores
from nl2sql_pipeline.stages.outcomes import ANSWER_ONLY
from nl2sql_pipeline.stages.records import SOURCE_MODEL, Attempt, OracleRow, VariantOracleRow, Verdict

if TYPE_CHECKING:
    from nl2sql_pipeline.compare.structure import ClauseItems

RESULT_FIELDS: tuple[str, ...] = (
    "ok",
    "columns",
    "column_types",
    "rows",
    "row_count",
    "truncated",
    "error_class",
    "error_message",
    "elapsed_ms",
)
RESULT_COLUMNS: tuple[str, ...] = tuple(f"result_{name}" for name in RESULT_FIELDS)

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
CANDIDATE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CandidateRecord))
ORACLE_COLUMNS: tuple[str, ...] = (
    "case_id",
    "case_fingerprint",
    "alternative_index",
    "row_count",
    *RESULT_COLUMNS,
    "clause_items",
)
VARIANT_COLUMNS: tuple[str, ...] = (
    "case_id",
    "case_fingerprint",
    "variant_index",
    "alternative_index",
    "variant_path",
    "row_count",
    *RESULT_COLUMNS,
)
# The generation part of an attempt, beside the policy and result columns (``sql`` is the generated SQL,
# ``generation_error_class`` its error class; the other CandidateRecord fields keep their names).
_GENERATION_RENAMED = {
    "generated_sql": "sql",
    "error_class": "generation_error_class",
    "error_message": "generation_error_message",
}
_ATTEMPT_KEYS = ("case_id", "case_fingerprint", "sample_index", "candidate_index")
GENERATION_COLUMNS: tuple[str, ...] = tuple(
    _GENERATION_RENAMED.get(name, name) for name in CANDIDATE_COLUMNS if name not in _ATTEMPT_KEYS + ("generated_sql",)
)
ATTEMPT_COLUMNS: tuple[str, ...] = (
    "case_id",
    "case_fingerprint",
    "source",
    "sample_index",
    "candidate_index",
    "sql",
    "generation_error_class",
    "policy_allowed",
    "policy_rule",
    "policy_name",
    "policy_reason",
    "executed",
    *RESULT_COLUMNS,
    "policy_ms",
    *(name for name in GENERATION_COLUMNS if name != "generation_error_class"),
)
VERDICT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Verdict))
JSON_METRICS: frozenset[str] = frozenset(m.name for m in METRICS if m.kind == "json")


class FrameCodecError(ResultsCodecError):
    """A stored frame lacks the columns its records need (written by something else, or corrupt)."""


# ------------------------------------------------------------------------------------------------ values


def is_missing(value: Any) -> bool:
    """None, or a missing marker that pandas/pyarrow put in its place (NaN, pd.NA, NaT)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


def _columns(frame: pd.DataFrame, required: Sequence[str] = ()) -> dict[str, list[Any]]:
    """The frame as plain Python lists per column, missing markers as None (the one NaN→None clean-up)."""
    absent = [name for name in required if name not in frame.columns]
    if absent and len(frame):
        raise FrameCodecError(f"stored frame lacks the columns {absent}")
    return {str(name): _column_values(frame[name]) for name in frame.columns}


def _column_values(series: pd.Series) -> list[Any]:
    """One column as a list, missing markers as None (a column pandas finds nothing missing in is left as it is:
    every value ``is_missing`` names, pandas counts as missing too)."""
    values = series.tolist()
    if not series.hasnans:
        return values
    return [None if is_missing(value) else value for value in values]


def _rows(columns: dict[str, list[Any]], length: int) -> list[dict[str, Any]]:
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())] if names else [{} for _ in range(length)]


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


# ------------------------------------------------------------------------------------------------ results


def encode_result(result: QueryResult) -> dict[str, Any]:
    """One Parquet-friendly row (scalars only; lists as JSON text) holding the whole ``result``."""
    return {
        "ok": bool(result.ok),
        "columns": json.dumps(list(result.columns), ensure_ascii=False),
        "column_types": json.dumps(list(result.column_types), ensure_ascii=False),
        "rows": encode_rows(result.rows),
        "row_count": len(result.rows),
        "truncated": bool(result.truncated),
        "error_class": result.error_class,
        "error_message": result.error_message,
        "elapsed_ms": float(result.elapsed_ms),
    }


def decode_result(row: dict[str, Any]) -> QueryResult:
    """The ``QueryResult`` stored by ``encode_result`` (missing values read back from pandas as NaN/NA are None)."""
    return _decoded({name: None if is_missing(value := row.get(name)) else value for name in RESULT_FIELDS})


def _decoded(row: dict[str, Any]) -> QueryResult:
    """``decode_result`` of a row holding every ``RESULT_FIELDS`` name, its missing values already None."""
    missing = [name for name in ("ok", "columns", "column_types", "rows") if row[name] is None]
    if missing:
        raise ResultsCodecError(f"stored result lacks {', '.join(missing)}; expected the fields {RESULT_FIELDS}")
    try:
        columns = _names(row["columns"])
        column_types = _names(row["column_types"])
    except (TypeError, ValueError) as exc:
        raise ResultsCodecError(f"stored result columns are not JSON text ({exc})") from exc
    truncated, error_class, error_message, elapsed_ms = (
        row["truncated"],
        row["error_class"],
        row["error_message"],
        row["elapsed_ms"],
    )
    return QueryResult(
        ok=bool(row["ok"]),
        columns=columns,
        column_types=column_types,
        rows=decode_rows(row["rows"]),
        truncated=False if truncated is None else bool(truncated),
        error_class=None if error_class is None else str(error_class),
        error_message=None if error_message is None else str(error_message),
        elapsed_ms=0.0 if elapsed_ms is None else float(elapsed_ms),
    )


_NAMES: dict[str, tuple[str, ...]] = {}
"""Column names and types decoded, by their JSON text (the results of one gold set repeat a few hundred)."""
_NAMES_MAX = 4096


def _names(text: Any) -> list[Any]:
    """A stored JSON list of column names or types, as a new list (decoded once per text)."""
    known = _NAMES.get(text) if isinstance(text, str) else None
    if known is not None:
        return list(known)
    value = json.loads(text)
    if isinstance(text, str) and isinstance(value, list) and all(isinstance(item, str) for item in value):
        if len(_NAMES) >= _NAMES_MAX:
            _NAMES.clear()
        _NAMES[text] = tuple(value)
    return list(value)


def _result_columns(result: QueryResult | None) -> dict[str, Any]:
    if result is None:
        return {}
    return {f"result_{name}": value for name, value in encode_result(result).items()}


_RESULT_PAIRS: tuple[tuple[str, str], ...] = tuple(zip(RESULT_FIELDS, RESULT_COLUMNS))


def _result_of(row: dict[str, Any]) -> QueryResult:
    """The result of a frame row whose missing values ``_columns`` already made None."""
    return _decoded({name: row.get(column) for name, column in _RESULT_PAIRS})


# ------------------------------------------------------------------------------------------------ cases


def cases_to_frame(cases: Iterable[Case]) -> pd.DataFrame:
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
            "sql_policy": c.sql_policy or "",  # "" = the case names none: its database's policy applies
            "case_json": c.to_json(),
        }
        for c in cases
    ]
    return _frame(rows, GOLD_COLUMNS)


def cases_from_frame(frame: pd.DataFrame) -> list[Case]:
    """The cases of a frame written by :func:`cases_to_frame`, in row order."""
    if len(frame) and "case_json" not in frame.columns:
        raise FrameCodecError("stored gold set lacks the case_json column")
    return [case_from_dict(json.loads(text)) for text in frame["case_json"]] if len(frame) else []


# ------------------------------------------------------------------------------------------------ candidates


def _candidate_row(record: CandidateRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in CANDIDATE_COLUMNS}


def candidates_to_frame(records: Iterable[CandidateRecord]) -> pd.DataFrame:
    """The ``candidate_sql`` frame: one row per candidate, every column present even when empty."""
    return _frame([_candidate_row(r) for r in records], CANDIDATE_COLUMNS)


def _candidate(values: dict[str, Any]) -> CandidateRecord:
    return CandidateRecord(
        case_id=str(values["case_id"]),
        case_fingerprint=str(values["case_fingerprint"]),
        sample_index=int(values["sample_index"]),
        candidate_index=int(values["candidate_index"]),
        generated_sql=_str(values.get("generated_sql")),
        raw_reply=_str(values.get("raw_reply")),
        error_class=_str(values.get("error_class")),
        error_message=_str(values.get("error_message")),
        latency_ms=_float(values.get("latency_ms")),
        input_tokens=_int(values.get("input_tokens")),
        output_tokens=_int(values.get("output_tokens")),
        token_source=_str(values.get("token_source")),
        cost_usd=_float(values.get("cost_usd")),
        cached=bool(values.get("cached")),
        mutation=_str(values.get("mutation")),
        model_config_hash=str(values.get("model_config_hash") or ""),
        prompt_hash=_str(values.get("prompt_hash")),
        turns=int(values.get("turns") or 1),
        calls=int(values.get("calls") or 0),
        attempts=int(values.get("attempts") or 0),
        cold_start=bool(values.get("cold_start")),
        answer=_str(values.get("answer")),
        system_rows=_str(values.get("system_rows")),
        system_latency_ms=_float(values.get("system_latency_ms")),
        cost_source=_str(values.get("cost_source")),
        source_sql=_str(values.get("source_sql")),
    )


def candidates_from_frame(frame: pd.DataFrame) -> list[CandidateRecord]:
    """The candidates of a ``candidate_sql`` frame, in row order."""
    columns = _columns(frame, ("case_id", "case_fingerprint", "sample_index", "candidate_index"))
    return [_candidate(row) for row in _rows(columns, len(frame))]


# ------------------------------------------------------------------------------------------------ oracle


def oracle_rows_to_frame(rows: Iterable[OracleRow], **constants: Any) -> pd.DataFrame:
    """The ``oracle_results`` frame; ``constants`` (e.g. ``gold_fingerprint``) become trailing columns."""
    out = [
        {
            "case_id": row.case_id,
            "case_fingerprint": row.case_fingerprint,
            "alternative_index": row.alternative_index,
            "row_count": len(row.result.rows),
            **_result_columns(row.result),
            "clause_items": row.clause_items.to_json() if row.clause_items is not None else None,
            **constants,
        }
        for row in rows
    ]
    return _frame(out, ORACLE_COLUMNS + tuple(constants))


def oracle_rows_from_frame(frame: pd.DataFrame) -> list[OracleRow]:
    """The oracle rows of an ``oracle_results`` frame, each result decoded once."""
    columns = _columns(frame, ("case_id", "case_fingerprint", "alternative_index", *RESULT_COLUMNS[:4]))
    return [
        OracleRow(
            str(row["case_id"]),
            str(row["case_fingerprint"]),
            int(row["alternative_index"]),
            _result_of(row),
            _clause_items(row.get("clause_items")),
        )
        for row in _rows(columns, len(frame))
    ]


def first_alternative_results(frame: pd.DataFrame) -> dict[str, QueryResult]:
    """Each case's result for its first expected alternative (the lowest index; of equal ones the first row) in an
    ``oracle_results`` frame: only those results are decoded, and no clause items (the report's samples)."""
    columns = _columns(frame, ("case_id", "case_fingerprint", "alternative_index", *RESULT_COLUMNS[:4]))
    first: dict[str, tuple[int, dict[str, Any]]] = {}
    for row in _rows(columns, len(frame)):
        case_id, index = str(row["case_id"]), int(row["alternative_index"])
        if case_id not in first or index < first[case_id][0]:
            first[case_id] = (index, row)
    return {case_id: _result_of(row) for case_id, (_, row) in first.items()}


def _clause_items(text: Any) -> ClauseItems | None:
    """Stored clause items (None when absent, as in oracle frames stored before they were, or of another version)."""
    if text is None:
        return None
    from nl2sql_pipeline.compare.structure import ClauseItems  # sqlglot: only for a frame that has items

    return ClauseItems.from_json(str(text))


def variant_rows_to_frame(rows: Iterable[VariantOracleRow], **constants: Any) -> pd.DataFrame:
    """The ``database_variants`` frame; ``constants`` (e.g. ``gold_fingerprint``) become trailing columns."""
    out = [
        {
            "case_id": row.case_id,
            "case_fingerprint": row.case_fingerprint,
            "variant_index": row.variant_index,
            "alternative_index": row.alternative_index,
            "variant_path": row.variant_path,
            "row_count": len(row.result.rows),
            **_result_columns(row.result),
            **constants,
        }
        for row in rows
    ]
    return _frame(out, VARIANT_COLUMNS + tuple(constants))


def variant_rows_from_frame(frame: pd.DataFrame) -> list[VariantOracleRow]:
    """The variant oracle rows of a ``database_variants`` frame."""
    columns = _columns(
        frame,
        ("case_id", "case_fingerprint", "variant_index", "alternative_index", "variant_path", *RESULT_COLUMNS[:4]),
    )
    return [
        VariantOracleRow(
            str(row["case_id"]),
            str(row["case_fingerprint"]),
            int(row["variant_index"]),
            int(row["alternative_index"]),
            str(row["variant_path"]),
            _result_of(row),
        )
        for row in _rows(columns, len(frame))
    ]


# ------------------------------------------------------------------------------------------------ attempts


def _attempt_row(attempt: Attempt) -> dict[str, Any]:
    row: dict[str, Any] = {
        "case_id": attempt.case_id,
        "case_fingerprint": attempt.case_fingerprint,
        "source": attempt.source,
        "sample_index": attempt.sample_index,
        "candidate_index": attempt.candidate_index,
        "sql": attempt.sql,
        "generation_error_class": attempt.generation_error_class,
        "policy_allowed": attempt.policy_allowed,
        "policy_rule": attempt.policy_rule,
        "policy_name": attempt.policy_name,
        "policy_reason": attempt.policy_reason,
        "executed": attempt.executed,
        **_result_columns(attempt.result),
        "policy_ms": None,  # kept for readers of older files; the policy's time is not measured per attempt
    }
    if attempt.generation is not None:
        for name in CANDIDATE_COLUMNS:
            if name not in _ATTEMPT_KEYS and name != "generated_sql":
                row[_GENERATION_RENAMED.get(name, name)] = getattr(attempt.generation, name)
    return row


def attempts_to_frame(attempts: Iterable[Attempt]) -> pd.DataFrame:
    """The ``candidate_results`` frame: policy decision, result and generation part of every attempt."""
    return _frame([_attempt_row(a) for a in attempts], ATTEMPT_COLUMNS)


_GENERATION_SOURCES: tuple[tuple[str, str], ...] = tuple(
    (name, _GENERATION_RENAMED.get(name, name)) for name in CANDIDATE_COLUMNS
)
"""Each ``CandidateRecord`` field with the ``candidate_results`` column it is stored in."""


def _attempt(row: dict[str, Any]) -> Attempt:
    generation = None
    if row.get("source", SOURCE_MODEL) == SOURCE_MODEL:
        generation = _candidate({name: row.get(column) for name, column in _GENERATION_SOURCES})
    executed = bool(row.get("executed"))
    return Attempt(
        case_id=str(row["case_id"]),
        case_fingerprint=str(row["case_fingerprint"]),
        source=str(row.get("source") or SOURCE_MODEL),
        sample_index=int(row["sample_index"]),
        candidate_index=int(row["candidate_index"]),
        sql=_str(row.get("sql")),
        generation=generation,
        policy_allowed=_bool(row.get("policy_allowed")),
        policy_rule=_str(row.get("policy_rule")),
        policy_name=_str(row.get("policy_name")),
        policy_reason=_str(row.get("policy_reason")),
        executed=executed,
        result=_result_of(row) if executed else None,
    )


def attempts_from_frame(frame: pd.DataFrame) -> list[Attempt]:
    """The attempts of a ``candidate_results`` frame, each executed result decoded once."""
    columns = _columns(frame, ("case_id", "case_fingerprint", "source", "sample_index", "candidate_index", "executed"))
    return [_attempt(row) for row in _rows(columns, len(frame))]


AttemptKey = tuple[str, int, int]
"""An attempt's (case id, sample index, candidate index)."""


def attempt_results(frame: pd.DataFrame, keys: Collection[AttemptKey]) -> dict[AttemptKey, QueryResult | None]:
    """The results of the ``candidate_results`` rows of ``keys`` (None: not executed; of several rows of one key
    the last, as ``attempts_from_frame`` gives them): only those results are decoded (the report's samples)."""
    columns = _columns(frame, ("case_id", "case_fingerprint", "source", "sample_index", "candidate_index", "executed"))
    chosen: dict[AttemptKey, dict[str, Any]] = {}
    for row in _rows(columns, len(frame)):
        key = (str(row["case_id"]), int(row["sample_index"]), int(row["candidate_index"]))
        if key in keys:
            chosen[key] = row
    return {key: _result_of(row) if bool(row.get("executed")) else None for key, row in chosen.items()}


# ------------------------------------------------------------------------------------------------ verdicts


def verdicts_to_frame(
    verdicts: Iterable[Verdict],
    *,
    gold_set: str | None = None,
    model: str | None = None,
    model_config_hash: str | None = None,
) -> pd.DataFrame:
    """The ``case_verdicts`` frame; the partition keys lead and the model config hash trails when given.

    An answer-only verdict stores ``correct`` and its scores as NULL (n/a: judged on its answer alone)."""
    verdicts = list(verdicts)
    data: dict[str, list[Any]] = {}
    if gold_set is not None:
        data["gold_set"] = [gold_set] * len(verdicts)
    if model is not None:
        data["model"] = [model] * len(verdicts)
    for name in VERDICT_COLUMNS:
        values = [getattr(v, name) for v in verdicts]
        if name == "tags":
            values = [",".join(tags) for tags in values]
        elif name in _VERDICT_JSON:
            values = [None if v is None else json.dumps(v, sort_keys=True) for v in values]
        elif name in NOT_APPLICABLE_WHEN_ANSWER_ONLY:
            values = [None if v.outcome == ANSWER_ONLY else value for v, value in zip(verdicts, values)]
        data[name] = values
    if gold_set is not None or model is not None:
        data["model_config_hash"] = [model_config_hash] * len(verdicts)
    return pd.DataFrame(data, columns=list(data))


# Nested verdict values: JSON text in the Parquet, real values in the record.
_VERDICT_JSON: dict[str, Callable[[Any], Any]] = {
    "clause_scores": dict,
    "diagnosis_detail": lambda items: tuple((str(label), str(text)) for label, text in items),
}

_VERDICT_CONVERTERS = {
    "sample_index": int,
    "is_probe": bool,
    "correct": bool,
    "first_candidate_correct": bool,
    "cold_start": bool,
    "system_rows_disagree": bool,
    "candidate_count": int,
    "selected_candidate_index": int,
    "score_exact": float,
    "score_partial": float,
    "expected_row_count": int,
    "candidate_row_count": int,
    "row_precision": float,
    "row_recall": float,
    "cell_f1": float,
    "test_suite_correct": bool,
    "test_suite_variants": int,
    "candidate_work": int,
    "gold_work": int,
    "efficiency_score": float,
}


# Verdict fields stored as NULL for an answer-only case (no execution grade); read back as False / 0.0.
NOT_APPLICABLE_WHEN_ANSWER_ONLY = frozenset({"correct", "score_exact", "score_partial"})

_ZERO_WHEN_MISSING = frozenset({"score_exact", "score_partial"})

_FALSE_WHEN_MISSING = frozenset(
    {"is_probe", "correct", "first_candidate_correct", "cold_start", "system_rows_disagree"}
)


def _verdict_values(name: str, values: list[Any]) -> list[Any]:
    """One verdict field's stored column as the record's values (missing values already None)."""
    if name == "tags":
        return [tuple(t for t in (value or "").split(",") if t) for value in values]
    if name in _VERDICT_JSON:
        read = _VERDICT_JSON[name]
        return [None if value is None else read(json.loads(value)) for value in values]
    convert = _VERDICT_CONVERTERS.get(name)
    if convert is None:
        return values
    missing: Any = False if name in _FALSE_WHEN_MISSING else 0.0 if name in _ZERO_WHEN_MISSING else None
    return [missing if value is None else convert(value) for value in values]


def verdicts_from_frame(frame: pd.DataFrame) -> list[Verdict]:
    """The verdicts of a ``case_verdicts`` frame (partition-key and hash columns are left aside); each field is
    converted a column at a time."""
    columns = _columns(frame, ("case_id", "outcome", "is_probe", "sample_index"))
    absent = [None] * len(frame)
    fields_ = [_verdict_values(name, columns.get(name, absent)) for name in VERDICT_COLUMNS]
    return [Verdict(**dict(zip(VERDICT_COLUMNS, row))) for row in zip(*fields_)]


def model_config_hash_of(frame: pd.DataFrame) -> str | None:
    """The model config hash a ``case_verdicts`` frame was judged with (None when it has none)."""
    if "model_config_hash" not in frame.columns:
        return None
    hashes = [value for value in frame["model_config_hash"].tolist() if not is_missing(value)]
    return str(hashes[0]) if hashes else None


# ------------------------------------------------------------------------------------------------ declared types

# The pandas dtype of a metric kind (``scoring.metrics``) and of a declared Python type: nullable, so that a
# column keeps its type when every value is missing (a column of None alone would be Arrow's null type).
KIND_DTYPES: dict[str, str] = {
    "rate": "float64",
    "ms": "float64",
    "num": "float64",
    "usd": "float64",
    "int": "Int64",
    "text": "string",
    "json": "string",
}
_PYTHON_DTYPES = {"bool": "boolean", "int": "Int64", "float": "float64", "str": "string"}


def _declared_dtype(annotation: str) -> str:
    """The dtype of a stored verdict field from its annotation (nested values are stored as text)."""
    base = annotation.replace(" | None", "").split("[", 1)[0].strip()
    return _PYTHON_DTYPES.get(base, "string")


VERDICT_DTYPES: dict[str, str] = {
    "gold_set": "string",
    "model": "string",
    **{f.name: _declared_dtype(str(f.type)) for f in fields(Verdict)},
    "model_config_hash": "string",
    "run_id": "string",
}
RUN_SCORES_DTYPES: dict[str, str] = {m.name: KIND_DTYPES[m.kind] for m in METRICS}


def with_declared_types(frame: pd.DataFrame, dtypes: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` with each column of ``dtypes`` cast to its declared dtype, and any other column whose values
    are all missing as text: the written schema does not depend on the data."""
    casts = {name: dtype for name, dtype in dtypes.items() if name in frame.columns}
    for name in frame.columns:
        if name not in casts and frame[name].dtype == object and frame[name].isna().all():
            casts[name] = "string"
    return frame.astype(casts) if casts else frame


# ------------------------------------------------------------------------------------------------ scores


def run_scores_row(scores: RunScores, **identity: Any) -> dict[str, Any]:
    """One ``run_scores`` row: identity columns first, then every metric (nested values as JSON text)."""
    row = dict(identity)
    for name, value in scores.values.items():
        row[name] = json.dumps(value, sort_keys=True) if name in JSON_METRICS else value
    return row


def run_scores_to_frame(scores: RunScores, **identity: Any) -> pd.DataFrame:
    """The one-row ``run_scores`` frame: identity (gold set, model, run id, versions) first, then the scores."""
    return pd.DataFrame([run_scores_row(scores, **identity)])


def run_scores_from_frame(frame: pd.DataFrame) -> tuple[dict[str, Any], RunScores]:
    """The identity columns and the scores of a ``run_scores`` frame's (first) row."""
    if not len(frame):
        raise FrameCodecError("the run_scores frame is empty")
    row = {name: values[0] for name, values in _columns(frame).items()}
    declared = {m.name for m in METRICS}
    values = {}
    for metric in METRICS:
        value = row.get(metric.name)
        values[metric.name] = json.loads(value) if metric.name in JSON_METRICS and isinstance(value, str) else value
    identity = {name: value for name, value in row.items() if name not in declared}
    return identity, RunScores(values)


# ------------------------------------------------------------------------------------------------ answers


def _typed_records(frame: pd.DataFrame, cls: Any, required: Sequence[str]) -> list[Any]:
    """Records of dataclass ``cls`` from a frame of its fields (NaN cleaned; a missing non-optional value takes
    the field's default)."""
    casts: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "bool": bool, "str": str}
    columns = _columns(frame, required)
    out = []
    for row in _rows(columns, len(frame)):
        values: dict[str, Any] = {}
        for f in fields(cls):
            kind = str(f.type)
            value = row.get(f.name)
            if value is None:
                if "None" in kind:
                    values[f.name] = None
                continue  # the field's default
            cast = casts.get(kind.split(" ", 1)[0])
            values[f.name] = cast(value) if cast is not None else value
        out.append(cls(**values))
    return out


def answers_to_frame(records: Iterable[Any]) -> pd.DataFrame:
    """The ``candidate_answers`` frame: one row per candidate (``generation.answers.AnswerRecord``)."""
    from nl2sql_pipeline.generation.answers import AnswerRecord

    return _frame([r.to_dict() for r in records], [f.name for f in fields(AnswerRecord)])


def answers_from_frame(frame: pd.DataFrame) -> list[Any]:
    """The answer records of a ``candidate_answers`` frame."""
    from nl2sql_pipeline.generation.answers import AnswerRecord

    return _typed_records(frame, AnswerRecord, ("case_id", "case_fingerprint", "sample_index", "candidate_index"))


def answer_judgements_to_frame(records: Iterable[Any]) -> pd.DataFrame:
    """The ``answer_judgements`` frame: one row per judged answer and judge (``judges.answer.AnswerJudgement``)."""
    from nl2sql_pipeline.judges.answer import AnswerJudgement

    return _frame([r.to_dict() for r in records], [f.name for f in fields(AnswerJudgement)])


def answer_judgements_from_frame(frame: pd.DataFrame) -> list[Any]:
    """The judgements of an ``answer_judgements`` frame."""
    from nl2sql_pipeline.judges.answer import AnswerJudgement

    return _typed_records(
        frame, AnswerJudgement, ("case_id", "case_fingerprint", "sample_index", "candidate_index", "judge")
    )
