"""Candidate generation: every model, online or offline, answered through ``litellm.completion``.

    registry.py          data/models.yml -> ModelSpec (config hash, readiness)
    few_shot.py          data/prompts/few_shot/<name>.yml -> worked examples for the prompt
    prompts.py           versioned templates in data/prompts/ -> chat messages, prompt hash
    prompt_context.py    schema / semantic-model texts per database, from the semantic model
    offline_provider.py  the nl2sql-offline litellm provider (gold-echo, sql-mutant)
    mutations.py         the seeded SQL mutations of sql-mutant
    extract.py           SQL out of a reply
    usage.py             tokens (measured or estimated) and cost
    cache.py             one JSON file per completed call
    client.py            one litellm.completion attempt (timed, tokens, cost) and the warm-up
    failures.py          provider failures classified by cause (the error-class taxonomy)
    limiter.py           requests/tokens per minute, shared across threads and processes
    dispatch.py          one call: limiter, retries with backoff, classification, run stop
    conversation.py      one unit (case x sample x candidate), follow-up turns answered by the model
    predictions.py       kind: predictions models, replayed from a file
    systems/             kind: http | python | command: a team's own system through its contract
    records.py           CandidateRecord / ModelCall and the summary
    generate.py          the loop: units in a thread pool -> CandidateRecord in plan order

Importing this package does not import litellm (only a real call does).
"""

from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.candidate_record import CandidateRecord, generation_summary
from nl2sql_pipeline.generation.client import call_model
from nl2sql_pipeline.generation.extract import extract_sql
from nl2sql_pipeline.generation.failures import ENVIRONMENT_ERROR_CLASSES, ERROR_CLASSES, classify_exception
from nl2sql_pipeline.generation.generate import generate_candidates
from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness
from nl2sql_pipeline.generation.prompt_context import build_prompt_context, prompt_context_for_cases
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext, build_messages, prompt_hash
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.registry import get_model, load_registry

__all__ = [
    "CacheKey",
    "CandidateRecord",
    "DatabasePromptText",
    "ENVIRONMENT_ERROR_CLASSES",
    "ERROR_CLASSES",
    "GenerationCache",
    "ModelSpec",
    "PromptContext",
    "Readiness",
    "build_messages",
    "build_prompt_context",
    "call_model",
    "classify_exception",
    "extract_sql",
    "generate_candidates",
    "generation_summary",
    "get_model",
    "load_registry",
    "model_readiness",
    "prompt_context_for_cases",
    "prompt_hash",
]
