"""The model registry: ``data/models.yml`` parsed into validated, hashable ``ModelSpec`` entries.

A slug (``gold-echo``, ``gpt-4o-mini``) is the partition key of every model-dependent asset; the
registry maps it to the litellm model id, its parameters, prompt template, few-shot set, prices,
limits, retry and timeout settings and re-run policy. ``ModelSpec.config_hash`` hashes everything that
can change a model's outputs (not its description, prices, limits, retries, timeout or re-run policy),
so a cache entry or a baseline is reused only while the model is really the same.

Three kinds: ``offline`` (built-in calibration models), ``litellm`` (any provider litellm reaches) and
``predictions`` (a replay file of another system's SQL, scored without any provider; its config hash
covers the file's content hash).

This module stays light (no litellm import) so listing models is instant.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import math
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping
from urllib.parse import urlparse

import yaml

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.few_shot import NAME_RE as FEW_SHOT_NAME_RE
from nl2sql_pipeline.generation.few_shot import FewShotSet, load_few_shot
from nl2sql_pipeline.yaml_strict import describe_yaml_error, load_strict

KIND_OFFLINE = "offline"
KIND_LITELLM = "litellm"
KIND_PREDICTIONS = "predictions"
KINDS: tuple[str, ...] = (KIND_OFFLINE, KIND_LITELLM, KIND_PREDICTIONS)

PREDICTION_FORMATS: tuple[str, ...] = ("jsonl", "lines")
RERUN_ON_CONFIG_CHANGE = "on_config_change"
RERUN_POLICIES: tuple[str, ...] = (RERUN_ON_CONFIG_CHANGE, "always", "never")
DEFAULT_TIMEOUT_S = 120.0

OFFLINE_PROVIDER = "nl2sql-offline"
OFFLINE_MODEL_NAMES: tuple[str, ...] = ("gold-echo", "sql-mutant")
DEFAULT_PROMPT_TEMPLATE = "nl2sql-v1"

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
TEMPLATE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENV_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

ALLOWED_KEYS: frozenset[str] = frozenset(
    {
        "kind",
        "model",
        "description",
        "prompt_template",
        "params",
        "version",
        "api_base",
        "api_key_env",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "limits",
        "candidates",
        "few_shot",
        "rerun",
        "retry",
        "timeout_s",
        "path",
        "format",
    }
)
PREDICTIONS_KEYS: frozenset[str] = frozenset({"kind", "path", "format", "description", "version", "rerun"})
LIMIT_KEYS: tuple[str, ...] = ("requests_per_minute", "tokens_per_minute", "max_concurrency")
RETRY_KEYS: tuple[str, ...] = ("max_retries", "base_delay_s", "max_delay_s")
# Set by the generate loop itself (the registry has its own keys for them): refused in params.
RESERVED_PARAMS: frozenset[str] = frozenset(
    {"model", "messages", "api_base", "base_url", "api_key", "metadata", "stream", "timeout", "max_retries",
     "num_retries", "mock_response"}
)
READINESS_TIMEOUT_S = 0.5


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

    def canonical_config(self) -> dict[str, Any]:
        """Everything that can change the model's outputs (description, prices, limits, retries,
        timeout and re-run policy excluded). Keys absent from older entries are left out when unset,
        so existing hashes (and caches, baselines) stay valid."""
        if self.predictions is not None:
            return {
                "kind": self.kind,
                "format": self.predictions.format,
                "content_hash": self.predictions.content_hash or "missing",
                "version": self.version,
            }
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


@dataclass(frozen=True)
class Readiness:
    """Whether a model can be called right now, and why not."""

    ready: bool
    reason: str


def default_registry_path() -> Path:
    """``data/models.yml`` (or under ``$NL2SQL_DATA``)."""
    return paths.data_dir() / "models.yml"


def prompts_dir() -> Path:
    """Folder of the versioned prompt templates (``<name>.txt``)."""
    return paths.data_dir() / "prompts"


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: model registry not found (create it, or set $NL2SQL_DATA)") from exc
    try:
        return load_strict(text)
    except yaml.YAMLError as exc:
        raise ConfigError(describe_yaml_error(path, exc)) from exc


class _EntryChecker:
    """Validates one registry entry; every error names the file, the slug and the key."""

    def __init__(self, path: Path, slug: str, entry: Mapping[str, Any]):
        self.path, self.slug, self.entry = path, slug, entry

    def fail(self, key: str, problem: str, fix: str) -> ConfigError:
        return ConfigError(f"{self.path}: model {self.slug!r}, key {key!r}: {problem} ({fix})")

    def string(self, key: str, *, required: bool = False, pattern: re.Pattern[str] | None = None) -> str | None:
        value = self.entry.get(key)
        if value is None:
            if required:
                raise self.fail(key, "missing", f"add '{key}: ...' to the entry")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string, got {value!r}", "quote the value")
        if pattern is not None and not pattern.match(value):
            raise self.fail(key, f"{value!r} does not match {pattern.pattern}", "fix the spelling")
        return value

    def number(self, key: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> int | float:
        wanted = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            raise self.fail(key, f"must be {wanted}, got {value!r}", f"write {wanted}")
        if value < 0 or (value == 0 and not allow_zero):
            bound = ">= 0" if allow_zero else "> 0"
            raise self.fail(key, f"must be {bound}, got {value!r}", f"use a value {bound}")
        return value


def _check_params(check: _EntryChecker, kind: str) -> Mapping[str, Any]:
    params = check.entry.get("params") or {}
    if not isinstance(params, dict):
        raise check.fail("params", f"must be a mapping, got {type(params).__name__}", "write params: {temperature: 0}")
    for name, value in params.items():
        if not isinstance(name, str) or not ENV_VAR_RE.match(name):
            raise check.fail("params", f"parameter name {name!r} is not an identifier", "use litellm keyword names")
        if value is not None and not isinstance(value, (str, int, float, bool, list)):
            raise check.fail(f"params.{name}", f"unsupported value {value!r}", "use a scalar or a list")
        if name in RESERVED_PARAMS:
            fix = {
                "timeout": "use the entry's timeout_s key",
                "max_retries": "use the entry's retry: {max_retries: N} key",
                "num_retries": "use the entry's retry: {max_retries: N} key",
                "api_base": "use the entry's api_base key",
                "base_url": "use the entry's api_base key",
                "api_key": "name the environment variable in api_key_env; never write a key here",
            }.get(name, "remove it: the generate loop sets it")
            raise check.fail(f"params.{name}", "is set by the harness", fix)
    if "temperature" in params:
        check.number("params.temperature", params["temperature"], allow_zero=True)
    if "max_tokens" in params:
        check.number("params.max_tokens", params["max_tokens"], integer=True)
    if kind == KIND_OFFLINE:
        if "mutation_rate" in params:
            rate = check.number("params.mutation_rate", params["mutation_rate"], allow_zero=True)
            if rate > 1:
                raise check.fail("params.mutation_rate", f"must be within [0, 1], got {rate}", "use a fraction")
        if "seed" in params and (isinstance(params["seed"], bool) or not isinstance(params["seed"], int)):
            raise check.fail("params.seed", f"must be an integer, got {params['seed']!r}", "write seed: 7")
    return MappingProxyType(dict(params))


def _check_api_base(check: _EntryChecker) -> str | None:
    api_base = check.string("api_base")
    if api_base is None:
        return None
    parsed = urlparse(api_base)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise check.fail("api_base", f"{api_base!r} is not an http(s) URL", "write e.g. http://127.0.0.1:8000/v1")
    try:
        parsed.port
    except ValueError as exc:
        raise check.fail("api_base", f"bad port in {api_base!r}", "use a port within 1..65535") from exc
    return api_base


def _check_prices(check: _EntryChecker) -> Prices | None:
    raw_in, raw_out = check.entry.get("price_input_per_mtok"), check.entry.get("price_output_per_mtok")
    if raw_in is None and raw_out is None:
        return None
    if raw_in is None or raw_out is None:
        missing = "price_input_per_mtok" if raw_in is None else "price_output_per_mtok"
        raise check.fail(missing, "missing while the other price is set", "give both prices or neither")
    return Prices(
        input_per_mtok=float(check.number("price_input_per_mtok", raw_in, allow_zero=True)),
        output_per_mtok=float(check.number("price_output_per_mtok", raw_out, allow_zero=True)),
    )


def _check_limits(check: _EntryChecker) -> Limits:
    raw = check.entry.get("limits") or {}
    if not isinstance(raw, dict):
        raise check.fail("limits", f"must be a mapping, got {type(raw).__name__}", f"use keys {', '.join(LIMIT_KEYS)}")
    unknown = sorted(set(raw) - set(LIMIT_KEYS))
    if unknown:
        raise check.fail(f"limits.{unknown[0]}", "unknown limit", f"use one of {', '.join(LIMIT_KEYS)}")
    values = {k: check.number(f"limits.{k}", v, integer=True) for k, v in raw.items() if v is not None}
    return Limits(**values)


def _check_retry(check: _EntryChecker) -> RetryPolicy:
    raw = check.entry.get("retry") or {}
    if not isinstance(raw, dict):
        raise check.fail("retry", f"must be a mapping, got {type(raw).__name__}", f"use keys {', '.join(RETRY_KEYS)}")
    unknown = sorted(set(raw) - set(RETRY_KEYS))
    if unknown:
        raise check.fail(f"retry.{unknown[0]}", "unknown retry setting", f"use one of {', '.join(RETRY_KEYS)}")
    defaults = RetryPolicy()
    max_retries = raw.get("max_retries", defaults.max_retries)
    check.number("retry.max_retries", max_retries, integer=True, allow_zero=True)
    base = float(check.number("retry.base_delay_s", raw.get("base_delay_s", defaults.base_delay_s)))
    ceiling = float(check.number("retry.max_delay_s", raw.get("max_delay_s", defaults.max_delay_s)))
    if ceiling < base:
        raise check.fail("retry.max_delay_s", f"{ceiling} is below base_delay_s {base}", "raise max_delay_s")
    return RetryPolicy(max_retries=int(max_retries), base_delay_s=base, max_delay_s=ceiling)


def _check_choice(check: _EntryChecker, key: str, choices: tuple[str, ...], default: str) -> str:
    value = check.entry.get(key, default)
    if value not in choices:
        raise check.fail(key, f"unknown value {value!r}", f"use one of {', '.join(choices)}")
    return str(value)


def _check_timeout(check: _EntryChecker) -> float:
    value = float(check.number("timeout_s", check.entry.get("timeout_s", DEFAULT_TIMEOUT_S)))
    if not math.isfinite(value):
        raise check.fail("timeout_s", f"must be finite, got {value}", "write e.g. timeout_s: 60")
    return value


def _check_few_shot(check: _EntryChecker) -> FewShotSet | None:
    name = check.string("few_shot", pattern=FEW_SHOT_NAME_RE)
    if name is None:
        return None
    try:
        return load_few_shot(name)
    except ConfigError as exc:
        raise check.fail("few_shot", str(exc), "fix the file under data/prompts/few_shot/ or the name") from None


def _check_version(check: _EntryChecker) -> str:
    version = check.entry.get("version", "1")
    if isinstance(version, bool) or not isinstance(version, (str, int)) or str(version).strip() == "":
        raise check.fail("version", f"must be a string, got {version!r}", 'write version: "1"')
    return str(version)


def _check_description(check: _EntryChecker) -> str:
    description = check.entry.get("description") or ""
    if not isinstance(description, str):
        raise check.fail("description", f"must be a string, got {description!r}", "quote it")
    return description.strip()


def predictions_path(raw: str) -> Path:
    """A predictions ``path:`` resolved: absolute as given, else relative to ``data/``."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else paths.data_dir() / path


def file_content_hash(path: Path) -> str | None:
    """16 hex chars over the file's bytes; None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def _parse_predictions(slug: str, entry: dict[str, Any], check: _EntryChecker) -> ModelSpec:
    unknown = sorted(set(entry) - PREDICTIONS_KEYS)
    if unknown:
        raise check.fail(unknown[0], "not used by kind: predictions", f"allowed keys: {', '.join(sorted(PREDICTIONS_KEYS))}")
    raw_path = check.string("path", required=True)
    assert raw_path is not None
    fmt = _check_choice(check, "format", PREDICTION_FORMATS, "jsonl")
    file_path = predictions_path(raw_path)
    return ModelSpec(
        slug=slug,
        kind=KIND_PREDICTIONS,
        model=f"predictions:{raw_path}",
        version=_check_version(check),
        description=_check_description(check),
        rerun=_check_choice(check, "rerun", RERUN_POLICIES, RERUN_ON_CONFIG_CHANGE),
        predictions=PredictionsSource(file_path, fmt, file_content_hash(file_path)),
    )


def _parse_entry(path: Path, slug: Any, entry: Any) -> ModelSpec:
    if not isinstance(slug, str) or not SLUG_RE.match(slug):
        raise ConfigError(
            f"{path}: model slug {slug!r} is invalid (use lowercase letters, digits, '.', '_', '-', "
            "starting with a letter or digit; slugs are partition keys)"
        )
    if not isinstance(entry, dict):
        raise ConfigError(f"{path}: model {slug!r}: entry must be a mapping of keys, got {type(entry).__name__}")
    check = _EntryChecker(path, slug, entry)
    unknown = sorted(set(entry) - ALLOWED_KEYS)
    if unknown:
        raise check.fail(unknown[0], "unknown key", f"allowed keys: {', '.join(sorted(ALLOWED_KEYS))}")
    kind = check.string("kind", required=True)
    if kind not in KINDS:
        raise check.fail("kind", f"unknown kind {kind!r}", f"use one of {', '.join(KINDS)}")
    if kind == KIND_PREDICTIONS:
        return _parse_predictions(slug, entry, check)
    for key in ("path", "format"):
        if entry.get(key) is not None:
            raise check.fail(key, f"only used by kind: {KIND_PREDICTIONS}", "remove it")
    model = check.string("model", required=True)
    assert model is not None
    if kind == KIND_OFFLINE:
        provider, _, name = model.partition("/")
        if provider != OFFLINE_PROVIDER or name not in OFFLINE_MODEL_NAMES:
            known = ", ".join(f"{OFFLINE_PROVIDER}/{n}" for n in OFFLINE_MODEL_NAMES)
            raise check.fail("model", f"{model!r} is not a built-in offline model", f"use one of {known}")
        for key in ("api_base", "api_key_env", "retry", "timeout_s"):
            if entry.get(key) is not None:
                raise check.fail(key, "not used by offline models", "remove it or use kind: litellm")
    elif model.startswith(f"{OFFLINE_PROVIDER}/"):
        raise check.fail("model", f"{model!r} is served offline", "use kind: offline")
    template = check.string("prompt_template", pattern=TEMPLATE_RE) or DEFAULT_PROMPT_TEMPLATE
    if not (prompts_dir() / f"{template}.txt").is_file():
        raise check.fail(
            "prompt_template", f"no template file {prompts_dir() / (template + '.txt')}", "add it or fix the name"
        )
    candidates = check.number("candidates", entry.get("candidates", 1), integer=True)
    return ModelSpec(
        slug=slug,
        kind=kind,
        model=model,
        api_base=_check_api_base(check),
        api_key_env=check.string("api_key_env", pattern=ENV_VAR_RE),
        params=_check_params(check, kind),
        prompt_template=template,
        candidates=int(candidates),
        prices=_check_prices(check),
        limits=_check_limits(check),
        version=_check_version(check),
        description=_check_description(check),
        few_shot=_check_few_shot(check),
        rerun=_check_choice(check, "rerun", RERUN_POLICIES, RERUN_ON_CONFIG_CHANGE),
        retry=_check_retry(check),
        timeout_s=_check_timeout(check),
    )


def load_registry(path: Path | str | None = None) -> dict[str, ModelSpec]:
    """Load and strictly validate the registry (default ``data/models.yml``); slug -> spec, file order.

    Raises ConfigError naming the file, the model slug and the key for any problem.
    """
    registry_path = Path(path) if path is not None else default_registry_path()
    document = _load_yaml(registry_path)
    if not isinstance(document, dict) or set(document) != {"models"}:
        raise ConfigError(f"{registry_path}: the top level must be exactly one key 'models:' mapping slug -> entry")
    models = document["models"]
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{registry_path}: 'models' must be a non-empty mapping of slug -> entry")
    return {slug: _parse_entry(registry_path, slug, entry) for slug, entry in models.items()}


def get_model(slug: str, registry: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    """The spec of ``slug``; ConfigError listing the known slugs when it is not registered."""
    specs = registry if registry is not None else load_registry()
    try:
        return specs[slug]
    except KeyError:
        known = ", ".join(sorted(specs)) or "(none)"
        raise ConfigError(
            f"unknown model {slug!r} (known models: {known}; add it to {default_registry_path()})"
        ) from None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def model_readiness(spec: ModelSpec, *, timeout_s: float = READINESS_TIMEOUT_S) -> Readiness:
    """Can ``spec`` be called now? Offline models always; litellm ones need their key and local server.

    A loopback ``api_base`` is probed with a TCP connect; a remote one is never contacted here.
    """
    if spec.is_offline:
        return Readiness(True, "built-in offline model")
    if spec.predictions is not None:
        source = spec.predictions
        if not source.path.is_file():
            return Readiness(False, f"predictions file {source.path} not found (write it or fix path: in models.yml)")
        if spec.predictions.content_hash is None or file_content_hash(source.path) != source.content_hash:
            return Readiness(False, f"predictions file {source.path} changed since the registry was loaded; reload it")
        return Readiness(True, f"replays {source.path} ({source.format})")
    if spec.api_key_env and not os.environ.get(spec.api_key_env):
        return Readiness(False, f"environment variable {spec.api_key_env} is not set (export it to use {spec.slug})")
    if spec.api_base:
        parsed = urlparse(spec.api_base)
        host = parsed.hostname or ""
        if not _is_loopback(host):
            return Readiness(True, f"remote api_base {host} (not probed)")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            return Readiness(False, f"no server at {host}:{port} ({exc.strerror or exc}); start it or fix api_base")
        return Readiness(True, f"server listening at {host}:{port}")
    if spec.api_key_env:
        return Readiness(True, f"key {spec.api_key_env} is set")
    return Readiness(True, "no key or server required")
