"""One unit of generation work: a case, a sample and a candidate, asked as a conversation.

A plain case is one call. A follow-up case replays the earlier turns of ``follow_up_context``: the
model is asked each earlier question in turn and answers it itself (its reply becomes the assistant
message of that turn), then the final question is asked. Every turn is a call of its own, cached
under the hash of its exact messages, so a re-run replays the same conversation without calling.
Only the final turn is scored and timed; tokens and cost add up every turn.

Offline models answer a turn from the case: an earlier turn with that turn's gold SQL, the final
one with the case's expected SQL (so gold-echo stays exact and the mutant's draw is unchanged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.candidate_record import CandidateRecord, ModelCall
from nl2sql_pipeline.generation.dispatch import RunControl, dispatch
from nl2sql_pipeline.generation.extract import extract_sql
from nl2sql_pipeline.generation.failures import CONTENT_FILTERED, NO_SQL, NOT_READY, ProviderFailure
from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness
from nl2sql_pipeline.generation.offline_requests import offline_request_metadata, offline_turn_metadata
from nl2sql_pipeline.generation.prompts import (
    Message,
    PromptContext,
    PromptHasher,
    assistant_message,
    load_template,
    opening_messages,
    prompt_hash,
    turn_questions,
    user_message,
)
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED

logger = logging.getLogger(__name__)

FILTERED_FINISH_REASONS: frozenset[str] = frozenset({"content_filter", "safety", "blocked"})


@dataclass(frozen=True)
class CallRequest:
    """One unit of work: a case, a sample and a candidate index, with the opening messages
    (system and few-shot) and the questions of its conversation (the last one is scored)."""

    case: Case
    sample_index: int
    candidate_index: int
    opening: tuple[Message, ...]
    user_turns: tuple[Message, ...]
    hasher: PromptHasher | None = field(default=None, compare=False, repr=False)  # the opening hashed once
    # prompt_hash of the first turn (opening + first question), shared by every sample and candidate of
    # the case: computed once per case while planning instead of once per unit between model calls
    first_turn_hash: str | None = field(default=None, compare=False, repr=False)

    def cache_key(self, spec: ModelSpec, messages: list[Message], *, turn: int | None = None) -> CacheKey:
        """The cache key of one turn: the model, the exact messages, the case, sample and candidate.

        ``turn=0`` says ``messages`` are the first turn's, whose hash ``first_turn_hash`` holds when set."""
        if turn == 0 and self.first_turn_hash is not None:
            digest = self.first_turn_hash
        else:
            digest = self.hasher.hash(messages) if self.hasher is not None else prompt_hash(messages)
        return CacheKey(spec.config_hash, digest, self.case.fingerprint, self.sample_index, self.candidate_index)


def plan_calls(cases: list[Case], spec: ModelSpec, context: PromptContext, samples: int = 1) -> list[CallRequest]:
    """Every unit ``generate_candidates`` runs, in a stable order (probes left out): per case, per
    sample, per candidate (``case.candidate_selection`` or ``spec.candidates`` of them)."""
    if samples < 1:
        raise GenerationError(f"samples must be >= 1, got {samples} (ask for at least one sample)")
    template = load_template(spec.prompt_template)
    requests: list[CallRequest] = []
    # the opening depends on the database and the reference date only
    openings: dict[tuple[str, str], tuple[tuple[Message, ...], PromptHasher]] = {}
    for case in cases:
        if case.is_probe:
            continue
        opening_key = (case.database, case.reference_instant.isoformat())
        if opening_key not in openings:
            texts = context.for_case(case)
            opening = tuple(
                opening_messages(
                    case,
                    spec,
                    schema_text=texts.schema_text,
                    semantic_text=texts.semantic_text,
                    reference_date=texts.reference_date,
                    template=template,
                )
            )
            openings[opening_key] = (opening, PromptHasher(opening))
        opening, hasher = openings[opening_key]
        turns = tuple(user_message(template, question) for question in turn_questions(case))
        first_turn_hash = hasher.hash((*opening, turns[0]))
        n_candidates = case.candidate_selection or spec.candidates
        for sample_index in range(samples):
            for candidate_index in range(n_candidates):
                requests.append(
                    CallRequest(case, sample_index, candidate_index, opening, turns, hasher, first_turn_hash)
                )
    return requests


def _offline_metadata(request: CallRequest, turn: int) -> dict[str, Any]:
    case = request.case
    if turn == len(case.follow_up_context):
        return offline_request_metadata(case, request.sample_index, request.candidate_index)
    return offline_turn_metadata(case, turn, request.sample_index, request.candidate_index)


@dataclass
class _Tally:
    """Tokens, cost and calls added up over the turns of one conversation."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    cost_usd: float | None = 0.0
    calls: int = 0
    attempts: int = 0
    replies: int = 0  # turns answered so far
    source: str | None = None  # the last answered turn's token source

    def add(self, call: ModelCall) -> None:
        self.replies += 1
        self.source = call.token_source
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.estimated = self.estimated or call.token_source == TOKEN_SOURCE_ESTIMATED
        self.cost_usd = None if self.cost_usd is None or call.cost_usd is None else self.cost_usd + call.cost_usd


def _failed(
    request: CallRequest,
    spec: ModelSpec,
    failure: ProviderFailure,
    digest: str,
    tally: _Tally,
    turn: int,
    latency_ms: float | None = None,
) -> CandidateRecord:
    n_turns = len(request.user_turns)
    where = f"turn {turn + 1} of {n_turns}: " if n_turns > 1 and turn < n_turns - 1 else ""
    return CandidateRecord(
        case_id=request.case.id,
        case_fingerprint=request.case.fingerprint,
        sample_index=request.sample_index,
        candidate_index=request.candidate_index,
        generated_sql=None,
        raw_reply=None,
        error_class=failure.error_class,
        error_message=(where + failure.message)[:2000],
        latency_ms=latency_ms,
        # the earlier turns' tokens and cost are kept (they were paid); the failed call reported none
        input_tokens=tally.input_tokens if tally.replies else None,
        output_tokens=tally.output_tokens if tally.replies else None,
        token_source=(TOKEN_SOURCE_ESTIMATED if tally.estimated else tally.source) if tally.replies else None,
        cost_usd=tally.cost_usd if tally.replies else None,
        cached=False,
        mutation=None,
        model_config_hash=spec.config_hash,
        prompt_hash=digest,
        turns=n_turns,
        calls=tally.calls,
        attempts=tally.attempts,
    )


def _answered(
    request: CallRequest, spec: ModelSpec, call: ModelCall, digest: str, tally: _Tally, cached: bool
) -> CandidateRecord:
    sql = extract_sql(call.raw_reply)
    error_class = error_message = None
    if sql is None:
        filtered = (call.finish_reason or "") in FILTERED_FINISH_REASONS
        error_class = CONTENT_FILTERED if filtered else NO_SQL
        error_message = (
            f"the provider filtered the reply (finish_reason={call.finish_reason})"
            if filtered
            else "the reply holds no SQL"
        )
    return CandidateRecord(
        case_id=request.case.id,
        case_fingerprint=request.case.fingerprint,
        sample_index=request.sample_index,
        candidate_index=request.candidate_index,
        generated_sql=sql,
        raw_reply=call.raw_reply,
        error_class=error_class,
        error_message=error_message,
        latency_ms=call.latency_ms,
        input_tokens=tally.input_tokens,
        output_tokens=tally.output_tokens,
        token_source=TOKEN_SOURCE_ESTIMATED if tally.estimated else call.token_source,
        cost_usd=tally.cost_usd,
        cached=cached,
        mutation=call.mutation,
        model_config_hash=spec.config_hash,
        prompt_hash=digest,
        turns=len(request.user_turns),
        calls=tally.calls,
        attempts=tally.attempts,
        cold_start=call.cold_start,
    )


def cached_call(cache: GenerationCache | None, key: CacheKey) -> ModelCall | None:
    """The cached call for ``key``, or None (a record that no longer fits ModelCall is a miss)."""
    if cache is None:
        return None
    stored = cache.get(key)
    if stored is None:
        return None
    try:
        return ModelCall.from_dict(stored)
    except (KeyError, TypeError) as exc:
        logger.warning("generation cache: entry for %s has an old shape (%s); treated as a miss", key.digest, exc)
        return None


def run_unit(
    request: CallRequest,
    spec: ModelSpec,
    cache: GenerationCache | None,
    control: RunControl,
    readiness: Callable[[], Readiness] | None = None,
) -> CandidateRecord:
    """Ask the conversation turn by turn (cache first); the record of its final turn.

    A turn that fails ends the conversation with that failure; nothing is sent once the run is stopped
    or when ``readiness`` says the model cannot be called. Failures are never cached.
    """
    messages: list[Message] = list(request.opening)
    tally = _Tally()
    last = len(request.user_turns) - 1
    all_cached = True
    for turn, question in enumerate(request.user_turns):
        messages.append(question)
        key = request.cache_key(spec, messages, turn=turn)
        call = cached_call(cache, key)
        if call is None:
            all_cached = False
            if readiness is not None:
                state = readiness()
                if not state.ready:
                    failure = ProviderFailure(NOT_READY, f"not sent: model {spec.slug} is not ready: {state.reason}")
                    return _failed(request, spec, failure, key.prompt_hash, tally, turn)
            metadata = _offline_metadata(request, turn) if spec.is_offline else None
            outcome = dispatch(spec, messages, control, case_id=request.case.id, metadata=metadata)
            tally.attempts += outcome.attempts
            tally.calls += 1 if outcome.attempts else 0
            if outcome.call is None:
                assert outcome.failure is not None
                return _failed(request, spec, outcome.failure, key.prompt_hash, tally, turn)
            call = outcome.call
            if cache is not None:
                cache.put(key, call.to_dict())
        tally.add(call)
        if turn == last:
            return _answered(request, spec, call, key.prompt_hash, tally, cached=all_cached)
        messages.append(assistant_message(call.raw_reply))
    raise AssertionError("a conversation has at least one turn")  # pragma: no cover
