"""The answer judge: a rubric score of every candidate's answer, and the answer's grade.

Rubric (``data/prompts/judges/rubrics/<rubric_version>.txt``): correctness against the reference, groundedness
in the rows the candidate's own SQL returned (no number or name that is not in them), completeness; each 1-5
with a one-sentence rationale, as one JSON object valid against ``ANSWER_SCHEMA``.

The reference is the case's ``expected_answer`` when it has one, else the gold result rows (the first
``ANSWER_ROW_LIMIT`` of them). What each judge sees: the question, the reference, the candidate's rows and its
answer; never the expected SQL (nor the candidate's SQL), so a case written without SQL is judged exactly as its
author wrote it. Deterministic first, in this order (``decide_answer``):

1. no answer (nothing came back, or the SQL returned no result): every score 1, no call;
2. a checkable expected answer (a number, a date or a short list of entities, ``judges.values``): decided by
   the value check, no call (``method = value_check``);
3. ``judge-oracle``: decided from the gold rows and values (``judges.oracle``, ``method = oracle``);
4. an LLM judge through ``judges.client`` (``method = llm``); a failed call leaves the answer unjudged with its
   failure class (``judge_error``, ``payment_required``, ...).

An answer *passes* when every score reaches ``AnswerThresholds.pass_score`` (default 4), is *partial* when
correctness reaches ``partial_score`` (default 3), and *fails* otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.generation.answers import AnswerRecord, rows_payload, rows_text
from nl2sql_pipeline.judges.client import JudgeClient, JudgeOutcome, JudgeRequest
from nl2sql_pipeline.judges.oracle import (
    UNDECIDABLE,
    Reference,
    reference_from_expected,
    reference_from_rows,
    score_answer,
)
from nl2sql_pipeline.judges.prompts import load_judge_prompt, load_rubric
from nl2sql_pipeline.judges.registry import ROLE_ANSWER, JudgeSpec
from nl2sql_pipeline.judges.values import expected_values
from nl2sql_pipeline.stages.records import OracleRow

CRITERIA: tuple[str, ...] = ("correctness", "groundedness", "completeness")
_CRITERION_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "rationale": {"type": "string", "minLength": 1},
    },
    "required": ["score", "rationale"],
    "additionalProperties": False,
}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {name: _CRITERION_SCHEMA for name in CRITERIA},
    "required": list(CRITERIA),
    "additionalProperties": False,
}
METHOD_NO_ANSWER = "no_answer"
METHOD_VALUE_CHECK = "value_check"
METHOD_ORACLE = "oracle"
METHOD_LLM = "llm"
GRADES: tuple[str, ...] = ("pass", "partial", "fail")


@dataclass(frozen=True)
class AnswerThresholds:
    """Scores (1-5) an answer needs: every criterion at ``pass_score`` passes, correctness at ``partial_score``
    is partial credit."""

    pass_score: int = 4
    partial_score: int = 3

    def grade(self, scores: Mapping[str, int | None]) -> str | None:
        """pass / partial / fail from the three scores (None when the answer was not judged)."""
        values = [scores.get(name) for name in CRITERIA]
        if any(v is None for v in values):
            return None
        if all(v is not None and v >= self.pass_score for v in values):
            return "pass"
        correctness = scores["correctness"]
        return "partial" if correctness is not None and correctness >= self.partial_score else "fail"


@dataclass(frozen=True)
class AnswerJudgement:
    """One judged answer: a row of the ``answer_judgements`` asset."""

    case_id: str
    case_fingerprint: str
    sample_index: int
    candidate_index: int
    judge: str
    judge_config_hash: str
    method: str  # no_answer | value_check | oracle | llm
    reference: str  # expected_answer | gold_rows | gold_row_count | none
    answer: str | None
    correctness: int | None
    groundedness: int | None
    completeness: int | None
    correctness_rationale: str | None
    groundedness_rationale: str | None
    completeness_rationale: str | None
    answer_grade: str | None
    error_class: str | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    cached: bool = False
    calls: int = 0
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (one DataFrame row)."""
        return asdict(self)


def case_reference(case: Case, oracle_rows: Sequence[OracleRow]) -> tuple[Reference | None, str]:
    """The case's reference for the oracle and the value check, and its text for an LLM judge."""
    if case.expected_answer is not None:
        text = case.expected_answer if isinstance(case.expected_answer, str) else json.dumps(case.expected_answer)
        return reference_from_expected(case.expected_answer), text
    canonical = next((r for r in oracle_rows if r.alternative_index == 0 and r.result.ok), None)
    if canonical is None:
        return None, ""
    result = canonical.result
    reference = reference_from_rows(result.rows, truncated=result.truncated)
    return reference, rows_text(rows_payload(result))


def _candidate_rows(record: AnswerRecord) -> list[tuple]:
    if not record.rows_json:
        return []
    return [tuple(row) for row in json.loads(record.rows_json)["rows"]]


def _from_judgement(judgement: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in CRITERIA:
        out[name] = int(judgement[name]["score"])
        out[f"{name}_rationale"] = str(judgement[name]["rationale"])
    return out


@dataclass
class AnswerJudge:
    """Judges the answers of one run with one judge (``client`` for an LLM judge, None for the oracle)."""

    spec: JudgeSpec
    client: JudgeClient | None = None
    thresholds: AnswerThresholds = AnswerThresholds()

    def _record(self, case: Case, record: AnswerRecord, method: str, reference: str, **values: Any) -> AnswerJudgement:
        fields: dict[str, Any] = {
            "case_id": case.id,
            "case_fingerprint": case.fingerprint,
            "sample_index": record.sample_index,
            "candidate_index": record.candidate_index,
            "judge": self.spec.slug,
            "judge_config_hash": self.spec.config_hash,
            "method": method,
            "reference": reference,
            "answer": record.answer,
            **{name: None for name in CRITERIA},
            **{f"{name}_rationale": None for name in CRITERIA},
        }
        fields.update(values)
        scores = {name: fields[name] for name in CRITERIA}
        fields["answer_grade"] = self.thresholds.grade(scores)
        return AnswerJudgement(**fields)

    def decide(
        self, case: Case, record: AnswerRecord, oracle_rows: Sequence[OracleRow]
    ) -> AnswerJudgement | JudgeRequest:
        """A deterministic judgement, or the request an LLM judge must answer."""
        reference, reference_text = case_reference(case, oracle_rows)
        source = reference.source if reference is not None else "none"
        if not (record.answer or "").strip():
            why = record.error_message or "no answer"
            return self._record(
                case,
                record,
                METHOD_NO_ANSWER,
                source,
                **{name: 1 for name in CRITERIA},
                **{f"{name}_rationale": f"There is no answer ({why})." for name in CRITERIA},
            )
        rows = _candidate_rows(record)
        if case.expected_answer is not None and expected_values(case.expected_answer) is not None:
            assert reference is not None
            return self._record(
                case,
                record,
                METHOD_VALUE_CHECK,
                source,
                **_from_judgement(score_answer(reference, record.answer, rows, case.question, record.row_count)),
            )
        if self.spec.is_offline:
            if reference is None:
                return self._record(
                    case,
                    record,
                    METHOD_ORACLE,
                    source,
                    error_class=UNDECIDABLE,
                    error_message="the oracle cannot decide this reference (a sentence with no number, or no gold rows)",
                )
            return self._record(
                case,
                record,
                METHOD_ORACLE,
                source,
                **_from_judgement(score_answer(reference, record.answer, rows, case.question, record.row_count)),
            )
        prompt = load_judge_prompt(self.spec, ROLE_ANSWER)
        messages = prompt.render(
            {
                "rubric": load_rubric(self.spec),
                "question": case.question,
                "reference": reference_text or "(no reference)",
                "candidate_rows": rows_text(json.loads(record.rows_json)) if record.rows_json else "(no rows)",
                "candidate_answer": record.answer or "",
            }
        )
        return JudgeRequest(
            ROLE_ANSWER,
            case.id,
            case.fingerprint,
            tuple(messages),
            ANSWER_SCHEMA,
            subject=f"{record.sample_index}/{record.candidate_index}",
        )

    def from_outcome(self, case: Case, record: AnswerRecord, outcome: JudgeOutcome, reference: str) -> AnswerJudgement:
        """The judgement of an LLM judge's outcome (scores, or its failure class)."""
        accounting = {
            "latency_ms": outcome.latency_ms,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
            "cost_usd": outcome.cost_usd,
            "cached": outcome.cached,
            "calls": outcome.calls,
            "attempts": outcome.attempts,
        }
        if outcome.judgement is None:
            return self._record(
                case,
                record,
                METHOD_LLM,
                reference,
                error_class=outcome.error_class,
                error_message=outcome.error_message,
                **accounting,
            )
        return self._record(case, record, METHOD_LLM, reference, **_from_judgement(outcome.judgement), **accounting)


def judge_answers(
    cases: Iterable[Case],
    answers: Iterable[AnswerRecord],
    oracle_rows: Iterable[OracleRow],
    judge: AnswerJudge,
) -> list[AnswerJudgement]:
    """Every answer judged by ``judge``, in the order of ``answers`` (LLM calls made together, bounded by the
    judge's ``max_concurrency``)."""
    by_id = {case.id: case for case in cases}
    oracle_by_case: dict[str, list[OracleRow]] = {}
    for row in oracle_rows:
        oracle_by_case.setdefault(row.case_id, []).append(row)
    decided: list[AnswerJudgement | JudgeRequest] = []
    records = [r for r in answers if r.case_id in by_id]
    for record in records:
        decided.append(judge.decide(by_id[record.case_id], record, oracle_by_case.get(record.case_id, [])))
    pending = [(i, d) for i, d in enumerate(decided) if isinstance(d, JudgeRequest)]
    if pending:
        if judge.client is None:
            raise ValueError(f"judge {judge.spec.slug} needs a JudgeClient for its LLM judgements")
        outcomes = judge.client.judge_all([request for _, request in pending])
        for (index, _), outcome in zip(pending, outcomes):
            record = records[index]
            case = by_id[record.case_id]
            reference, _ = case_reference(case, oracle_by_case.get(case.id, []))
            decided[index] = judge.from_outcome(case, record, outcome, reference.source if reference else "none")
    return [d for d in decided if isinstance(d, AnswerJudgement)]


def combined_grade(execution_grade: str | None, answer_grade: str | None) -> str | None:
    """A case's grade with its answer judged: the worse of the execution grade and the answer grade (an
    answer-only case has no execution grade: its answer grade alone)."""
    grades = [g for g in (execution_grade, answer_grade) if g is not None]
    if not grades:
        return None
    return max(grades, key=GRADES.index)


def answer_summary(judgements: Sequence[AnswerJudgement]) -> dict[str, Any]:
    """Answer scores of a run: judged answers, mean scores, correct share (correctness >= 4), grades, costs."""
    judged = [j for j in judgements if j.correctness is not None]
    out: dict[str, Any] = {
        "answers_judged": len(judged),
        "answers_unjudged": len(judgements) - len(judged),
        "answer_correct_rate": (sum((j.correctness or 0) >= 4 for j in judged) / len(judged)) if judged else None,
        "judge_calls": sum(j.calls for j in judgements),
        "judge_cost_usd": sum(j.cost_usd or 0.0 for j in judgements),
    }
    for name in CRITERIA:
        values = [getattr(j, name) for j in judged]
        out[f"mean_{name}"] = sum(values) / len(values) if values else None
    for grade in GRADES:
        out[f"answer_{grade}"] = sum(j.answer_grade == grade for j in judged)
    by_method: dict[str, int] = {}
    for j in judgements:
        by_method[j.method] = by_method.get(j.method, 0) + 1
    out["by_method"] = by_method
    return out
