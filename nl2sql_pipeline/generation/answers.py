"""The answer stage: a short prose answer for every candidate, from the rows its own SQL returned.

People read an NL2SQL assistant's *answer*. Systems (``kind: http | python | command``) return their own
(``CandidateRecord.answer``) and keep it. A bare model is asked for one (``nl2sql-eval run --answers``): the
question, its candidate SQL and the first ``ANSWER_ROW_LIMIT`` rows that SQL returned (at most
``ANSWER_CHARS_LIMIT`` characters of them) go through litellm to the same registry entry, or to the entry named by
``answer_model``, with the prompt ``data/prompts/answer-v1.txt``, and a short answer comes back. The calls
go through the generation stack (``generation.dispatch``: limiter, in-flight slots, retries, failure classes),
are cached under ``<storage root>/cache/answers`` and accounted (tokens, cost, latency) apart from generation.
The offline models (``gold-echo``, ``sql-mutant``) and replayed predictions are answered by the offline
answerer, which renders the rows by a fixed template (``template_answer``), so everything runs with no key.
A candidate whose SQL did not run (no SQL, an error, a policy rejection) gets no answer (``no_result``) and
nothing is sent for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache
from nl2sql_pipeline.generation.conversation import cached_call
from nl2sql_pipeline.generation.dispatch import RunControl, dispatch, limiter_for, slots_for
from nl2sql_pipeline.generation.failures import NOT_READY
from nl2sql_pipeline.generation.model_spec import KIND_LITELLM, ModelSpec
from nl2sql_pipeline.generation.prompts import prompt_hash
from nl2sql_pipeline.generation.readiness import model_readiness
from nl2sql_pipeline.generation.registry import prompts_dir
from nl2sql_pipeline.generation.section_prompt import SectionPrompt, load_section_prompt
from nl2sql_pipeline.progress import (
    STAGE_ANSWER,
    ProgressTracker,
    counted,
    left_out_cases,
    tracking,
    units_of_questions,
)

logger = logging.getLogger(__name__)

ANSWER_PROMPT = "answer-v1"
ANSWER_ROW_LIMIT = 20
"""Rows of the candidate's result an answer is given (and the offline answerer spells out)."""
ANSWER_CHARS_LIMIT = 4000
SOURCE_MODEL = "model"
SOURCE_ANSWER_MODEL = "answer_model"
SOURCE_TEMPLATE = "template"
SOURCE_SYSTEM = "system"
NO_RESULT = "no_result"  # the candidate's SQL returned no result to answer from: nothing sent
NO_ANSWER = "no_answer"  # the reply (or the system) gave no answer text


def default_answer_cache_root() -> Path:
    """``<storage root>/cache/answers``."""
    return paths.cache_dir() / "answers"


@dataclass(frozen=True)
class AnswerRecord:
    """One candidate's answer: a row of the ``candidate_answers`` asset."""

    case_id: str
    case_fingerprint: str
    sample_index: int
    candidate_index: int
    answer: str | None
    source: str  # model | answer_model | template | system
    answerer: str  # the slug that answered, or 'template'
    answerer_config_hash: str | None
    error_class: str | None
    error_message: str | None
    row_count: int | None
    rows_json: str | None
    """The columns and first rows the answer was given: ``{"columns", "rows", "row_count", "truncated"}``."""
    sql: str | None = None  # the candidate SQL answered from (reports match answers to the verdicts they explain)
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    token_source: str | None = None
    cost_usd: float | None = None
    cached: bool = False
    calls: int = 0
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (one DataFrame row)."""
        return asdict(self)


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        return float(value)  # Decimal
    except (TypeError, ValueError):
        return str(value)


def rows_payload(result: QueryResult | None, limit: int = ANSWER_ROW_LIMIT) -> dict[str, Any] | None:
    """The columns and first ``limit`` rows of a successful result, JSON-ready; None without one."""
    if result is None or not result.ok:
        return None
    return {
        "columns": list(result.columns),
        "rows": [[_cell(v) for v in row] for row in result.rows[:limit]],
        "row_count": len(result.rows),
        "truncated": bool(result.truncated) or len(result.rows) > limit,
    }


def format_value(value: Any) -> str:
    """A cell as an answer writes it: integers plain, other numbers with at most two decimals."""
    if isinstance(value, bool) or value is None:
        return "null" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        number = float(value)
        if number == int(number) and abs(number) < 1e15:
            return str(int(number))
        return f"{number:.2f}".rstrip("0").rstrip(".")
    return str(value)


def rows_text(payload: Mapping[str, Any] | None, chars: int = ANSWER_CHARS_LIMIT) -> str:
    """The payload as a pipe-separated table for a prompt, cut at ``chars`` characters."""
    if payload is None:
        return "(the query returned no result)"
    lines = [" | ".join(str(c) for c in payload["columns"])]
    lines += [" | ".join(format_value(v) for v in row) for row in payload["rows"]]
    if payload["truncated"]:
        lines.append(f"... ({payload['row_count']} rows in all; the first {len(payload['rows'])} shown)")
    text = "\n".join(lines)
    return text if len(text) <= chars else text[: chars - 4] + "\n..."


def _row_phrase(columns: Sequence[str], row: Sequence[Any]) -> str:
    if len(row) == 1:
        return format_value(row[0])
    return ", ".join(f"{name}: {format_value(value)}" for name, value in zip(columns, row))


def template_answer(payload: Mapping[str, Any] | None) -> str | None:
    """The offline answerer: the rows rendered by a fixed template (None without a result).

    >>> template_answer({"columns": ["n"], "rows": [[412]], "row_count": 1, "truncated": False})
    'The answer is 412.'
    >>> template_answer({"columns": ["studio", "n"], "rows": [["Toei", 3], ["Madhouse", 2]], "row_count": 2, "truncated": False})
    'The query returned 2 rows: studio: Toei, n: 3; studio: Madhouse, n: 2.'
    """
    if payload is None:
        return None
    columns, rows, count = payload["columns"], payload["rows"], payload["row_count"]
    if not rows:
        return "The query returned 0 rows."
    if count == 1:
        return f"The answer is {_row_phrase(columns, rows[0])}."
    listed = "; ".join(_row_phrase(columns, row) for row in rows)
    if payload["truncated"]:
        return f"The query returned {count} rows; the first {len(rows)}: {listed}."
    return f"The query returned {count} rows: {listed}."


def answer_spec_for(spec: ModelSpec, registry: Mapping[str, ModelSpec], answer_model: str | None) -> ModelSpec | None:
    """The litellm model that answers for ``spec`` (its ``answer_model`` or itself); None: the offline answerer."""
    if answer_model is not None:
        from nl2sql_pipeline.generation.registry import get_model

        chosen = get_model(answer_model, registry)
        return chosen if chosen.kind == KIND_LITELLM else None
    return spec if spec.kind == KIND_LITELLM else None


@dataclass
class _Answerer:
    spec: ModelSpec
    answer_spec: ModelSpec | None
    source: str
    cache: GenerationCache | None
    control: RunControl | None
    ready: tuple[bool, str] | None = None
    prompt: SectionPrompt | None = None  # read once per run

    def base(self, attempt: Any, payload: dict[str, Any] | None, **values: Any) -> AnswerRecord:
        answerer = self.answer_spec.slug if self.answer_spec is not None else SOURCE_TEMPLATE
        if self.source == SOURCE_SYSTEM:
            answerer = self.spec.slug
        fields: dict[str, Any] = {
            "case_id": attempt.case_id,
            "case_fingerprint": attempt.case_fingerprint,
            "sample_index": attempt.sample_index,
            "candidate_index": attempt.candidate_index,
            "source": self.source,
            "answerer": answerer,
            "answerer_config_hash": self.answer_spec.config_hash if self.answer_spec is not None else None,
            "row_count": payload["row_count"] if payload is not None else None,
            "rows_json": json.dumps(payload, ensure_ascii=False) if payload is not None else None,
            "sql": attempt.sql,
            "answer": None,
            "error_class": None,
            "error_message": None,
        }
        fields.update(values)
        return AnswerRecord(**fields)

    def answer(self, case: Case, attempt: Any) -> AnswerRecord:
        """The answer of one ``stages.records.Attempt`` (typed loosely: the stages package sits above this one)."""
        payload = rows_payload(attempt.result)
        if self.source == SOURCE_SYSTEM:
            own = attempt.generation.answer if attempt.generation is not None else None
            if own:
                return self.base(attempt, payload, answer=own)
            return self.base(attempt, payload, error_class=NO_ANSWER, error_message="the system returned no answer")
        if payload is None:
            why = "its SQL returned no result (no SQL, an error or a policy rejection)"
            return self.base(attempt, None, error_class=NO_RESULT, error_message=f"not answered: {why}")
        if self.answer_spec is None:
            return self.base(attempt, payload, answer=template_answer(payload))
        return self._ask(case, attempt, payload)

    def _ask(self, case: Case, attempt: Any, payload: dict[str, Any]) -> AnswerRecord:
        assert self.answer_spec is not None and self.control is not None
        if self.prompt is None:
            self.prompt = load_section_prompt(prompts_dir() / f"{ANSWER_PROMPT}.txt", "answer prompt")
        messages = self.prompt.render(
            {
                "question": case.question,
                "sql": attempt.sql or "",
                "rows": rows_text(payload),
                "row_count": str(payload["row_count"]),
            }
        )
        key = CacheKey(
            self.answer_spec.config_hash,
            prompt_hash(messages),
            case.fingerprint,
            attempt.sample_index,
            attempt.candidate_index,
        )
        call = cached_call(self.cache, key)
        if call is not None:
            return self._answered(attempt, payload, call, cached=True, calls=0, attempts=0)
        if self.ready is None:
            state = model_readiness(self.answer_spec)
            self.ready = (state.ready, state.reason)
        if not self.ready[0]:
            message = f"not sent: model {self.answer_spec.slug} is not ready: {self.ready[1]}"
            return self.base(attempt, payload, error_class=NOT_READY, error_message=message)
        sent = dispatch(self.answer_spec, messages, self.control, case_id=case.id)
        if sent.call is None:
            assert sent.failure is not None
            return self.base(
                attempt,
                payload,
                error_class=sent.failure.error_class,
                error_message=sent.failure.message[:2000],
                calls=1 if sent.attempts else 0,
                attempts=sent.attempts,
            )
        if self.cache is not None and (sent.call.raw_reply or "").strip():
            self.cache.put(key, sent.call.to_dict())
        return self._answered(attempt, payload, sent.call, cached=False, calls=1, attempts=sent.attempts)

    def _answered(self, attempt: Any, payload: dict[str, Any], call: Any, **values: Any) -> AnswerRecord:
        text = (call.raw_reply or "").strip() or None
        return self.base(
            attempt,
            payload,
            answer=text,
            error_class=None if text else NO_ANSWER,
            error_message=None if text else "the reply holds no answer",
            latency_ms=call.latency_ms,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            token_source=call.token_source,
            cost_usd=call.cost_usd,
            **values,
        )


def answer_candidates(
    cases: Iterable[Case],
    attempts: Iterable[Any],
    spec: ModelSpec,
    *,
    registry: Mapping[str, ModelSpec] | None = None,
    answer_model: str | None = None,
    cache: GenerationCache | None = None,
    workers: int | None = None,
    progress: ProgressTracker | None = None,
) -> list[AnswerRecord]:
    """An answer for every model attempt (``stages.records.Attempt``, executed) of the query cases (not the
    ambiguous questions, scored on asking back), in order.

    ``answer_model`` (a registry slug; default the entry's own ``answer_model:``) answers instead of ``spec`` itself;
    a system keeps its own answers; the
    offline models and replays use the offline answerer unless ``answer_model`` names a litellm model.
    """
    if registry is None:
        from nl2sql_pipeline.generation.registry import load_registry

        registry = load_registry()
    cases = list(cases)
    # an ambiguous question is scored on asking back (stages.clarify), never on an answer
    by_id = {case.id: case for case in cases if not case.is_probe and not case.is_clarify}
    todo = [a for a in attempts if not a.is_probe and a.case_id in by_id]
    answer_model = answer_model or spec.answer_model  # the run's choice, else the registry entry's
    if spec.is_system:
        answer_spec, source = None, SOURCE_SYSTEM
    else:
        answer_spec = answer_spec_for(spec, registry, answer_model)
        if answer_spec is None:
            source = SOURCE_TEMPLATE
        else:
            source = SOURCE_ANSWER_MODEL if answer_model is not None else SOURCE_MODEL
    control = None
    if answer_spec is not None:
        control = RunControl(limiter=limiter_for(answer_spec), slots=slots_for(answer_spec))
    answerer = _Answerer(
        spec,
        answer_spec,
        source,
        cache if cache is not None else GenerationCache(default_answer_cache_root()),
        control,
    )
    count = max(1, min(workers or (answer_spec.limits.max_concurrency if answer_spec else None) or 1, len(todo) or 1))
    with tracking(progress, STAGE_ANSWER, spec.slug) as tracker:
        tracker.begin(
            len(todo),
            counted(
                units_of_questions(len(todo), "answers", len(by_id)),
                left_out_cases(
                    "not answered",
                    probes=sum(case.is_probe for case in cases),
                    ambiguous_questions=sum(case.is_clarify and not case.is_probe for case in cases),
                ),
            ),
        )

        def answer_one(attempt: Any) -> AnswerRecord:
            record = answerer.answer(by_id[attempt.case_id], attempt)
            tracker.unit_finished(
                calls=record.calls,
                attempts=record.attempts,
                cached=record.cached,
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                cost_usd=record.cost_usd,
                cost_expected=record.calls > 0 or record.cached,
                failure=record.error_class,
                started=False,
            )
            return record

        if count == 1:
            return [answer_one(a) for a in todo]
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix=f"answer-{spec.slug}") as pool:
            return list(pool.map(answer_one, todo))


def answers_summary(records: Sequence[AnswerRecord]) -> dict[str, Any]:
    """Counts for logs and metadata: answers, by source, calls, cache hits, errors, tokens and answer cost."""
    costs = [r.cost_usd for r in records if r.calls or r.cached]
    errors: dict[str, int] = {}
    for record in records:
        if record.error_class is not None:
            errors[record.error_class] = errors.get(record.error_class, 0) + 1
    return {
        "answers": sum(r.answer is not None for r in records),
        "candidates": len(records),
        "calls": sum(r.calls for r in records),
        "cached": sum(r.cached for r in records),
        **{f"errors_{k}": v for k, v in sorted(errors.items())},
        "input_tokens": sum(r.input_tokens or 0 for r in records),
        "output_tokens": sum(r.output_tokens or 0 for r in records),
        "answer_cost_usd": None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None)),
    }
