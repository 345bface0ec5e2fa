"""Reading a gold x model partition's stored SQL judgements back (``<assets>/sql_judgements/gold=G/model=M.parquet``).

The partition's latest file holds the judgements of the latest judging of that model's run; the report keeps
those made for the candidates of the verdicts it shows (``report.sql_judges.current_judgements``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.results.judgement_frames import sql_judgements_from_frame
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import check_readable, read_parquet

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath


def sql_judgements_path(gold_set: str, model: str, root: AnyPath | None = None) -> AnyPath:
    """The Parquet file of the latest SQL judgements of ``model`` on ``gold_set``."""
    return layout.partition_path(layout.SQL_JUDGEMENTS, gold_set, model, root)


def load_sql_judgements(gold_set: str, model: str, root: AnyPath | None = None) -> list[SqlJudgement]:
    """The stored SQL judgements of ``model`` on ``gold_set`` ([] when it was never judged)."""
    path = sql_judgements_path(gold_set, model, root)
    try:
        frame = read_parquet(path)
    except FileNotFoundError:
        return []
    return sql_judgements_from_frame(frame)


def stored_sql_judgements_frame(root: AnyPath | None = None) -> pd.DataFrame | None:
    """Every partition's latest SQL judgements as one frame (None when nothing was judged): the export."""
    partitions = layout.model_partitions(layout.SQL_JUDGEMENTS, root)
    if not partitions:
        return None
    return pd.concat([read_parquet(path) for _, _, path in partitions], ignore_index=True)


def sql_judgements_view_sql(root: AnyPath | None = None) -> str | None:
    """The DuckDB view ``sql_judgements`` over the stored Parquet (None when nothing was judged); every file
    is checked readable first (``StoredFileError`` naming the one that is not)."""
    partitions = layout.model_partitions(layout.SQL_JUDGEMENTS, root)
    if not partitions:
        return None
    for _, _, path in partitions:
        check_readable(path)
    glob = str(layout.model_partition_glob(layout.SQL_JUDGEMENTS, root)).replace("'", "''")
    return f"CREATE OR REPLACE VIEW sql_judgements AS SELECT * FROM read_parquet('{glob}', union_by_name = true);"
