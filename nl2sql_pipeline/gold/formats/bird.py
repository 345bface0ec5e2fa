"""BIRD: ``dev.json`` (``question_id``, ``db_id``, ``question``, ``evidence``, ``SQL``, ``difficulty``)
+ ``dev_tables.json`` + ``dev_databases/<db>/<db>.sqlite``.

``evidence`` (the external knowledge BIRD gives with each question) is kept as the case's ``hint``;
``difficulty`` simple/moderate/challenging becomes easy/medium/hard (a question without one, as in
BIRD's train split, gets Spider's hardness computed from its gold query, as every importer does).
Without a tables file the import goes on with a warning saying what is lost.
"""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.formats.model import BenchmarkSource, SourceQuestion, text_field
from nl2sql_pipeline.gold.formats.spider import (
    collect_databases,
    first_existing,
    missing_tables_warning,
    question_file,
    read_items,
    read_tables_json,
)

QUESTION_FILES: tuple[str, ...] = ("dev.json", "train.json")
DIFFICULTIES: dict[str, str] = {"simple": "easy", "moderate": "medium", "challenging": "hard"}


def read_bird(src: Path, databases: Path | None = None) -> BenchmarkSource:
    """Read a BIRD folder (or question file); ``databases`` overrides ``<split>_databases/``."""
    path = question_file(src, QUESTION_FILES)
    folder = path.parent
    items, problems = read_items(path, "BIRD", ("SQL", "sql", "query"))
    if problems:
        raise CaseValidationError(problems)
    split = path.stem
    questions = []
    for index, item, sql in items:
        qid = item.get("question_id", index)
        difficulty = text_field(item, ("difficulty",))
        questions.append(
            SourceQuestion(
                id=f"bird-{split}-{qid}",
                question=text_field(item, ("question",)) or "",
                db_id=item["db_id"],
                sql=(sql,),
                location=f"{path}: item {index}",
                hint=text_field(item, ("evidence",)),
                difficulty=DIFFICULTIES.get((difficulty or "").lower()),
                tags=("bird",),
            )
        )
    table_files = (f"{split}_tables.json", "tables.json")
    tables = first_existing(folder, table_files)
    keys = read_tables_json(tables)
    folders = (f"{split}_databases", "databases", "database")
    db_folder = databases or first_existing(folder, folders)
    dbs = collect_databases({q.db_id for q in questions}, db_folder, keys, path, folders)
    warnings = [] if tables is not None else [missing_tables_warning(path, table_files)]
    return BenchmarkSource("bird", path, "sqlite", questions, dbs, warnings)
