"""Candidate generation for a whole gold set: prompt context from the databases, the cache, the records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
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
from nl2sql_pipeline.progress import ProgressTracker


def generate_for_gold_set(
    cases: list[Case],
    model: str,
    *,
    samples: int = 1,
    use_cache: bool = True,
    resolve_database: Callable[[str], Path] | None = None,
    progress: ProgressTracker | None = None,
    probe_systems: bool = False,
) -> tuple[list[CandidateRecord], dict[str, Any]]:
    """Generate candidates of ``model`` for every query case; returns the records and a summary.

    ``resolve_database`` maps each case's database to its file (a gold set's ``CaseDatabases``;
    default: the registry, paths relative to the working directory); ``progress`` is told of every unit.
    ``probe_systems``: a system is also asked the policy probes' questions (``stages.probe_replies``)."""
    from nl2sql_pipeline.databases.resolve import CaseDatabases

    spec = get_model(model)
    resolve = resolve_database or CaseDatabases.from_registry()
    records = generate_candidates(
        cases,
        spec,
        cache=GenerationCache() if use_cache else None,
        context=prompt_context_for_cases(cases, resolve_database=resolve, with_probes=probe_systems and spec.is_system),
        samples=samples,
        progress=progress,
        resolve_database=resolve,
        probe_systems=probe_systems,
    )
    return records, generation_summary(records)
