"""The outcome of one attempt, decided by small named rules in a visible order (first answer wins).

Each rule takes an :class:`OutcomeInput` and returns a :class:`Decision` or None (not my case). The
order is the meaning: a generation failure is decided before the policy is asked, the policy before the
oracle, the oracle before execution, execution before comparison. Every attempt that reaches
``compare_with_oracle`` has a result, so it decides.

Probe attempts (policy-rejection cases) have their own short list, :data:`PROBE_RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nl2sql_pipeline.compare import CompareConfig, Comparison
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Attempt
from nl2sql_pipeline.stages.selection import WholeResults, best_comparison


@dataclass(frozen=True, slots=True)
class OutcomeInput:
    """What a rule may look at: the attempt, the case's oracle results (one per alternative), the config,
    and where whole results can be recomputed (None: compare what was fetched)."""

    attempt: Attempt
    oracle_results: Sequence[QueryResult]
    config: CompareConfig
    whole: WholeResults | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """An outcome class, the comparison behind it (when one ran), and the reason a reader sees."""

    outcome: str
    comparison: Comparison | None = None
    reason: str | None = None


OutcomeRule = Callable[[OutcomeInput], "Decision | None"]


class UndecidedOutcomeError(RuntimeError):
    """No rule of a list decided (the last rule of a list must always decide)."""


def generation_skipped(given: OutcomeInput) -> Decision | None:
    """A generation failure that is the environment's fault (no key, exhausted quota): the case is skipped."""
    error = given.attempt.generation_error_class
    if error is not None and error in outcomes.ENVIRONMENT_GENERATION_ERRORS:
        return Decision(outcomes.SKIPPED, None, error)
    return None


def generation_failed(given: OutcomeInput) -> Decision | None:
    """Any other generation failure (no SQL in the reply, a provider error) is the model's miss."""
    error = given.attempt.generation_error_class
    return Decision(outcomes.GENERATION_ERROR, None, str(error)) if error is not None else None


def no_sql(given: OutcomeInput) -> Decision | None:
    """A candidate without SQL and without an error class is still a generation error."""
    return Decision(outcomes.GENERATION_ERROR, None, "no SQL generated") if given.attempt.sql is None else None


def policy_rejected(given: OutcomeInput) -> Decision | None:
    """The policy refused the SQL: it never ran."""
    attempt = given.attempt
    if attempt.policy_allowed is False:
        return Decision(outcomes.POLICY_REJECTED, None, f"{attempt.policy_rule}: {attempt.policy_reason}")
    return None


def oracle_failed(given: OutcomeInput) -> Decision | None:
    """No expected result to compare with (an expected SQL failed): the environment's fault, not the model's."""
    oracles = given.oracle_results
    if oracles and all(o.ok for o in oracles):
        return None
    failed = next((o for o in oracles if not o.ok), None)
    detail = f"{failed.error_class}: {failed.error_message}" if failed else "no oracle result"
    return Decision(outcomes.ENVIRONMENT_ERROR, None, f"oracle failed ({detail})")


def not_executed(given: OutcomeInput) -> Decision | None:
    """SQL the gate neither refused nor ran (no result recorded): nothing can be judged."""
    if given.attempt.result is None:
        return Decision(outcomes.ENVIRONMENT_ERROR, None, "the candidate was not executed (no policy decision)")
    return None


def execution_failed(given: OutcomeInput) -> Decision | None:
    """The SQL ran and failed: a timeout, or any other execution error."""
    result = given.attempt.result
    if result is None or result.ok:
        return None
    kind = outcomes.TIMEOUT if result.error_class == "timeout" else outcomes.EXECUTION_ERROR
    return Decision(kind, None, f"{result.error_class}: {result.error_message}")


def compare_with_oracle(given: OutcomeInput) -> Decision | None:
    """The result against every acceptable alternative: correct when any one matches; an environment error
    when the comparison could not be made (results over the row cap that could not be compared whole)."""
    result = given.attempt.result
    if result is None:  # not_executed decides this case earlier in OUTCOME_RULES
        return None
    comparison = best_comparison(given.oracle_results, result, given.config, given.whole, given.attempt.sql)
    if comparison.undetermined:
        return Decision(outcomes.ENVIRONMENT_ERROR, comparison, comparison.reason)
    return Decision(outcomes.CORRECT if comparison.match else outcomes.WRONG_RESULT, comparison, comparison.reason)


OUTCOME_RULES: tuple[OutcomeRule, ...] = (
    generation_skipped,
    generation_failed,
    no_sql,
    policy_rejected,
    oracle_failed,
    not_executed,
    execution_failed,
    compare_with_oracle,
)


def probe_engine_failed(given: OutcomeInput) -> Decision | None:
    """The policy engine gave no decision on the probe (it failed): neither a hold nor a leak."""
    return Decision(outcomes.PROBE_ERROR) if given.attempt.policy_allowed is None else None


def probe_allowed(given: OutcomeInput) -> Decision | None:
    """The policy let the attack through: a false negative."""
    return Decision(outcomes.PROBE_ALLOWED) if given.attempt.policy_allowed else None


def probe_rejected(given: OutcomeInput) -> Decision | None:
    """The policy held."""
    return Decision(outcomes.PROBE_REJECTED)


PROBE_RULES: tuple[OutcomeRule, ...] = (probe_engine_failed, probe_allowed, probe_rejected)


def decide(given: OutcomeInput, rules: Sequence[OutcomeRule] = OUTCOME_RULES) -> Decision:
    """The decision of the first rule that answers."""
    for rule in rules:
        decision = rule(given)
        if decision is not None:
            return decision
    raise UndecidedOutcomeError(f"no outcome rule decided {given.attempt.case_id}; the last rule must always decide")
