"""The generate loop: ask a model for SQL for every query case, through litellm, with the cache.

    records = generate_candidates(cases, spec, cache=GenerationCache(), context=context, samples=1)

Work is planned as units (``conversation.CallRequest``: one per case, sample and candidate) and run
by a thread pool of ``spec.limits.max_concurrency`` workers (1 when unset), every call holding one of the
provider's in-flight slots shared by every process on the machine (``inflight``) and paced by the
provider's shared rate limiter (``limiter``) and retried or classified by ``dispatch``. Records come
back in plan order whatever the completion order. The first run-stopping failure (daily quota,
payment, key, unknown model) ends the sending: every unit not yet answered is recorded with that
class, unsent, while what was generated is kept (and cached). Policy-rejection probes are never sent
to a model; a ``kind: predictions`` model is read from its file instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.generation.cache import GenerationCache
from nl2sql_pipeline.generation.candidate_record import CandidateRecord, ModelCall, generation_summary
from nl2sql_pipeline.generation.client import call_model, completion_kwargs, configure_litellm
from nl2sql_pipeline.generation.conversation import CallRequest, cached_call, plan_calls
from nl2sql_pipeline.generation.conversation import run_unit as _run_unit
from nl2sql_pipeline.generation.dispatch import RunControl, limiter_for, slots_for
from nl2sql_pipeline.generation.limiter import RateLimiter
from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness
from nl2sql_pipeline.generation.prompts import PromptContext
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.tracked import report_record, tracked
from nl2sql_pipeline.progress import (
    STAGE_GENERATE,
    ProgressTracker,
    counted,
    left_out_cases,
    tracking,
    units_of_questions,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONCURRENCY = 1  # calls in flight when the registry sets no max_concurrency

__all__ = [
    "CallRequest",
    "CandidateRecord",
    "ModelCall",
    "cached_call",
    "call_model",
    "completion_kwargs",
    "configure_litellm",
    "generate_candidates",
    "generation_summary",
    "plan_calls",
]


class _ReadinessOnce:
    """``model_readiness`` probed at most once per run (on the first cache miss), thread-safe."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self._lock = threading.Lock()
        self._state: Readiness | None = None

    def __call__(self) -> Readiness:
        state = self._state  # set once, never reset: read without the lock after the first probe
        if state is not None:
            return state
        with self._lock:
            if self._state is None:
                self._state = model_readiness(self.spec)
                if not self._state.ready:
                    logger.warning("model %s is not ready: %s", self.spec.slug, self._state.reason)
            return self._state


def _log_summary(spec: ModelSpec, records: list[CandidateRecord]) -> None:
    # the summary walks every record several times: only built when INFO is logged
    if logger.isEnabledFor(logging.INFO):
        logger.info("%s: %s", spec.slug, generation_summary(records))


def generate_candidates(
    cases: list[Case],
    spec: ModelSpec,
    *,
    cache: GenerationCache | None,
    context: PromptContext | None,
    samples: int = 1,
    limiter: RateLimiter | None = None,
    max_concurrency: int | None = None,
    progress: ProgressTracker | None = None,
    resolve_database: Callable[[str], Path] | None = None,
    probe_systems: bool = False,
) -> list[CandidateRecord]:
    """Candidates for every query case: ``samples`` x N each (N = ``case.candidate_selection`` or
    ``spec.candidates``), in plan order.

    Cache hits make no call; a model that is not ready yields ``not_ready`` records for the misses
    without sending anything. ``limiter`` and ``max_concurrency`` override the registry's (benchmarks,
    tests). A predictions model needs no ``context``; the others raise GenerationError without one.
    ``progress`` (default: a tracker reporting to the subscribed sinks, ``nl2sql_pipeline.progress``) is told
    of every unit as it starts and ends. ``resolve_database`` maps a case's database to its file where a
    predictions model converts its SQL from another dialect (default ``databases.require_database``).
    ``probe_systems``: a system (``kind: http | python | command``) is also asked every policy probe's question
    (bare models never are).
    """
    with tracking(progress, STAGE_GENERATE, spec.slug) as tracker:
        return _generate(
            cases, spec, cache, context, samples, limiter, max_concurrency, tracker, resolve_database, probe_systems
        )


def _generate(
    cases: list[Case],
    spec: ModelSpec,
    cache: GenerationCache | None,
    context: PromptContext | None,
    samples: int,
    limiter: RateLimiter | None,
    max_concurrency: int | None,
    tracker: ProgressTracker,
    resolve_database: Callable[[str], Path] | None = None,
    probe_systems: bool = False,
) -> list[CandidateRecord]:
    if spec.is_replay:
        from nl2sql_pipeline.generation.predictions import prediction_records

        records = prediction_records(cases, spec, samples, resolve_database)
        tracker.begin(len(records))
        for record in records:
            report_record(tracker, record, started=False)
        _log_summary(spec, records)
        return records
    if spec.is_system:
        from nl2sql_pipeline.generation.systems.generate import generate_system_candidates

        records = generate_system_candidates(
            cases,
            spec,
            cache=cache,
            context=context,
            samples=samples,
            control=RunControl(limiter=limiter if limiter is not None else limiter_for(spec), slots=slots_for(spec)),
            readiness=_ReadinessOnce(spec),
            workers=max_concurrency or spec.limits.max_concurrency or DEFAULT_MAX_CONCURRENCY,
            progress=tracker,
            probes=probe_systems,
        )
        _log_summary(spec, records)
        return records
    if context is None:
        from nl2sql_pipeline.errors import GenerationError

        raise GenerationError(
            f"model {spec.slug}: a PromptContext is needed to build prompts (prompt_context_for_cases)"
        )
    requests = plan_calls(cases, spec, context, samples)
    probes = sum(case.is_probe for case in cases)
    tracker.begin(
        len(requests),
        counted(
            units_of_questions(len(requests), "candidates", len(cases) - probes),
            left_out_cases("not asked", probes=probes),
        ),
    )
    run_unit = tracked(_run_unit, tracker)
    control = RunControl(limiter=limiter if limiter is not None else limiter_for(spec), slots=slots_for(spec))
    readiness = _ReadinessOnce(spec)
    workers = max(1, min(max_concurrency or spec.limits.max_concurrency or DEFAULT_MAX_CONCURRENCY, len(requests) or 1))
    if workers == 1:
        records = [run_unit(request, spec, cache, control, readiness) for request in requests]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"generate-{spec.slug}") as pool:
            futures = [pool.submit(run_unit, request, spec, cache, control, readiness) for request in requests]
            try:
                records = [future.result() for future in futures]
            except BaseException:
                control.abort("another unit of the run raised")  # wake waiting workers; send nothing more
                for future in futures:
                    future.cancel()
                raise
    _log_summary(spec, records)
    return records
