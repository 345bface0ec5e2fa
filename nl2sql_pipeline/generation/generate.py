"""The generate loop: ask a model for SQL for every query case, through litellm, with the cache.

    records = generate_candidates(cases, spec, cache=GenerationCache(), context=context, samples=1)

Work is planned as ``CallRequest`` units (one per case, sample and candidate); ``run_call`` turns one
request into a ``CandidateRecord`` (cache lookup, else ``call_model``, then extraction), so a pool can
run them concurrently later. Policy-rejection probes are never sent to a model.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.extract import extract_sql
from nl2sql_pipeline.generation.prompts import Message, PromptContext, build_messages, messages_text, prompt_hash
from nl2sql_pipeline.generation.registry import ModelSpec, Readiness, model_readiness
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED, call_cost, usage_from_response

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

ERROR_GENERATION = "generation_error"  # the reply holds no SQL
ERROR_PROVIDER = "provider_error"  # the call raised (classified finer in the provider error taxonomy)
ERROR_NOT_READY = "not_ready"  # the model's key or server is missing: nothing was sent


@dataclass
class CandidateRecord:
    """One generated candidate: a row of the ``candidate_sql`` asset."""

    case_id: str
    case_fingerprint: str
    sample_index: int
    candidate_index: int
    generated_sql: str | None
    raw_reply: str | None
    error_class: str | None  # None | 'generation_error' | 'provider_error' | 'not_ready'
    error_message: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    token_source: str | None  # 'measured' | 'estimated'
    cost_usd: float | None  # None = unknown (never a silent zero); offline models cost 0.0
    cached: bool
    mutation: str | None
    model_config_hash: str
    prompt_hash: str

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (one DataFrame row)."""
        return asdict(self)


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the cache record)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelCall:
        """Rebuild from ``to_dict`` output (KeyError/TypeError on a malformed record)."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class CallRequest:
    """One unit of work: a case, a sample and a candidate index, with its messages and cache key."""

    case: Case
    sample_index: int
    candidate_index: int
    messages: list[Message]
    prompt_hash: str
    key: CacheKey


def _reply_text(response: Any) -> str | None:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError):
        return None
    return content if isinstance(content, str) else None


def _provider_fields(response: Any) -> dict[str, Any]:
    try:
        fields = response.choices[0].message.provider_specific_fields
    except (AttributeError, IndexError):
        return {}
    return fields if isinstance(fields, dict) else {}


LOCAL_SERVER_API_KEY = "no-key"  # OpenAI clients refuse to send without a key; local servers ignore it


def completion_kwargs(spec: ModelSpec) -> dict[str, Any]:
    """Keywords for ``litellm.completion`` besides model and messages: params, api_base, api key."""
    kwargs: dict[str, Any] = dict(spec.params)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if spec.api_key_env and os.environ.get(spec.api_key_env):
        kwargs["api_key"] = os.environ[spec.api_key_env]
    elif spec.api_base and not spec.api_key_env:
        kwargs["api_key"] = LOCAL_SERVER_API_KEY
    return kwargs


def configure_litellm() -> None:
    """Keep litellm quiet: no hints printed to stdout, its INFO chatter kept out of our logs
    (an explicit level set on the ``LiteLLM`` logger, e.g. by ``LITELLM_LOG=DEBUG``, is kept)."""
    import litellm

    litellm.suppress_debug_info = True
    litellm_logger = logging.getLogger("LiteLLM")
    if litellm_logger.level == logging.NOTSET:
        litellm_logger.setLevel(logging.WARNING)


def call_model(spec: ModelSpec, messages: list[Message], *, metadata: dict[str, Any] | None = None) -> ModelCall:
    """One ``litellm.completion`` call, timed, with tokens and cost; provider errors propagate."""
    import litellm

    from nl2sql_pipeline.generation.offline_provider import (
        FIELD_MUTATION,
        FIELD_TOKEN_SOURCE,
        register_offline_provider,
    )
    configure_litellm()
    if spec.is_offline:
        register_offline_provider()
    kwargs = completion_kwargs(spec)
    if metadata is not None:
        kwargs["metadata"] = metadata
    started = time.perf_counter()
    response = litellm.completion(model=spec.model, messages=messages, **kwargs)
    latency_ms = (time.perf_counter() - started) * 1000.0
    reply = _reply_text(response)
    fields = _provider_fields(response) if spec.is_offline else {}  # our provider's own annotations
    tokens = usage_from_response(
        getattr(response, "usage", None),
        messages_text(messages),
        reply or "",
        estimated=fields.get(FIELD_TOKEN_SOURCE) == TOKEN_SOURCE_ESTIMATED,
    )
    return ModelCall(
        raw_reply=reply,
        latency_ms=latency_ms,
        input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens,
        token_source=tokens.source,
        cost_usd=call_cost(spec, tokens),
        mutation=fields.get(FIELD_MUTATION),
    )


def plan_calls(cases: list[Case], spec: ModelSpec, context: PromptContext, samples: int = 1) -> list[CallRequest]:
    """Every call ``generate_candidates`` needs, in a stable order (probes left out)."""
    if samples < 1:
        raise GenerationError(f"samples must be >= 1, got {samples} (ask for at least one sample)")
    requests: list[CallRequest] = []
    for case in cases:
        if case.is_probe:
            continue
        texts = context.for_case(case)
        messages = build_messages(
            case,
            spec,
            schema_text=texts.schema_text,
            semantic_text=texts.semantic_text,
            reference_date=texts.reference_date,
        )
        p_hash = prompt_hash(messages)
        n_candidates = case.candidate_selection or spec.candidates
        for sample_index in range(samples):
            for candidate_index in range(n_candidates):
                key = CacheKey(spec.config_hash, p_hash, case.fingerprint, sample_index, candidate_index)
                requests.append(CallRequest(case, sample_index, candidate_index, messages, p_hash, key))
    return requests


def _record(request: CallRequest, spec: ModelSpec, call: ModelCall, *, cached: bool) -> CandidateRecord:
    sql = extract_sql(call.raw_reply)
    return CandidateRecord(
        case_id=request.case.id,
        case_fingerprint=request.case.fingerprint,
        sample_index=request.sample_index,
        candidate_index=request.candidate_index,
        generated_sql=sql,
        raw_reply=call.raw_reply,
        error_class=None if sql is not None else ERROR_GENERATION,
        error_message=None if sql is not None else "the reply holds no SQL",
        latency_ms=call.latency_ms,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        token_source=call.token_source,
        cost_usd=call.cost_usd,
        cached=cached,
        mutation=call.mutation,
        model_config_hash=spec.config_hash,
        prompt_hash=request.prompt_hash,
    )


def _error_record(
    request: CallRequest, spec: ModelSpec, error_class: str, message: str, latency_ms: float | None = None
) -> CandidateRecord:
    return CandidateRecord(
        case_id=request.case.id,
        case_fingerprint=request.case.fingerprint,
        sample_index=request.sample_index,
        candidate_index=request.candidate_index,
        generated_sql=None,
        raw_reply=None,
        error_class=error_class,
        error_message=message,
        latency_ms=latency_ms,
        input_tokens=None,
        output_tokens=None,
        token_source=None,
        cost_usd=None,
        cached=False,
        mutation=None,
        model_config_hash=spec.config_hash,
        prompt_hash=request.prompt_hash,
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


def run_call(
    request: CallRequest,
    spec: ModelSpec,
    cache: GenerationCache | None,
    readiness: Callable[[], Readiness] | None = None,
) -> CandidateRecord:
    """One candidate: from the cache when present, else one model call (stored in the cache)."""
    hit = cached_call(cache, request.key)
    if hit is not None:
        return _record(request, spec, hit, cached=True)
    if readiness is not None:
        state = readiness()
        if not state.ready:
            return _error_record(request, spec, ERROR_NOT_READY, f"model {spec.slug} is not ready: {state.reason}")
    metadata = None
    if spec.is_offline:
        from nl2sql_pipeline.generation.offline_provider import offline_request_metadata

        metadata = offline_request_metadata(request.case, request.sample_index, request.candidate_index)
    started = time.perf_counter()
    try:
        call = call_model(spec, request.messages, metadata=metadata)
    except Exception as exc:  # any provider failure is a per-candidate outcome, never a crashed run
        latency_ms = (time.perf_counter() - started) * 1000.0
        logger.warning("%s on case %s: %s: %s", spec.slug, request.case.id, type(exc).__name__, exc)
        return _error_record(request, spec, ERROR_PROVIDER, f"{type(exc).__name__}: {exc}"[:2000], latency_ms)
    if cache is not None:
        cache.put(request.key, call.to_dict())
    return _record(request, spec, call, cached=False)


def generate_candidates(
    cases: list[Case],
    spec: ModelSpec,
    *,
    cache: GenerationCache | None,
    context: PromptContext,
    samples: int = 1,
) -> list[CandidateRecord]:
    """Candidates for every query case: ``samples`` x N each (N = ``case.candidate_selection`` or
    ``spec.candidates``). Cache hits make no call; a model that is not ready yields ``not_ready``
    records for the misses without sending anything."""
    requests = plan_calls(cases, spec, context, samples)
    state: list[Readiness] = []

    def readiness() -> Readiness:
        if not state:
            state.append(model_readiness(spec))
            if not state[0].ready:
                logger.warning("model %s is not ready: %s", spec.slug, state[0].reason)
        return state[0]

    records = [run_call(request, spec, cache, readiness) for request in requests]
    logger.info("%s: %s", spec.slug, generation_summary(records))
    return records


def candidate_frame(records: list[CandidateRecord]) -> pd.DataFrame:
    """The records as the ``candidate_sql`` frame: one row each, every column present even when empty."""
    import pandas as pd

    columns = list(CandidateRecord.__dataclass_fields__)
    return pd.DataFrame([record.to_dict() for record in records], columns=columns)


def generation_summary(records: list[CandidateRecord]) -> dict[str, Any]:
    """Counts for logs and asset metadata: candidates, cases, cache hits, calls made, errors by class,
    tokens and total cost (None when any record's cost is unknown)."""
    errors: dict[str, int] = {}
    for record in records:
        if record.error_class is not None:
            errors[record.error_class] = errors.get(record.error_class, 0) + 1
    costs = [r.cost_usd for r in records if r.error_class not in (ERROR_PROVIDER, ERROR_NOT_READY)]
    return {
        "candidates": len(records),
        "cases": len({r.case_id for r in records}),
        "cached": sum(r.cached for r in records),
        "calls": sum(not r.cached and r.error_class != ERROR_NOT_READY for r in records),
        "errors": sum(errors.values()),
        **{f"errors_{name}": count for name, count in sorted(errors.items())},
        "input_tokens": sum(r.input_tokens or 0 for r in records),
        "output_tokens": sum(r.output_tokens or 0 for r in records),
        "estimated_tokens": any(r.token_source == "estimated" for r in records),
        "cost_usd": None if any(c is None for c in costs) else float(sum(costs)),
    }
