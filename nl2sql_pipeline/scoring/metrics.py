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
        "test_suite_disagreements",
        "json",
        False,
        "cases correct under execution accuracy but not under test-suite accuracy, with the variant that differed",
    ),
)

METRICS_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
HEADLINE_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.headline)
