"""Reading a run's stored results back: its verdicts and its scores, by (gold set, model), by run id, or
the scores one run wrote.

The files are where ``nl2sql_pipeline.storage.layout`` puts them: the latest run of each gold x model
partition in its partition file (``<assets>/case_verdicts/gold=G/model=M.parquet``, ``<assets>/run_scores/...``),
and every run's own file beside it. ``root`` is the assets root (default ``paths.assets_dir()``: a folder,
or the fsspec URL of ``NL2SQL_ASSETS_URL``).

A stored file that is there but cannot be read back is a ``StoredFileError`` naming the file and its partition
(``storage.parquet``); ``stored_results_problem`` says, without reading the rows, whether the latest results
of a partition can still be read, so a plain re-run evaluates an unreadable partition again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import Nl2SqlError, StoredFileError
from nl2sql_pipeline.results.frames import cases_from_frame, run_scores_from_frame, verdicts_from_frame
from nl2sql_pipeline.runs.store import list_runs
from nl2sql_pipeline.scoring.run_scores import RunScores
from nl2sql_pipeline.stages.records import Verdict
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import check_readable, read_parquet

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath

GOLD_ASSET = layout.GOLD_SET
VERDICTS_ASSET = layout.CASE_VERDICTS
SCORES_ASSET = layout.RUN_SCORES


class RunResultsNotFoundError(Nl2SqlError):
    """No stored results for the run asked for (never evaluated, or overwritten by a later run)."""


@dataclass(frozen=True)
class StoredRun:
    """One evaluated run read back from the storage root."""

    gold_set: str
    model: str
    run_id: str | None
    identity: dict[str, Any]
    scores: RunScores
    verdicts: list[Verdict]
    frame: pd.DataFrame  # the verdict rows as stored (generated SQL, reasons, partition columns)


def verdicts_path(gold_set: str, model: str, root: AnyPath | None = None) -> AnyPath:
    """The Parquet file of the latest verdicts of ``model`` on ``gold_set``."""
    return layout.partition_path(VERDICTS_ASSET, gold_set, model, root)


def scores_path(gold_set: str, model: str, root: AnyPath | None = None) -> AnyPath:
    """The Parquet file of the latest run scores of ``model`` on ``gold_set``."""
    return layout.partition_path(SCORES_ASSET, gold_set, model, root)


def load_scores(
    gold_set: str, model: str, run_id: str | None = None, root: AnyPath | None = None
) -> tuple[dict[str, Any], RunScores]:
    """The identity (gold set, model, run id, versions) and scores of run ``run_id`` of ``model`` on
    ``gold_set``, from the file that run wrote (never the partition's latest file, which a later run may have
    replaced); of the latest run when ``run_id`` is None."""
    latest = scores_path(gold_set, model, root)
    path = layout.run_path(latest, run_id) if run_id else latest
    if not path.exists():
        which = f"run {run_id}" if run_id else "any run"
        raise RunResultsNotFoundError(
            f"no stored scores of {which} of model {model!r} on gold set {gold_set!r} ({path} is missing)"
        )
    return run_scores_from_frame(read_parquet(path))


def load_run(gold_set: str, model: str, root: AnyPath | None = None) -> StoredRun:
    """The latest stored run of ``model`` on ``gold_set`` (its scores and verdicts)."""
    verdict_file, score_file = verdicts_path(gold_set, model, root), scores_path(gold_set, model, root)
    for path in (verdict_file, score_file):
        if not path.exists():
            raise RunResultsNotFoundError(
                f"no stored results for model {model!r} on gold set {gold_set!r} ({path} is missing); "
                f"run `nl2sql-eval run --gold-set {gold_set} --model {model}` first"
            )
    frame = read_parquet(verdict_file)
    identity, scores = run_scores_from_frame(read_parquet(score_file))
    return StoredRun(gold_set, model, identity.get("run_id"), identity, scores, verdicts_from_frame(frame), frame)


def load_answer_judgements(
    gold_set: str, model: str, run_id: str | None = None, root: AnyPath | None = None
) -> list[Any]:
    """The answer judgements (``judges.answer.AnswerJudgement``) of run ``run_id`` of ``model`` on ``gold_set``
    (the latest when None); an empty list when answers were never judged."""
    from nl2sql_pipeline.results.frames import answer_judgements_from_frame

    latest = layout.partition_path(layout.ANSWER_JUDGEMENTS, gold_set, model, root)
    path = layout.run_path(latest, run_id) if run_id else latest
    return answer_judgements_from_frame(read_parquet(path)) if path.exists() else []


def load_answers(gold_set: str, model: str, run_id: str | None = None, root: AnyPath | None = None) -> list[Any]:
    """The candidate answers (``generation.answers.AnswerRecord``) of a run (the latest when ``run_id`` is None)."""
    from nl2sql_pipeline.results.frames import answers_from_frame

    latest = layout.partition_path(layout.CANDIDATE_ANSWERS, gold_set, model, root)
    path = layout.run_path(latest, run_id) if run_id else latest
    return answers_from_frame(read_parquet(path)) if path.exists() else []


def stored_results_problem(gold_set: str, model: str, root: AnyPath | None = None) -> str | None:
    """Why the latest stored results of ``model`` on ``gold_set`` cannot be read back (its verdicts or scores
    file missing; its verdicts, scores or candidate results file unreadable), or None when they can."""
    for asset in (VERDICTS_ASSET, SCORES_ASSET, layout.CANDIDATE_RESULTS):
        path = layout.partition_path(asset, gold_set, model, root)
        if not path.exists():
            if asset == layout.CANDIDATE_RESULTS:  # only the HTML report's samples read it, when it is there
                continue
            return f"its stored {asset} file {path} is missing"
        try:
            check_readable(path)
        except StoredFileError as exc:
            return f"stored file {exc.path} ({exc.partition}) is unreadable: {exc.cause}"
    return None


def load_run_by_id(run_id: str, db_path: Path | None = None, root: AnyPath | None = None) -> StoredRun:
    """The stored run ``run_id`` of the baselines file; fails when a later run replaced its results."""
    db_path = db_path or paths.baselines_db_path()
    matches = [r for r in list_runs(db_path) if r["run_id"] == run_id or str(r["run_id"]).startswith(run_id)]
    if not matches:
        raise RunResultsNotFoundError(
            f"no run {run_id!r} in the baselines file {db_path} (see `nl2sql-eval compare-runs --list`)"
        )
    if len({r["run_id"] for r in matches}) > 1:
        raise RunResultsNotFoundError(f"run id prefix {run_id!r} matches several runs; give more characters")
    recorded = matches[0]
    run = load_run(recorded["gold_set"], recorded["model"], root)
    if run.run_id != recorded["run_id"]:
        raise RunResultsNotFoundError(
            f"the verdicts of run {recorded['run_id']} ({recorded['model']} on {recorded['gold_set']}) were replaced "
            f"by the later run {run.run_id}; only the latest run of a model and gold set keeps its verdicts"
        )
    return run


def recorded_runs(db_path: Path | None = None) -> list[dict[str, Any]]:
    """Every run of the baselines file, newest first (run id, time, gold set, model, correctness)."""
    return list_runs(db_path or paths.baselines_db_path())


def load_cases(gold_set: str, root: AnyPath | None = None) -> dict[str, Case]:
    """The cases of ``gold_set`` as the last run materialized them, by id (empty when never materialized)."""
    path = layout.partition_path(GOLD_ASSET, gold_set, root=root)
    if not path.exists():
        return {}
    return {case.id: case for case in cases_from_frame(read_parquet(path))}
