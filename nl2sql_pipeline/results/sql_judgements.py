"""Reading a gold x model partition's stored SQL judgements back (``<assets>/sql_judgements/gold=G/model=M.parquet``).

The partition's latest file holds the judgements of the latest judging of that model's run; the report keeps
those made for the candidates of the verdicts it shows (``report.sql_judges.current_judgements``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.results.judgement_frames import sql_judgements_from_frame
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import read_parquet

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
