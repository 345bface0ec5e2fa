"""Candidate generation for a whole gold set: prompt context from the databases, the cache, the records."""

from __future__ import annotations

from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.generation import (
    CandidateRecord,
    GenerationCache,
    generate_candidates,
    generation_summary,
    get_model,
    prompt_context_for_cases,
)


def generate_for_gold_set(
    cases: list[Case], model: str, *, samples: int = 1, use_cache: bool = True
) -> tuple[list[CandidateRecord], dict[str, Any]]:
    """Generate candidates of ``model`` for every query case; returns the records and a summary."""
    spec = get_model(model)
    records = generate_candidates(
        cases,
        spec,
        cache=GenerationCache() if use_cache else None,
        context=prompt_context_for_cases(cases),
        samples=samples,
    )
    return records, generation_summary(records)
