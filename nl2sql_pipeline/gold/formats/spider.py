"""Spider: ``dev.json`` / ``train_spider.json`` + ``tables.json`` + ``database/<db>/<db>.sqlite``
(a split's own ``<split>_tables.json`` and ``<split>_database/`` first, as Spider's test release has).

``SRC`` is the Spider folder (``dev.json`` is read) or one question file inside it. Each item gives
``db_id``, ``question`` and ``query`` (SQLite SQL). ``tables.json`` declares primary and foreign keys
the SQLite files often leave out; they are added to the DuckDB copy where the data allows. Without a
``tables.json`` the import goes on with a warning saying what is lost (those keys).

Spider's questions carry no difficulty: the import computes Spider's official hardness (easy / medium /
hard / extra, ``hardness.spider_hardness``) from each gold query, as the leaderboards break results down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nl2sql_pipeline.dialect.sqlite_copy import ExtraKeys, ForeignKey
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.formats.model import (
    BenchmarkImportError,
    BenchmarkSource,
    SourceDatabase,
    SourceQuestion,
    find_database_file,
    read_json_list,
    text_field,
)

QUESTION_FILES: tuple[str, ...] = ("dev.json",)
DATABASE_FOLDERS: tuple[str, ...] = ("database",)
TABLE_FILES: tuple[str, ...] = ("tables.json",)


def question_file(src: Path, names: tuple[str, ...]) -> Path:
    """The question file: ``src`` itself, or the first of ``names`` inside the folder ``src``."""
    if src.is_file():
        return src
    if not src.is_dir():
        raise CaseValidationError([f"{src}: no such file or folder (give the benchmark folder or its question file)"])
    for name in names:
        if (src / name).is_file():
            return src / name
    raise CaseValidationError([f"{src}: no {' or '.join(names)} in this folder (give the question file's path)"])


def first_existing(folder: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` that exists in ``folder``."""
    return next((folder / n for n in names if (folder / n).exists()), None)


def keys_from_tables_json(entry: dict[str, Any]) -> ExtraKeys:
    """Primary and foreign keys of one ``tables.json`` entry (column indexes resolved to names)."""
    tables = entry.get("table_names_original") or []
    columns = entry.get("column_names_original") or []

    def column(index: int) -> tuple[str, str] | None:
        if not isinstance(index, int) or not 0 <= index < len(columns):
            return None
        table_index, name = columns[index]
        return (tables[table_index], name) if 0 <= table_index < len(tables) else None

    primary: dict[str, tuple[str, ...]] = {}
    for key in entry.get("primary_keys") or []:
        resolved = [column(i) for i in (key if isinstance(key, list) else [key])]
        found = [c for c in resolved if c is not None]
        if found and len(found) == len(resolved) and len({t for t, _ in found}) == 1:
            primary[found[0][0]] = tuple(c for _, c in found)
    foreign = []
    for pair in entry.get("foreign_keys") or []:
        child, parent = (column(i) for i in pair) if isinstance(pair, list) and len(pair) == 2 else (None, None)
        if child and parent:
            foreign.append(ForeignKey(child[0], (child[1],), parent[0], (parent[1],)))
    return ExtraKeys(primary, foreign)


def read_tables_json(path: Path | None) -> dict[str, ExtraKeys]:
    """``db_id`` -> keys declared in a ``tables.json`` (empty when there is no such file)."""
    if path is None:
        return {}
    return {
        e["db_id"]: keys_from_tables_json(e)
        for e in read_json_list(path, "the tables file")
        if isinstance(e, dict) and "db_id" in e
    }


def read_items(
    path: Path, fmt: str, sql_fields: tuple[str, ...], id_of: Any = None
) -> tuple[list[tuple[int, dict[str, Any], str]], list[str]]:
    """The question items of a Spider-like JSON list: (index, item, sql) and a problem per bad item."""
    problems = []
    items = []
    for index, item in enumerate(read_json_list(path, f"a {fmt} question list")):
        where = f"{path}: item {index}"
        missing = [
            n
            for n, v in (
                ("db_id", text_field(item, ("db_id",))),
                ("question", text_field(item, ("question",))),
                (sql_fields[0], text_field(item, sql_fields)),
            )
            if v is None
        ]
        if missing:
            problems.append(
                f"{where}: missing or empty {', '.join(missing)} (every item needs db_id, question and {sql_fields[0]})"
            )
            continue
        items.append((index, item, text_field(item, sql_fields) or ""))
    return items, problems


def missing_tables_warning(question_path: Path, names: tuple[str, ...]) -> str:
    """The warning of an import without a tables file: what was looked for, and what is lost."""
    return (
        f"{question_path.parent}: no {' or '.join(names)} beside {question_path.name}; imported without it: "
        "primary and foreign keys declared only there are not added to the DuckDB copies (fewer join keys in "
        "the prompt's schema and for the test-suite variants); put the benchmark's tables file there to keep them"
    )


def require_folder(folder: Path, option: str = "--databases") -> Path:
    """``folder`` when it is a directory; else ``BenchmarkImportError`` naming it once."""
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise BenchmarkImportError(
            f"{option} {folder}: {what} (give the folder holding <db>/<db>.sqlite, <db>.sqlite or <db>.duckdb)"
        )
    return folder


def collect_databases(
    db_ids: set[str],
    folder: Path | None,
    keys: dict[str, ExtraKeys],
    source: Path,
    looked_for: tuple[str, ...] = (),
) -> dict[str, SourceDatabase]:
    """The database file of every id (raises ``CaseValidationError`` naming every missing one).

    ``folder`` None means the reader found none of the folders ``looked_for`` beside ``source``: that
    is said once, not once per database.
    """
    if folder is None:
        names = " or ".join(f"{n}/" for n in looked_for) or "database folder"
        raise CaseValidationError(
            [
                f"{source}: no {names} beside it for its {len(db_ids)} database(s) "
                "(give --databases DIR, the folder holding <db>/<db>.sqlite)"
            ]
        )
    found: dict[str, SourceDatabase] = {}
    missing = []
    for db_id in sorted(db_ids):
        path = find_database_file(folder, db_id)
        if path is None:
            missing.append(db_id)
        else:
            found[db_id] = SourceDatabase(db_id, path, keys.get(db_id, ExtraKeys()))
    if missing:
        raise CaseValidationError(
            [f"{source}: no database file for {db} under {folder} (expected {db}/{db}.sqlite)" for db in missing]
        )
    return found


def read_spider(src: Path, databases: Path | None = None) -> BenchmarkSource:
    """Read a Spider folder (or question file); ``databases`` overrides the ``database/`` folder."""
    path = question_file(src, QUESTION_FILES)
    folder = path.parent
    items, problems = read_items(path, "Spider", ("query",))
    if problems:
        raise CaseValidationError(problems)
    split = path.stem.replace("_spider", "")
    width = len(str(len(items)))
    questions = [
        SourceQuestion(
            id=f"spider-{split}-{index + 1:0{width}d}",
            question=text_field(item, ("question",)) or "",
            db_id=item["db_id"],
            sql=(sql,),
            location=f"{path}: item {index}",
            tags=("spider",),
        )
        for index, item, sql in items
    ]
    table_files = (f"{split}_tables.json",) + TABLE_FILES
    tables = first_existing(folder, table_files)
    keys = read_tables_json(tables)
    folders = (f"{split}_database",) + DATABASE_FOLDERS
    db_folder = databases or first_existing(folder, folders)
    dbs = collect_databases({q.db_id for q in questions}, db_folder, keys, path, folders)
    warnings = [] if tables is not None else [missing_tables_warning(path, table_files)]
    return BenchmarkSource("spider", path, "sqlite", questions, dbs, warnings)
