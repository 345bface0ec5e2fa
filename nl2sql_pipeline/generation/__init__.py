"""Candidate generation: every model, online or offline, answered through ``litellm.completion``.

    registry.py          data/models.yml -> ModelSpec (config hash, readiness)
    prompts.py           versioned templates in data/prompts/ -> chat messages, prompt hash
    prompt_context.py    schema / semantic-model texts per database, from the semantic model
    offline_provider.py  the nl2sql-offline litellm provider (gold-echo, sql-mutant)
    mutations.py         the seeded SQL mutations of sql-mutant
    extract.py           SQL out of a reply
    usage.py             tokens (measured or estimated) and cost
    cache.py             one JSON file per completed call
    generate.py          the loop: cases x samples x candidates -> CandidateRecord

Importing this package does not import litellm (only a real call does).
"""

from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.extract import extract_sql
from nl2sql_pipeline.generation.generate import (
    CandidateRecord,
    call_model,
    candidate_frame,
    generate_candidates,
    generation_summary,
)
from nl2sql_pipeline.generation.prompt_context import build_prompt_context, prompt_context_for_cases
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext, build_messages, prompt_hash
from nl2sql_pipeline.generation.registry import ModelSpec, Readiness, get_model, load_registry, model_readiness

__all__ = [
    "CacheKey",
    "CandidateRecord",
    "DatabasePromptText",
    "GenerationCache",
    "ModelSpec",
    "PromptContext",
    "Readiness",
    "build_messages",
    "build_prompt_context",
    "call_model",
    "candidate_frame",
    "extract_sql",
    "generate_candidates",
    "generation_summary",
    "get_model",
    "load_registry",
    "model_readiness",
    "prompt_context_for_cases",
    "prompt_hash",
]
