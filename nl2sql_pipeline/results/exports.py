"""Exports of every stored run's results: verdicts, scores and the leaderboard as Parquet, CSV or JSON files
(and the answers and answer judgements of the runs that answered),
and a DuckDB file of views over the stored Parquet (they read the current files at query time). A stored file that cannot be read back is a ``StoredFileError``
naming it and its partition.

Nested scores (``per_domain``, ``warnings``, ...) stay JSON text in the exports, as the Parquet stores them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.results.formats import FORMATS
from nl2sql_pipeline.results.frames import RUN_SCORES_DTYPES, VERDICT_DTYPES, with_declared_types
from nl2sql_pipeline.results.leaderboard import LEADERBOARD_DTYPES, build_leaderboard, stored_runs
from nl2sql_pipeline.results.read import SCORES_ASSET, VERDICTS_ASSET
from nl2sql_pipeline.results.sql_judgements import sql_judgements_view_sql, stored_sql_judgements_frame
from nl2sql_pipeline.robustness.stored import export_robustness, robustness_view_sql
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import check_readable, read_parquet

if TYPE_CHECKING:
    pass

VIEWS_SQL = """
CREATE OR REPLACE VIEW verdicts AS SELECT * FROM read_parquet('{verdicts}', union_by_name = true);
CREATE OR REPLACE VIEW run_scores AS SELECT * FROM read_parquet('{scores}', union_by_name = true);
CREATE OR REPLACE VIEW run_correctness AS
WITH counts AS (
    SELECT gold_set, model,
           count(*) FILTER (WHERE NOT is_probe AND outcome NOT IN ({not_scored})) AS scored_cases,
           count(*) FILTER (WHERE NOT is_probe AND correct AND outcome NOT IN ({not_scored}))
               AS correct_cases
    FROM verdicts GROUP BY gold_set, model
)
SELECT gold_set, model, scored_cases AS scored, correct_cases AS correct,
       correct_cases / nullif(scored_cases, 0) AS semantic_correctness_rate
FROM counts;
"""


class NothingToExportError(Nl2SqlError):
    """No stored run to export (nothing evaluated yet under this storage root)."""


def _glob(asset: str, root: Path | None) -> str:
    return str(layout.model_partition_glob(asset, root))


def _require_runs(root: Path | None) -> None:
    if not layout.model_partitions(VERDICTS_ASSET, root):
        where = layout.assets_root(root) / VERDICTS_ASSET
        raise NothingToExportError(f"no stored verdicts under {where}; run `nl2sql-eval run` first")


def _write(frame: pd.DataFrame, path: Path, fmt: str) -> Path:
    if fmt == "parquet":  # text as Arrow string (pandas' nullable text would be large_string)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        schema = pa.schema(
            [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
            metadata=table.schema.metadata,
        )
        pq.write_table(table.cast(schema), path)
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", indent=2, date_format="iso")
    return path


def export_results(out_dir: Path, fmt: str = "parquet", root: Path | None = None) -> list[Path]:
    """Write ``verdicts``, ``run_scores`` and ``leaderboard`` of every stored run to ``out_dir`` in ``fmt`` (and
    ``robustness_verdicts`` when any robustness result is stored, ``sql_judgements`` when a run was judged).
    Verdicts, scores and leaderboard carry their declared column types (a metric is a double even when no run
    measured it, a text column a string)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; one of {', '.join(FORMATS)}")
    _require_runs(root)
    runs = stored_runs(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    verdicts = pd.concat([run.frame.assign(run_id=run.run_id) for run in runs], ignore_index=True)
    scores = pd.concat(
        [read_parquet(path) for _, _, path in layout.model_partitions(SCORES_ASSET, root)], ignore_index=True
    )
    judged = stored_sql_judgements_frame(root)
    leaderboard = build_leaderboard(runs, root)
    return [  # each with its declared column types: the schema does not depend on the data
        _write(with_declared_types(verdicts, VERDICT_DTYPES), out_dir / f"verdicts.{fmt}", fmt),
        _write(with_declared_types(scores, RUN_SCORES_DTYPES), out_dir / f"run_scores.{fmt}", fmt),
        _write(with_declared_types(leaderboard, LEADERBOARD_DTYPES), out_dir / f"leaderboard.{fmt}", fmt),
        *export_robustness(out_dir, fmt, _write, root),
        *_answer_exports(out_dir, fmt, root),
        *([_write(judged, out_dir / f"sql_judgements.{fmt}", fmt)] if judged is not None else []),
    ]


def _answer_exports(out_dir: Path, fmt: str, root: Path | None) -> list[Path]:
    """``answers`` and ``answer_judgements`` of every run that answered (the latest per gold set and model),
    with their partition keys; nothing when no run did."""
    written = []
    for asset, name in ((layout.CANDIDATE_ANSWERS, "answers"), (layout.ANSWER_JUDGEMENTS, "answer_judgements")):
        frames = [
            read_parquet(path).assign(gold_set=gold, model=model)
            for gold, model, path in layout.model_partitions(asset, root)
        ]
        if frames:
            written.append(_write(pd.concat(frames, ignore_index=True), out_dir / f"{name}.{fmt}", fmt))
    return written


def write_duckdb_views(db_file: Path, root: Path | None = None) -> list[str]:
    """Create (or refresh) the views ``verdicts``, ``run_scores`` and ``run_correctness`` in ``db_file`` (and
    ``answers`` and ``answer_judgements``, with their ``gold_set`` and ``model`` columns, once a run answered;
    ``sql_judgements`` when a run was judged; ``robustness_verdicts`` when any robustness result is stored).

    Every stored file the views read must open first (``StoredFileError`` naming the one that does not):
    DuckDB's own error would not say which partition is broken."""
    _require_runs(root)
    for asset in (VERDICTS_ASSET, SCORES_ASSET):
        for _, _, path in layout.model_partitions(asset, root):
            check_readable(path)
    db_file.parent.mkdir(parents=True, exist_ok=True)
    sql = (
        VIEWS_SQL.format(
            not_scored=", ".join(f"'{outcome}'" for outcome in sorted(outcomes.NOT_SCORED)),
            verdicts=_glob(VERDICTS_ASSET, root).replace("'", "''"),
            scores=_glob(SCORES_ASSET, root).replace("'", "''"),
        )
        + (sql_judgements_view_sql(root) or "")
        + (robustness_view_sql(root) or "")
    )
    con = duckdb.connect(str(db_file))
    try:
        con.execute(sql)
        for asset, view in ((layout.CANDIDATE_ANSWERS, "answers"), (layout.ANSWER_JUDGEMENTS, "answer_judgements")):
            if layout.model_partitions(asset, root):  # only once some run answered (an empty glob is an error)
                pattern = _glob(asset, root).replace("'", "''")
                con.execute(
                    f"CREATE OR REPLACE VIEW {view} AS SELECT "
                    "regexp_extract(filename, 'gold=([^/]*)/', 1) AS gold_set, "
                    "regexp_extract(filename, 'model=([^/]*)\\.parquet$', 1) AS model, * EXCLUDE (filename) "
                    f"FROM read_parquet('{pattern}', filename = true, hive_partitioning = false, union_by_name = true)"
                )
        return [
            row[0]
            for row in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
        ]
    finally:
        con.close()
