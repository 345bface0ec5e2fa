"""The request/response contract between nl2sql-eval and a system under evaluation (``nl2sql-system/1``).

Request (one JSON object; the same fields reach a Python callable as a ``SystemRequest``)::

    {"contract": "nl2sql-system/1", "request_id": "sales-001/s0/c0/t1", "case_id": "sales-001",
     "question": "...", "database": "sales",
     "history": [{"question": "...", "sql": "...", "answer": "..."}],   # earlier turns, its own answers
     "schema_context": {"schema_text": "...", "semantic_text": "...", "reference_date": "2026-06-30"} | null,
     "options": {...},                 # the entry's options: mapping, as declared
     "sample_index": 0, "candidate_index": 0,
     "calibration": {"expected_sql": "..."}}   # only when the entry sets calibration: true

Response::

    {"contract": "nl2sql-system/1",    # optional; another major version is refused
     "sql": "SELECT ..." | null,       # null: the system gave no SQL (a no_sql outcome)
     "answer": "..." | null,           # the natural-language answer shown to the user
     "columns": ["name", ...] | null, "rows": [[...], ...] | null,   # the rows the system showed
     "usage": {"input_tokens": 12, "output_tokens": 3, "source": "measured" | "estimated"} | null,
     "cost_usd": 0.0012 | null,
     "timings_ms": {"total": 812.0, ...} | null,
     "error": {"message": "...", "status": 503} | null}   # a failure the system reports (status as HTTP's)

Unknown response keys are ignored (forward compatible); a wrong type, a non-object body or another
major version raises ``ContractError`` with the reason, which the generate loop records as the case's
``provider_error`` (never a crash). Dates and decimals in ``rows`` are JSON strings and numbers; the
comparator coerces ISO strings where the paired column holds dates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from nl2sql_pipeline.errors import GenerationError

CONTRACT_NAME = "nl2sql-system"
CONTRACT_MAJOR = 1
CONTRACT_VERSION = f"{CONTRACT_NAME}/{CONTRACT_MAJOR}"


class ContractError(GenerationError):
    """A system's response breaks the contract (its message says which field and how)."""


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a follow-up: the question and what the system answered to it."""

    question: str
    sql: str | None = None
    answer: str | None = None


@dataclass(frozen=True)
class SchemaContext:
    """The harness's description of the database (the system may use it or its own)."""

    schema_text: str
    semantic_text: str
    reference_date: str


@dataclass(frozen=True)
class SystemRequest:
    """What the system is asked for one turn of one case."""

    request_id: str
    case_id: str
    question: str
    database: str
    history: tuple[Turn, ...] = ()
    schema_context: SchemaContext | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    sample_index: int = 0
    candidate_index: int = 0
    calibration: Mapping[str, Any] | None = None
    contract: str = CONTRACT_VERSION

    def to_json_dict(self) -> dict[str, Any]:
        """The request as sent over the wire (field order fixed)."""
        data = asdict(self)
        data["options"] = dict(self.options)
        data["calibration"] = dict(self.calibration) if self.calibration is not None else None
        if self.calibration is None:
            data.pop("calibration")
        return {"contract": self.contract, **{k: v for k, v in data.items() if k != "contract"}}

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> SystemRequest:
        """Rebuild a request received as JSON (used by systems written in Python)."""
        schema = data.get("schema_context")
        return cls(
            request_id=str(data.get("request_id", "")),
            case_id=str(data.get("case_id", "")),
            question=str(data["question"]),
            database=str(data["database"]),
            history=tuple(
                Turn(str(t.get("question", "")), t.get("sql"), t.get("answer")) for t in data.get("history") or ()
            ),
            schema_context=SchemaContext(**schema) if isinstance(schema, dict) else None,
            options=dict(data.get("options") or {}),
            sample_index=int(data.get("sample_index") or 0),
            candidate_index=int(data.get("candidate_index") or 0),
            calibration=data.get("calibration"),
            contract=str(data.get("contract") or CONTRACT_VERSION),
        )


TOKEN_SOURCES: tuple[str, ...] = ("measured", "estimated")


@dataclass(frozen=True)
class Usage:
    """Tokens the system reports having used; ``source`` says whether a tokenizer counted them."""

    input_tokens: int
    output_tokens: int
    source: str = "measured"


@dataclass(frozen=True)
class SystemResponse:
    """What the system answered (validated)."""

    sql: str | None
    answer: str | None = None
    columns: tuple[str, ...] | None = None
    rows: tuple[tuple[Any, ...], ...] | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    timings_ms: Mapping[str, float] | None = None
    contract: str = CONTRACT_VERSION

    def to_json_dict(self) -> dict[str, Any]:
        """The response as JSON (the form cached and stored)."""
        return {
            "contract": self.contract,
            "sql": self.sql,
            "answer": self.answer,
            "columns": list(self.columns) if self.columns is not None else None,
            "rows": [list(row) for row in self.rows] if self.rows is not None else None,
            "usage": asdict(self.usage) if self.usage is not None else None,
            "cost_usd": self.cost_usd,
            "timings_ms": dict(self.timings_ms) if self.timings_ms is not None else None,
        }

    @property
    def system_latency_ms(self) -> float | None:
        """The system's own total time, when it reports one (``timings_ms.total``)."""
        return None if self.timings_ms is None else self.timings_ms.get("total")


# ------------------------------------------------------------------------------------------------ checks
# Each check reads one field of the raw response and returns its value, or raises ContractError.


def _check_contract(data: Mapping[str, Any]) -> str:
    value = data.get("contract", CONTRACT_VERSION)
    if not isinstance(value, str) or value.partition("/")[0] != CONTRACT_NAME:
        raise ContractError(f'"contract" must be "{CONTRACT_VERSION}", got {value!r}')
    if value.partition("/")[2].split(".")[0] != str(CONTRACT_MAJOR):
        raise ContractError(f'contract {value!r} is not supported; this harness speaks "{CONTRACT_VERSION}"')
    return value


def _optional_str(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise ContractError(f'"{name}" must be a string or null, got {type(value).__name__}')
    return value if value is None or value.strip() else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_rows(data: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, tuple[tuple[Any, ...], ...] | None]:
    columns, rows = data.get("columns"), data.get("rows")
    if columns is not None and (not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)):
        raise ContractError('"columns" must be a list of strings or null')
    if rows is None:
        return (tuple(columns) if columns is not None else None), None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ContractError('"rows" must be a list of lists (one list of values per row) or null')
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise ContractError(f'"rows" are ragged: rows of {sorted(widths)} values')
    if columns is not None and widths and widths != {len(columns)}:
        raise ContractError(f'"rows" have {widths.pop()} values but "columns" names {len(columns)}')
    names = tuple(columns) if columns is not None else tuple(f"col{i}" for i in range(widths.pop() if widths else 0))
    return names, tuple(tuple(row) for row in rows)


def _check_usage(data: Mapping[str, Any]) -> Usage | None:
    usage = data.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise ContractError('"usage" must be an object {"input_tokens": int, "output_tokens": int} or null')
    counts: dict[str, int] = {}
    for name in ("input_tokens", "output_tokens"):
        value = usage.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ContractError(f'"usage.{name}" must be a whole number >= 0, got {value!r}')
        counts[name] = value
    source = usage.get("source", "measured")
    if source not in TOKEN_SOURCES:
        raise ContractError(f'"usage.source" must be one of {", ".join(TOKEN_SOURCES)}, got {source!r}')
    return Usage(counts["input_tokens"], counts["output_tokens"], source=source)


def _check_cost(data: Mapping[str, Any]) -> float | None:
    cost = data.get("cost_usd")
    if cost is not None and (not _number(cost) or cost < 0):
        raise ContractError(f'"cost_usd" must be a number >= 0 or null, got {cost!r}')
    return None if cost is None else float(cost)


def _check_timings(data: Mapping[str, Any]) -> Mapping[str, float] | None:
    timings = data.get("timings_ms")
    if timings is None:
        return None
    if not isinstance(timings, dict) or not all(isinstance(k, str) and _number(v) for k, v in timings.items()):
        raise ContractError('"timings_ms" must be an object of name -> milliseconds or null')
    return {k: float(v) for k, v in timings.items()}


class SystemReportedError(GenerationError):
    """The system answered with ``"error": {"message": ..., "status": ...}`` (a failure it reports itself).

    ``status`` is read as an HTTP status would be (401 authentication, 402 payment, 429 rate limit, 5xx
    retried), so a python or command system reports failures in the same taxonomy as an HTTP one.
    """

    def __init__(self, message: str, status_code: int | None):
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def _check_error(data: Mapping[str, Any]) -> None:
    error = data.get("error")
    if error is None:
        return
    if isinstance(error, str):
        raise SystemReportedError(error, None)
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise ContractError('"error" must be {"message": str, "status": int | null} or null')
    status = error.get("status")
    if status is not None and (not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599):
        raise ContractError(f'"error.status" must be an HTTP status (100..599) or null, got {status!r}')
    raise SystemReportedError(error["message"], status)


def parse_response(data: Any) -> SystemResponse:
    """The validated response; ContractError naming the offending field otherwise, SystemReportedError
    when the system reports a failure of its own (``error``)."""
    if isinstance(data, SystemResponse):
        data = data.to_json_dict()
    if not isinstance(data, dict):
        raise ContractError(f"the response must be a JSON object, got {type(data).__name__}")
    contract = _check_contract(data)
    _check_error(data)
    columns, rows = _check_rows(data)
    return SystemResponse(
        sql=_optional_str(data, "sql"),
        answer=_optional_str(data, "answer"),
        columns=columns,
        rows=rows,
        usage=_check_usage(data),
        cost_usd=_check_cost(data),
        timings_ms=_check_timings(data),
        contract=contract,
    )


def parse_response_text(text: str | bytes) -> SystemResponse:
    """Parse and validate a JSON response body; ContractError for text that is not JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        snippet = (text[:120] if isinstance(text, str) else text[:120].decode("utf-8", "replace")).strip()
        raise ContractError(f"the response is not JSON ({exc}): {snippet!r}") from None
    return parse_response(data)


def jsonable(value: Any) -> Any:
    """A result value as plain JSON (what a system puts in ``rows``): dates as ISO text, decimals as numbers."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)
