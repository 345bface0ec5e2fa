"""The generate loop of a system: every query case (x samples x candidates) asked through its contract.

Same shape as the model loop (``generation.generate``): units run in a thread pool of
``limits.max_concurrency`` workers, each attempt goes through ``dispatch`` (the shared limiter, retries
with Retry-After, the failure taxonomy, the run stop on quota/payment/auth), completed calls are cached
under the system's config hash (its declared ``version`` included) unless the entry says ``cache:
false``, and records come back in plan order. A follow-up case is asked turn by turn: each earlier
question with the system's own earlier answers as ``history``; only the final turn is scored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.candidate_record import CandidateRecord, ModelCall
from nl2sql_pipeline.generation.conversation import cached_call
from nl2sql_pipeline.generation.dispatch import RunControl, dispatch
from nl2sql_pipeline.generation.extract import clean_sql
from nl2sql_pipeline.generation.failures import NO_SQL, NOT_READY, ProviderFailure
from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness
from nl2sql_pipeline.generation.offline_requests import METADATA_KEY, clarify_metadata
from nl2sql_pipeline.generation.prompts import PromptContext
from nl2sql_pipeline.generation.systems.contract import (
    SchemaContext,
    SystemRequest,
    SystemResponse,
    Turn,
)
from nl2sql_pipeline.generation.systems.transport import call_system, response_cost, response_of
from nl2sql_pipeline.generation.tracked import tracked
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED, TOKEN_SOURCE_MEASURED
from nl2sql_pipeline.progress import ProgressTracker

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SystemUnit:
    """One unit of work: a case, a sample and a candidate index."""

    case: Case
    sample_index: int
    candidate_index: int


def plan_units(cases: list[Case], spec: ModelSpec, samples: int, probes: bool = False) -> list[SystemUnit]:
    """Every unit, in a stable order. Probes are sent (their question, one candidate per sample) only when
    ``probes``: the system's reply to a harmful request is then classified (``stages.probe_replies``)."""
    if samples < 1:
        raise GenerationError(f"samples must be >= 1, got {samples} (ask for at least one sample)")
    return [
        SystemUnit(case, sample, candidate)
        for case in cases
        if probes or not case.is_probe
        for sample in range(samples)
        for candidate in range(1 if case.is_probe else case.candidate_selection or spec.candidates)
    ]


def _calibration(case: Case, turn: int, unit: SystemUnit) -> dict[str, Any]:
    """What a calibration system (gold-echo behind it) answers from: the same fields the offline models read."""
    last = len(case.follow_up_context)
    if turn == last and case.is_clarify:  # an ambiguous question: the calibrated answer asks which reading
        return clarify_metadata(case, unit.sample_index, unit.candidate_index)[METADATA_KEY]
    if turn == last:  # a probe's "expected SQL" is the harmful one: what a system obeying the request writes
        case_id, sql = case.id, case.policy_probe_sql if case.is_probe else case.canonical_sql
    else:
        case_id, sql = f"{case.id}#turn{turn + 1}", case.follow_up_context[turn].sql
    return {
        "case_id": case_id,
        "expected_sql": sql,
        "sample_index": unit.sample_index,
        "candidate_index": unit.candidate_index,
    }


def build_request(
    spec: ModelSpec, unit: SystemUnit, turn: int, history: list[Turn], schema: SchemaContext | None
) -> SystemRequest:
    """The request of turn ``turn`` (0-based; the last one is the case's own question)."""
    config = spec.system
    assert config is not None
    case = unit.case
    questions = [t.question for t in case.follow_up_context] + [case.question]
    return SystemRequest(
        request_id=f"{case.id}/s{unit.sample_index}/c{unit.candidate_index}/t{turn + 1}",
        case_id=case.id,
        question=questions[turn],
        database=case.database,
        history=tuple(history),
        schema_context=schema,
        options=dict(config.options),
        sample_index=unit.sample_index,
        candidate_index=unit.candidate_index,
        calibration=_calibration(case, turn, unit) if config.calibration else None,
    )


def request_hash(request: SystemRequest) -> str:
    """16 hex chars over the exact request (the cache key's prompt part)."""
    blob = json.dumps(request.to_json_dict(), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass
class _Tally:
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_known: bool = True
    cost_usd: float | None = 0.0
    cost_source: str | None = None
    calls: int = 0
    attempts: int = 0
    replies: int = 0  # turns answered so far

    estimated: bool = False

    def add(self, spec: ModelSpec, call: ModelCall, response: SystemResponse) -> None:
        self.replies += 1
        self.tokens_known = self.tokens_known and call.token_source in (TOKEN_SOURCE_MEASURED, TOKEN_SOURCE_ESTIMATED)
        self.estimated = self.estimated or call.token_source == TOKEN_SOURCE_ESTIMATED
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        cost, source = response_cost(spec, response)
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost
        self.cost_source = source if self.cost_usd is not None else None


def _rows_json(response: SystemResponse) -> str | None:
    if response.rows is None:
        return None
    return json.dumps(
        {"columns": list(response.columns or ()), "rows": [list(r) for r in response.rows]},
        ensure_ascii=False,
        default=str,
    )


def _record(
    unit: SystemUnit, spec: ModelSpec, digest: str, tally: _Tally, turns: int, **values: Any
) -> CandidateRecord:
    base: dict[str, Any] = {
        "case_id": unit.case.id,
        "case_fingerprint": unit.case.fingerprint,
        "sample_index": unit.sample_index,
        "candidate_index": unit.candidate_index,
        "generated_sql": None,
        "raw_reply": None,
        "error_class": None,
        "error_message": None,
        "latency_ms": None,
        "input_tokens": None,
        "output_tokens": None,
        "token_source": None,
        "cost_usd": None,
        "cached": False,
        "mutation": None,
        "model_config_hash": spec.config_hash,
        "prompt_hash": digest,
        "turns": turns,
        "calls": tally.calls,
        "attempts": tally.attempts,
    }
    base.update(values)
    return CandidateRecord(**base)


def _answered(
    unit: SystemUnit,
    spec: ModelSpec,
    call: ModelCall,
    response: SystemResponse,
    digest: str,
    tally: _Tally,
    turns: int,
    cached: bool,
) -> CandidateRecord:
    sql = clean_sql(response.sql)
    known = tally.tokens_known
    return _record(
        unit,
        spec,
        digest,
        tally,
        turns,
        generated_sql=sql,
        raw_reply=call.raw_reply,
        error_class=None if sql is not None else NO_SQL,
        error_message=None
        if sql is not None
        else "the system returned no SQL" + (f" (its answer: {response.answer[:200]!r})" if response.answer else ""),
        latency_ms=call.latency_ms,
        input_tokens=tally.input_tokens if known else None,
        output_tokens=tally.output_tokens if known else None,
        token_source=(TOKEN_SOURCE_ESTIMATED if tally.estimated else TOKEN_SOURCE_MEASURED) if known else None,
        cost_usd=tally.cost_usd,
        cached=cached,
        cold_start=call.cold_start,
        answer=response.answer,
        system_rows=_rows_json(response),
        system_latency_ms=response.system_latency_ms,
        cost_source=tally.cost_source,
    )


def run_system_unit(
    unit: SystemUnit,
    spec: ModelSpec,
    cache: GenerationCache | None,
    control: RunControl,
    readiness: Callable[[], Readiness] | None,
    schema: SchemaContext | None,
) -> CandidateRecord:
    """Ask the unit's conversation turn by turn (cache first unless ``cache: false``); its final record."""
    config = spec.system
    assert config is not None
    use_cache = cache if config.cache else None
    history: list[Turn] = []
    tally = _Tally()
    turns = len(unit.case.follow_up_context) + 1
    all_cached = True
    for turn in range(turns):
        request = build_request(spec, unit, turn, history, schema)
        key = CacheKey(
            spec.config_hash, request_hash(request), unit.case.fingerprint, unit.sample_index, unit.candidate_index
        )
        call = cached_call(use_cache, key)
        if call is None:
            all_cached = False
            state = readiness() if readiness is not None else None
            if state is not None and not state.ready:
                failure = ProviderFailure(NOT_READY, f"not sent: system {spec.slug} is not ready: {state.reason}")
                return _failed(unit, spec, failure, key.prompt_hash, tally, turns, turn)
            estimate = [{"role": "user", "content": json.dumps(request.to_json_dict(), default=str)}]
            outcome = dispatch(spec, estimate, control, case_id=unit.case.id, send=partial(call_system, spec, request))
            tally.attempts += outcome.attempts
            tally.calls += 1 if outcome.attempts else 0
            if outcome.call is None:
                assert outcome.failure is not None
                return _failed(unit, spec, outcome.failure, key.prompt_hash, tally, turns, turn)
            call = outcome.call
            if use_cache is not None:
                use_cache.put(key, call.to_dict())
        response = response_of(call)
        tally.add(spec, call, response)
        if turn == turns - 1:
            return _answered(unit, spec, call, response, key.prompt_hash, tally, turns, cached=all_cached)
        history.append(Turn(request.question, response.sql, response.answer))
    raise AssertionError("a conversation has at least one turn")  # pragma: no cover


def _failed(
    unit: SystemUnit, spec: ModelSpec, failure: ProviderFailure, digest: str, tally: _Tally, turns: int, turn: int
) -> CandidateRecord:
    """The record of a conversation that failed at ``turn``: the earlier turns' tokens and cost are kept (they
    were paid); the failed call reported none."""
    where = f"turn {turn + 1} of {turns}: " if turns > 1 and turn < turns - 1 else ""
    spent: dict[str, Any] = {}
    if tally.replies:
        known = tally.tokens_known
        spent = {
            "input_tokens": tally.input_tokens if known else None,
            "output_tokens": tally.output_tokens if known else None,
            "token_source": (TOKEN_SOURCE_ESTIMATED if tally.estimated else TOKEN_SOURCE_MEASURED) if known else None,
            "cost_usd": tally.cost_usd,
            "cost_source": tally.cost_source,
        }
    return _record(
        unit,
        spec,
        digest,
        tally,
        turns,
        error_class=failure.error_class,
        error_message=(where + failure.message)[:2000],
        **spent,
    )


def schema_for(spec: ModelSpec, context: PromptContext | None, case: Case) -> SchemaContext | None:
    """The schema context sent with ``case`` (None when the entry says ``send_schema: false``)."""
    if spec.system is None or not spec.system.send_schema:
        return None
    if context is None:
        raise GenerationError(f"system {spec.slug}: send_schema needs a PromptContext (prompt_context_for_cases)")
    texts = context.for_case(case)
    return SchemaContext(texts.schema_text, texts.semantic_text, texts.reference_date)


def generate_system_candidates(
    cases: list[Case],
    spec: ModelSpec,
    *,
    cache: GenerationCache | None,
    context: PromptContext | None,
    samples: int,
    control: RunControl,
    readiness: Callable[[], Readiness] | None,
    workers: int,
    progress: ProgressTracker | None = None,
    probes: bool = False,
) -> list[CandidateRecord]:
    """The candidates of a system for every query case (and, with ``probes``, its replies to the policy probes),
    in plan order (see the module docstring); each unit's start and end is told to ``progress``."""
    units = plan_units(cases, spec, samples, probes)
    schemas = {unit.case.database: schema_for(spec, context, unit.case) for unit in units}
    workers = max(1, min(workers, len(units) or 1))
    if progress is not None:
        progress.begin(len(units))

    def run_one(unit: SystemUnit) -> CandidateRecord:
        return run_system_unit(unit, spec, cache, control, readiness, schemas[unit.case.database])

    run = run_one if progress is None else tracked(run_one, progress)

    if workers == 1:
        return [run(unit) for unit in units]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"system-{spec.slug}") as pool:
        futures = [pool.submit(run, unit) for unit in units]
        try:
            return [future.result() for future in futures]
        except BaseException:
            control.abort("another unit of the run raised")
            for future in futures:
                future.cancel()
            raise
