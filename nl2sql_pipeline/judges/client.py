"""One judge call through litellm, on the generation stack: limiter, in-flight slots, retries, failure
classes, a cache and the accounting of tokens, cost and latency.

A judge is a ``JudgeSpec`` turned into a litellm ``ModelSpec`` (``JudgeSpec.model_spec``), so its calls go
through ``generation.dispatch``: the provider's shared rate limiter and in-flight slots (the same key, hence
the same Dagster pool, as a model on that provider), 429/5xx retried honouring Retry-After, timeouts and
every other failure classified by ``generation.failures``. The reply must be one JSON object valid against
the role's JSON schema (sent as ``response_format``): a reply that is not is asked again once, saying what
was wrong; a second bad reply is a ``judge_error``, never a crash. A run-stopping failure (402 payment,
quota, key, model) stops every further judgement of this client with a clear ``stop_reason``; verdicts
computed before (the SQL verdicts above all) are untouched. Valid judgements are cached under
``<storage root>/cache/judges`` keyed by the judge's config hash, the exact messages and schema, the case
fingerprint and the repeat index, so a re-run pays nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.candidate_record import ModelCall
from nl2sql_pipeline.generation.dispatch import RunControl, dispatch, limiter_for, slots_for
from nl2sql_pipeline.generation.failures import NOT_READY, ProviderFailure
from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness
from nl2sql_pipeline.generation.prompts import Message, assistant_message
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.usage import TOKEN_SOURCE_ESTIMATED
from nl2sql_pipeline.judges.registry import JudgeSpec

logger = logging.getLogger(__name__)

JUDGE_ERROR = "judge_error"
"""The reply was not a judgement valid against the role's schema, twice (the first bad reply is re-asked)."""
_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def default_judge_cache_root() -> Path:
    """``<storage root>/cache/judges``."""
    return paths.cache_dir() / "judges"


def judge_cache(root: Path | str | None = None) -> GenerationCache:
    """The judge cache: the generation cache's format in a folder of its own."""
    return GenerationCache(root if root is not None else default_judge_cache_root())


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement to ask for: the role, the case, the rendered messages and the reply's JSON schema."""

    role: str
    case_id: str
    case_fingerprint: str
    messages: tuple[Message, ...]
    schema: Mapping[str, Any]
    repeat_index: int = 0
    subject: str = ""
    """What is judged (e.g. the candidate's sample and candidate index), for the record only."""

    def digest(self) -> str:
        """16 hex chars over the role, the exact messages and the schema (the cache key's prompt hash)."""
        blob = json.dumps(
            {"role": self.role, "messages": list(self.messages), "schema": self.schema},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class JudgeOutcome:
    """What one judgement came to: the validated judgement, or a failure class, with its accounting."""

    judge: str
    judge_config_hash: str
    role: str
    case_id: str
    repeat_index: int
    subject: str
    judgement: dict[str, Any] | None
    error_class: str | None
    error_message: str | None
    raw_reply: str | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    token_source: str | None = None
    cost_usd: float | None = 0.0
    cached: bool = False
    calls: int = 0
    attempts: int = 0

    @property
    def ok(self) -> bool:
        """True when a valid judgement came back."""
        return self.judgement is not None

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (the judgement as JSON text)."""
        out = asdict(self)
        out["judgement"] = None if self.judgement is None else json.dumps(self.judgement, sort_keys=True)
        return out


def parse_judgement(reply: str | None, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """``(judgement, None)`` when ``reply`` is one JSON object valid against ``schema``, else ``(None, why)``."""
    import jsonschema

    if reply is None or not reply.strip():
        return None, "the reply is empty"
    text = reply.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        try:
            value = json.loads(text[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            value = None
        if value is None:
            return None, "the reply is not a JSON object"
    if not isinstance(value, dict):
        return None, "the reply is not a JSON object"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        return None, f"the JSON does not match the schema at {where}: {error.message}"
    return value, None


@dataclass
class _Tally:
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    cost_usd: float | None = 0.0
    calls: int = 0
    attempts: int = 0
    latency_ms: float = 0.0
    source: str | None = None

    def add(self, call: ModelCall) -> None:
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        self.estimated = self.estimated or call.token_source == TOKEN_SOURCE_ESTIMATED
        self.source = TOKEN_SOURCE_ESTIMATED if self.estimated else call.token_source
        self.cost_usd = None if self.cost_usd is None or call.cost_usd is None else self.cost_usd + call.cost_usd
        self.latency_ms += call.latency_ms


@dataclass
class JudgeClient:
    """Judgements of one LLM judge for one run: the run's control (limiter, slots, stop) and the cache."""

    spec: JudgeSpec
    cache: GenerationCache | None = None
    control: RunControl | None = None
    _model_specs: dict[str, ModelSpec] = field(default_factory=dict, repr=False)
    _readiness: Readiness | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.spec.is_offline:
            raise ValueError(f"judge {self.spec.slug} is offline: it is called through judges.oracle")
        base = self.spec.model_spec()
        if self.control is None:
            self.control = RunControl(limiter=limiter_for(base), slots=slots_for(base))

    @property
    def stop_reason(self) -> str | None:
        """Why judging stopped for this run (a 402, a quota, a bad key), or None while it goes on."""
        assert self.control is not None
        failure = self.control.stop_failure
        if failure is None:
            return None
        return f"judging stopped after {failure.error_class} on case {self.control.stop_case}: {failure.message}"

    def _model_spec(self, request: JudgeRequest) -> ModelSpec:
        name = f"{request.role}_judgement"
        with self._lock:
            spec = self._model_specs.get(name)
            if spec is None:
                response_format = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": dict(request.schema), "strict": True},
                }
                spec = self.spec.model_spec(response_format=response_format)
                self._model_specs[name] = spec
            return spec

    def _ready(self, spec: ModelSpec) -> Readiness:
        with self._lock:
            if self._readiness is None:
                self._readiness = model_readiness(spec)
                if not self._readiness.ready:
                    logger.warning("judge %s is not ready: %s", self.spec.slug, self._readiness.reason)
            return self._readiness

    def _outcome(self, request: JudgeRequest, **values: Any) -> JudgeOutcome:
        return JudgeOutcome(
            judge=self.spec.slug,
            judge_config_hash=self.spec.config_hash,
            role=request.role,
            case_id=request.case_id,
            repeat_index=request.repeat_index,
            subject=request.subject,
            **values,
        )

    def _failed(
        self, request: JudgeRequest, failure: ProviderFailure, tally: _Tally, raw: str | None = None
    ) -> JudgeOutcome:
        return self._outcome(
            request,
            judgement=None,
            error_class=failure.error_class,
            error_message=failure.message[:2000],
            raw_reply=raw,
            latency_ms=tally.latency_ms if tally.calls else None,
            input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens,
            token_source=tally.source,
            cost_usd=tally.cost_usd if tally.calls else None,
            calls=tally.calls,
            attempts=tally.attempts,
        )

    def cache_key(self, request: JudgeRequest) -> CacheKey:
        """Where a valid judgement of ``request`` is cached."""
        return CacheKey(self.spec.config_hash, request.digest(), request.case_fingerprint, request.repeat_index, 0)

    def judge(self, request: JudgeRequest) -> JudgeOutcome:
        """Ask for one judgement (cache first); never raises for a provider failure or a bad reply."""
        assert self.control is not None
        key = self.cache_key(request)
        if self.cache is not None:
            stored = self.cache.get(key)
            if stored is not None and isinstance(stored.get("judgement"), dict):
                call = ModelCall.from_dict(stored["call"])
                return self._outcome(
                    request,
                    judgement=stored["judgement"],
                    error_class=None,
                    error_message=None,
                    raw_reply=call.raw_reply,
                    latency_ms=call.latency_ms,
                    input_tokens=call.input_tokens,
                    output_tokens=call.output_tokens,
                    token_source=call.token_source,
                    cost_usd=call.cost_usd,
                    cached=True,
                )
        spec = self._model_spec(request)
        state = self._ready(spec)
        tally = _Tally()
        if not state.ready:
            reason = f"not sent: judge {self.spec.slug} is not ready: {state.reason}"
            return self._failed(request, ProviderFailure(NOT_READY, reason), tally)
        messages: list[Message] = list(request.messages)
        problem: str | None = None
        raw: str | None = None
        for attempt in range(2):  # a malformed reply is asked again once
            sent = dispatch(spec, messages, self.control, case_id=request.case_id)
            tally.attempts += sent.attempts
            tally.calls += 1 if sent.attempts else 0
            if sent.call is None:
                assert sent.failure is not None
                return self._failed(request, sent.failure, tally, raw)
            tally.add(sent.call)
            raw = sent.call.raw_reply
            judgement, problem = parse_judgement(raw, request.schema)
            if judgement is not None:
                if self.cache is not None and attempt == 0:
                    self.cache.put(key, {"call": sent.call.to_dict(), "judgement": judgement})
                return self._outcome(
                    request,
                    judgement=judgement,
                    error_class=None,
                    error_message=None,
                    raw_reply=raw,
                    latency_ms=tally.latency_ms,
                    input_tokens=tally.input_tokens,
                    output_tokens=tally.output_tokens,
                    token_source=tally.source,
                    cost_usd=tally.cost_usd,
                    calls=tally.calls,
                    attempts=tally.attempts,
                )
            logger.warning("judge %s on case %s: malformed judgement (%s)", self.spec.slug, request.case_id, problem)
            messages = [
                *request.messages,
                assistant_message(raw),
                {
                    "role": "user",
                    "content": f"That reply is not valid: {problem}. Reply with only the JSON object the schema "
                    "describes, nothing else.",
                },
            ]
        message = f"malformed judgement after one retry: {problem}"
        return self._failed(request, ProviderFailure(JUDGE_ERROR, message), tally, raw)

    def judge_all(self, requests: Sequence[JudgeRequest], *, workers: int | None = None) -> list[JudgeOutcome]:
        """Every request's outcome, in order; ``workers`` threads (default the judge's max_concurrency, else 1)."""
        count = max(1, min(workers or self.spec.limits.max_concurrency or 1, len(requests) or 1))
        if count == 1:
            return [self.judge(r) for r in requests]
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix=f"judge-{self.spec.slug}") as pool:
            return list(pool.map(self.judge, requests))
