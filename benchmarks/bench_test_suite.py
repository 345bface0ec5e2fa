"""Mutation catch rate of execution accuracy vs test-suite accuracy, with ``sql-mutant`` on the built-in gold set.

Every query case of the gold set (default ``multidomain-v1``) gets one seeded ``sql-mutant`` answer with
every case mutated (``mutation_rate`` 1.0, seed 7; a case no mutation applies to is left out), and the
``gold-echo`` answer. Both are judged by the core stages (``judge`` with a ``VariantSuite``) on the
sample database and its K variants (default 3, seed 0). Reported: mutants rejected by execution accuracy
(EA: the result differs on the database) and by test-suite accuracy (TSA: on the database or a variant),
the mutants only TSA catches, gold-echo under both, the cold build time of the variants, and the judge
time with and without the suite.

Done-when (issue 9): TSA catches mutants EA misses, and never rejects gold-echo (exit 1 otherwise).

    .venv/bin/python benchmarks/bench_test_suite.py [--gold-set KEY] [--variants K]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter

os.environ.setdefault("NL2SQL_HOME", tempfile.mkdtemp(prefix="nl2sql-bench-tsa-"))

from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import SandboxLimits, run_query
from nl2sql_pipeline.generation.offline_provider import OfflineRequest, answer
from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
from nl2sql_pipeline.sample_db import ensure_database
from nl2sql_pipeline.stages import judge, run_oracle
from nl2sql_pipeline.stages.records import SOURCE_MODEL, Attempt
from nl2sql_pipeline.stages.variant_suite import VariantSuite, build_suites, run_variant_oracle

LIMITS = SandboxLimits(timeout_s=30)
MUTANT_PARAMS = {"mutation_rate": 1.0, "seed": 7}


def attempts(cases, answer_of, resolve) -> tuple[list[Attempt], dict[str, str | None]]:
    """One executed attempt per query case (the model's answer run on the case's database)."""
    made, mutations = [], {}
    for case in cases:
        if case.is_probe:
            continue
        sql, mutation = answer_of(case)
        mutations[case.id] = mutation
        made.append(
            Attempt(
                case.id,
                case.fingerprint,
                SOURCE_MODEL,
                0,
                0,
                sql,
                policy_allowed=True,
                executed=True,
                result=run_query(resolve(case.database), sql, LIMITS),
            )
        )
    return made, mutations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold-set", default="multidomain-v1")
    parser.add_argument("--variants", type=int, default=3)
    args = parser.parse_args()

    ensure_database()
    cases = load_gold_set(args.gold_set)
    resolve = case_databases(args.gold_set)
    oracle = run_oracle(cases, resolve, LIMITS)

    started = time.perf_counter()
    suites = build_suites(cases, resolve, args.variants)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    build_suites(cases, resolve, args.variants)
    cached_s = time.perf_counter() - started
    started = time.perf_counter()
    variant_rows = run_variant_oracle(cases, suites, LIMITS)
    variant_oracle_s = time.perf_counter() - started
    suite = VariantSuite.from_rows(variant_rows, args.variants, LIMITS)

    def mutant(case):
        return answer("sql-mutant", OfflineRequest(case.id, case.canonical_sql, 0, 0), MUTANT_PARAMS)

    def echo(case):
        return answer("gold-echo", OfflineRequest(case.id, case.canonical_sql, 0, 0), {})

    config = CompareConfig()
    mutant_attempts, mutations = attempts(cases, mutant, resolve)
    echo_attempts, _ = attempts(cases, echo, resolve)
    started = time.perf_counter()
    plain = judge(cases, oracle, mutant_attempts, config, resolve, LIMITS)
    plain_s = time.perf_counter() - started
    started = time.perf_counter()
    with_suite = judge(cases, oracle, mutant_attempts, config, resolve, LIMITS, suite=suite)
    suite_s = time.perf_counter() - started
    echoes = [v for v in judge(cases, oracle, echo_attempts, config, resolve, LIMITS, suite=suite) if not v.is_probe]

    assert [v.correct for v in plain] == [v.correct for v in with_suite]  # the suite never changes EA
    mutants = [v for v in with_suite if not v.is_probe and mutations.get(v.case_id)]
    ea_caught = [v for v in mutants if not v.correct]
    tsa_caught = [v for v in mutants if not v.test_suite_correct]
    only_tsa = [v for v in mutants if v.correct and not v.test_suite_correct]
    n = len(mutants)
    query_cases = sum(not c.is_probe for c in cases)
    echo_ea = sum(v.correct for v in echoes)
    echo_tsa = sum(bool(v.test_suite_correct) for v in echoes)

    print(
        f"gold set {args.gold_set}: {query_cases} query cases, {n} mutated by sql-mutant "
        f"(mutation_rate 1.0, seed 7), {args.variants} variants per database (seed 0)"
    )
    print(
        f"variants: built cold in {build_s:.2f} s, found cached in {cached_s:.2f} s; "
        f"gold on every variant {variant_oracle_s:.2f} s ({len(variant_rows)} queries)"
    )
    print(f"mutants caught by execution accuracy : {len(ea_caught)}/{n} ({len(ea_caught) / n:.1%})")
    print(f"mutants caught by test-suite accuracy: {len(tsa_caught)}/{n} ({len(tsa_caught) / n:.1%})")
    print(
        f"caught only by test-suite accuracy   : {len(only_tsa)} "
        f"({', '.join(sorted(Counter(mutations[v.case_id] for v in only_tsa).elements())) or 'none'})"
    )
    for v in only_tsa:
        print(f"  {v.case_id} [{mutations[v.case_id]}]: {v.test_suite_reason}")
    missed = [v for v in mutants if v.test_suite_correct]
    print(f"missed by both ({len(missed)}): " + ", ".join(f"{v.case_id} [{mutations[v.case_id]}]" for v in missed))
    print(f"gold-echo: execution accuracy {echo_ea}/{len(echoes)}, test-suite accuracy {echo_tsa}/{len(echoes)}")
    print(
        f"judge of {n} mutants: {plain_s:.2f} s without the suite, {suite_s:.2f} s with it "
        f"(+{(suite_s - plain_s) * 1000 / max(1, n - len(ea_caught)):.1f} ms per EA-correct case)"
    )

    ok = bool(only_tsa) and echo_tsa == len(echoes) == echo_ea
    print(
        "TARGET MET: test-suite accuracy catches mutants execution accuracy misses and never rejects gold-echo"
        if ok
        else "TARGET NOT MET"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
