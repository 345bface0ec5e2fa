"""What generation produces: ``ModelCall`` (one completed call, the cached part) and
``CandidateRecord`` (one candidate: a row of the ``candidate_sql`` asset), plus the summary.

A candidate becomes the generation part of an ``nl2sql_pipeline.stages.records.Attempt``; its frame form is
``nl2sql_pipeline.results.frames.candidates_to_frame``.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

from nl2sql_pipeline.generation.failures import ENVIRONMENT_ERROR_CLASSES


@dataclass(frozen=True)
class ModelCall:
    """What one completed model call returned (the part worth caching)."""

    raw_reply: str | None
    latency_ms: float
    input_tokens: int
    output_tokens: int
    token_source: str
    cost_usd: float | None
    mutation: str | None
    finish_reason: str | None = None
    cold_start: bool = False  # the process's first call to this provider: its latency includes client set-up

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the cache record)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCall:
        """Rebuild from ``to_dict`` output; KeyError/TypeError on a malformed record (optional fields
        added since may be absent)."""
        values = {}
        for f in fields(cls):
            if f.name in data:
                values[f.name] = data[f.name]
            elif f.default is MISSING and f.default_factory is MISSING:
                raise KeyError(f.name)
        return cls(**values)


@dataclass(frozen=True)
class CandidateRecord:
    """One generated candidate: a row of the ``candidate_sql`` asset.

    A follow-up case's record is its final turn: ``latency_ms`` is that turn's alone, while tokens and
    cost add up every call made for the conversation. ``calls`` counts the model calls sent for this
    record (cache hits excluded), ``attempts`` the HTTP attempts behind them (retries included).
    """

    case_id: str
    case_fingerprint: str
    sample_index: int
    candidate_index: int
    generated_sql: str | None
    raw_reply: str | None
    error_class: str | None  # None, or a class of generation.failures (no_sql, rate_limited, ...)
    error_message: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    token_source: str | None  # 'measured' | 'estimated'
    cost_usd: float | None  # None = unknown (never a silent zero); offline models cost 0.0
    cached: bool  # every turn came from the cache: nothing was sent
    mutation: str | None
    model_config_hash: str
    prompt_hash: str | None
    turns: int = 1
    calls: int = 0
    attempts: int = 0
    cold_start: bool = False  # latency includes the provider client's set-up: left out of latency figures
    # A system's own answer (kind: http | python | command; None for models): its natural-language answer,
    # the rows it showed as JSON {"columns": [...], "rows": [[...]]}, its own latency, where the cost came from.
    answer: str | None = None
    system_rows: str | None = None
    system_latency_ms: float | None = None
    cost_source: str | None = None  # 'reported' | 'prices' | None (models: litellm's bookkeeping)
    # A replayed prediction in another dialect (``source_dialect`` of a predictions model): the SQL as the
    # file gives it; ``generated_sql`` is its DuckDB conversion (None when it could not be converted).
    source_sql: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (one DataFrame row)."""
        return asdict(self)


def generation_summary(records: list[CandidateRecord]) -> dict[str, Any]:
    """Counts for logs and asset metadata: candidates, cases, cache hits, calls and attempts made,
    errors by class, skipped candidates, tokens and total cost (None when any answered record's cost is
    unknown; failed calls cost nothing)."""
    errors: dict[str, int] = {}
    for record in records:
        if record.error_class is not None:
            errors[record.error_class] = errors.get(record.error_class, 0) + 1
    answered = [r for r in records if r.raw_reply is not None or r.cached]
    costs = [r.cost_usd for r in answered]
    return {
        "candidates": len(records),
        "cases": len({r.case_id for r in records}),
        "cached": sum(r.cached for r in records),
        "calls": sum(r.calls for r in records),
        "attempts": sum(r.attempts for r in records),
        "errors": sum(errors.values()),
        **{f"errors_{name}": count for name, count in sorted(errors.items())},
        "skipped": sum(count for name, count in errors.items() if name in ENVIRONMENT_ERROR_CLASSES),
        "input_tokens": sum(r.input_tokens or 0 for r in records),
        "output_tokens": sum(r.output_tokens or 0 for r in records),
        "estimated_tokens": any(r.token_source == "estimated" for r in records),
        "cost_usd": None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None)),
    }
