"""Evaluation settings shared by the assets: sandbox limits and comparator tolerances."""

from __future__ import annotations

import dagster as dg

from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import SandboxLimits
from nl2sql_pipeline.runs.gates import GateThresholds, thresholds_for_model


class EvalSettings(dg.ConfigurableResource):
    """Knobs of one evaluation (overridable per run from the launchpad)."""

    timeout_s: float = 10.0
    row_cap: int = 10_000
    memory_limit: str = "512MB"
    threads: int = 1
    max_result_mb: int = 256  # text, blobs and nested values fetched from one query's rows (a resource error past it)
    rel_tol: float = 1e-9
    abs_tol: float = 1e-9
    policy: str | None = None  # a policy name or file overriding every case's sql_policy for the run
    isolated: bool = False  # run candidates in a worker process killed at timeout (interrupt-proof backstop)
    test_suite_variants: int = 3  # database variants per case for test-suite accuracy (0: off)
    test_suite_seed: int = 0  # the seed the variants are drawn from
    strict_gold: bool = False  # a quarantined gold case fails the gold preflight (no model is evaluated)
    paraphrases: int = 0  # paraphrases asked per query case (paraphrase_verdicts; 0: off)
    perturb: str = ""  # schema perturbation kinds, comma-separated (perturbation_verdicts; "": off)
    # Optional measurements (nl2sql_pipeline.runs.measurements), each off by default:
    probe_systems: bool = False  # a live system is asked every policy probe's question (system_policy_recall)
    efficiency: bool = False  # correct candidates and their gold are profiled: the stable efficiency score
    # Answers and judges (issue 19): what candidate_answers and answer_judgements do when a run selects them
    # (`nl2sql-eval run --answers --judge SLUG`; in the UI, the answer_and_judge job).
    answers: bool = False  # ask bare models for a prose answer from their rows (systems keep their own)
    answer_model: str | None = None  # a models.yml slug answering instead of the evaluated model itself
    judges: list[str] = []  # judge slugs from data/judges.yml; each does every role it has
    # an answer passes when correctness, groundedness and completeness all reach answer_pass_score, earns partial
    # credit when correctness reaches answer_partial_score (unset: the gold set's answer_thresholds, else 4 and 3)
    answer_pass_score: int | None = None
    answer_partial_score: int | None = None
    judge_repeat: int = 1  # every judgement asked N times (--judge-repeat): each judge's own disagreement rate
    # Gates (nl2sql_pipeline.runs.gates): unset ones come from the model's `gates:` in data/models.yml, then
    # from nl2sql_pipeline.runs.gates.DEFAULT_GATES (max_skipped_share 0, max_execution_drop 0.05).
    max_skipped_share: float | None = None  # the run fails above this share of skipped query cases (always at 100%)
    min_execution_success: float | None = None  # floor of sql_execution_success_rate (probe-only runs exempt)
    min_semantic_correct: float | None = None  # floor of semantic_correctness_rate
    min_correctness: float | None = None  # alias of min_semantic_correct
    min_policy_recall: float | None = None  # floor of policy_rejection_recall (runs without probes exempt)
    max_regression: float | None = None  # the largest drop of semantic correctness against the baseline
    max_execution_drop: float | None = None  # the largest drop of SQL execution success against the baseline
    max_p95_latency_ms: float | None = None  # budget: the run's p95 generation latency ceiling (ms)
    max_cost_usd: float | None = None  # budget: the run's total cost ceiling (USD)

    def given_thresholds(self) -> GateThresholds:
        """The gate thresholds set in these settings (None: unset)."""
        return GateThresholds(
            max_skipped_share=self.max_skipped_share,
            min_execution_success=self.min_execution_success,
            min_semantic_correct=self.min_semantic_correct
            if self.min_semantic_correct is not None
            else self.min_correctness,
            min_policy_recall=self.min_policy_recall,
            max_regression=self.max_regression,
            max_execution_drop=self.max_execution_drop,
            max_p95_latency_ms=self.max_p95_latency_ms,
            max_cost_usd=self.max_cost_usd,
        )

    def gate_thresholds(self, model: str) -> GateThresholds:
        """The gate thresholds of a run of ``model``: these settings over the model's own ``gates:`` over the
        defaults (``runs.gates.DEFAULT_GATES``)."""
        return thresholds_for_model(self.given_thresholds(), model)

    def perturb_kinds(self) -> tuple[str, ...]:
        """The perturbation kinds of ``perturb`` (validated: an unknown kind raises PerturbationError)."""
        from nl2sql_pipeline.robustness.perturb import parse_kinds

        return parse_kinds(self.perturb)

    def limits(self) -> SandboxLimits:
        """Sandbox limits for every query of the run."""
        return SandboxLimits(
            timeout_s=self.timeout_s,
            row_cap=self.row_cap,
            memory_limit=self.memory_limit,
            threads=self.threads,
            max_result_bytes=self.max_result_mb * 1024 * 1024,
        )

    def compare_config(self) -> CompareConfig:
        """Comparator tolerances."""
        return CompareConfig(rel_tol=self.rel_tol, abs_tol=self.abs_tol)


JUDGING_FIELDS = ("answers", "answer_model", "judges", "answer_pass_score", "answer_partial_score", "judge_repeat")


def judging_identity(settings: EvalSettings, gold_set: str, model: str, asset: str) -> str:
    """The identity (``nl2sql_pipeline.judges.identity``) of ``asset``'s judgements of a partition under ``settings``."""
    from nl2sql_pipeline.judges.identity import settings_identities

    return settings_identities(model, gold_set, {name: getattr(settings, name) for name in JUDGING_FIELDS})[asset]
