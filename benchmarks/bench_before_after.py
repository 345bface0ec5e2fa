"""The harness overhead per case per model run, before and after, measured side by side in one run.

    python benchmarks/bench_before_after.py [--base 3ceef9c] [--rounds 3]

The base revision (default 3ceef9c, main before issue 7) is checked out into a temporary git worktree;
each side runs its own ``benchmarks/bench_pipeline.py`` in a subprocess with the same interpreter and
virtual environment, ``cwd`` and ``PYTHONPATH`` set to its tree. The sides alternate for ``--rounds``
rounds and the best run of each side is kept (the machine is shared; the fastest run is the one least
disturbed). Each run builds its sample database in a fresh storage root; only the per-case figure is
compared, computed the same way on both sides (stage wall time - DuckDB query time - model time, per
case, averaged over the two offline models).

Four figures:

- ``before``: the base as it ran, sqlglot's pure-Python build. The base did not depend on ``sqlglotc``;
  installed, it would speed the base up too (compiled modules shadow sqlglot's source files and sqlglot
  has no switch against it), so this side runs through ``pure_sqlglot.py``, which imports sqlglot from
  its source files.
- ``before + sqlglotc``: the base with the compiled build: how much the build alone gives.
- ``after``: this tree, one process as ``nl2sql-eval run`` has it (what earlier stages parsed and read
  stays in the process's memos).
- ``after, cold``: this tree with those memos cleared before each model run (``--cold``): every model
  run parses and reads everything itself.

The base's ``bench_pipeline.py`` prints ``per model run (...): X ms`` and then times a run through
Dagster; the line is parsed and the process stopped there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
DEFAULT_BASE = "3ceef9c"
TARGET_MS_PER_CASE = 1.3
_PER_MODEL_RE = re.compile(r"per model run \([^)]*\): ([0-9.]+) ms")


@dataclass
class Side:
    """One configuration measured in every round."""

    label: str
    tree: Path
    command: list[str]
    parse_json: bool
    figures: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.figures)


def run_side(side: Side) -> float:
    """Run ``side`` once in its tree; the per-case overhead per model run, in ms."""
    scratch = tempfile.mkdtemp(prefix="nl2sql-before-after-")
    env = {
        **os.environ,
        "PYTHONPATH": str(side.tree),
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": scratch,  # each bench makes its storage root with tempfile: removed with ``scratch``
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("NL2SQL_HOME", None)
    try:
        proc = subprocess.Popen(
            side.command, cwd=side.tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        figure = None
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if side.parse_json and line.startswith("{"):
                figure = float(json.loads(line)["per_model_ms"])
                break
            match = _PER_MODEL_RE.search(line)
            if match and not side.parse_json:
                figure = float(match.group(1))
                break
        if proc.poll() is None:
            proc.terminate()  # the base goes on to time a run through Dagster: not needed here
        proc.wait(timeout=60)
        if figure is None:
            raise RuntimeError(f"{side.label}: no per-case figure in the output:\n{''.join(lines[-20:])}")
        return figure
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def checkout(base: str) -> Path:
    """A temporary detached worktree of ``base``."""
    path = Path(tempfile.mkdtemp(prefix="nl2sql-base-")) / "tree"
    subprocess.run(["git", "-C", str(TREE), "worktree", "add", "--detach", "--quiet", str(path), base], check=True)
    return path


def remove(path: Path) -> None:
    """Remove the temporary worktree."""
    subprocess.run(["git", "-C", str(TREE), "worktree", "remove", "--force", str(path)], check=False)
    shutil.rmtree(path.parent, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--base", default=DEFAULT_BASE, help=f"the revision measured as 'before' (default {DEFAULT_BASE})"
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per side, alternating (default 3)")
    args = parser.parse_args(argv)
    python = sys.executable
    base_tree = checkout(args.base)
    try:
        base_bench = str(base_tree / "benchmarks" / "bench_pipeline.py")
        bench = str(TREE / "benchmarks" / "bench_pipeline.py")
        sides = [
            Side(
                f"before ({args.base}, pure-Python sqlglot)",
                base_tree,
                [python, str(HERE / "pure_sqlglot.py"), base_bench],
                parse_json=False,
            ),
            Side(f"before ({args.base}) + sqlglotc", base_tree, [python, base_bench], parse_json=False),
            Side("after (this tree)", TREE, [python, bench, "--json"], parse_json=True),
            Side("after (this tree), cold model runs", TREE, [python, bench, "--json", "--cold"], parse_json=True),
        ]
        for round_index in range(args.rounds):
            for side in sides:
                side.figures.append(run_side(side))
                print(f"round {round_index + 1}: {side.label}: {side.figures[-1]:.2f} ms", flush=True)
    finally:
        remove(base_tree)

    before, before_c, after, after_cold = sides
    print(f"\nharness overhead per case per model run (best of {args.rounds}, ms; median in brackets):")
    for side in sides:
        print(f"  {side.label:<44} {side.best:6.2f}  ({statistics.median(side.figures):.2f})")
    print(f"\n  after / before:             {after.best / before.best:.2f} ({before.best / after.best:.1f}x faster)")
    print(
        f"  after, cold / before:       {after_cold.best / before.best:.2f} ({before.best / after_cold.best:.1f}x faster)"
    )
    print(f"  after / before + sqlglotc:  {after.best / before_c.best:.2f}")
    print(
        f"  target: <= {TARGET_MS_PER_CASE} ms per case: after {after.best:.2f} ms, "
        f"{'met' if after.best <= TARGET_MS_PER_CASE else 'NOT met'}; "
        f"after, cold {after_cold.best:.2f} ms, {'met' if after_cold.best <= TARGET_MS_PER_CASE else 'NOT met'}"
    )
    return 0 if after.best <= TARGET_MS_PER_CASE else 1


if __name__ == "__main__":
    sys.exit(main())
