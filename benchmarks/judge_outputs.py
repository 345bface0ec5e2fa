"""Check that judging and scoring give byte-identical outputs before and after a change.

    python benchmarks/judge_outputs.py --base 9a542ec

The stages before judging run once, in this tree and a fresh storage root, on ``multidomain-v1`` with both
offline models (gold-echo, sql-mutant; sample database at its default scale, no generation cache) and are pickled:
the cases, the oracle rows and each model's executed attempts. Then ``judge`` + ``score_run`` run on
those same inputs in the base revision (exported with ``git archive``) and in this tree, each in a
subprocess with its own ``PYTHONPATH``, twice per model over the same oracle objects (a memo kept per
oracle result must not change the second pass). Every verdict and the run scores are written as their
``repr`` (floats to the last digit) and the two texts compared. Exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import difflib
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent
MODELS = ("gold-echo", "sql-mutant")


def capture(path: Path) -> None:
    """Run the stages up to judging in this process and pickle their outputs to ``path``."""
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.generation.candidates import generate_for_gold_set
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.policy.gate import PolicyGate
    from nl2sql_pipeline.sample_db import DATABASE_NAME, ensure_database
    from nl2sql_pipeline.stages import execute_attempts, run_oracle
    from nl2sql_pipeline.stages.records import attempts_from_candidates

    ensure_database(DATABASE_NAME)
    cases = load_gold_set("multidomain-v1")
    oracle = run_oracle(cases, paths.database_path)
    runs = {}
    for model in MODELS:
        candidates, _ = generate_for_gold_set(cases, model, samples=1, use_cache=False)
        runs[model] = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(paths.database_path))
    path.write_bytes(pickle.dumps({"cases": cases, "oracle": oracle, "runs": runs}))


def dump(inputs: Path, out: Path) -> None:
    """Judge and score the pickled runs with the ``nl2sql_pipeline`` on ``PYTHONPATH``; write the outputs."""
    from nl2sql_pipeline.scoring.run_scores import score_run
    from nl2sql_pipeline.stages import judge

    data = pickle.loads(inputs.read_bytes())
    lines = []
    for model, attempts in data["runs"].items():
        for round_ in (1, 2):
            verdicts = judge(data["cases"], data["oracle"], attempts)
            lines.append(f"== {model}, pass {round_}: {len(verdicts)} verdicts")
            lines.extend(repr(verdict) for verdict in verdicts)
            lines.append(repr(score_run(verdicts)))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def export(revision: str, into: Path) -> Path:
    """The package and data of ``revision``, exported (no worktree) into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(TREE), "archive", revision, "nl2sql_pipeline", "data"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_dump(tree: Path, inputs: Path, out: Path, home: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "NL2SQL_HOME": home}
    subprocess.run([sys.executable, __file__, "--dump", str(inputs), "--out", str(out)], env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", help="the revision to compare this tree with (e.g. main)")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # internal: one side's outputs
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dump is not None:
        dump(args.dump, args.out)
        return 0
    if not args.base:
        parser.error("--base is required")
    scratch = Path(tempfile.mkdtemp(prefix="nl2sql-judge-outputs-"))
    home = os.environ["NL2SQL_HOME"] = str(scratch / "home")  # a fresh storage root, shared by both sides
    inputs = scratch / "inputs.pickle"
    capture(inputs)
    base_tree = export(args.base, scratch / "base")
    texts = {}
    for label, tree in (("base", base_tree), ("this tree", TREE)):
        out = scratch / f"{label.replace(' ', '_')}.txt"
        run_dump(tree, inputs, out, home)
        texts[label] = out.read_text(encoding="utf-8").splitlines(keepends=True)
    verdict_lines = sum(1 for line in texts["this tree"] if line.startswith("Verdict("))
    if texts["base"] == texts["this tree"]:
        print(f"identical: {verdict_lines} verdicts and {2 * len(MODELS)} run scores ({args.base} vs this tree)")
        shutil.rmtree(scratch, ignore_errors=True)
        return 0
    diff = difflib.unified_diff(texts["base"], texts["this tree"], args.base, "this tree", n=0)
    sys.stdout.writelines(list(diff)[:40])
    print(f"\nDIFFERENT outputs ({args.base} vs this tree); files in {scratch}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
