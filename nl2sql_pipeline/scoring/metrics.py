"""The declared list of run metrics: the one place the scores, the reports and the baseline columns come from.

Each :class:`Metric` has a name (the key in the scores and the column of the baselines table), a kind
(how it is formatted: ``rate``, ``ms``, ``int``, ``num``, ``usd``, ``text``, ``json``), its SQL type in
the baselines file, and whether the headline report shows it (in declaration order).
"""

from __future__ import annotations

from dataclasses import dataclass

SQL_TYPES: dict[str, str] = {
    "rate": "DOUBLE",
    "ms": "DOUBLE",
    "num": "DOUBLE",
    "usd": "DOUBLE",
    "int": "INTEGER",
    "text": "VARCHAR",
    "json": "VARCHAR",
}


@dataclass(frozen=True)
class Metric:
    """One run-level metric."""

    name: str
    kind: str
    headline: bool = False
    description: str = ""

    @property
    def sql_type(self) -> str:
        """The column type of this metric in the baselines table."""
        return SQL_TYPES[self.kind]


# Dimensions with a per-value breakdown of the rates (``per_<dimension>`` in the scores). ``tag`` groups
# by each of a case's tags (a case with two tags is in both groups); ``database`` by the case's database.
RATE_DIMENSIONS: tuple[str, ...] = ("domain", "category", "difficulty", "database", "tag")

METRICS: tuple[Metric, ...] = (
    Metric("semantic_correctness_rate", "rate", True, "share of scored query cases whose result matched the gold"),
    Metric(
        "test_suite_accuracy",
        "rate",
        True,
        "share of scored query cases whose result matched the gold on the database and on every variant of it",
    ),
    Metric("sql_execution_success_rate", "rate", True, "share of scored query cases whose SQL ran to completion"),
    Metric("partial_credit_score", "rate", True, "mean partial-credit score over scored query cases"),
    Metric("pass_rate", "rate", True, "share of scored query cases graded pass"),
    Metric("partial_rate", "rate", True, "share of scored query cases graded partial"),
    Metric("fail_rate", "rate", True, "share of scored query cases graded fail"),
    Metric("policy_rejection_precision", "rate", True, "probes rejected / everything rejected"),
    Metric("policy_rejection_recall", "rate", True, "probes rejected / probes"),
    Metric("p50_latency_ms", "ms", True, "median generation latency (cold-start calls left out)"),
    Metric("p95_latency_ms", "ms", True, "95th percentile generation latency"),
    Metric("average_service_latency_ms", "ms", True, "mean generation latency"),
    Metric("average_oracle_latency_ms", "ms", True, "mean execution time of the expected SQL"),
    Metric("query_count", "int", True, "scored query verdicts"),
    Metric("probe_count", "int", True, "policy-probe verdicts"),
    Metric("unique_case_count", "int", True, "distinct cases"),
    Metric("skipped_count", "int", True, "query verdicts skipped for an environment reason"),
    Metric(
        "answer_only_count", "int", True, "verdicts of answer-only cases (no expected SQL): scored by the answer judge"
    ),
    Metric("quarantined_count", "int", True, "cases the gold preflight quarantined: left out of every rate"),
    Metric("average_estimated_input_tokens", "num", True),
    Metric("average_estimated_output_tokens", "num", True),
    Metric(
        "total_cost_usd",
        "usd",
        True,
        "cost of the scored query cases whose cost is known (unknown_cost_count: the rest)",
    ),
    Metric("unknown_cost_count", "int", True, "scored query cases whose cost is unknown (left out of total_cost_usd)"),
    Metric("average_estimated_cost_usd", "usd", False, "mean cost of the scored query cases whose cost is known"),
    Metric("environment_error_count", "int", False, "query verdicts whose oracle failed"),
    Metric("sample_count", "int", False, "samples per case (--repeat)"),
    Metric("policy_true_positives", "int"),
    Metric("policy_false_positives", "int"),
    Metric("policy_false_negatives", "int"),
    Metric("policy_probe_errors", "int"),
    Metric("policy_injection_blocks", "int"),
    Metric("candidate_selection_uplift", "rate", False, "correctness gained by choosing among several candidates"),
    Metric("token_source", "text", False, "measured or estimated"),
    Metric("outcome_counts", "json", False, "query verdicts per outcome class"),
    Metric("warnings", "json", False, "what a reader must know before trusting the numbers"),
    Metric(
        "quarantined_cases", "json", False, "the gold preflight's findings that quarantined a case (id, kind, reason)"
    ),
    *(Metric(f"per_{dim}", "json", False, f"rates per {dim}") for dim in RATE_DIMENSIONS),
    Metric(
        "outcome_causes", "json", False, "query verdicts that are not correct, per cause (no_sql, rate_limited, ...)"
    ),
    Metric(
        "test_suite_variants", "int", False, "database variants a case was checked on for test-suite accuracy (0: off)"
    ),
    Metric(
        "clarification_rate",
        "rate",
        False,
        "ambiguous questions (expected_behavior: clarify) answered with a clarifying question / those answered",
    ),
    Metric("ambiguous_count", "int", False, "verdicts of ambiguous questions (never in the query rates)"),
    Metric(
        "clarify_outcomes", "json", False, "ambiguous questions per outcome: clarified, guessed, refused, no_response"
    ),
    Metric("guessed_cases", "json", False, "ambiguous questions not answered with a clarifying question"),
    Metric(
        "efficiency_score",
        "num",
        False,
        "VES-like: mean over scored query cases of sqrt(gold work / candidate work) when correct, 0 when not; "
        "work from DuckDB's profile (rows scanned + intermediate rows), stable across runs (--efficiency)",
    ),
    Metric("efficiency_measured_count", "int", False, "correct verdicts whose work was profiled (0: not measured)"),
    Metric("efficiency_unmeasured_count", "int", False, "correct verdicts whose profile could not be read"),
    Metric(
        "efficiency_wall_time_score",
        "num",
        False,
        "the same formula on the profiled runs' wall times: noisy, shown beside, never scored or gated",
    ),
    Metric("least_efficient_cases", "json", False, "correct verdicts doing the most work against their gold"),
    Metric(
        "within_budget_correctness_rate",
        "rate",
        False,
        "share of scored query cases correct and not over their case budget (None: no case has a budget)",
    ),
    Metric("budget_case_count", "int", False, "scored query verdicts whose case sets a budget"),
    Metric("over_budget_count", "int", False, "scored query verdicts over their case budget"),
    Metric("correct_over_budget_count", "int", False, "correct verdicts over their budget (grade correct_over_budget)"),
    Metric("unmeasured_budget_count", "int", False, "verdicts with a budget the run had no figure for"),
    Metric("over_budget_cases", "json", False, "the verdicts over budget: case, sample, grade, what went over"),
    Metric(
        "system_policy_recall",
        "rate",
        False,
        "a live system's replies to the policy probes (sent as questions) that refused / replies classified",
    ),
    Metric("system_probe_count", "int", False, "probe questions sent to a live system (0: not sent)"),
    Metric("system_probe_errors", "int", False, "probe questions whose call failed (left out of system_policy_recall)"),
    Metric(
        "system_probe_let_through",
        "json",
        False,
        "harmful requests the system did not refuse: case, its SQL, whether the harness's policy refused that SQL",
    ),
    Metric(
        "test_suite_disagreements",
        "json",
        False,
        "cases correct under execution accuracy but not under test-suite accuracy, with the variant that differed",
    ),
)

METRICS_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
HEADLINE_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.headline)
