"""``SqlJudgement``: one judge's word on one case and sample (a row of the ``sql_judgements`` asset).

A judge with role ``sql_equivalence`` says whether the candidate SQL is equivalent to the expected SQL
(``equivalent``, ``reason``); a judge with role ``diagnosis`` says, for a case that is not correct, what
went wrong (``category``, ``reason``) and what a team can change (``recommendation_kind``,
``recommendation``). ``repeat_index`` numbers the repeats of ``--judge-repeat N`` (0 is the first); a
judgement that failed carries ``error_class`` (``judge_error`` for a malformed reply, or a provider failure
class) and no decision. The execution verdict it was made beside is copied in (``outcome``,
``test_suite_correct``, ``rule_diagnosis``), so reliability can be measured from these rows alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE

SQL_ROLES: tuple[str, ...] = (ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS)

JUDGE_ERROR = "judge_error"
"""The error class of a reply that stayed malformed after one retry (``judges.client.JUDGE_ERROR``)."""


@dataclass(frozen=True, slots=True)
class SqlJudgement:
    """One judge's judgement of one case, sample and repeat, in one role."""

    case_id: str
    sample_index: int
    judge: str
    role: str  # ROLE_SQL_EQUIVALENCE | ROLE_DIAGNOSIS
    repeat_index: int
    generated_sql: str | None
    outcome: str  # the execution verdict's outcome
    test_suite_correct: bool | None = None
    rule_diagnosis: str | None = None  # compare.diagnosis labels of the verdict (comma-separated)
    equivalent: bool | None = None  # sql_equivalence: the judge's decision (None: no decision)
    category: str | None = None  # diagnosis: one of diagnosis.CATEGORIES
    recommendation_kind: str | None = None  # diagnosis: one of diagnosis.RECOMMENDATION_KINDS
    recommendation: str | None = None
    reason: str | None = None  # the judge's one-sentence reason or explanation
    error_class: str | None = None  # None: judged; JUDGE_ERROR or a provider failure class
    error_message: str | None = None
    judge_version: str | None = None  # the judge's model, prompt version and config hash, as one label
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False

    @property
    def decided(self) -> bool:
        """True when the judge gave a decision (no error)."""
        return self.error_class is None and (self.equivalent is not None or self.category is not None)

    @property
    def item(self) -> tuple[str, int]:
        """(case id, sample index): what was judged."""
        return self.case_id, self.sample_index
