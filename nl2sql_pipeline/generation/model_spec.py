"""Model specs: the typed entries of the model registry (``data/models.yml``) and their config hash.

``ModelSpec.config_hash`` hashes everything that can change a model's outputs (not its description,
prices, limits, retries, timeout or re-run policy), so a cache entry or a baseline is reused only while
the model is really the same. Three kinds: ``offline`` (built-in calibration models), ``litellm`` (any
provider litellm reaches) and ``predictions`` (a replay file of another system's SQL; its config hash
covers the file's content hash and its source dialect). Loading and checking live in ``generation.registry``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nl2sql_pipeline.generation.few_shot import FewShotSet
from nl2sql_pipeline.generation.system_spec import SYSTEM_KINDS, SystemConfig

KIND_OFFLINE = "offline"
KIND_LITELLM = "litellm"
KIND_PREDICTIONS = "predictions"
KINDS: tuple[str, ...] = (KIND_OFFLINE, KIND_LITELLM, KIND_PREDICTIONS, *SYSTEM_KINDS)

PREDICTION_FORMATS: tuple[str, ...] = ("jsonl", "lines")
RERUN_ON_CONFIG_CHANGE = "on_config_change"
RERUN_NIGHTLY = "nightly"
RERUN_POLICIES: tuple[str, ...] = (RERUN_ON_CONFIG_CHANGE, "always", RERUN_NIGHTLY, "never")
DEFAULT_TIMEOUT_S = 120.0

OFFLINE_PROVIDER = "nl2sql-offline"
OFFLINE_MODEL_NAMES: tuple[str, ...] = ("gold-echo", "sql-mutant")
DEFAULT_PROMPT_TEMPLATE = "nl2sql-v1"


@dataclass(frozen=True)
class Readiness:
    """Whether a model can be called right now, and why not."""

    ready: bool
    reason: str


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, as billed by the provider."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The cost in USD of one call with these token counts."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True)
class Limits:
    """Provider limits honoured by the generation loop (None = no limit)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_concurrency: int | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How rate-limited (429) and server-side (5xx) failures are retried: exponential backoff with
    jitter from ``base_delay_s``, or the provider's Retry-After when given; a wait longer than
    ``max_delay_s`` is not waited for (the call fails as it is)."""

    max_retries: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0


@dataclass(frozen=True)
class PredictionsSource:
    """The replay file of a ``kind: predictions`` model; ``content_hash`` is None while it is missing."""

    path: Path
    format: str
    content_hash: str | None
    source_dialect: str | None = None
    """The SQL dialect of the file (``sqlite`` for Spider/BIRD): each prediction is converted to DuckDB as
    ``gold import`` converts gold. None: the SQL is DuckDB's and is used as written."""


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. ``params`` is read-only and passed to ``litellm.completion`` as keywords."""

    slug: str
    kind: str
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    candidates: int = 1
    prices: Prices | None = None
    limits: Limits = Limits()
    version: str = "1"
    description: str = ""
    few_shot: FewShotSet | None = None
    rerun: str = RERUN_ON_CONFIG_CHANGE
    retry: RetryPolicy = RetryPolicy()
    timeout_s: float = DEFAULT_TIMEOUT_S
    predictions: PredictionsSource | None = None
    system: SystemConfig | None = None  # kind: http | python | command (generation.systems)
    gates: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # runs.gates thresholds
    answer_model: str | None = None  # the slug that writes this model's answers (generation.answers); not hashed

    def canonical_config(self) -> dict[str, Any]:
        """Everything that can change the model's outputs (description, prices, limits, retries,
        timeout and re-run policy excluded). Keys absent from older entries are left out when unset,
        so existing hashes (and caches, baselines) stay valid."""
        if self.predictions is not None:
            replay = {
                "kind": self.kind,
                "format": self.predictions.format,
                "content_hash": self.predictions.content_hash or "missing",
                "version": self.version,
            }
            if self.predictions.source_dialect is not None:
                replay["source_dialect"] = self.predictions.source_dialect
            return replay
        if self.system is not None:
            return {"kind": self.kind, "version": self.version, **self.system.canonical()}
        config: dict[str, Any] = {
            "kind": self.kind,
            "model": self.model,
            "api_base": self.api_base,
            "params": dict(self.params),
            "prompt_template": self.prompt_template,
            "candidates": self.candidates,
            "version": self.version,
        }
        if self.few_shot is not None:
            config["few_shot"] = {"name": self.few_shot.name, "content_hash": self.few_shot.content_hash}
        return config

    @functools.cached_property
    def config_hash(self) -> str:
        """16 hex chars over the canonical config (stable across runs and key order)."""
        blob = json.dumps(self.canonical_config(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @property
    def is_offline(self) -> bool:
        """True for the built-in models served by the offline litellm provider."""
        return self.kind == KIND_OFFLINE

    @property
    def is_replay(self) -> bool:
        """True for a ``kind: predictions`` entry (scored from a file, no provider)."""
        return self.kind == KIND_PREDICTIONS

    @property
    def is_system(self) -> bool:
        """True for a team's own system (``kind: http | python | command``), called through its contract."""
        return self.system is not None


def file_content_hash(path: Path) -> str | None:
    """16 hex chars over the file's bytes; None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None
