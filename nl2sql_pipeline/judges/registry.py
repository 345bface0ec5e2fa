"""The judge registry: ``data/judges.yml`` parsed into validated ``JudgeSpec`` entries.

Judges are registered like models (``generation.registry``): a slug, a kind (``offline``: the built-in
deterministic ``judge-oracle``; ``litellm``: any litellm model string), the roles it plays (``answer``,
``sql_equivalence``, ``diagnosis``), its prompt and rubric versions, temperature and limits. A judge's
``config_hash`` covers everything that can change its verdicts (kind, model, api_base, roles, prompt and
rubric versions and the texts of those files, temperature, version) and is part of the run's config hash
and of every judge cache key. Every problem is reported at once as
``judges.yml:<line>: judge '<slug>', key '<key>': <what> (<how to fix>)``.
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

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.model_spec import KIND_LITELLM, Limits, ModelSpec, Prices, RetryPolicy
from nl2sql_pipeline.generation.registry import ENV_VAR_RE, SLUG_RE, TEMPLATE_RE, _check_api_base, prompts_dir

KIND_OFFLINE = "offline"
JUDGE_KINDS: tuple[str, ...] = (KIND_OFFLINE, KIND_LITELLM)
ROLE_ANSWER = "answer"
ROLE_SQL_EQUIVALENCE = "sql_equivalence"
ROLE_DIAGNOSIS = "diagnosis"
ROLES: tuple[str, ...] = (ROLE_ANSWER, ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS)
ORACLE_SLUG = "judge-oracle"
DEFAULT_PROMPT_VERSION = "v1"
DEFAULT_RUBRIC_VERSION = "rubric-v1"
DEFAULT_JUDGE_TIMEOUT_S = 60.0
DEFAULT_JUDGE_MAX_TOKENS = 512

ENTRY_FIELDS: dict[str, Field] = {
    "kind": Field(str, required=True, choices=JUDGE_KINDS),
    "model": Field(str, fix="write the litellm model string, e.g. model: openai/gpt-4o-mini"),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "roles": Field(list, required=True, items=Field(str, choices=ROLES), fix=f"write roles: [{', '.join(ROLES)}]"),
    "prompt_version": Field(str, default=DEFAULT_PROMPT_VERSION, pattern=TEMPLATE_RE),
    "rubric_version": Field(str, default=DEFAULT_RUBRIC_VERSION, pattern=TEMPLATE_RE),
    "temperature": Field(float, default=0.0, minimum=0),
    "max_tokens": Field(int, default=DEFAULT_JUDGE_MAX_TOKENS, above=0),
    "api_base": Field(str),
    "api_key_env": Field(str, pattern=ENV_VAR_RE, fix="name an environment variable (letters, digits, '_')"),
    "price_input_per_mtok": Field(float, minimum=0),
    "price_output_per_mtok": Field(float, minimum=0),
    "limits": Field(dict, default={}),
    "version": Field(object, default="1"),
}
LIMIT_FIELDS: dict[str, Field] = {
    "requests_per_minute": Field(int, above=0),
    "tokens_per_minute": Field(int, above=0),
    "max_concurrency": Field(int, above=0),
    "timeout_s": Field(float, above=0, fix="write e.g. timeout_s: 60"),
    "max_retries": Field(int, minimum=0, fix="write e.g. max_retries: 3"),
}
LITELLM_ONLY: tuple[str, ...] = ("model", "api_base", "api_key_env", "price_input_per_mtok", "price_output_per_mtok")


def default_judges_path() -> Path:
    """``data/judges.yml`` (or under ``$NL2SQL_DATA``)."""
    return paths.data_dir() / "judges.yml"


def judge_prompts_dir() -> Path:
    """``data/prompts/judges``: ``<prompt_version>/<role>.txt`` and ``rubrics/<rubric_version>.txt``."""
    return prompts_dir() / "judges"


def prompt_path(prompt_version: str, role: str) -> Path:
    """The prompt file of ``role`` at ``prompt_version``."""
    return judge_prompts_dir() / prompt_version / f"{role}.txt"


def rubric_path(rubric_version: str) -> Path:
    """The rubric file of ``rubric_version``."""
    return judge_prompts_dir() / "rubrics" / f"{rubric_version}.txt"


def _text_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return "missing"


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of the registry."""

    slug: str
    kind: str
    roles: tuple[str, ...]
    model: str = ""
    description: str = ""
    prompt_version: str = DEFAULT_PROMPT_VERSION
    rubric_version: str = DEFAULT_RUBRIC_VERSION
    temperature: float = 0.0
    max_tokens: int = DEFAULT_JUDGE_MAX_TOKENS
    api_base: str | None = None
    api_key_env: str | None = None
    prices: Prices | None = None
    limits: Limits = Limits()
    timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S
    retry: RetryPolicy = RetryPolicy()
    version: str = "1"
    prompt_hashes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Content hash of each prompt and rubric file the judge reads (``<role>`` and ``rubric``)."""

    @property
    def is_offline(self) -> bool:
        """True for the deterministic built-in judge (no provider, no cost)."""
        return self.kind == KIND_OFFLINE

    def plays(self, role: str) -> bool:
        """True when the judge does ``role``."""
        return role in self.roles

    def canonical_config(self) -> dict[str, Any]:
        """Everything that can change the judge's verdicts (description, prices and limits excluded)."""
        config: dict[str, Any] = {"kind": self.kind, "roles": sorted(self.roles), "version": self.version}
        if not self.is_offline:
            config.update(
                model=self.model,
                api_base=self.api_base,
                prompt_version=self.prompt_version,
                rubric_version=self.rubric_version,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                texts=dict(sorted(self.prompt_hashes.items())),
            )
        return config

    @functools.cached_property
    def config_hash(self) -> str:
        """16 hex chars over the canonical config."""
        blob = json.dumps(self.canonical_config(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def model_spec(self, *, response_format: Mapping[str, Any] | None = None) -> ModelSpec:
        """The judge as a litellm ``ModelSpec``, so its calls go through the generation stack: the same
        provider key (limiter, in-flight slots, Dagster pool), retries, timeout and failure classes.
        ``response_format`` (structured output) is sent with every call."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if response_format is not None:
            params["response_format"] = dict(response_format)
        return ModelSpec(
            slug=f"judge.{self.slug}",
            kind=KIND_LITELLM,
            model=self.model,
            api_base=self.api_base,
            api_key_env=self.api_key_env,
            params=MappingProxyType(params),
            prices=self.prices,
            limits=self.limits,
            retry=self.retry,
            timeout_s=self.timeout_s,
            version=self.version,
            description=self.description,
        )


def _check_version(check: Checker, version: Any, line: int | None) -> str:
    if isinstance(version, bool) or not isinstance(version, (str, int)) or str(version).strip() == "":
        check.problem(line, "version", f"must be a string, got {version!r}", 'write version: "1"')
    return str(version)


def _prices(check: Checker, values: Mapping[str, Any], entry: Mapping[str, Any]) -> Prices | None:
    price_in, price_out = values["price_input_per_mtok"], values["price_output_per_mtok"]
    if price_in is None and price_out is None:
        return None
    if price_in is None or price_out is None:
        missing = "price_input_per_mtok" if price_in is None else "price_output_per_mtok"
        check.problem(line_of(entry), missing, "missing while the other price is set", "give both prices or neither")
        return None
    return Prices(input_per_mtok=price_in, output_per_mtok=price_out)


def _prompt_hashes(
    check: Checker, entry: Mapping[str, Any], roles: tuple[str, ...], values: Mapping[str, Any]
) -> dict[str, str]:
    hashes: dict[str, str] = {}
    version, rubric = values["prompt_version"], values["rubric_version"]
    if version is not None:
        for role in roles:
            path = prompt_path(version, role)
            if not path.is_file():
                check.problem(
                    line_of(entry, "prompt_version"),
                    "prompt_version",
                    f"no prompt file {path} for role {role!r}",
                    "add it or fix prompt_version",
                )
            hashes[role] = _text_hash(path)
    if rubric is not None and ROLE_ANSWER in roles:
        path = rubric_path(rubric)
        if not path.is_file():
            check.problem(
                line_of(entry, "rubric_version"),
                "rubric_version",
                f"no rubric file {path}",
                "add it or fix rubric_version",
            )
        hashes["rubric"] = _text_hash(path)
    return hashes


def _parse_entry(check: Checker, slug: Any, entry: Any, line: int | None) -> JudgeSpec | None:
    if not isinstance(slug, str) or not SLUG_RE.match(slug):
        check.problem(line, None, f"judge slug {slug!r} is invalid", "use lowercase letters, digits, '.', '_', '-'")
        return None
    check = check.within(f"judge {slug!r}")
    values = check.mapping(entry, ENTRY_FIELDS, line=line, unknown_fix="write kind:, roles: ... under the slug")
    if values is None or values["kind"] is None:
        return None
    kind = values["kind"]
    roles = tuple(dict.fromkeys(values["roles"] or ()))
    if values["roles"] is not None and not roles:
        check.problem(line_of(entry, "roles"), "roles", "must name at least one role", f"use any of {', '.join(ROLES)}")
    limits = check.mapping(values["limits"], LIMIT_FIELDS, key="limits", line=line_of(entry, "limits")) or {}
    version = _check_version(check, values["version"], line_of(entry, "version"))
    if kind == KIND_OFFLINE:
        for name in LITELLM_ONLY:
            if entry.get(name) is not None:
                check.problem(
                    line_of(entry, name), name, "not used by an offline judge", "remove it or use kind: litellm"
                )
        if slug != ORACLE_SLUG:
            check.problem(line, "kind", f"the only offline judge is {ORACLE_SLUG!r}", "use kind: litellm")
        return JudgeSpec(slug=slug, kind=kind, roles=roles, description=values["description"] or "", version=version)
    if values["model"] is None and "model" not in entry:
        check.problem(
            line, "model", "missing required key", "add 'model: openai/gpt-4o-mini' (any litellm model string)"
        )
    retry = RetryPolicy()
    if limits.get("max_retries") is not None:
        retry = RetryPolicy(
            max_retries=limits["max_retries"], base_delay_s=retry.base_delay_s, max_delay_s=retry.max_delay_s
        )
    return JudgeSpec(
        slug=slug,
        kind=kind,
        roles=roles,
        model=values["model"] or "",
        description=values["description"] or "",
        prompt_version=values["prompt_version"] or DEFAULT_PROMPT_VERSION,
        rubric_version=values["rubric_version"] or DEFAULT_RUBRIC_VERSION,
        temperature=values["temperature"] if values["temperature"] is not None else 0.0,
        max_tokens=values["max_tokens"] or DEFAULT_JUDGE_MAX_TOKENS,
        api_base=_check_api_base(check, values["api_base"], line_of(entry, "api_base")),
        api_key_env=values["api_key_env"],
        prices=_prices(check, values, entry),
        limits=Limits(
            requests_per_minute=limits.get("requests_per_minute"),
            tokens_per_minute=limits.get("tokens_per_minute"),
            max_concurrency=limits.get("max_concurrency"),
        ),
        timeout_s=limits.get("timeout_s") or DEFAULT_JUDGE_TIMEOUT_S,
        retry=retry,
        version=version,
        prompt_hashes=MappingProxyType(_prompt_hashes(check, entry, roles, values)),
    )


def load_judges(path: Path | str | None = None) -> dict[str, JudgeSpec]:
    """Load and strictly validate the judge registry (default ``data/judges.yml``); slug -> spec, file order.

    Raises ConfigError listing every problem with its file and line.
    """
    registry_path = Path(path) if path is not None else default_judges_path()
    _, document = read_yaml(registry_path, ConfigError, missing="judge registry not found: create data/judges.yml")
    check = Checker(registry_path)
    top = check.mapping(
        document,
        {"judges": Field(dict, required=True, fix="write one 'judges:' mapping of slug -> entry")},
        unknown_fix="the top level is a 'judges:' mapping slug -> entry and an optional 'automation:' block",
        skip=("automation",),  # the automation opt-in: judges.automation.load_judge_automation
    )
    judges = (top or {}).get("judges") or {}
    specs: dict[str, JudgeSpec] = {}
    for slug, entry in judges.items():
        spec = _parse_entry(check, slug, entry, line_of(judges, slug))
        if spec is not None:
            specs[slug] = spec
    check.raise_if_problems()
    return specs


def get_judge(slug: str, registry: Mapping[str, JudgeSpec] | None = None) -> JudgeSpec:
    """The spec of ``slug``; ConfigError listing the known judges when it is not registered."""
    specs = registry if registry is not None else load_judges()
    try:
        return specs[slug]
    except KeyError:
        known = ", ".join(sorted(specs)) or "(none)"
        raise ConfigError(
            f"unknown judge {slug!r} (known judges: {known}; add it to {default_judges_path()})"
        ) from None


def judges_config_hash(judges: list[JudgeSpec]) -> str | None:
    """One hash over the judges of a run (None without judges): part of the run's config hash."""
    if not judges:
        return None
    blob = json.dumps(sorted((j.slug, j.config_hash) for j in judges))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
