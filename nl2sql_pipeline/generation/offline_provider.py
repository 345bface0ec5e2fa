"""The ``nl2sql-offline`` litellm provider: built-in models that need no network and no key.

Offline models go through ``litellm.completion`` like any remote model, so the generate loop has one
code path. They answer from the case itself, which reaches the provider through litellm's
``metadata`` keyword (litellm forwards it in ``litellm_params["metadata"]`` and never sends it to a
remote provider): see ``offline_request_metadata`` (in ``offline_requests``, which needs no litellm).

- ``nl2sql-offline/gold-echo`` answers with the case's canonical expected SQL, verbatim (an earlier
  turn of a follow-up conversation with that turn's SQL: ``offline_turn_metadata``).
- ``nl2sql-offline/sql-mutant`` answers with the expected SQL after one seeded mutation with
  probability ``mutation_rate`` (else verbatim). The draw depends only on (seed, case id, sample index,
  candidate index), never on call order. Asked a robustness variant of a case (a paraphrased question, a
  perturbed schema: ``split_variant``), it keeps the mistake it makes on the case itself and, where it
  answered the case right, makes a new one with the same probability from a draw of its own (seeded by the
  variant too): a model sensitive to wording and naming, so paraphrases flip and perturbations cost accuracy.

Replies are a ```sql fenced block. ``usage`` is estimated at chars/4 (there is no tokenizer behind an
offline model) and flagged as such, with the applied mutation, in the reply message's
``provider_specific_fields`` (keys ``nl2sql_token_source`` and ``nl2sql_mutation``).
"""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse
from litellm.llms.custom_llm import CustomLLMError

from nl2sql_pipeline.generation.model_spec import OFFLINE_MODEL_NAMES, OFFLINE_PROVIDER
from nl2sql_pipeline.generation.mutations import mutate
from nl2sql_pipeline.generation.offline_requests import (  # re-exported: the provider's request protocol
    METADATA_KEY,
    OfflineRequest,
    offline_request_metadata,
    offline_turn_metadata,
    split_variant,
)
from nl2sql_pipeline.generation.prompts import fenced_sql, messages_text
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED, estimate_tokens
from nl2sql_pipeline.responses.clarification import clarifying_question

FIELD_MUTATION = "nl2sql_mutation"
FIELD_TOKEN_SOURCE = "nl2sql_token_source"
DEFAULT_MUTATION_RATE = 0.5
DEFAULT_SEED = 0

_register_lock = threading.Lock()

__all__ = [
    "DEFAULT_MUTATION_RATE",
    "DEFAULT_SEED",
    "FIELD_MUTATION",
    "FIELD_TOKEN_SOURCE",
    "METADATA_KEY",
    "OfflineProvider",
    "OfflineRequest",
    "answer",
    "mutant_rng",
    "offline_request_metadata",
    "offline_turn_metadata",
    "register_offline_provider",
]


def _request_from(litellm_params: dict | None) -> OfflineRequest:
    metadata = (litellm_params or {}).get("metadata") or {}
    raw = metadata.get(METADATA_KEY)
    if not isinstance(raw, dict) or not isinstance(raw.get("expected_sql"), str):
        raise CustomLLMError(
            status_code=400,
            message=(
                f"offline models answer from the case: pass metadata={{'{METADATA_KEY}': ...}} "
                "(see nl2sql_pipeline.generation.offline_provider.offline_request_metadata)"
            ),
        )
    return OfflineRequest(
        case_id=str(raw.get("case_id", "")),
        expected_sql=raw["expected_sql"],
        sample_index=int(raw.get("sample_index", 0)),
        candidate_index=int(raw.get("candidate_index", 0)),
        readings=tuple(str(r) for r in raw.get("readings") or ()),
        guess_sql=raw.get("guess_sql") if isinstance(raw.get("guess_sql"), str) else None,
    )


def mutant_rng(seed: int, request: OfflineRequest) -> random.Random:
    """The rng of one mutant answer: a function of (seed, case id, sample, candidate) only (a variant's
    case id is its gold case's: see ``variant_rng``)."""
    case_id, _ = split_variant(request.case_id)
    return random.Random(f"sql-mutant|{seed}|{case_id}|{request.sample_index}|{request.candidate_index}")


def variant_rng(seed: int, request: OfflineRequest, variant: str) -> random.Random:
    """The rng of the mutant's extra draw on robustness variant ``variant`` of a case."""
    case_id, _ = split_variant(request.case_id)
    return random.Random(
        f"sql-mutant-variant|{seed}|{case_id}|{variant}|{request.sample_index}|{request.candidate_index}"
    )


def answer(model_name: str, request: OfflineRequest, optional_params: dict[str, Any]) -> tuple[str, str | None]:
    """(SQL, mutation name or None) that offline model ``model_name`` answers ``request`` with."""
    if request.readings:
        raise CustomLLMError(status_code=500, message="an ambiguous question is answered by clarify_answer")
    if model_name == "gold-echo":
        return request.expected_sql, None
    if model_name == "sql-mutant":
        rate = float(optional_params.get("mutation_rate", DEFAULT_MUTATION_RATE))
        seed = int(optional_params.get("seed", DEFAULT_SEED))
        rng = mutant_rng(seed, request)
        if rng.random() < rate:
            return mutate(request.expected_sql, rng)
        _, variant = split_variant(request.case_id)
        if variant is not None:
            extra = variant_rng(seed, request, variant)
            if extra.random() < rate:
                return mutate(request.expected_sql, extra)
        return request.expected_sql, None
    known = ", ".join(f"{OFFLINE_PROVIDER}/{name}" for name in OFFLINE_MODEL_NAMES)
    raise CustomLLMError(status_code=404, message=f"unknown offline model {model_name!r} (known: {known})")


GUESSED_MUTATION = "guessed_a_reading"


def clarify_answer(model_name: str, request: OfflineRequest, optional_params: dict[str, Any]) -> tuple[str, str | None]:
    """(reply text, mutation) to an ambiguous question: gold-echo asks which reading is meant; sql-mutant, on
    its mutation draw, guesses the first reading's SQL instead (fenced, as any SQL reply)."""
    question = clarifying_question(list(request.readings))
    if model_name == "sql-mutant" and request.guess_sql:
        rate = float(optional_params.get("mutation_rate", DEFAULT_MUTATION_RATE))
        if mutant_rng(int(optional_params.get("seed", DEFAULT_SEED)), request).random() < rate:
            return fenced_sql(request.guess_sql), GUESSED_MUTATION
    if model_name not in OFFLINE_MODEL_NAMES:
        answer(model_name, replace(request, readings=()), optional_params)  # raises: unknown offline model
    return question, None


class OfflineProvider(CustomLLM):
    """Serves the built-in offline models to ``litellm.completion`` (stateless, thread-safe)."""

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        acompletion: Any = None,
        litellm_params: dict | None = None,
        logger_fn: Any = None,
        headers: dict | None = None,
        timeout: Any = None,
        client: Any = None,
    ) -> ModelResponse:
        model_name = model.split("/", 1)[1] if model.startswith(f"{OFFLINE_PROVIDER}/") else model
        request = _request_from(litellm_params)
        if request.readings:
            reply, mutation = clarify_answer(model_name, request, optional_params or {})
        else:
            sql, mutation = answer(model_name, request, optional_params or {})
            reply = fenced_sql(sql)
        message = model_response.choices[0].message
        message.content = reply
        message.provider_specific_fields = {FIELD_MUTATION: mutation, FIELD_TOKEN_SOURCE: TOKEN_SOURCE_ESTIMATED}
        model_response.choices[0].finish_reason = "stop"
        prompt_tokens = estimate_tokens(messages_text(messages))
        completion_tokens = estimate_tokens(reply)
        model_response.model = f"{OFFLINE_PROVIDER}/{model_name}"
        model_response.usage = litellm.Usage(  # type: ignore[attr-defined]  # a pydantic extra field of ModelResponse
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """Same as ``completion`` (nothing to wait for offline)."""
        return self.completion(*args, **kwargs)


def register_offline_provider() -> None:
    """Register the ``nl2sql-offline`` provider with litellm (idempotent, thread-safe)."""
    with _register_lock:
        litellm.suppress_debug_info = True  # litellm prints hints to stdout for unmapped models otherwise
        current = list(litellm.custom_provider_map or [])
        if any(entry.get("provider") == OFFLINE_PROVIDER for entry in current):
            return
        current.append({"provider": OFFLINE_PROVIDER, "custom_handler": OfflineProvider()})
        litellm.custom_provider_map = current
