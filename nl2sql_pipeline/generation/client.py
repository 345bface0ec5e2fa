"""One ``litellm.completion`` call, timed, with tokens and cost: the only place litellm is called.

Retries are ours (``generation.dispatch``), so the OpenAI client's own retries are switched off
(``max_retries=0``) and every attempt goes through the rate limiter. ``warm_up`` runs litellm once
per process and model without any network (``mock_response``) and loads the HTTP stack, so the first
timed call of a run does not pay litellm's lazy imports and schema building.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from typing import Any

from nl2sql_pipeline.generation.candidate_record import ModelCall
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.prompts import Message, messages_text
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED, call_cost, usage_from_response
from nl2sql_pipeline.heap import settle_long_lived

logger = logging.getLogger(__name__)

LOCAL_SERVER_API_KEY = "no-key"  # OpenAI clients refuse to send without a key; local servers ignore it
_warm_lock = threading.Lock()
_warmed: set[str] = set()
# (model, api_base) pairs this process has sent a real call to: the first one opens the provider's
# connection, so its latency is flagged ``cold_start`` and left out of the latency figures.
_called: set[tuple[str, str | None]] = set()


def completion_kwargs(spec: ModelSpec) -> dict[str, Any]:
    """Keywords for ``litellm.completion`` besides model and messages: params, api_base, api key,
    timeout, and no client-side retries (``generation.dispatch`` retries, through the limiter)."""
    kwargs: dict[str, Any] = dict(spec.params)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if spec.api_key_env and os.environ.get(spec.api_key_env):
        kwargs["api_key"] = os.environ[spec.api_key_env]
    elif spec.api_base and not spec.api_key_env:
        kwargs["api_key"] = LOCAL_SERVER_API_KEY
    if not spec.is_offline:
        kwargs["timeout"] = spec.timeout_s
        kwargs["max_retries"] = 0
    if spec.prices is not None and not spec.is_offline:
        # litellm's own cost bookkeeping then uses the registry prices (and skips ~2 ms of price-map lookups)
        kwargs["input_cost_per_token"] = spec.prices.input_per_mtok / 1_000_000
        kwargs["output_cost_per_token"] = spec.prices.output_per_mtok / 1_000_000
    return kwargs


def configure_litellm() -> None:
    """Keep litellm quiet: no hints printed to stdout, its INFO chatter kept out of our logs
    (an explicit level set on the ``LiteLLM`` logger, e.g. by ``LITELLM_LOG=DEBUG``, is kept)."""
    import litellm

    litellm.suppress_debug_info = True
    litellm_logger = logging.getLogger("LiteLLM")
    if litellm_logger.level == logging.NOTSET:
        litellm_logger.setLevel(logging.WARNING)


def _prepare(spec: ModelSpec) -> None:
    configure_litellm()
    if spec.is_offline:
        from nl2sql_pipeline.generation.offline_provider import register_offline_provider

        register_offline_provider()


def warm_up(spec: ModelSpec) -> None:
    """Exercise litellm once for ``spec.model`` without sending anything (once per process and model;
    concurrent callers wait for it, so no timed call overlaps the warm-up).

    Best effort: a failure here is logged and left for the real call to report.
    """
    if spec.model in _warmed:
        return
    with _warm_lock:
        if spec.model in _warmed:
            return
        import litellm

        _prepare(spec)
        started = time.perf_counter()
        try:
            for module in ("httpcore", "httpx"):  # the HTTP stack litellm's first real call would import
                importlib.import_module(module)

            kwargs = {k: v for k, v in completion_kwargs(spec).items() if k != "timeout"}
            litellm.completion(
                model=spec.model, messages=[{"role": "user", "content": "warm-up"}], mock_response="SELECT 1", **kwargs
            )
        except Exception as exc:  # warm-up must never fail a run
            logger.debug("warm-up of %s failed (%s: %s); the first call pays it", spec.slug, type(exc).__name__, exc)
        _warmed.add(spec.model)
        logger.debug("warmed up %s in %.1f ms", spec.slug, (time.perf_counter() - started) * 1000.0)


def _reply_text(response: Any) -> str | None:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError):
        return None
    return content if isinstance(content, str) else None


def _finish_reason(response: Any) -> str | None:
    try:
        reason = response.choices[0].finish_reason
    except (AttributeError, IndexError):
        return None
    return reason if isinstance(reason, str) else None


def _provider_fields(response: Any) -> dict[str, Any]:
    try:
        found = response.choices[0].message.provider_specific_fields
    except (AttributeError, IndexError):
        return {}
    return found if isinstance(found, dict) else {}


def call_model(spec: ModelSpec, messages: list[Message], *, metadata: dict[str, Any] | None = None) -> ModelCall:
    """One ``litellm.completion`` attempt, timed, with tokens and cost; provider errors propagate."""
    import litellm

    from nl2sql_pipeline.generation.offline_provider import FIELD_MUTATION, FIELD_TOKEN_SOURCE

    _prepare(spec)
    kwargs = completion_kwargs(spec)
    if metadata is not None:
        kwargs["metadata"] = metadata
    provider = (spec.model, spec.api_base)
    with _warm_lock:
        cold_start = provider not in _called
        _called.add(provider)
    started = time.perf_counter()
    response = litellm.completion(model=spec.model, messages=messages, **kwargs)
    latency_ms = (time.perf_counter() - started) * 1000.0
    if cold_start:  # litellm has imported its provider modules: the process's long-lived objects are in place
        settle_long_lived()
    reply = _reply_text(response)
    annotations = _provider_fields(response) if spec.is_offline else {}  # our provider's own annotations
    tokens = usage_from_response(
        getattr(response, "usage", None),
        messages_text(messages),
        reply or "",
        estimated=annotations.get(FIELD_TOKEN_SOURCE) == TOKEN_SOURCE_ESTIMATED,
    )
    return ModelCall(
        raw_reply=reply,
        latency_ms=latency_ms,
        input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens,
        token_source=tokens.source,
        cost_usd=call_cost(spec, tokens),
        mutation=annotations.get(FIELD_MUTATION),
        finish_reason=_finish_reason(response),
        cold_start=cold_start,
    )
