"""Per-case cost at 120 / 2,400 / 10,000 cases (issue 10): preparing a gold version, and one model run.

Gold sets of 120, 2,400 and 10,000 cases are built from ``multidomain-v1`` (its 120 cases, replicated with
new ids and a variant marker in the question, so every case has its own fingerprint and cache key), in a
copy of ``data/`` registered under ``scale-<N>``. One storage root serves every size (the sample database is
built once, in a warm-up on the 120-case set that is not measured). For each size, in a fresh process each:

1. ``evaluate(scale-N, [gold-echo])``: the gold version is prepared (validation, blocking preflight, oracle)
   -> ``gold_and_oracle`` seconds; then gold-echo's model stages -> ``model:gold-echo`` seconds.
2. ``evaluate(scale-N, [sql-mutant])``: the gold version is already prepared; only sql-mutant's stages run.

Printed: seconds and milliseconds per case of each stage per size, and the slope between the sizes (the
marginal cost per case). Linear growth shows as a flat ms/case from 2,400 to 10,000.
``python benchmarks/bench_scale.py [--sizes 120,2400,10000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_GOLD = "multidomain-v1"
DEFAULT_SIZES = (120, 2400, 10000)


def build_data(target: Path, sizes: tuple[int, ...]) -> None:
    """A copy of ``data/`` with a gold set ``scale-<N>`` of N cases for each size."""
    sys.path.insert(0, str(ROOT))
    from nl2sql_pipeline.gold.registry import load_gold_set

    shutil.copytree(ROOT / "data", target)
    base = [json.loads(case.to_json()) for case in load_gold_set(BASE_GOLD, data_dir=target)]
    registry = target / "gold" / "gold_sets.yml"
    entries = []
    for size in sizes:
        lines = []
        for index in range(size):
            replica, case = divmod(index, len(base))
            row = dict(base[case])
            if replica:
                row["id"] = f"{row['id']}-r{replica:03d}"
                row["question"] = f"{row['question']} [variant {replica}]"
            lines.append(json.dumps(row) + "\n")
        (target / "gold" / f"scale-{size}.jsonl").write_text("".join(lines), encoding="utf-8")
        entries.append(f"  scale-{size}:\n    file: scale-{size}.jsonl\n    description: bench_scale, {size} cases\n")
    registry.write_text(registry.read_text().rstrip("\n") + "\n" + "".join(entries), encoding="utf-8")


def child(gold: str, model: str) -> None:
    """One ``evaluate`` in this process; prints its stage seconds as JSON on the last line."""
    sys.path.insert(0, str(ROOT))
    from nl2sql_cli import runner

    cpu: dict[str, float] = {}
    materialize = runner._materialize

    def timed_materialize(assets, instance, partition_key=None, **kwargs):
        # CPU seconds of this process (all its threads) per materialization: steadier than wall on a loaded machine
        name = (
            "model"
            if hasattr(partition_key, "keys_by_dimension")
            else ("gold" if partition_key is not None else "sample_database")
        )
        before = time.process_time()
        try:
            return materialize(assets, instance, partition_key=partition_key, **kwargs)
        finally:
            cpu[name] = cpu.get(name, 0.0) + time.process_time() - before

    runner._materialize = timed_materialize
    started = time.perf_counter()
    outcome = runner.evaluate(gold, [model], force=True)
    wall = time.perf_counter() - started
    if outcome.failures or model not in outcome.scores:
        raise SystemExit(f"{gold} {model} failed: {outcome.failures or outcome.skipped_models}")
    print(
        json.dumps(
            {
                "stages": outcome.stage_seconds,
                "cpu": cpu,
                "wall": wall,
                "correct": outcome.scores[model]["semantic_correctness_rate"],
            }
        )
    )


def run_child(env: dict[str, str], gold: str, model: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", gold, model], env=env, capture_output=True, text=True, cwd=ROOT
    )
    if done.returncode != 0:
        raise SystemExit(f"{gold} {model} exited {done.returncode}:\n{done.stderr[-3000:]}{done.stdout[-1000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--child", nargs=2, metavar=("GOLD", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    sizes = tuple(int(s) for s in args.sizes.split(","))
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    build_data(work / "data", tuple(sorted({120, *sizes})))
    env = {
        **os.environ,
        "NL2SQL_DATA": str(work / "data"),
        "NL2SQL_HOME": str(work / "home"),
        "DAGSTER_HOME": str(work / "home" / "dagster_home"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("NL2SQL_ASSETS_URL", None)
    started = time.perf_counter()
    run_child(env, BASE_GOLD, "gold-echo")  # warm-up: builds the sample database, not measured
    rows, cpu_rows = [], []
    for size in sizes:
        first = run_child(env, f"scale-{size}", "gold-echo")
        second = run_child(env, f"scale-{size}", "sql-mutant")
        rows.append(
            (
                size,
                first["stages"]["gold_and_oracle"],
                first["stages"]["model:gold-echo"],
                second["stages"]["model:sql-mutant"],
                first["correct"],
            )
        )
        cpu_rows.append((size, first["cpu"]["gold"], first["cpu"]["model"], second["cpu"]["model"]))
        print(
            f"  measured {size} cases (wall / CPU s): gold {rows[-1][1]:.1f} / {cpu_rows[-1][1]:.1f}, "
            f"gold-echo {rows[-1][2]:.1f} / {cpu_rows[-1][2]:.1f}, sql-mutant {rows[-1][3]:.1f} / "
            f"{cpu_rows[-1][3]:.1f} ({time.perf_counter() - started:.0f} s so far)",
            flush=True,
        )
    total = time.perf_counter() - started
    print(f"\nper-case cost, one storage root ({work}), each evaluation in its own process; {total:.0f} s in all")
    print(
        f"{'cases':>7} | {'prepare gold (s)':>16} {'ms/case':>8} | {'gold-echo run (s)':>17} {'ms/case':>8} | "
        f"{'sql-mutant run (s)':>18} {'ms/case':>8}"
    )
    for size, gold, echo, mutant, correct in rows:
        assert correct == 1.0, f"gold-echo scored {correct} on scale-{size}"
        print(
            f"{size:>7} | {gold:>16.1f} {1000 * gold / size:>8.2f} | {echo:>17.1f} {1000 * echo / size:>8.2f} | "
            f"{mutant:>18.1f} {1000 * mutant / size:>8.2f}"
        )
    for (n0, g0, e0, m0, _), (n1, g1, e1, m1, _) in zip(rows, rows[1:]):
        span = n1 - n0
        print(
            f"  marginal wall {n0}->{n1}: prepare gold {1000 * (g1 - g0) / span:.2f} ms/case, "
            f"gold-echo run {1000 * (e1 - e0) / span:.2f} ms/case, sql-mutant run {1000 * (m1 - m0) / span:.2f} ms/case"
        )
    print("CPU seconds of the evaluating process (all threads), same runs:")
    for size, gold, echo, mutant in cpu_rows:
        print(
            f"{size:>7} | {gold:>16.1f} {1000 * gold / size:>8.2f} | {echo:>17.1f} {1000 * echo / size:>8.2f} | "
            f"{mutant:>18.1f} {1000 * mutant / size:>8.2f}"
        )
    for (n0, g0, e0, m0), (n1, g1, e1, m1) in zip(cpu_rows, cpu_rows[1:]):
        span = n1 - n0
        print(
            f"  marginal CPU {n0}->{n1}: prepare gold {1000 * (g1 - g0) / span:.2f} ms/case, "
            f"gold-echo run {1000 * (e1 - e0) / span:.2f} ms/case, sql-mutant run {1000 * (m1 - m0) / span:.2f} ms/case"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
