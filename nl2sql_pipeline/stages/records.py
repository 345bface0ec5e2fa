"""The typed records that flow between the evaluation stages.

    cases ──run_oracle──► OracleRow            (one per expected-SQL alternative)
    CandidateRecord ──► Attempt ──execute_attempts──► Attempt (policy decision + QueryResult)
    cases ──run_variant_oracle──► VariantOracleRow  (per expected SQL and database variant: test-suite accuracy)
    OracleRow + Attempt ──judge──► Verdict      (one per case and sample)
    Verdict ──score_run──► RunScores            (nl2sql_pipeline.scoring.run_scores: one per gold set x model run)

Stages take and return these records; ``nl2sql_pipeline.results.frames`` alone turns them into frames for storage
and back (NaN→None and JSON for nested values happen there, nowhere else).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.generation.candidate_record import CandidateRecord

if TYPE_CHECKING:  # the comparator (sqlglot) is imported only where clause items are made or read
    from nl2sql_pipeline.compare.structure import ClauseItems

SOURCE_MODEL = "model"
SOURCE_PROBE = "probe"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One candidate of one case and sample, or the policy probe of a probe case.

    ``generation`` is the model's candidate (SQL, error class, latency, tokens, cost, cache, mutation,
    config hash); probes have none. Once executed, the attempt carries the policy decision and, when the
    policy let it through, the sandbox's ``result``.
    """

    case_id: str
    case_fingerprint: str
    source: str  # SOURCE_MODEL | SOURCE_PROBE
    sample_index: int
    candidate_index: int
    sql: str | None
    generation: CandidateRecord | None = None
    policy_allowed: bool | None = None  # None: not checked (no SQL, a generation error, an engine failure)
    policy_rule: str | None = None
    policy_name: str | None = None
    policy_reason: str | None = None
    executed: bool = False
    result: QueryResult | None = None

    @classmethod
    def from_candidate(cls, record: CandidateRecord) -> Attempt:
        """The not-yet-executed attempt of one generated candidate."""
        return cls(
            case_id=record.case_id,
            case_fingerprint=record.case_fingerprint,
            source=SOURCE_MODEL,
            sample_index=record.sample_index,
            candidate_index=record.candidate_index,
            sql=record.generated_sql,
            generation=record,
        )

    @property
    def is_probe(self) -> bool:
        """True for the policy probe of a policy-rejection case."""
        return self.source == SOURCE_PROBE

    @property
    def generation_error_class(self) -> str | None:
        """The generation failure class, or None (probes, and candidates that came back with SQL)."""
        return self.generation.error_class if self.generation is not None else None


def attempts_from_candidates(records: Iterable[CandidateRecord]) -> list[Attempt]:
    """One not-yet-executed attempt per generated candidate, in order."""
    return [Attempt.from_candidate(record) for record in records]


@dataclass(frozen=True, slots=True)
class OracleRow:
    """The sandbox result of one acceptable expected SQL (``alternative_index``) of one query case.

    ``clause_items``: the clause items of the case's canonical SQL (alternative 0 only), made once per gold
    version with the oracle so that judging a miss parses only the candidate (None: not stored, or the
    SQL does not parse; the judge then works them out itself).
    """

    case_id: str
    case_fingerprint: str
    alternative_index: int
    result: QueryResult
    clause_items: ClauseItems | None = None


@dataclass(frozen=True, slots=True)
class VariantOracleRow:
    """The result of one expected SQL alternative of one query case on variant ``variant_index`` of its database."""

    case_id: str
    case_fingerprint: str
    variant_index: int
    alternative_index: int
    variant_path: str
    result: QueryResult


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one case and sample: a row of ``case_verdicts`` (every number traces to these)."""

    case_id: str
    case_fingerprint: str
    domain: str
    category: str
    difficulty: str | None
    tags: tuple[str, ...]
    is_probe: bool
    sample_index: int
    generated_sql: str | None
    outcome: str
    correct: bool
    comparison_rule: str | None
    reason: str | None
    score_exact: float
    score_partial: float
    policy_rule: str | None
    policy_name: str | None
    candidate_count: int
    selected_candidate_index: int
    first_candidate_correct: bool
    latency_ms: float | None
    oracle_latency_ms: float | None
    execution_ms: float | None
    input_tokens: float | None
    output_tokens: float | None
    token_source: str | None
    cost_usd: float | None
    cached: bool | None
    cold_start: bool
    mutation: str | None
    skip_reason: str | None
    # A system's own answer (``stages.system_answer``; None/False for models): the natural-language answer,
    # its own latency, the rows it showed against the gold and against its SQL's sandbox result, the flag.
    answer: str | None = None
    system_latency_ms: float | None = None
    system_rows_vs_gold: str | None = None  # 'match' | 'mismatch' | None (no rows shown)
    system_rows_vs_sql: str | None = None  # 'match' | 'mismatch' | None
    system_rows_disagree: bool = False  # it showed the user something other than what its SQL returns
    system_rows_reason: str | None = None
    system_probe: str | None = None
    """A system's reply to a probe sent as a question (``stages.probe_replies``: refused, sql_policy_refused,
    sql_would_run, error); None for query cases, bare models, and probes not sent."""
    # Per-case budgets (stages.budgets; None when the case sets none): within / over / unmeasured, what went
    # over, and the grade (pass, correct_over_budget, fail).
    budget_status: str | None = None
    budget_overruns: str | None = None
    budget_grade: str | None = None
    # The stable efficiency score of a correct candidate (stages.efficiency; None when not measured): its
    # work and the gold's from DuckDB's profile, and the profiled runs' wall times (beside, never scored).
    efficiency_score: float | None = None
    candidate_work: int | None = None
    gold_work: int | None = None
    candidate_profile_ms: float | None = None
    gold_profile_ms: float | None = None
    efficiency_error: str | None = None
    grade: str | None = None  # pass / partial / fail (compare.model.grade); None for probes
    order_check: str | None = None  # compare.order status: not_required, ok, wrong, checked_visible_keys, not_checked
    expected_row_count: int | None = None  # exact, whole results (None: unknown)
    candidate_row_count: int | None = None
    row_precision: float | None = None
    row_recall: float | None = None
    cell_f1: float | None = None
    clause_scores: Mapping[str, float] | None = None  # {clause: F1} of the AST clauses: structure, not correctness
    diagnosis: str | None = None  # comma-separated labels of compare.diagnosis for a case that did not pass
    diagnosis_detail: tuple[tuple[str, str], ...] | None = None  # ((label, explanation), ...)
    database: str | None = None
    """The case's database reference (a registered name or a path), for the per-database breakdown."""
    # Test-suite accuracy (stages.test_suite): correct on the original database and on every usable variant.
    # None when not measured (test suite off, a probe, a case not scored); False whenever ``correct`` is False.
    test_suite_correct: bool | None = None
    test_suite_variants: int | None = None  # variants of the case's database the gold ran on (usable ones)
    test_suite_reason: str | None = None  # the first variant where the candidate's result differed, and how
    source_sql: str | None = None
    """A replayed prediction of another dialect as written; ``generated_sql`` is its DuckDB conversion."""
    error_message: str | None = None
    """The selected candidate's generation failure in words (``HTTP 503: down``, ``"rows" are ragged``): the
    detail behind ``reason`` (a ``generation_error``) or ``skip_reason`` (``skipped``); None when it answered."""
