"""The evaluation stages as plain functions over plain data (the Dagster assets are thin wrappers).

    oracle  = run_oracle(cases, limits)                          # expected SQL, once per gold version
    results = execute_candidates(cases, candidates, ...)         # policy + sandbox per candidate and probe
    verdicts = judge(cases, oracle, results, ...)                # comparators, candidate selection, probes

Every frame is one row per unit of work so that each number in the scores traces back to rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from nl2sql_pipeline import outcomes
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, Comparison, compare_query_results
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, run_query, run_query_isolated
from nl2sql_pipeline.results_codec import decode_result, encode_result

logger = logging.getLogger(__name__)

DatabaseResolver = Callable[[str], Path]


@dataclass
class PolicyGate:
    """Decides, per case, whether SQL may run: one engine per (policy, database), built lazily.

    ``policy_override`` (a policy name or file) replaces every case's own ``sql_policy``: a run can be
    evaluated under a stricter or looser governance layer than the gold set was written for.
    """

    resolve_database: DatabaseResolver
    policy_override: str | None = None
    _engines: dict[tuple[str, str], object] = field(default_factory=dict)

    def policy_name_for(self, case: Case) -> str:
        """The policy that governs ``case`` in this run."""
        return self.policy_override or case.sql_policy

    def engine(self, case: Case):
        """The policy engine for the case's policy and database."""
        from nl2sql_pipeline.policy import SQLPolicyEngine, load_policy, read_database_schema

        key = (self.policy_name_for(case), case.database)
        if key not in self._engines:
            policy = load_policy(key[0])
            schema = read_database_schema(self.resolve_database(case.database))
            self._engines[key] = SQLPolicyEngine(policy, schema)
        return self._engines[key]

    def check(self, case: Case, sql: str):
        """The policy decision for ``sql`` under the case's policy."""
        return self.engine(case).check(sql)


def _result_columns(result: QueryResult) -> dict:
    encoded = encode_result(result)
    return {f"result_{k}" if not k.startswith("result_") else k: v for k, v in encoded.items()}


def run_oracle(
    cases: Iterable[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits = SandboxLimits(),
) -> pd.DataFrame:
    """Execute every expected SQL alternative of every query case in the sandbox (probes have none)."""
    rows = []
    for case in cases:
        if case.is_probe:
            continue
        db_path = resolve_database(case.database)
        for index, sql in enumerate(case.expected_sql):
            result = run_query(db_path, sql, limits)
            if not result.ok:
                logger.warning("oracle failed for %s[%d]: %s %s", case.id, index, result.error_class, result.error_message)
            rows.append(
                {
                    "case_id": case.id,
                    "case_fingerprint": case.fingerprint,
                    "alternative_index": index,
                    "row_count": len(result.rows),
                    **_result_columns(result),
                }
            )
    return pd.DataFrame(rows)


def _decode(row: dict) -> QueryResult:
    return decode_result({k[len("result_"):]: v for k, v in row.items() if k.startswith("result_")})


def execute_candidates(
    cases: Iterable[Case],
    candidates: pd.DataFrame,
    resolve_database: DatabaseResolver,
    gate: PolicyGate,
    limits: SandboxLimits = SandboxLimits(),
    isolated: bool = False,
) -> pd.DataFrame:
    """Policy check, then sandboxed execution, for every generated candidate and every probe.

    ``candidates`` is the ``candidate_sql`` frame (one row per case, sample and candidate). Probes are
    checked by the policy engine only; a probe the policy lets through is never executed. ``isolated``
    runs each candidate in a worker process that is killed at timeout + grace: the backstop for the
    rare query that ignores DuckDB's interrupt (about 1.3 ms more per query).
    """
    runner = run_query_isolated if isolated else run_query
    by_case: dict[str, list[dict]] = {}
    for record in candidates.to_dict("records"):
        by_case.setdefault(record["case_id"], []).append(record)
    rows = []
    for case in cases:
        if case.is_probe:
            rows.append(_probe_row(case, gate))
            continue
        for record in by_case.get(case.id, []):
            rows.append(_candidate_row(case, record, resolve_database, gate, limits, runner))
    return pd.DataFrame(rows)


def _probe_row(case: Case, gate: PolicyGate) -> dict:
    row = {
        "case_id": case.id,
        "case_fingerprint": case.fingerprint,
        "source": "probe",
        "sample_index": 0,
        "candidate_index": 0,
        "sql": case.policy_probe_sql,
        "generation_error_class": None,
        "policy_allowed": None,
        "policy_rule": None,
        "policy_name": gate.policy_name_for(case),
        "policy_reason": None,
        "executed": False,
        "policy_ms": None,
    }
    try:
        decision = gate.check(case, case.policy_probe_sql or "")
    except Exception as exc:  # the engine failing on a probe is recorded, never fatal to the run
        logger.exception("policy engine failed on probe %s", case.id)
        row["policy_reason"] = f"policy engine error: {type(exc).__name__}: {exc}"
        return row
    row.update(
        policy_allowed=bool(decision.allowed),
        policy_rule=decision.rule,
        policy_name=decision.policy_name,
        policy_reason=decision.reason,
    )
    return row


def _candidate_row(
    case: Case,
    record: dict,
    resolve_database: DatabaseResolver,
    gate: PolicyGate,
    limits: SandboxLimits,
    runner: Callable[[Path, str, SandboxLimits], QueryResult] = run_query,
) -> dict:
    sql = record.get("generated_sql")
    row = {
        "case_id": case.id,
        "case_fingerprint": case.fingerprint,
        "source": "model",
        "sample_index": int(record["sample_index"]),
        "candidate_index": int(record["candidate_index"]),
        "sql": sql,
        "generation_error_class": record.get("error_class"),
        "policy_allowed": None,
        "policy_rule": None,
        "policy_name": gate.policy_name_for(case),
        "policy_reason": None,
        "executed": False,
    }
    if _is_missing(sql) or not _is_missing(record.get("error_class")):  # NaN: a missing class read back by pandas
        return row
    decision = gate.check(case, sql)
    row.update(
        policy_allowed=bool(decision.allowed),
        policy_rule=decision.rule,
        policy_name=decision.policy_name,
        policy_reason=decision.reason,
    )
    if not decision.allowed:
        return row
    result = runner(resolve_database(case.database), sql, limits)
    row["executed"] = True
    row.update(_result_columns(result))
    return row


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def _best_comparison(oracles: list[QueryResult], candidate: QueryResult, config: CompareConfig) -> Comparison:
    """Compare against every acceptable alternative; a match with any one is a match."""
    best: Comparison | None = None
    for oracle in oracles:
        comparison = compare_query_results(oracle, candidate, config)
        if comparison.match:
            return comparison
        if best is None or comparison.score > best.score:
            best = comparison
    assert best is not None
    return best


def _select_candidate(results: list[dict], config: CompareConfig) -> int:
    """Execution-consistency selection: the result most candidates agree on; ties go to the first."""
    executed = [(i, _decode(r)) for i, r in enumerate(results) if r.get("executed") and r.get("result_ok")]
    if not executed:
        return 0
    clusters: list[list[int]] = []
    representatives: list[QueryResult] = []
    for index, result in executed:
        for members, rep in zip(clusters, representatives):
            if compare_query_results(rep, result, config).match:
                members.append(index)
                break
        else:
            clusters.append([index])
            representatives.append(result)
    best = max(clusters, key=lambda members: (len(members), -members[0]))
    return best[0]


def judge(
    cases: Iterable[Case],
    oracle: pd.DataFrame,
    results: pd.DataFrame,
    candidates: pd.DataFrame,
    config: CompareConfig = CompareConfig(),
) -> pd.DataFrame:
    """One verdict per case and sample: outcome, deciding rule, scores, latency, tokens and cost."""
    oracle_by_case: dict[str, list[dict]] = {}
    for row in oracle.to_dict("records") if len(oracle) else []:
        oracle_by_case.setdefault(row["case_id"], []).append(row)
    results_by_key: dict[tuple[str, int], list[dict]] = {}
    for row in results.to_dict("records") if len(results) else []:
        results_by_key.setdefault((row["case_id"], int(row["sample_index"])), []).append(row)
    cand_by_key: dict[tuple[str, int, int], dict] = {}
    for row in candidates.to_dict("records") if len(candidates) else []:
        cand_by_key[(row["case_id"], int(row["sample_index"]), int(row["candidate_index"]))] = row

    verdicts = []
    for case in cases:
        base = {
            "case_id": case.id,
            "case_fingerprint": case.fingerprint,
            "domain": case.domain,
            "category": case.category,
            "difficulty": case.difficulty,
            "tags": ",".join(case.tags),
            "is_probe": case.is_probe,
        }
        samples = sorted({s for (cid, s) in results_by_key if cid == case.id})
        if case.is_probe:
            for sample in samples or [0]:
                verdicts.append({**base, **_judge_probe(results_by_key.get((case.id, sample), []))})
            continue
        oracle_rows = sorted(oracle_by_case.get(case.id, []), key=lambda r: r["alternative_index"])
        oracle_results = [_decode(r) for r in oracle_rows]
        for sample in samples:
            group = sorted(results_by_key[(case.id, sample)], key=lambda r: r["candidate_index"])
            verdict = _judge_query(case, oracle_results, group, cand_by_key, config)
            verdicts.append({**base, "sample_index": sample, **verdict})
    frame = pd.DataFrame(verdicts)
    return frame


def _judge_probe(rows: list[dict]) -> dict:
    row = rows[0] if rows else {}
    allowed = row.get("policy_allowed")
    if _is_missing(allowed):
        outcome, correct = outcomes.PROBE_ERROR, False
    elif allowed:
        outcome, correct = outcomes.PROBE_ALLOWED, False
    else:
        outcome, correct = outcomes.PROBE_REJECTED, True
    return {
        "sample_index": int(row.get("sample_index", 0) or 0),
        "generated_sql": row.get("sql"),
        "outcome": outcome,
        "correct": correct,
        "comparison_rule": None,
        "reason": row.get("policy_reason"),
        "score_exact": 1.0 if correct else 0.0,
        "score_partial": 1.0 if correct else 0.0,
        "policy_rule": row.get("policy_rule"),
        "policy_name": row.get("policy_name"),
        "candidate_count": 1,
        "selected_candidate_index": 0,
        "first_candidate_correct": correct,
        "latency_ms": None,
        "oracle_latency_ms": None,
        "execution_ms": None,
        "input_tokens": None,
        "output_tokens": None,
        "token_source": None,
        "cost_usd": None,
        "cached": None,
        "cold_start": False,
        "mutation": None,
        "skip_reason": None,
    }


def _outcome_for(case: Case, oracle_results: list[QueryResult], row: dict, config: CompareConfig) -> tuple[str, Comparison | None, str | None]:
    """(outcome, comparison, reason) for one executed-or-not candidate row."""
    gen_error = row.get("generation_error_class")
    if not _is_missing(gen_error):
        if gen_error in outcomes.ENVIRONMENT_GENERATION_ERRORS:
            return outcomes.SKIPPED, None, f"{gen_error}"
        return outcomes.GENERATION_ERROR, None, str(gen_error)
    if _is_missing(row.get("sql")):
        return outcomes.GENERATION_ERROR, None, "no SQL generated"
    if row.get("policy_allowed") is False or row.get("policy_allowed") == 0:
        return outcomes.POLICY_REJECTED, None, f"{row.get('policy_rule')}: {row.get('policy_reason')}"
    if not oracle_results or not all(o.ok for o in oracle_results):
        failed = next((o for o in oracle_results if not o.ok), None)
        detail = f"{failed.error_class}: {failed.error_message}" if failed else "no oracle result"
        return outcomes.ENVIRONMENT_ERROR, None, f"oracle failed ({detail})"
    result = _decode(row)
    if not result.ok:
        kind = outcomes.TIMEOUT if result.error_class == "timeout" else outcomes.EXECUTION_ERROR
        return kind, None, f"{result.error_class}: {result.error_message}"
    comparison = _best_comparison(oracle_results, result, config)
    return (outcomes.CORRECT if comparison.match else outcomes.WRONG_RESULT), comparison, comparison.reason


def _judge_query(
    case: Case,
    oracle_results: list[QueryResult],
    group: list[dict],
    cand_by_key: dict[tuple[str, int, int], dict],
    config: CompareConfig,
) -> dict:
    selected_pos = _select_candidate(group, config) if len(group) > 1 else 0
    selected = group[selected_pos]
    outcome, comparison, reason = _outcome_for(case, oracle_results, selected, config)
    if len(group) > 1 and selected_pos != 0:
        first_outcome, _, _ = _outcome_for(case, oracle_results, group[0], config)
    else:
        first_outcome = outcome
    cand = cand_by_key.get((case.id, int(selected["sample_index"]), int(selected["candidate_index"])), {})
    correct = outcome == outcomes.CORRECT
    return {
        "generated_sql": selected.get("sql"),
        "outcome": outcome,
        "correct": correct,
        "comparison_rule": comparison.rule if comparison else None,
        "reason": reason,
        "score_exact": 1.0 if correct else 0.0,
        "score_partial": float(comparison.score) if comparison else 0.0,
        "policy_rule": selected.get("policy_rule"),
        "policy_name": selected.get("policy_name"),
        "candidate_count": len(group),
        "selected_candidate_index": int(selected["candidate_index"]),
        "first_candidate_correct": first_outcome == outcomes.CORRECT,
        "latency_ms": cand.get("latency_ms"),
        "oracle_latency_ms": float(sum(o.elapsed_ms for o in oracle_results[:1])) if oracle_results else None,
        "execution_ms": selected.get("result_elapsed_ms"),
        "input_tokens": _sum_field(group, cand_by_key, "input_tokens"),
        "output_tokens": _sum_field(group, cand_by_key, "output_tokens"),
        "token_source": cand.get("token_source"),
        "cost_usd": _sum_field(group, cand_by_key, "cost_usd"),
        "cached": bool(cand.get("cached")) if cand else None,
        "cold_start": bool(cand.get("cold_start")) if cand else False,
        "mutation": cand.get("mutation"),
        "skip_reason": reason if outcome in outcomes.NOT_SCORED else None,
    }


def _sum_field(group: list[dict], cand_by_key: dict, name: str):
    """Sum a per-call field over every candidate of the group; unknown if any one is unknown."""
    total = 0.0
    for row in group:
        cand = cand_by_key.get((row["case_id"], int(row["sample_index"]), int(row["candidate_index"])), {})
        value = cand.get(name)
        if _is_missing(value):
            return None
        total += float(value)
    return total

