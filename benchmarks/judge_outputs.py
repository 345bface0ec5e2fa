"""Check that judging and scoring give byte-identical outputs before and after a change.

    python benchmarks/judge_outputs.py --base 9a542ec

The stages before judging run once, in this tree and a fresh storage root, on ``multidomain-v1`` with both
offline models (gold-echo, sql-mutant; sample database at its default scale, no generation cache) and are pickled:
the cases, the oracle rows and each model's executed attempts. Then ``judge`` + ``score_run`` run on
those same inputs in the base revision (exported with ``git archive``) and in this tree, each in a
subprocess with its own ``PYTHONPATH``, twice per model over the same oracle objects (a memo kept per
oracle result must not change the second pass). Every verdict and the run scores are written as their
``repr`` (floats to the last digit) and the two texts compared. Exits 1 when they differ.

    python benchmarks/judge_outputs.py --base main --public-like [--databases 15 --per-db 42]

compares the whole path instead, on ``bench_public_like.py``'s set (SQLite databases in the Spider layout, a
replay model answering in SQLite, about half wrong): in the base revision and in this tree, each with its own
copy of ``data/`` and its own storage root, the set is imported (``gold import --format spider``: the gold
SQL converted to DuckDB) and evaluated by ``nl2sql-eval run`` (3 test-suite variants; conversion of the
predictions, policy, execution, comparison, scoring). The imported gold, every stored verdict (all columns but
timings and the model's config hash, which names the predictions file's path) and the run scores (but the
run id, timings, that hash and the recorded versions, ``VERSION_FIELDS``, which are printed when they moved) are
compared. Exits 1 when they differ.
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


def export(revision: str, into: Path, parts: tuple[str, ...] = ("nl2sql_pipeline", "data")) -> Path:
    """The package and data of ``revision`` (``parts``), exported (no worktree) into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(TREE), "archive", revision, *parts], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_dump(tree: Path, inputs: Path, out: Path, home: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "NL2SQL_HOME": home}
    subprocess.run([sys.executable, __file__, "--dump", str(inputs), "--out", str(out)], env=env, check=True)


VOLATILE_VERDICT_COLUMNS = ("latency_ms", "oracle_latency_ms", "execution_ms", "system_latency_ms", "model_config_hash")
VOLATILE_SCORES = ("run_id", "model_config_hash")
VERSION_FIELDS = ("comparator_version", "harness_version", "database_stamp")
"""What a run records of the code and data it ran on, not what it measured: a change of the comparator's rules
bumps ``comparator_version`` (and a newer tree records fields an older one did not), so these are reported
beside the comparison, not in it."""
PUBLIC_LIKE_MODEL = "replay"


def _bench_module():
    """``benchmarks/bench_public_like.py`` (its set builder), loaded by path: ``benchmarks`` is no package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_public_like", TREE / "benchmarks" / "bench_public_like.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_public_like"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _cli(tree: Path, work: Path, *args: str) -> str:
    """``nl2sql-eval ARGS`` of ``tree`` (its own cwd and ``PYTHONPATH``), with ``work``'s data and storage root."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "NL2SQL_DATA": str(work / "data"),
        "NL2SQL_HOME": str(work / "home"),
        "DAGSTER_HOME": str(work / "home" / "dagster_home"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("NL2SQL_ASSETS_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "nl2sql_cli.main", *args], cwd=tree, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: nl2sql-eval {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def public_like_outputs(tree: Path, work: Path, source: Path, predictions: Path) -> tuple[list[str], dict]:
    """Import the Spider-layout ``source`` and evaluate the replay of ``predictions`` with ``tree``'s code; the
    imported gold, the verdicts and the run scores as text, and the run's version fields (``VERSION_FIELDS``)."""
    import json

    import pandas as pd

    bench = sys.modules["bench_public_like"]
    shutil.copytree(tree / "data", work / "data")
    gold = work / "data" / "gold" / bench.GOLD_SET / f"{bench.GOLD_SET}.jsonl"
    gold.parent.mkdir(parents=True, exist_ok=True)
    _cli(
        tree, work, "gold", "import", "--format", "spider", str(source), "--out", str(gold), "--register",
        "--gold-set", bench.GOLD_SET, "--reference-date", bench.REFERENCE_DATE,
    )  # fmt: skip
    models = work / "data" / "models.yml"
    entry = (
        f"  {PUBLIC_LIKE_MODEL}:\n    kind: predictions\n    path: {predictions}\n    format: lines\n"
        "    source_dialect: sqlite\n"
    )
    models.write_text(models.read_text(encoding="utf-8").rstrip("\n") + "\n" + entry, encoding="utf-8")
    out = json.loads(
        _cli(tree, work, "run", "--gold-set", bench.GOLD_SET, "--model", PUBLIC_LIKE_MODEL, "--json", "-q")
    )
    lines = ["== imported gold", *gold.read_text(encoding="utf-8").splitlines()]
    stored = (
        work / "home" / "assets" / "case_verdicts" / f"gold={bench.GOLD_SET}" / f"model={PUBLIC_LIKE_MODEL}.parquet"
    )
    verdicts = pd.read_parquet(stored).drop(columns=list(VOLATILE_VERDICT_COLUMNS), errors="ignore")
    verdicts = verdicts.sort_values(["case_id", "sample_index"]).reset_index(drop=True)
    lines.append(f"== {len(verdicts)} verdicts")
    lines.extend(repr(row) for row in verdicts.to_dict(orient="records"))
    versions = {}
    for run in out["runs"]:
        scores = {
            k: v
            for k, v in run["scores"].items()
            if k not in VOLATILE_SCORES and k not in VERSION_FIELDS and "latency" not in k
        }
        versions.update({k: run["scores"].get(k) for k in VERSION_FIELDS})
        lines.append(f"== run scores of {run['model']}")
        lines.append(json.dumps(scores, sort_keys=True))
    return [line + "\n" for line in lines], versions


def compare_public_like(base: str, databases: int, per_db: int) -> int:
    """The public-like comparison (``--public-like``): 0 when both revisions give the same outputs."""
    bench = _bench_module()
    scratch = Path(tempfile.mkdtemp(prefix="nl2sql-judge-public-like-"))
    built, questions, _ = bench.make_set("", databases, per_db, bench.SEED)
    source = bench.build_spider_folder(scratch / "source", built, [(q.db_id, q.text, q.gold) for q in questions])
    predictions = scratch / "predictions.txt"
    predictions.write_text("".join(f"{q.predicted}\t{q.db_id}\n" for q in questions), encoding="utf-8")
    base_tree = export(base, scratch / "base", ("nl2sql_pipeline", "nl2sql_cli", "assets", "resources", "data"))
    outputs = {
        label: public_like_outputs(tree, scratch / f"work-{label.replace(' ', '_')}", source, predictions)
        for label, tree in (("base", base_tree), ("this tree", TREE))
    }
    texts = {label: text for label, (text, _) in outputs.items()}
    before, after = outputs["base"][1], outputs["this tree"][1]
    moved = [f"{k} {before.get(k)} -> {after.get(k)}" for k in VERSION_FIELDS if before.get(k) != after.get(k)]
    print("recorded versions: " + ("; ".join(moved) if moved else "unchanged"))
    count = len(questions)
    if texts["base"] == texts["this tree"]:
        print(f"identical: the imported gold, {count} verdicts and the run scores ({base} vs this tree, public-like)")
        shutil.rmtree(scratch, ignore_errors=True)
        return 0
    diff = difflib.unified_diff(texts["base"], texts["this tree"], base, "this tree", n=0)
    sys.stdout.writelines(list(diff)[:40])
    print(f"\nDIFFERENT outputs ({base} vs this tree, public-like); files in {scratch}")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", help="the revision to compare this tree with (e.g. main)")
    parser.add_argument(
        "--public-like",
        action="store_true",
        help="compare the whole path (import, conversion, policy, execution, judging, scoring) on "
        "bench_public_like.py's set instead",
    )
    parser.add_argument("--databases", type=int, default=15, help="--public-like: SQLite databases (default 15)")
    parser.add_argument("--per-db", type=int, default=42, help="--public-like: questions per database (default 42)")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # internal: one side's outputs
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dump is not None:
        dump(args.dump, args.out)
        return 0
    if not args.base:
        parser.error("--base is required")
    if args.public_like:
        return compare_public_like(args.base, args.databases, args.per_db)
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
