"""Token counts and cost of one model call.

Tokens reported by the provider are ``measured``. When a provider reports none (litellm then returns
a Usage of zeros) or an offline model stands in for one, tokens are ``estimated`` at one token per
four characters, the usual rule of thumb for English and SQL with BPE tokenizers.

Cost comes from the registry's prices when present, else from litellm's bundled price map, else it is
unknown (None, never a silent zero). Offline models cost exactly 0.0.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from nl2sql_pipeline.generation.model_spec import ModelSpec

logger = logging.getLogger(__name__)

TOKEN_SOURCE_MEASURED = "measured"
TOKEN_SOURCE_ESTIMATED = "estimated"
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text``: ceil(chars / 4), at least 1 for non-empty text."""
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    """Estimated token count of a text of ``chars`` characters: ceil(chars / 4)."""
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class TokenUsage:
    """Input and output tokens of one call, and whether they were measured or estimated."""

    input_tokens: int
    output_tokens: int
    source: str


def usage_from_response(usage: object, prompt_text: str, reply_text: str, *, estimated: bool = False) -> TokenUsage:
    """Tokens from a litellm ``Usage`` (or None); zeros, counts that are not whole numbers >= 0 (a server's
    negative or garbled usage: never trusted, it would make a negative cost) or ``estimated=True`` fall back to
    chars/4."""
    prompt_tokens = _count(getattr(usage, "prompt_tokens", 0))
    completion_tokens = _count(getattr(usage, "completion_tokens", 0))
    if prompt_tokens is None or completion_tokens is None:
        logger.warning("the provider reported unusable token counts (%r); estimating them", usage)
    elif not estimated and (prompt_tokens, completion_tokens) != (0, 0):
        return TokenUsage(prompt_tokens, completion_tokens, TOKEN_SOURCE_MEASURED)
    return TokenUsage(estimate_tokens(prompt_text), estimate_tokens(reply_text), TOKEN_SOURCE_ESTIMATED)


def _count(value: object) -> int | None:
    """A reported token count: a whole number >= 0 (absent: 0), else None."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def call_cost(spec: ModelSpec, tokens: TokenUsage) -> float | None:
    """USD cost of one call, or None when no price is known for ``spec``."""
    if spec.is_offline:
        return 0.0
    if spec.prices is not None:
        return spec.prices.cost(tokens.input_tokens, tokens.output_tokens)
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=spec.model, prompt_tokens=tokens.input_tokens, completion_tokens=tokens.output_tokens
        )
    except Exception as exc:  # litellm raises several unrelated types for an unmapped model
        logger.info("no price for %s (%s): cost unknown; add prices to models.yml", spec.slug, type(exc).__name__)
        return None
    return float(prompt_cost) + float(completion_cost)
