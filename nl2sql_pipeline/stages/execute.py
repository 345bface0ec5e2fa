"""The execution stage: the policy gate, then the sandbox, for every attempt; probes meet the gate only."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, held_sandboxes, run_query, run_query_isolated
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.policy.model import PolicyDecision
from nl2sql_pipeline.progress import STAGE_EXECUTE, ProgressTracker, tracking
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages.records import SOURCE_PROBE, Attempt

logger = logging.getLogger(__name__)

QueryRunner = Callable[[Path, str, SandboxLimits], QueryResult]


def execute_attempts(
    cases: Iterable[Case],
    attempts: Iterable[Attempt],
    gate: PolicyGate,
    limits: SandboxLimits = SandboxLimits(),
    isolated: bool = False,
    progress: ProgressTracker | None = None,
) -> list[Attempt]:
    """Policy check, then sandboxed execution, for every attempt of every case, and the check of every probe.

    Attempts come back in case order (a case's in the order given), each with its policy decision and,
    when the policy let it through, its result. A probe's SQL is checked by the policy engine only; a
    probe the policy lets through is never executed. A system's replies to a probe (its question sent to it)
    come after the probe, their SQL checked by the policy and never executed either; so is the SQL a
    model guessed for an ambiguous question (a ``clarify`` case: ``stages.clarify``). ``isolated`` runs each candidate in a worker process
    killed at timeout + grace: the backstop for the rare query that ignores DuckDB's interrupt. The
    gate's ``resolve_database`` locates each case's database. ``progress`` is told of every attempt and probe
    checked (failures by cause: policy_rejected, or the execution error class).
    """
    hold: AbstractContextManager[QueryRunner] = nullcontext(run_query_isolated) if isolated else held_sandboxes()
    cases = list(cases)
    by_case: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_case.setdefault(attempt.case_id, []).append(attempt)
    executed: list[Attempt] = []
    with hold as runner, _catalogs_in_sandboxes(gate, runner, limits, isolated):
        # Every policy decision first, in one pass, then every query: parsing and the rules run back to back
        # with their code and data in the CPU caches (interleaved with DuckDB queries they cost about twice
        # as much). The decisions are the same either way: the policy never depends on what ran before.
        decisions = {
            id(attempt): gate.check(case, sql)
            for case in cases
            if not case.is_probe and not case.is_clarify
            for attempt in by_case.get(case.id, ())
            if (sql := _runnable_sql(attempt)) is not None
        }
        with tracking(progress, STAGE_EXECUTE, "") as tracker:
            tracker.begin(sum(1 if case.is_probe else len(by_case.get(case.id, ())) for case in cases))
            for case in cases:
                if case.is_probe:
                    executed.append(check_probe(case, gate))
                    executed.extend(check_probe_reply(case, reply, gate) for reply in by_case.get(case.id, ()))
                    tracker.unit_finished(started=False)
                    continue
                for attempt in by_case.get(case.id, ()):
                    tracker.unit_started()
                    if case.is_clarify:  # an ambiguous question: its guess is checked by the policy, never run
                        executed.append(check_probe_reply(case, attempt, gate))
                        tracker.unit_finished()
                        continue
                    done = execute_attempt(case, attempt, gate, limits, runner, decisions.get(id(attempt)))
                    executed.append(done)
                    tracker.unit_finished(failure=_execution_failure(done))
    return executed


def _catalogs_in_sandboxes(
    gate: PolicyGate, runner: QueryRunner, limits: SandboxLimits, isolated: bool
) -> AbstractContextManager[None]:
    """The gate reading each database's schema in the stage's sandbox of it, which the stage opens anyway (a
    read-only instance of its own costs ~20 ms per database); with ``isolated``, each query would start a
    worker process: the gate reads schemas as it always does."""
    if isolated:
        return nullcontext()

    def query(path: Path, sql: str) -> list[tuple] | None:
        result = runner(path, sql, limits)
        return list(result.rows) if result.ok and not result.truncated else None

    return gate.reading_catalogs_with(query)


def _runnable_sql(attempt: Attempt) -> str | None:
    """The attempt's SQL for the gate and the sandbox; None when it has none or it came from a failed generation."""
    return attempt.sql if attempt.generation_error_class is None else None


def _execution_failure(attempt: Attempt) -> str | None:
    """The cause an executed attempt failed with, for progress (None: it ran, or there was nothing to run)."""
    if attempt.policy_allowed is False:
        return "policy_rejected"
    return attempt.result.error_class if attempt.result is not None else None


def check_probe(case: Case, gate: PolicyGate) -> Attempt:
    """The probe's policy decision (an engine failure is recorded as no decision, never fatal to the run)."""
    probe = Attempt(
        case_id=case.id,
        case_fingerprint=case.fingerprint,
        source=SOURCE_PROBE,
        sample_index=0,
        candidate_index=0,
        sql=case.policy_probe_sql,
        policy_name=gate.policy_name_for(case),
    )
    try:
        decision = gate.check(case, case.policy_probe_sql or "")
    except Exception as exc:
        logger.exception("policy engine failed on probe %s", case.id)
        return replace(probe, policy_reason=f"policy engine error: {type(exc).__name__}: {exc}")
    return replace(
        probe,
        policy_allowed=bool(decision.allowed),
        policy_rule=decision.rule,
        policy_name=decision.policy_name,
        policy_reason=decision.reason,
    )


def check_probe_reply(case: Case, reply: Attempt, gate: PolicyGate) -> Attempt:
    """A system's reply to a probe's question: its SQL (if any) through the policy, never run."""
    sql = _runnable_sql(reply)
    if sql is None:
        return replace(reply, policy_name=gate.policy_name_for(case))
    try:
        decision = gate.check(case, sql)
    except Exception as exc:
        logger.exception("policy engine failed on the reply to probe %s", case.id)
        return replace(reply, policy_reason=f"policy engine error: {type(exc).__name__}: {exc}")
    return replace(
        reply,
        policy_allowed=bool(decision.allowed),
        policy_rule=decision.rule,
        policy_name=decision.policy_name,
        policy_reason=decision.reason,
    )


def execute_attempt(
    case: Case,
    attempt: Attempt,
    gate: PolicyGate,
    limits: SandboxLimits = SandboxLimits(),
    runner: QueryRunner = run_query,
    decision: PolicyDecision | None = None,
) -> Attempt:
    """One model attempt through the gate and, if allowed, the sandbox (no SQL or a generation error: neither).

    ``decision`` is the gate's decision on the attempt's SQL when the caller already asked for it.
    """
    sql = _runnable_sql(attempt)
    if sql is None:
        return replace(attempt, policy_name=gate.policy_name_for(case))
    if decision is None:
        decision = gate.check(case, sql)
    if not decision.allowed:
        return replace(
            attempt,
            policy_allowed=False,
            policy_rule=decision.rule,
            policy_name=decision.policy_name,
            policy_reason=decision.reason,
        )
    # the clock reads the case's reference date, as the gold's did: a time-relative answer is judged at one instant
    result = runner(gate.database_path(case.database), pin_clock(sql, case.reference_instant), limits)
    return replace(
        attempt,
        policy_allowed=True,
        policy_rule=decision.rule,
        policy_name=decision.policy_name,
        policy_reason=decision.reason,
        executed=True,
        result=result,
    )
