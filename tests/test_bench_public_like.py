"""``benchmarks/bench_public_like.py`` (issue 21's benchmark, run by ``make bench``) works end to end on a small set.

Not a measurement (the figures of a small set on a test machine mean nothing): the benchmark builds its set,
imports it as a user would, runs every measured command, derives the targets and profiles a run. Its exit code
says whether the targets hold (0) or not (1); anything else is a broken benchmark.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.e2e


def test_bench_public_like_runs_every_measurement_on_a_small_set() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_public_like.py"), "--databases", "2", "--per-db", "3"]
        + ["--profile", "3", "--planning"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    out = done.stdout
    assert done.returncode in (0, 1), done.stderr[-3000:] + out[-2000:]
    for row in (
        "plain loop: SQLite, prediction + gold, results as sets",
        "engine floor: DuckDB, gold + converted prediction, as sets",
        "run floor: convert prediction + DuckDB + sets (gold stored)",
        "nl2sql-eval run, 1 case, --test-suite-variants 0",
        "nl2sql-eval run, 6 cases, default (3 variants)",
        "nl2sql-eval run, 6 cases, first model on a fresh gold version",
        "fixed cost of a run (1 case), variants 0",
        "preparation / plain loop over the gold queries",
    ):
        assert row in out, out
    assert "correct: plain loop" in out and "semantic correctness" in out
    # the profile of a whole-set run was written and read (the console entry's os._exit once skipped its dump)
    assert "profile of a whole-set run" in out and out.count("Ordered by:") == 2, out[-3000:]
    # DuckDB's own profile of the 6 gold queries, by phase, with its costliest optimizer passes
    assert "DuckDB's own profile of the 6 gold queries" in out, out[-3000:]
    assert "  optimizer passes: " in out and "the 8 costliest:" in out, out[-3000:]
