"""Copy a SQLite database into a new DuckDB file with the standard library's ``sqlite3`` and Arrow.

    copied = copy_sqlite_to_duckdb("concert_singer.sqlite", "out/concert_singer.duckdb")
    copied.notes        # what could not be carried over (a primary key with duplicates, a dangling FK, ...)

No DuckDB extension is used (the ``sqlite`` extension needs a download). Column types follow SQLite's
type affinity of the declared type, checked against the values actually stored (SQLite's typing is
loose): an INTEGER column holding only integers becomes BIGINT, one that also holds text becomes
VARCHAR; a TEXT column stays VARCHAR even when its values look like numbers (SQLite compares it as
text too). Primary keys, extra keys (e.g. from Spider's ``tables.json``) and foreign keys are declared
when DuckDB can enforce them on the data: unique, non-null keys; foreign keys onto a declared key with
every value present in the parent (a UNIQUE constraint is added to a parent whose referenced columns
are not its primary key; a table referencing itself keeps no foreign key). Tables are created parents
first, then by name; rows are copied in rowid order, so the same SQLite file always gives the same
tables, types, keys and rows. The file is written under a temporary name and renamed, and the
evaluation only ever opens it read-only. The columns' SQLite types are written beside it
(``column_info``: ``<db>.columns.json``), so SQL of the same dialect converted later sees what the import saw.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.sql.identifiers import quote_identifier as quote

logger = logging.getLogger(__name__)

BATCH_ROWS = 50_000
"""Rows fetched from SQLite and inserted into DuckDB per Arrow batch."""


class SqliteCopyError(Nl2SqlError):
    """A SQLite file cannot be read or copied (missing, not SQLite, unreadable table)."""


# ------------------------------------------------------------------------------------------ model


@dataclass(frozen=True)
class SourceColumn:
    """A SQLite column: its declared type, its affinity, and the DuckDB type chosen for it."""

    name: str
    declared: str
    affinity: str
    duckdb_type: str
    not_null: bool


@dataclass(frozen=True)
class ForeignKey:
    """``table(columns) REFERENCES parent(parent_columns)``; names as written in the source."""

    table: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass
class SourceTable:
    """A SQLite table with its columns, primary key and foreign keys."""

    name: str
    columns: list[SourceColumn]
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)

    def column(self, name: str) -> SourceColumn | None:
        """The column called ``name`` (case-insensitive, as SQLite resolves names)."""
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)


@dataclass
class CopiedDatabase:
    """The result of one copy: the DuckDB file, its tables (with their types) and what was left out."""

    path: Path
    tables: dict[str, SourceTable]
    row_counts: dict[str, int]
    notes: list[str] = field(default_factory=list)

    def column_types(self) -> dict[str, dict[str, SourceColumn]]:
        """Lower-case table name -> lower-case column name -> column (for dialect fixes)."""
        return {t.lower(): {c.name.lower(): c for c in table.columns} for t, table in self.tables.items()}


@dataclass(frozen=True)
class ExtraKeys:
    """Keys declared outside the SQLite file (Spider's ``tables.json``): primary keys and foreign keys."""

    primary_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    foreign_keys: Sequence[ForeignKey] = ()


# ------------------------------------------------------------------------------------------ types


def affinity(declared: str) -> str:
    """SQLite's type affinity of a declared type (the rules of sqlite.org/datatype3.html, in order).

    >>> [affinity(t) for t in ("INT(11)", "varchar(20)", "", "DOUBLE", "DECIMAL(10,2)")]
    ['INTEGER', 'TEXT', 'BLOB', 'REAL', 'NUMERIC']
    """
    upper = declared.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in upper or not upper.strip():
        return "BLOB"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def duckdb_type(column_affinity: str, stored: set[str]) -> str:
    """The DuckDB type for a column of ``column_affinity`` whose values have the SQLite storage
    classes ``stored`` (``typeof()`` results, ``null`` left out).

    TEXT affinity stays VARCHAR whatever it holds; other affinities follow the values: integers only
    -> BIGINT, integers and reals -> DOUBLE, any text -> VARCHAR, blobs only -> BLOB. An empty column
    keeps its declared affinity.

    >>> duckdb_type("TEXT", {"integer"}), duckdb_type("INTEGER", {"integer", "text"}), duckdb_type("NUMERIC", {"integer", "real"})
    ('VARCHAR', 'VARCHAR', 'DOUBLE')
    """
    if column_affinity == "TEXT":
        return "VARCHAR"
    if not stored:
        return {"INTEGER": "BIGINT", "REAL": "DOUBLE", "NUMERIC": "DOUBLE", "BLOB": "VARCHAR"}[column_affinity]
    if stored == {"blob"}:
        return "BLOB"
    if "text" in stored or "blob" in stored:
        return "VARCHAR"
    if stored == {"integer"} and column_affinity != "REAL":
        return "BIGINT"
    return "DOUBLE"


_ARROW_TYPES: dict[str, pa.DataType] = {
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "BLOB": pa.binary(),
}


# ------------------------------------------------------------------------------------------ reading


def open_sqlite(path: Path) -> sqlite3.Connection:
    """A read-only connection to a SQLite file; text that is not UTF-8 is decoded with replacement."""
    if not path.is_file():
        raise SqliteCopyError(f"SQLite file {path} does not exist (check the benchmark's database folder)")
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    con.text_factory = lambda raw: raw.decode("utf-8", "replace")
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        con.close()
        raise SqliteCopyError(f"{path} is not a readable SQLite database ({exc})") from exc
    return con


STORAGE_CLASSES: tuple[str, ...] = ("integer", "real", "text", "blob")


def _stored_classes(con: sqlite3.Connection, table: str, columns: Sequence[str]) -> list[set[str]]:
    """Per column, the SQLite storage classes its values use (``null`` left out), in one table scan."""
    if not columns:
        return []
    probes = [f"max(typeof({quote(c)}) = '{k}')" for c in columns for k in STORAGE_CLASSES]
    row = con.execute(f"SELECT {', '.join(probes)} FROM {quote(table)}").fetchone() or ()
    n = len(STORAGE_CLASSES)
    return [{k for k, hit in zip(STORAGE_CLASSES, row[i * n : (i + 1) * n]) if hit} for i in range(len(columns))]


def read_tables(con: sqlite3.Connection) -> dict[str, SourceTable]:
    """Every user table of the SQLite database (``sqlite_*`` internals left out), by name."""
    names = [
        r[0]
        for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
    ]
    tables: dict[str, SourceTable] = {}
    for name in names:
        info = con.execute(f"PRAGMA table_info({quote(name)})").fetchall()
        stored = _stored_classes(con, name, [r[1] for r in info])
        columns = []
        for (_cid, col, declared, not_null, _default, _pk), classes in zip(info, stored):
            col_affinity = affinity(declared or "")
            chosen = duckdb_type(col_affinity, classes)
            columns.append(SourceColumn(col, declared or "", col_affinity, chosen, bool(not_null)))
        primary_key = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
        tables[name] = SourceTable(name, columns, primary_key)
    for name, table in tables.items():
        groups: dict[int, list[tuple]] = {}
        for row in con.execute(f"PRAGMA foreign_key_list({quote(name)})").fetchall():
            groups.setdefault(row[0], []).append(row)
        for _, rows in sorted(groups.items()):
            rows.sort(key=lambda r: r[1])
            parent = _find_table(tables, rows[0][2])
            if parent is None:
                continue
            to = tuple(r[4] for r in rows)
            parent_columns = parent.primary_key if any(c is None for c in to) else to
            table.foreign_keys.append(ForeignKey(name, tuple(r[3] for r in rows), parent.name, parent_columns))
    return tables


def _find_table(tables: Mapping[str, SourceTable], name: str) -> SourceTable | None:
    return next((t for t in tables.values() if t.name.lower() == name.lower()), None)


# ------------------------------------------------------------------------------------------ key checks


def _declared_names(table: SourceTable, columns: Sequence[str]) -> tuple[str, ...]:
    """``columns`` spelled as ``table`` declares them (a name it does not have is kept as given)."""
    found = [table.column(c) for c in columns]
    return tuple(column.name if column is not None else name for column, name in zip(found, columns))


def _key_problem(con: sqlite3.Connection, table: SourceTable, columns: Sequence[str]) -> str | None:
    """Why ``columns`` cannot be a primary key of ``table`` in DuckDB (None when they can)."""
    missing = [c for c in columns if table.column(c) is None]
    if missing:
        return f"no column {', '.join(missing)}"
    cols = ", ".join(quote(c) for c in columns)
    nulls = " OR ".join(f"{quote(c)} IS NULL" for c in columns)
    if con.execute(f"SELECT 1 FROM {quote(table.name)} WHERE {nulls} LIMIT 1").fetchone():
        return "it holds NULL values"
    if con.execute(f"SELECT 1 FROM {quote(table.name)} GROUP BY {cols} HAVING count(*) > 1 LIMIT 1").fetchone():
        return "it holds duplicate values"
    return None


def _foreign_key_problem(
    con: sqlite3.Connection,
    tables: Mapping[str, SourceTable],
    keys: Mapping[str, tuple[str, ...]],
    uniques: dict[str, list[tuple[str, ...]]],
    fk: ForeignKey,
) -> str | None:
    """Why ``fk`` cannot be declared in DuckDB (None when it can): DuckDB needs a primary key or UNIQUE
    constraint on the parent columns (added to ``uniques`` when the data allows), equal column types,
    every non-null child value present in the parent, and no reference of a table to itself (DuckDB
    checks those row by row while the rows are copied)."""
    child, parent = tables[fk.table], tables[fk.parent]
    if len(fk.columns) != len(fk.parent_columns) or not fk.columns:
        return "its column lists differ in length"
    if fk.table == fk.parent:
        return "a table referencing itself cannot be copied with the key declared"
    parent_key = tuple(c.lower() for c in keys.get(parent.name, ()))
    wanted = tuple(c.lower() for c in fk.parent_columns)
    if parent_key != wanted and wanted not in [tuple(c.lower() for c in u) for u in uniques.get(parent.name, [])]:
        why = _key_problem(con, parent, fk.parent_columns)
        if why:
            return f"{fk.parent}({', '.join(fk.parent_columns)}) is not a key of the parent: {why}"
        uniques.setdefault(parent.name, []).append(_declared_names(parent, fk.parent_columns))
    for col, parent_col in zip(fk.columns, fk.parent_columns):
        mine, theirs = child.column(col), parent.column(parent_col)
        if mine is None or theirs is None:
            return f"column {col if mine is None else parent_col} does not exist"
        if mine.duckdb_type != theirs.duckdb_type:
            return f"{fk.table}.{col} is {mine.duckdb_type} but {fk.parent}.{parent_col} is {theirs.duckdb_type}"
    on = " AND ".join(f"c.{quote(a)} = p.{quote(b)}" for a, b in zip(fk.columns, fk.parent_columns))
    not_null = " AND ".join(f"c.{quote(a)} IS NOT NULL" for a in fk.columns)
    dangling = con.execute(
        f"SELECT 1 FROM {quote(fk.table)} c WHERE {not_null} AND NOT EXISTS "
        f"(SELECT 1 FROM {quote(fk.parent)} p WHERE {on}) LIMIT 1"
    ).fetchone()
    return "some values have no parent row" if dangling else None


def _creation_order(tables: Mapping[str, SourceTable], fks: Sequence[ForeignKey]) -> list[str]:
    """Table names, parents before children, ties by name (a cycle's remaining tables by name)."""
    parents = {name: {fk.parent for fk in fks if fk.table == name and fk.parent != name} for name in tables}
    order: list[str] = []
    remaining = sorted(tables)
    while remaining:
        ready = [n for n in remaining if parents[n] <= set(order)] or remaining[:1]
        order.append(ready[0])
        remaining.remove(ready[0])
    return order


# ------------------------------------------------------------------------------------------ copy


def _normalize_extra(
    tables: Mapping[str, SourceTable], extra: ExtraKeys
) -> tuple[dict[str, tuple[str, ...]], list[ForeignKey]]:
    """Extra keys with table names resolved to the SQLite spelling (unknown tables dropped)."""
    pks: dict[str, tuple[str, ...]] = {}
    for name, cols in extra.primary_keys.items():
        table = _find_table(tables, name)
        if table is not None and cols:
            pks[table.name] = tuple(cols)
    fks = []
    for fk in extra.foreign_keys:
        child, parent = _find_table(tables, fk.table), _find_table(tables, fk.parent)
        if child is not None and parent is not None:
            fks.append(ForeignKey(child.name, fk.columns, parent.name, fk.parent_columns))
    return pks, fks


@dataclass
class KeyPlan:
    """The keys DuckDB will hold: primary keys, UNIQUE constraints foreign keys point at, foreign keys,
    and a note for every key left out and why."""

    primary: dict[str, tuple[str, ...]]
    unique: dict[str, list[tuple[str, ...]]]
    foreign: list[ForeignKey]
    notes: list[str]


def plan_keys(con: sqlite3.Connection, tables: Mapping[str, SourceTable], extra: ExtraKeys) -> KeyPlan:
    """The keys DuckDB will hold (see ``KeyPlan``), each checked against the data."""
    extra_pks, extra_fks = _normalize_extra(tables, extra)
    notes: list[str] = []
    keys: dict[str, tuple[str, ...]] = {}
    for name in sorted(tables):
        candidate = tables[name].primary_key or extra_pks.get(name, ())
        if not candidate:
            continue
        why = _key_problem(con, tables[name], candidate)
        if why:
            notes.append(f"primary key {name}({', '.join(candidate)}) not declared: {why}")
        else:
            keys[name] = _declared_names(tables[name], candidate)
    seen: set[tuple] = set()
    uniques: dict[str, list[tuple[str, ...]]] = {}
    fks: list[ForeignKey] = []
    for fk in [fk for t in sorted(tables) for fk in tables[t].foreign_keys] + extra_fks:
        identity = (
            fk.table.lower(),
            tuple(c.lower() for c in fk.columns),
            fk.parent.lower(),
            tuple(c.lower() for c in fk.parent_columns),
        )
        if identity in seen:
            continue
        seen.add(identity)
        why = _foreign_key_problem(con, tables, keys, uniques, fk)
        label = f"foreign key {fk.table}({', '.join(fk.columns)}) -> {fk.parent}({', '.join(fk.parent_columns)})"
        if why:
            notes.append(f"{label} not declared: {why}")
        else:
            fks.append(fk)
    # DuckDB creates parents first: a foreign key that closes a cycle cannot be declared.
    order = _creation_order(tables, fks)
    position = {name: i for i, name in enumerate(order)}
    kept = []
    for fk in fks:
        if fk.parent != fk.table and position[fk.parent] > position[fk.table]:
            notes.append(f"foreign key {fk.table} -> {fk.parent} not declared: the tables reference each other")
        else:
            kept.append(fk)
    return KeyPlan(keys, uniques, kept, notes)


def _create_table_sql(table: SourceTable, plan: KeyPlan) -> str:
    parts = [f"{quote(c.name)} {c.duckdb_type}{' NOT NULL' if c.not_null else ''}" for c in table.columns]
    key = plan.primary.get(table.name, ())
    fks = [fk for fk in plan.foreign if fk.table == table.name]
    if key:
        parts.append(f"PRIMARY KEY ({', '.join(quote(c) for c in key)})")
    for unique in plan.unique.get(table.name, []):
        parts.append(f"UNIQUE ({', '.join(quote(c) for c in unique)})")
    for fk in fks:
        parts.append(
            f"FOREIGN KEY ({', '.join(quote(c) for c in fk.columns)}) "
            f"REFERENCES {quote(fk.parent)} ({', '.join(quote(c) for c in fk.parent_columns)})"
        )
    return f"CREATE TABLE {quote(table.name)} ({', '.join(parts)})"


def _select_sql(table: SourceTable) -> str:
    """SELECT every column converted in SQLite to its target (text as SQLite renders it)."""
    items = []
    for c in table.columns:
        if c.duckdb_type == "VARCHAR":
            items.append(f"CAST({quote(c.name)} AS TEXT)")
        elif c.duckdb_type == "DOUBLE":
            items.append(f"CAST({quote(c.name)} AS REAL)")
        else:
            items.append(quote(c.name))
    return f"SELECT {', '.join(items)} FROM {quote(table.name)}"


def _batches(con: sqlite3.Connection, table: SourceTable, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The table's rows as Arrow batches, in rowid order (scan order for WITHOUT ROWID tables)."""
    base = _select_sql(table)
    try:
        cursor = con.execute(f"{base} ORDER BY _rowid_")
    except sqlite3.OperationalError:
        cursor = con.execute(base)
    while True:
        rows = cursor.fetchmany(BATCH_ROWS)
        if not rows:
            return
        arrays = [pa.array([r[i] for r in rows], type=schema.field(i).type) for i in range(len(schema))]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _copy_views(
    con: sqlite3.Connection, out: duckdb.DuckDBPyConnection, tables: Mapping[str, SourceTable], notes: list[str]
) -> None:
    """Recreate the SQLite views in DuckDB (their SELECT converted by ``dialect.convert_sql``, in name
    order, retried while one view reads another); a view that cannot be created is noted."""
    from nl2sql_pipeline.dialect.convert import ConversionError, convert_sql

    columns = {t.lower(): {c.name.lower(): c for c in table.columns} for t, table in tables.items()}
    pending: dict[str, str] = {}
    problems: dict[str, str] = {}
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY name"):
        select = re.sub(
            r"(?is)^\s*CREATE\s+(TEMP\w*\s+)?VIEW\s+(IF\s+NOT\s+EXISTS\s+)?.+?\s+AS\s+", "", sql or "", count=1
        )
        try:
            pending[name] = convert_sql(select, "sqlite", columns).sql
        except ConversionError as exc:
            problems[name] = str(exc)
    while pending:
        created = []
        for name, select in pending.items():
            try:
                out.execute(f"CREATE VIEW {quote(name)} AS {select}")
                created.append(name)
            except duckdb.Error as exc:
                problems[name] = str(exc).splitlines()[0]
        for name in created:
            pending.pop(name)
            problems.pop(name, None)
        if not created:
            break
    notes += [f"view {name} not created: {why}" for name, why in sorted(problems.items())]


def copy_sqlite_to_duckdb(
    sqlite_path: str | Path, duckdb_path: str | Path, extra_keys: ExtraKeys = ExtraKeys()
) -> CopiedDatabase:
    """Copy every table of ``sqlite_path`` into a new DuckDB file ``duckdb_path`` (replaced if present).

    Raises ``SqliteCopyError`` when the source cannot be read or a table cannot be copied.
    """
    source, target = Path(sqlite_path), Path(duckdb_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    con = open_sqlite(source)
    try:
        tables = read_tables(con)
        if not tables:
            raise SqliteCopyError(f"{source} holds no table")
        plan = plan_keys(con, tables, extra_keys)
        counts: dict[str, int] = {}
        out = duckdb.connect(str(tmp))
        try:
            for name in _creation_order(tables, plan.foreign):
                table = tables[name]
                out.execute(_create_table_sql(table, plan))
                schema = pa.schema([(c.name, _ARROW_TYPES[c.duckdb_type]) for c in table.columns])
                counts[name] = 0
                for batch in _batches(con, table, schema):
                    out.register("_batch", pa.Table.from_batches([batch]))
                    out.execute(f"INSERT INTO {quote(name)} SELECT * FROM _batch")
                    out.unregister("_batch")
                    counts[name] += batch.num_rows
            _copy_views(con, out, tables, plan.notes)
            out.execute("CHECKPOINT")
        except (duckdb.Error, sqlite3.Error, pa.ArrowException) as exc:
            raise SqliteCopyError(f"copying {source} into {target} failed: {exc}") from exc
        finally:
            out.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        con.close()
    os.replace(tmp, target)
    write_column_info(target, tables)  # the fixes' column types, for conversions after the import
    for note in plan.notes:
        logger.info("%s: %s", source.name, note)
    return CopiedDatabase(target, tables, counts, plan.notes)


COLUMNS_SUFFIX = ".columns.json"


def column_info_path(database: Path) -> Path:
    """``databases/x.duckdb`` -> ``databases/x.columns.json`` (read by ``dialect.column_info``)."""
    return database.with_name(database.stem + COLUMNS_SUFFIX)


def write_column_info(database: Path, tables: Mapping[str, SourceTable]) -> Path:
    """Write the columns of ``tables`` beside ``database`` (atomically); returns the file written."""
    target = column_info_path(Path(database))
    data = {name: [asdict(c) for c in table.columns] for name, table in sorted(tables.items())}
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def database_file_name(db_id: str) -> str:
    """A file name for a database id (``concert singer`` -> ``concert_singer.duckdb``)."""
    return (_SAFE_NAME.sub("_", db_id).strip("._-") or "database") + ".duckdb"
