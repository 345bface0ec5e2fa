"""Time the default run per stage and report the harness overhead per case beyond query execution.

Stages run through the core functions the assets call (no Dagster), on multidomain-v1 for gold-echo and
sql-mutant with a cold generation cache. "Query time" is the sum of DuckDB execute+fetch time the sandbox
measured; "model time" is the time spent inside every model call (litellm and the offline provider,
earlier follow-up turns included); overhead = stage wall time - query time - model time, per case. Target:
1.3 ms per case per model run (issue 7; issue 2's budget was 5 ms). A last figure times the same run
through Dagster (``nl2sql_cli.runner.evaluate``) to show the orchestration cost per run.

Everything runs in one process, as ``nl2sql-eval run`` does: what a stage parsed or read is still in
the process's memos when a later stage asks for the same text or file (``sql_ast``'s parse caches, the
policy engines' decisions, the prompt texts). ``--cold`` clears those memos (and the prompt texts stored on disk) before each model's
stages, so every model run pays every parse and read itself (the conservative figure). ``--core-only`` skips the Dagster part; ``--json``
prints the core figures as one JSON object (``bench_before_after.py`` reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import pandas as pd

TARGET_MS_PER_CASE = 1.3


def clear_process_memos() -> None:
    """Forget what earlier stages parsed, decided or read (parse caches, policy decisions, the model
    registry, prompt texts, also those stored on disk): a cold model run."""
    from nl2sql_pipeline.compare.structure import parse_clauses
    from nl2sql_pipeline.generation.prompt_context import clear_prompt_context_memo
    from nl2sql_pipeline.generation.registry import clear_registry_memo
    from nl2sql_pipeline.policy.gate import clear_shared_engines
    from nl2sql_pipeline.sql import parse as sql_ast

    sql_ast.clear_caches()
    clear_registry_memo()
    parse_clauses.cache_clear()
    clear_shared_engines()
    clear_prompt_context_memo(stored=True)


def measure_core(cold: bool = False) -> dict:
    """Run the stages once through the core functions; the per-stage rows and the per-case figures."""
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.sample_db import DATABASE_NAME, ensure_database

    started = time.perf_counter()
    ensure_database(DATABASE_NAME)
    build_s = time.perf_counter() - started

    rows = []

    def stage(name: str, wall_ms: float, query_ms: float = 0.0, model_ms: float = 0.0, cases: int = 0):
        rows.append({"stage": name, "wall_ms": wall_ms, "query_ms": query_ms, "model_ms": model_ms, "cases": cases})

    # model time: every call's own duration, measured around the one function that sends it
    from nl2sql_pipeline.generation import dispatch

    model_seconds = [0.0]
    real_call_model = dispatch.call_model

    def timed_call_model(*args, **kwargs):
        started = time.perf_counter()
        try:
            return real_call_model(*args, **kwargs)
        finally:
            model_seconds[0] += time.perf_counter() - started

    dispatch.call_model = timed_call_model

    # ---- the stage calls (the core functions the assets call) -------------------------------------
    from nl2sql_pipeline.generation.candidates import generate_for_gold_set
    from nl2sql_pipeline.gold.quality.preflight import run_preflight
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.policy.gate import PolicyGate
    from nl2sql_pipeline.scoring.run_scores import score_run
    from nl2sql_pipeline.stages import execute_attempts, judge, run_oracle
    from nl2sql_pipeline.stages.records import attempts_from_candidates

    t = time.perf_counter()
    cases = load_gold_set("multidomain-v1")
    stage("load + validate gold set", (time.perf_counter() - t) * 1000, cases=len(cases))

    t = time.perf_counter()
    report = run_preflight(cases, paths.database_path)
    pre_ms = (time.perf_counter() - t) * 1000
    assert report.passed, report.problems

    # the oracle takes the preflight's first runs instead of running those queries again: note which, so that
    # their query time is charged to the preflight that ran them, not to the oracle as well
    from nl2sql_pipeline.stages import oracle as oracle_stage

    handed_over: set[int] = set()
    real_take = oracle_stage.take_gold_results

    def noted_take() -> dict:
        taken = real_take()
        handed_over.update(id(result) for result in taken.values())
        return taken

    oracle_stage.take_gold_results = noted_take
    t = time.perf_counter()
    try:
        oracle = run_oracle(cases, paths.database_path)
    finally:
        oracle_stage.take_gold_results = real_take
    oracle_ms = (time.perf_counter() - t) * 1000
    gold_query_ms = sum(row.result.elapsed_ms for row in oracle)
    ran_ms = sum(row.result.elapsed_ms for row in oracle if id(row.result) not in handed_over)
    stage("oracle (queries the preflight did not run)", oracle_ms, query_ms=ran_ms, cases=len(cases))
    # the preflight runs every expected SQL twice (the second time at another thread count, in a worker
    # process): charge it the gold queries' time twice
    stage("preflight (2x expected SQL + policy)", pre_ms, query_ms=2 * gold_query_ms, cases=len(cases))

    # provider-client warmup (litellm's import and first call) is excluded, as it is from latency
    generate_for_gold_set([c for c in cases if not c.is_probe][:1], "gold-echo", samples=1, use_cache=False)
    from nl2sql_pipeline.generation.prompt_context import clear_prompt_context_memo

    # the warm-up read the prompt texts: the first model run reads them again, as a new process after an
    # earlier run in the same storage root does (from the texts stored on disk; --cold deletes those too)
    clear_prompt_context_memo()
    for model in ("gold-echo", "sql-mutant"):
        if cold:
            clear_process_memos()
        model_seconds[0] = 0.0
        t = time.perf_counter()
        candidates, _ = generate_for_gold_set(cases, model, samples=1, use_cache=False)
        stage(
            f"{model}: generate (litellm, offline)",
            (time.perf_counter() - t) * 1000,
            model_ms=model_seconds[0] * 1000,
            cases=len(candidates),
        )
        t = time.perf_counter()
        results = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(paths.database_path))
        executed = sum(a.result.elapsed_ms for a in results if a.result is not None)
        stage(
            f"{model}: policy + sandbox", (time.perf_counter() - t) * 1000, query_ms=float(executed), cases=len(results)
        )
        t = time.perf_counter()
        verdicts = judge(cases, oracle, results)
        score_run(verdicts)
        stage(f"{model}: compare + score", (time.perf_counter() - t) * 1000, cases=len(verdicts))
    # ---- end of the stage calls ----------------------------------------------------------------------

    dispatch.call_model = real_call_model
    frame = pd.DataFrame(rows)
    frame["overhead_ms"] = frame["wall_ms"] - frame["query_ms"] - frame["model_ms"]
    frame["overhead_ms_per_case"] = frame["overhead_ms"] / frame["cases"].clip(lower=1)
    per_model = frame[frame["stage"].str.contains(":")]["overhead_ms"].sum() / 2 / len(cases)
    per_gold = frame[~frame["stage"].str.contains(":")]["overhead_ms"].sum() / len(cases)
    return {
        "build_s": build_s,
        "stages": frame,
        "per_model_ms": float(per_model),
        "per_gold_ms": float(per_gold),
        "cases": len(cases),
        "cold": cold,
    }


def _sqlglot_build() -> str:
    from sqlglot import tokens

    return "compiled (sqlglotc)" if getattr(tokens, "SQLGLOTC_INSTALLED", False) else "pure Python"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--core-only", action="store_true", help="skip the run through Dagster")
    parser.add_argument("--json", action="store_true", help="print the core figures as JSON (implies --core-only)")
    parser.add_argument(
        "--cold", action="store_true", help="clear the process's parse and prompt memos before each model run"
    )
    args = parser.parse_args(argv)
    home = tempfile.mkdtemp(prefix="nl2sql-bench-")
    os.environ["NL2SQL_HOME"] = home

    measured = measure_core(cold=args.cold)
    frame, per_model, per_gold = measured["stages"], measured["per_model_ms"], measured["per_gold_ms"]
    if args.json:
        print(
            json.dumps(
                {
                    "per_model_ms": per_model,
                    "per_gold_ms": per_gold,
                    "cold": args.cold,
                    "sqlglot": _sqlglot_build(),
                    "stages": frame.round(3).to_dict("records"),
                }
            )
        )
        return 0 if per_model <= TARGET_MS_PER_CASE else 1
    pd.set_option("display.width", 160)
    print(
        f"sample database build (default scale): {measured['build_s']:.2f} s; sqlglot: {_sqlglot_build()}"
        f"{'; cold model runs' if args.cold else ''}"
    )
    print(frame.round(2).to_string(index=False))
    print(
        f"\nharness overhead per case beyond query execution and model time:\n"
        f"  per model run (generate + policy + sandbox + compare + score): {per_model:.2f} ms "
        f"(target <= {TARGET_MS_PER_CASE} ms; ratio {per_model / TARGET_MS_PER_CASE:.2f} of budget)\n"
        f"  once per gold version, shared by all models (load, preflight, oracle): {per_gold:.2f} ms"
    )
    per_case = per_model
    if args.core_only:
        return 0 if per_case <= TARGET_MS_PER_CASE else 1

    from nl2sql_cli.runner import evaluate, get_instance

    instance = get_instance()
    t = time.perf_counter()
    outcome = evaluate("multidomain-v1", ["gold-echo", "sql-mutant"], instance=instance)
    total = time.perf_counter() - t
    print("\nthrough Dagster (nl2sql_cli.runner.evaluate, cold cache):")
    for name, seconds in outcome.stage_seconds.items():
        print(f"  {name:<28} {seconds:6.2f} s")
    print(f"  {'total':<28} {total:6.2f} s")
    t = time.perf_counter()
    evaluate("multidomain-v1", ["gold-echo", "sql-mutant"], instance=instance)
    print(f"  second run (warm cache)      {time.perf_counter() - t:6.2f} s")
    return 0 if per_case <= TARGET_MS_PER_CASE else 1


if __name__ == "__main__":
    sys.exit(main())
