"""The harness's own CPU time per case per model run: a side check for a machine too loaded for wall time.

    PYTHONPATH=<tree> python benchmarks/cpu_overhead.py [--cold]

Same stages as ``bench_pipeline.py`` (multidomain-v1, gold-echo then sql-mutant, preflight and oracle
first), but measured as the main thread's CPU time (``time.thread_time``), which other processes on the
machine barely move, where ``bench_pipeline.py`` measures wall time. The model calls are recorded once and
replayed (so the offline models' own work is not in the figure), the prompt-text memo of the process is
cleared before the first model run as in ``bench_pipeline.py``, and the CPU time spent inside the
sandbox's execute + fetch (``Sandbox._execute``) is taken out as query time. Not the issue-7 figure
(that is ``bench_before_after.py``); run it on two trees (``PYTHONPATH``) to compare them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cold", action="store_true", help="clear the process's memos before each model run")
    args = parser.parse_args(argv)
    os.environ["NL2SQL_HOME"] = tempfile.mkdtemp(prefix="nl2sql-cpu-")

    from nl2sql_pipeline import paths
    from nl2sql_pipeline.execution import sandbox
    from nl2sql_pipeline.generation import dispatch
    from nl2sql_pipeline.generation.candidates import generate_for_gold_set
    from nl2sql_pipeline.generation.prompt_context import clear_prompt_context_memo
    from nl2sql_pipeline.gold.quality.preflight import run_preflight
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.policy.gate import PolicyGate
    from nl2sql_pipeline.sample_db import DATABASE_NAME, ensure_database
    from nl2sql_pipeline.scoring.run_scores import score_run
    from nl2sql_pipeline.stages import execute_attempts, judge, run_oracle
    from nl2sql_pipeline.stages.records import attempts_from_candidates

    ensure_database(DATABASE_NAME)
    cases = load_gold_set("multidomain-v1")
    run_preflight(cases, paths.database_path)
    oracle = run_oracle(cases, paths.database_path)

    real_call, recorded, position = dispatch.call_model, [], [0]

    def recording(*a, **k):
        recorded.append(real_call(*a, **k))
        return recorded[-1]

    def replaying(*a, **k):
        position[0] += 1
        return recorded[position[0] - 1]

    dispatch.call_model = recording
    for model in ("gold-echo", "sql-mutant"):
        generate_for_gold_set(cases, model, samples=1, use_cache=False)
    dispatch.call_model = replaying

    query_cpu = [0.0]
    real_execute = sandbox.Sandbox._execute

    def timed_execute(self, *a):
        started = time.thread_time()
        try:
            return real_execute(self, *a)
        finally:
            query_cpu[0] += time.thread_time() - started

    sandbox.Sandbox._execute = timed_execute
    clear_prompt_context_memo()
    total = 0.0
    for model in ("gold-echo", "sql-mutant"):
        if args.cold:
            from bench_pipeline import clear_process_memos

            clear_process_memos()
        t0 = time.thread_time()
        candidates, _ = generate_for_gold_set(cases, model, samples=1, use_cache=False)
        t1 = time.thread_time()
        query_cpu[0] = 0.0
        results = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(paths.database_path))
        t2 = time.thread_time()
        queries = query_cpu[0]
        score_run(judge(cases, oracle, results))
        t3 = time.thread_time()
        figures = [
            (t1 - t0) * 1000 / len(cases),
            (t2 - t1 - queries) * 1000 / len(cases),
            (t3 - t2) * 1000 / len(cases),
        ]
        total += sum(figures)
        print(
            f"{model}: generate {figures[0]:.2f}, policy + sandbox {figures[1]:.2f}, compare + score {figures[2]:.2f} ms CPU per case"
        )
    print(f"per model run: {total / 2:.2f} ms CPU per case{' (cold)' if args.cold else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
