"""The model registry: ``data/models.yml`` parsed into validated, hashable ``ModelSpec`` entries.

A slug (``gold-echo``, ``gpt-4o-mini``) is the partition key of every model-dependent asset; the
registry maps it to the litellm model id, its parameters, prompt template, few-shot set, prices,
limits, retry and timeout settings and re-run policy. The spec types live in ``generation.model_spec``
(re-exported here); whether a model can be called now is ``generation.readiness``. Every entry is checked by the
one config checker, which reports every problem at once as ``models.yml:<line>: model '<slug>', key
'<key>': <what> (<fix>)``.

This module stays light (no litellm import) so listing models is instant.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.few_shot import NAME_RE as FEW_SHOT_NAME_RE
from nl2sql_pipeline.generation.few_shot import FewShotSet, few_shot_dir, load_few_shot
from nl2sql_pipeline.generation.model_spec import (
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_TIMEOUT_S,
    KIND_LITELLM,
    KIND_OFFLINE,
    KIND_PREDICTIONS,
    KINDS,
    OFFLINE_MODEL_NAMES,
    OFFLINE_PROVIDER,
    PREDICTION_FORMATS,
    RERUN_ON_CONFIG_CHANGE,
    RERUN_POLICIES,
    Limits,
    ModelSpec,
    PredictionsSource,
    Prices,
    RetryPolicy,
    file_content_hash,
)
from nl2sql_pipeline.generation.system_spec import SYSTEM_KINDS

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
TEMPLATE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENV_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_DEFAULT_RETRY = RetryPolicy()
ENTRY_FIELDS: dict[str, Field] = {
    "kind": Field(str, required=True),
    "model": Field(str, required=True),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "prompt_template": Field(str, default=DEFAULT_PROMPT_TEMPLATE, pattern=TEMPLATE_RE),
    "params": Field(dict, default={}, fix="write params: {temperature: 0}"),
    "version": Field(object, default="1"),
    "api_base": Field(str),
    "api_key_env": Field(str, pattern=ENV_VAR_RE, fix="name an environment variable (letters, digits, '_')"),
    "price_input_per_mtok": Field(float, minimum=0),
    "price_output_per_mtok": Field(float, minimum=0),
    "limits": Field(dict, default={}),
    "candidates": Field(int, default=1, above=0),
    "few_shot": Field(str, pattern=FEW_SHOT_NAME_RE),
    "rerun": Field(str, default=RERUN_ON_CONFIG_CHANGE, choices=RERUN_POLICIES),
    "retry": Field(dict, default={}),
    "timeout_s": Field(float, default=DEFAULT_TIMEOUT_S, above=0, fix="write e.g. timeout_s: 60"),
    "path": Field(str, required=True),
    "format": Field(str, default="jsonl", choices=PREDICTION_FORMATS),
    "source_dialect": Field(str, fix="write source_dialect: sqlite (or postgres, mysql, ...; omit it for DuckDB SQL)"),
    "gates": Field(dict, default={}, fix="write gates: {min_semantic_correct: 0.8}"),
    "answer_model": Field(str, pattern=SLUG_RE, fix="name a model slug of this registry (kind: litellm)"),
}
ALLOWED_KEYS: frozenset[str] = frozenset(ENTRY_FIELDS)
PREDICTIONS_KEYS: frozenset[str] = frozenset(
    {"kind", "path", "format", "source_dialect", "description", "version", "rerun", "gates", "answer_model"}
)
PREDICTIONS_ONLY: tuple[str, ...] = ("path", "format", "source_dialect")
# The gates a model may set for itself (names of nl2sql_pipeline.runs.gates.GateThresholds; rates in 0..1).
GATE_FIELDS: dict[str, Field] = {
    name: Field(float, minimum=0, maximum=1, fix="use a fraction within [0, 1]")
    for name in (
        "max_skipped_share",
        "min_execution_success",
        "min_semantic_correct",
        "min_policy_recall",
        "max_regression",
        "max_execution_drop",
    )
}
GATE_FIELDS["max_p95_latency_ms"] = Field(float, minimum=0, fix="give milliseconds, e.g. 2000")
GATE_FIELDS["max_cost_usd"] = Field(float, minimum=0, fix="give US dollars, e.g. 0.50")
OFFLINE_UNUSED_KEYS: tuple[str, ...] = ("api_base", "api_key_env", "retry", "timeout_s")
LIMIT_FIELDS: dict[str, Field] = {
    "requests_per_minute": Field(int, above=0),
    "tokens_per_minute": Field(int, above=0),
    "max_concurrency": Field(int, above=0),
}
RETRY_FIELDS: dict[str, Field] = {
    "max_retries": Field(int, default=_DEFAULT_RETRY.max_retries, minimum=0),
    "base_delay_s": Field(float, default=_DEFAULT_RETRY.base_delay_s, above=0),
    "max_delay_s": Field(float, default=_DEFAULT_RETRY.max_delay_s, above=0),
}
LIMIT_KEYS: tuple[str, ...] = tuple(LIMIT_FIELDS)
RETRY_KEYS: tuple[str, ...] = tuple(RETRY_FIELDS)
# Set by the generate loop itself (the registry has its own keys for them): refused in params.
RESERVED_PARAMS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "api_base",
        "base_url",
        "api_key",
        "metadata",
        "stream",
        "timeout",
        "max_retries",
        "num_retries",
        "mock_response",
    }
)
_RESERVED_FIXES: dict[str, str] = {
    "timeout": "use the entry's timeout_s key",
    "max_retries": "use the entry's retry: {max_retries: N} key",
    "num_retries": "use the entry's retry: {max_retries: N} key",
    "api_base": "use the entry's api_base key",
    "base_url": "use the entry's api_base key",
    "api_key": "name the environment variable in api_key_env; never write a key here",
}
_PARAM_FIELDS: dict[str, Field] = {
    "temperature": Field(float, minimum=0),
    "max_tokens": Field(int, above=0),
}
_OFFLINE_PARAM_FIELDS: dict[str, Field] = {
    "mutation_rate": Field(float, minimum=0, maximum=1, fix="use a fraction within [0, 1]"),
    "seed": Field(int, fix="write seed: 7"),
}


def default_registry_path() -> Path:
    """``data/models.yml`` (or under ``$NL2SQL_DATA``)."""
    return paths.data_dir() / "models.yml"


def prompts_dir() -> Path:
    """Folder of the versioned prompt templates (``<name>.txt``)."""
    return paths.data_dir() / "prompts"


def predictions_path(raw: str) -> Path:
    """A predictions ``path:`` resolved: absolute as given, else relative to ``data/``."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else paths.data_dir() / path


def _check_params(check: Checker, params: Mapping[str, Any], kind: str, line: int | None) -> Mapping[str, Any]:
    fields = {**_PARAM_FIELDS, **(_OFFLINE_PARAM_FIELDS if kind == KIND_OFFLINE else {})}
    for name, value in params.items():
        where = line_of(params, name) or line
        if not isinstance(name, str) or not ENV_VAR_RE.match(name):
            check.problem(where, "params", f"parameter name {name!r} is not an identifier", "use litellm keyword names")
        elif name in RESERVED_PARAMS:
            fix = _RESERVED_FIXES.get(name, "remove it: the generate loop sets it")
            check.problem(where, f"params.{name}", "is set by the harness", fix)
        elif value is not None and not isinstance(value, (str, int, float, bool, list)):
            check.problem(where, f"params.{name}", f"unsupported value {value!r}", "use a scalar or a list")
        elif name in fields and value is not None:
            check.value(value, fields[name], key=f"params.{name}", line=where)
    return MappingProxyType(dict(params))


def _check_api_base(check: Checker, api_base: str | None, line: int | None) -> str | None:
    if api_base is None:
        return None
    parsed = urlparse(api_base)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        check.problem(line, "api_base", f"{api_base!r} is not an http(s) URL", "write e.g. http://127.0.0.1:8000/v1")
        return None
    try:
        _ = parsed.port  # raises ValueError for a port out of range
    except ValueError:
        check.problem(line, "api_base", f"bad port in {api_base!r}", "use a port within 1..65535")
        return None
    return api_base


def _check_prices(check: Checker, values: Mapping[str, Any], entry: Mapping[str, Any]) -> Prices | None:
    raw_in, raw_out = entry.get("price_input_per_mtok"), entry.get("price_output_per_mtok")
    if raw_in is None and raw_out is None:
        return None
    if raw_in is None or raw_out is None:
        missing = "price_input_per_mtok" if raw_in is None else "price_output_per_mtok"
        check.problem(line_of(entry), missing, "missing while the other price is set", "give both prices or neither")
        return None
    price_in, price_out = values["price_input_per_mtok"], values["price_output_per_mtok"]
    if price_in is None or price_out is None:
        return None
    return Prices(input_per_mtok=price_in, output_per_mtok=price_out)


def _check_retry(check: Checker, raw: Any, line: int | None) -> RetryPolicy:
    values = check.mapping(raw, RETRY_FIELDS, key="retry", line=line) or {}
    base = values.get("base_delay_s") or _DEFAULT_RETRY.base_delay_s
    ceiling = values.get("max_delay_s") or _DEFAULT_RETRY.max_delay_s
    if ceiling < base:
        check.problem(
            line_of(raw, "max_delay_s") or line,
            "retry.max_delay_s",
            f"{ceiling} is below base_delay_s {base}",
            "raise max_delay_s",
        )
    max_retries = values.get("max_retries")
    return RetryPolicy(
        max_retries=_DEFAULT_RETRY.max_retries if max_retries is None else max_retries,
        base_delay_s=base,
        max_delay_s=ceiling,
    )


def _check_few_shot(check: Checker, name: str | None, line: int | None) -> FewShotSet | None:
    if name is None:
        return None
    try:
        return load_few_shot(name)
    except ConfigError as exc:
        check.problem(
            line,
            "few_shot",
            f"few-shot set {name!r} cannot be loaded",
            "fix the file under data/prompts/few_shot/ or the name; its problems follow",
        )
        check.problems.extend(str(exc).splitlines())
        return None


def _check_gates(check: Checker, raw: Any, line: int | None) -> Mapping[str, float]:
    values = check.mapping(raw, GATE_FIELDS, key="gates", line=line) or {}
    return MappingProxyType({k: v for k, v in values.items() if v is not None})


def _check_version(check: Checker, version: Any, line: int | None) -> str:
    if isinstance(version, bool) or not isinstance(version, (str, int)) or str(version).strip() == "":
        check.problem(line, "version", f"must be a string, got {version!r}", 'write version: "1"')
    return str(version)


def _check_source_dialect(check: Checker, dialect: str | None, line: int | None) -> str | None:
    """The predictions file's SQL dialect (lower case; None for DuckDB's own); a problem when sqlglot does not know it."""
    from nl2sql_pipeline.dialect.convert import TARGET_DIALECT, known_dialect

    if dialect is None or dialect.lower() == TARGET_DIALECT:
        return None
    if not known_dialect(dialect.lower()):
        check.problem(
            line,
            "source_dialect",
            f"unknown SQL dialect {dialect!r}",
            "write source_dialect: sqlite (or postgres, mysql, ...: a dialect sqlglot reads)",
        )
        return None
    return dialect.lower()


def _parse_predictions(check: Checker, slug: str, entry: Mapping[str, Any]) -> ModelSpec | None:
    fields = {name: ENTRY_FIELDS[name] for name in ENTRY_FIELDS if name in PREDICTIONS_KEYS}
    for name in entry:
        if name in ALLOWED_KEYS and name not in PREDICTIONS_KEYS:
            check.problem(
                line_of(entry, name),
                name,
                "not used by kind: predictions",
                f"allowed keys: {', '.join(sorted(PREDICTIONS_KEYS))}",
            )
    values = check.mapping(entry, fields, line=line_of(entry), skip=tuple(ALLOWED_KEYS - PREDICTIONS_KEYS))
    if values is None or values["path"] is None or values["format"] is None:
        return None
    file_path = predictions_path(values["path"])
    dialect = _check_source_dialect(check, values["source_dialect"], line_of(entry, "source_dialect"))
    return ModelSpec(
        slug=slug,
        kind=KIND_PREDICTIONS,
        model=f"predictions:{values['path']}",
        version=_check_version(check, values["version"], line_of(entry, "version")),
        description=values["description"] or "",
        rerun=values["rerun"] or RERUN_ON_CONFIG_CHANGE,
        gates=_check_gates(check, values["gates"], line_of(entry, "gates")),
        answer_model=values["answer_model"],
        predictions=PredictionsSource(file_path, values["format"], file_content_hash(file_path), dialect),
    )


def _parse_entry(check: Checker, slug: Any, entry: Any, line: int | None) -> ModelSpec | None:
    if not isinstance(slug, str) or not SLUG_RE.match(slug):
        check.problem(
            line,
            None,
            f"model slug {slug!r} is invalid",
            "use lowercase letters, digits, '.', '_', '-', starting with a letter or digit; slugs are partition keys",
        )
        return None
    check = check.within(f"model {slug!r}")
    if not isinstance(entry, dict):
        check.problem(
            line,
            None,
            f"entry must be a mapping of keys, got {type(entry).__name__}",
            "write kind:, model: ... under the slug",
        )
        return None
    kind = entry.get("kind")
    if kind is not None and kind not in KINDS:
        check.problem(line_of(entry, "kind"), "kind", f"unknown kind {kind!r}", f"use one of {', '.join(KINDS)}")
        return None
    if kind == KIND_PREDICTIONS:
        return _parse_predictions(check, slug, entry)
    if kind in SYSTEM_KINDS:
        from nl2sql_pipeline.generation.system_entry import parse_system_entry

        return parse_system_entry(
            check,
            slug,
            entry,
            check_version=_check_version,
            check_retry=_check_retry,
            check_prices=_check_prices,
            limit_fields=LIMIT_FIELDS,
        )
    fields = {name: field for name, field in ENTRY_FIELDS.items() if name not in PREDICTIONS_ONLY}
    for name in PREDICTIONS_ONLY:
        if entry.get(name) is not None:
            check.problem(line_of(entry, name), name, f"only used by kind: {KIND_PREDICTIONS}", "remove it")
    values = check.mapping(entry, fields, line=line, skip=PREDICTIONS_ONLY)
    if values is None or values["kind"] is None:
        return None
    kind = values["kind"]  # the checked kind (a str from KINDS), not the raw entry value
    model = values["model"]
    if model is not None and kind == KIND_OFFLINE:
        provider, _, name = model.partition("/")
        if provider != OFFLINE_PROVIDER or name not in OFFLINE_MODEL_NAMES:
            known = ", ".join(f"{OFFLINE_PROVIDER}/{n}" for n in OFFLINE_MODEL_NAMES)
            check.problem(
                line_of(entry, "model"), "model", f"{model!r} is not a built-in offline model", f"use one of {known}"
            )
    elif model is not None and model.startswith(f"{OFFLINE_PROVIDER}/"):
        check.problem(line_of(entry, "model"), "model", f"{model!r} is served offline", "use kind: offline")
    if kind == KIND_OFFLINE:
        for name in OFFLINE_UNUSED_KEYS:
            if entry.get(name) is not None:
                check.problem(
                    line_of(entry, name), name, "not used by offline models", "remove it or use kind: litellm"
                )
    template = values["prompt_template"] or DEFAULT_PROMPT_TEMPLATE
    if not (prompts_dir() / f"{template}.txt").is_file():
        check.problem(
            line_of(entry, "prompt_template"),
            "prompt_template",
            f"no template file {prompts_dir() / (template + '.txt')}",
            "add it or fix the name",
        )
    limits = check.mapping(values["limits"], LIMIT_FIELDS, key="limits", line=line_of(entry, "limits")) or {}
    spec = ModelSpec(
        slug=slug,
        kind=kind,
        model=model or "",
        api_base=_check_api_base(check, values["api_base"], line_of(entry, "api_base")),
        api_key_env=values["api_key_env"],
        params=_check_params(check, values["params"] or {}, kind, line_of(entry, "params")),
        prompt_template=template,
        candidates=values["candidates"] or 1,
        prices=_check_prices(check, values, entry),
        limits=Limits(**{k: v for k, v in limits.items() if v is not None}),
        version=_check_version(check, values["version"], line_of(entry, "version")),
        description=values["description"] or "",
        few_shot=_check_few_shot(check, values["few_shot"], line_of(entry, "few_shot")),
        rerun=values["rerun"] or RERUN_ON_CONFIG_CHANGE,
        retry=_check_retry(check, values["retry"], line_of(entry, "retry")),
        timeout_s=values["timeout_s"] or DEFAULT_TIMEOUT_S,
        gates=_check_gates(check, values["gates"], line_of(entry, "gates")),
        answer_model=values["answer_model"],
    )
    return spec


_MEMO_LOCK = threading.Lock()
_MEMO: dict[tuple[str, str], tuple[str, dict[str, ModelSpec]]] = {}
"""The last registry loaded per (registry file, data folder): its text and specs (``get_model`` once per model run)."""


def load_registry(path: Path | str | None = None) -> dict[str, ModelSpec]:
    """Load and strictly validate the registry (default ``data/models.yml``); slug -> spec, file order.

    Raises ConfigError listing every problem, each naming the file and line, the model slug and the key.
    A registry loaded before in this process is reused while its text is the same and every file its
    specs were read from still gives what they hold (few-shot texts, prediction files, prompt templates).
    """
    registry_path = Path(path) if path is not None else default_registry_path()
    key = (str(registry_path.absolute()), str(paths.data_dir()))
    try:
        text = registry_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None  # the full load below reports it
    with _MEMO_LOCK:
        memo = _MEMO.get(key)
    if memo is not None and text is not None and memo[0] == text and _still_current(memo[1]):
        return dict(memo[1])
    specs = _load_registry(registry_path)
    if text is not None:
        with _MEMO_LOCK:
            _MEMO[key] = (text, dict(specs))
    return specs


def clear_registry_memo() -> None:
    """Forget the registries loaded in this process (tests; benchmarks measuring a cold start)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def _still_current(specs: Mapping[str, ModelSpec]) -> bool:
    """True when a new load would read the same files behind ``specs`` as the load that made them."""
    templates, few_shots = prompts_dir(), few_shot_dir()
    for spec in specs.values():
        if spec.few_shot is not None:
            few_shot_path = few_shots / f"{spec.few_shot.name}.yml"
            try:
                few_shot_text = few_shot_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return False
            if hashlib.sha256(few_shot_text.encode("utf-8")).hexdigest()[:16] != spec.few_shot.content_hash:
                return False
        if spec.predictions is not None and file_content_hash(spec.predictions.path) != spec.predictions.content_hash:
            return False
        if (
            spec.predictions is None
            and spec.system is None
            and not (templates / f"{spec.prompt_template}.txt").is_file()
        ):
            return False
    return True


def _load_registry(registry_path: Path) -> dict[str, ModelSpec]:
    _, document = read_yaml(
        registry_path, ConfigError, missing="model registry not found: create it, or set $NL2SQL_DATA"
    )
    check = Checker(registry_path)
    top = check.mapping(
        document,
        {"models": Field(dict, required=True, fix="write one 'models:' mapping of slug -> entry")},
        unknown_fix="the top level is exactly one key 'models:' mapping slug -> entry",
    )
    models = (top or {}).get("models")
    if top is not None and models is not None and not models:
        check.problem(
            line_of(document, "models"),
            "models",
            "must be a non-empty mapping of slug -> entry",
            "register at least one model",
        )
    specs: dict[str, ModelSpec] = {}
    for slug, entry in (models or {}).items():
        spec = _parse_entry(check, slug, entry, line_of(models, slug))
        if spec is not None:
            specs[slug] = spec
    for slug, spec in specs.items():
        target = specs.get(spec.answer_model) if spec.answer_model is not None else None
        if spec.answer_model is not None and (target is None or target.kind != KIND_LITELLM):
            entry = (models or {})[slug]
            check.within(f"model {slug!r}").problem(
                line_of(entry, "answer_model"),
                "answer_model",
                f"{spec.answer_model!r} is not a kind: litellm model of this registry",
                "name a litellm model registered here (it writes the prose answers)",
            )
    check.raise_if_problems()
    return specs


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
