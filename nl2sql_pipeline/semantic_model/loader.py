"""Loading the semantic model: ``data/semantic_model.yml`` read strictly and checked by the config checker.

Every problem (unknown or missing keys, wrong types, duplicate keys, SQL that does not parse or names an
unknown table or column) is collected and raised at once as :class:`SemanticModelError` (a
``ConfigError``), one ``<file>:<line>: key '<key>': <what> (<fix>)`` line each.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.semantic_model.model import (
    CARDINALITIES,
    DEFAULT_FILE_NAME,
    SUPPORTED_VERSIONS,
    Column,
    Dimension,
    JoinPath,
    Metric,
    Relationship,
    SemanticModel,
    SemanticModelError,
    Table,
)

_TEXT = Field(str)
_REQUIRED_TEXT = Field(str, required=True)
_STRINGS = Field(list, items=Field(str), fix="write [a, b] and quote values YAML reads as numbers or booleans")
TOP_FIELDS: dict[str, Field] = {
    "version": Field(int, required=True, choices=SUPPORTED_VERSIONS),
    "name": _REQUIRED_TEXT,
    "database": _REQUIRED_TEXT,
    "reference_date": Field(datetime.date, required=True),
    "description": _REQUIRED_TEXT,
    "tables": Field(object, required=True),  # name -> definition mappings are checked by _named
    "metrics": Field(object, required=True),
    "conventions": _STRINGS,
    "relationships": Field(list, fix="write one `- {from: t.c, to: t.c}` per foreign key"),
    "join_paths": Field(object),
    "dimensions": Field(object),
}
TABLE_FIELDS: dict[str, Field] = {
    "description": _REQUIRED_TEXT,
    "columns": Field(object, required=True),
    "synonyms": _STRINGS,
    "grain": _TEXT,
    "primary_key": _STRINGS,
}
COLUMN_FIELDS: dict[str, Field] = {
    "description": _REQUIRED_TEXT,
    "synonyms": _STRINGS,
    "values": _STRINGS,
    "unit": _TEXT,
    "sensitive": Field(bool, default=False),
}
RELATIONSHIP_FIELDS: dict[str, Field] = {
    "from": _REQUIRED_TEXT,
    "to": _REQUIRED_TEXT,
    "cardinality": Field(str, default="many_to_one", choices=CARDINALITIES),
    "description": _TEXT,
}
JOIN_PATH_FIELDS: dict[str, Field] = {
    "description": _REQUIRED_TEXT,
    "tables": Field(list, required=True, items=Field(str)),
    "sql": _REQUIRED_TEXT,
    "caution": _TEXT,
}
DIMENSION_FIELDS: dict[str, Field] = {
    "description": _REQUIRED_TEXT,
    "sql": _REQUIRED_TEXT,
    "from": _REQUIRED_TEXT,
    "synonyms": _STRINGS,
}
METRIC_FIELDS: dict[str, Field] = {
    "description": _REQUIRED_TEXT,
    "sql": _REQUIRED_TEXT,
    "from": _REQUIRED_TEXT,
    "filter": _TEXT,
    "time_column": _TEXT,
    "unit": _TEXT,
    "synonyms": _STRINGS,
}


def default_semantic_model_path() -> Path:
    """``<data dir>/semantic_model.yml`` (``$NL2SQL_DATA`` overrides the data dir)."""
    return paths.data_dir() / DEFAULT_FILE_NAME


def load_semantic_model(path: Path | None = None) -> SemanticModel:
    """Load and strictly validate the semantic model at ``path`` (default: the data dir's file).

    A file whose text was loaded before in this process gives the model built then (models are immutable):
    parsing and checking it costs ~50 ms, and every database a gold set describes by introspection asks
    whether the default model describes it. Raises SemanticModelError (a ConfigError) naming the file, the
    line and each wrong key.
    """
    path = Path(path) if path is not None else default_semantic_model_path()
    try:
        known = _LOADED.get((str(path), path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        known = None
    if known is not None:
        return known

    def fail(message: str) -> SemanticModelError:
        return SemanticModelError(path, [message])

    text, raw = read_yaml(path, fail, missing="pass an existing path or set $NL2SQL_DATA")
    model = _build_model(path, raw)
    with _LOADED_LOCK:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.clear()
        _LOADED[(str(path), text)] = model  # by the very text the model was built from
    return model


_LOADED: dict[tuple[str, str], SemanticModel] = {}
"""Models built in this process, by (path as given, the file's text)."""
_LOADED_LOCK = threading.Lock()
_LOADED_MAX = 16


def _canonical_hash(raw: Any) -> str:
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _strings(check: Checker, value: list[str] | None, key: str) -> tuple[str, ...]:
    """A checked list of strings as a tuple; duplicate entries are a problem."""
    if not value:
        return ()
    if len(set(value)) != len(value):
        check.problem(None, key, "duplicate entries", "list each value once")
    return tuple(value)


def _named(check: Checker, value: Any, key: str) -> dict[str, Any]:
    """A non-empty mapping of identifier -> definition (``tables``, ``metrics``, ...)."""
    if not isinstance(value, dict) or not value:
        check.problem(None, key, "must be a non-empty mapping of name -> definition", "see data/semantic_model.yml")
        return {}
    for name in value:
        if not isinstance(name, str) or not name.isidentifier():
            check.problem(None, f"{key}.{name}", "names must be identifiers", "use lower_snake_case")
    return {k: v for k, v in value.items() if isinstance(k, str)}


def _build_model(path: Path, raw: Any) -> SemanticModel:
    check = Checker(path)
    check.locate(raw)
    if raw is None:
        check.problem(None, None, "the file is empty", "start from a copy of data/semantic_model.yml")
        raise SemanticModelError(path, check.problems)
    top = check.mapping(raw, TOP_FIELDS)
    if top is None:
        raise SemanticModelError(path, check.problems)

    conventions = _strings(check, top["conventions"], "conventions")
    tables = _tables(check, raw.get("tables"))
    columns_by_table = {t.name: set(t.column_names) for t in tables}
    relationships = _relationships(check, top["relationships"], columns_by_table)
    join_paths = _join_paths(check, top["join_paths"], columns_by_table)
    sources = {t.name: (t.name,) for t in tables} | {p.name: p.tables for p in join_paths}
    source_sql = {t.name: t.name for t in tables} | {p.name: p.sql for p in join_paths}
    clash = set(columns_by_table) & {p.name for p in join_paths}
    for name_ in sorted(clash):
        check.problem(None, f"join_paths.{name_}", "a join path has the name of a table", "rename the join path")
    dimensions = _dimensions(check, top["dimensions"], columns_by_table, sources, source_sql)
    metrics = _metrics(check, raw.get("metrics"), columns_by_table, sources, source_sql)
    overlap = {d.name for d in dimensions} & {m.name for m in metrics}
    for name_ in sorted(overlap):
        check.problem(None, f"metrics.{name_}", "a metric has the name of a dimension", "rename one of them")

    if check.problems:
        raise SemanticModelError(path, check.problems)
    return SemanticModel(
        path=path,
        version=int(top["version"]),
        name=top["name"],
        database=top["database"],
        reference_date=top["reference_date"] or datetime.date.min,
        description=top["description"],
        conventions=conventions,
        tables=tables,
        relationships=relationships,
        join_paths=join_paths,
        dimensions=dimensions,
        metrics=metrics,
        content_hash=_canonical_hash(raw),
    )


def _tables(check: Checker, value: Any) -> tuple[Table, ...]:
    tables: list[Table] = []
    for name, body in _named(check, value, "tables").items():
        key = f"tables.{name}"
        fields = check.mapping(body, TABLE_FIELDS, key=key) or dict.fromkeys(TABLE_FIELDS)
        columns: list[Column] = []
        raw_columns = body.get("columns") if isinstance(body, dict) else None
        for col_name, col_body in _named(check, raw_columns, f"{key}.columns").items():
            ckey = f"{key}.columns.{col_name}"
            col = check.mapping(col_body, COLUMN_FIELDS, key=ckey) or dict.fromkeys(COLUMN_FIELDS)
            columns.append(
                Column(
                    name=col_name,
                    description=col["description"] or "",
                    synonyms=_strings(check, col["synonyms"], f"{ckey}.synonyms"),
                    values=_strings(check, col["values"], f"{ckey}.values"),
                    unit=col["unit"],
                    sensitive=bool(col["sensitive"]),
                )
            )
        primary_key = _strings(check, fields["primary_key"], f"{key}.primary_key")
        for pk in primary_key:
            if pk not in {c.name for c in columns}:
                check.problem(None, f"{key}.primary_key", f"unknown column {pk!r}", "list columns of this table")
        tables.append(
            Table(
                name=name,
                description=fields["description"] or "",
                columns=tuple(columns),
                synonyms=_strings(check, fields["synonyms"], f"{key}.synonyms"),
                grain=fields["grain"],
                primary_key=primary_key,
            )
        )
    return tuple(tables)


def _qualified_column(
    check: Checker, text: str | None, key: str, columns_by_table: Mapping[str, set[str]]
) -> tuple[str, str] | None:
    if text is None:
        return None
    table, _, column = text.partition(".")
    if not column or table not in columns_by_table or column not in columns_by_table[table]:
        check.problem(None, key, f"unknown column {text!r}", "write table.column with a table and column of this model")
        return None
    return table, column


def _relationships(
    check: Checker, value: list[Any] | None, columns_by_table: Mapping[str, set[str]]
) -> tuple[Relationship, ...]:
    out: list[Relationship] = []
    for i, item in enumerate(value or []):
        key = f"relationships[{i}]"
        body = check.mapping(item, RELATIONSHIP_FIELDS, key=key)
        if body is None:
            continue
        source = _qualified_column(check, body["from"], f"{key}.from", columns_by_table)
        target = _qualified_column(check, body["to"], f"{key}.to", columns_by_table)
        if source and target and body["cardinality"]:
            out.append(Relationship(*source, *target, cardinality=body["cardinality"], description=body["description"]))
    return tuple(out)


def _check_sql(
    check: Checker,
    key: str,
    query: str,
    allowed_tables: Iterable[str],
    columns_by_table: Mapping[str, set[str]],
) -> set[str] | None:
    """Parse ``query`` (DuckDB dialect); every table must be in ``allowed_tables`` and every column known.

    Returns the set of tables the query reads, or None when it does not parse.
    """
    try:
        tree = sqlglot.parse_one(query, dialect="duckdb")
    except sqlglot.errors.ParseError as exc:
        first = str(exc).splitlines()[0]
        check.problem(None, key, f"SQL does not parse: {first}", "write a DuckDB SQL expression")
        return None
    allowed = set(allowed_tables)
    aliases: dict[str, str] = {}
    read: set[str] = set()
    for table in tree.find_all(exp.Table):
        if table.name not in columns_by_table:
            check.problem(None, key, f"unknown table {table.name!r}", "use a table of this model")
            continue
        if table.name not in allowed:
            check.problem(
                None,
                key,
                f"table {table.name!r} is not part of this item's source",
                f"use one of {', '.join(sorted(allowed))} or a join path that includes it",
            )
        aliases[table.alias_or_name] = table.name
        read.add(table.name)
    for column in tree.find_all(exp.Column):
        name = column.name
        if column.table:
            table_name = aliases.get(column.table)
            if table_name is None:
                check.problem(
                    None,
                    key,
                    f"column {column.sql()} names a table that is not in the FROM clause",
                    f"qualify it with one of {', '.join(sorted(aliases)) or 'the source tables'}",
                )
            elif name not in columns_by_table[table_name]:
                check.problem(None, key, f"unknown column {column.table}.{name}", f"use a column of {table_name}")
        elif not any(name in columns_by_table[t] for t in read):
            check.problem(None, key, f"unknown column {name!r}", "qualify columns as table.column")
    return read


def _join_paths(check: Checker, value: Any, columns_by_table: Mapping[str, set[str]]) -> tuple[JoinPath, ...]:
    if value is None:
        return ()
    out: list[JoinPath] = []
    for name, raw in _named(check, value, "join_paths").items():
        key = f"join_paths.{name}"
        body = check.mapping(raw, JOIN_PATH_FIELDS, key=key) or dict.fromkeys(JOIN_PATH_FIELDS)
        tables = _strings(check, body["tables"], f"{key}.tables")
        sql = body["sql"]
        unknown = [t for t in tables if t not in columns_by_table]
        if unknown:
            check.problem(None, f"{key}.tables", f"unknown tables {unknown}", "list tables of this model")
        if len(tables) < 2 and tables:
            check.problem(None, f"{key}.tables", "a join path needs at least two tables", "list every table it joins")
        if sql and not unknown:
            read = _check_sql(check, f"{key}.sql", f"SELECT 1 FROM {sql}", tables, columns_by_table)
            if read is not None and read != set(tables):
                check.problem(
                    None,
                    f"{key}.tables",
                    f"lists {sorted(tables)} but the SQL joins {sorted(read)}",
                    "make the list match the SQL",
                )
        out.append(
            JoinPath(
                name=name, description=body["description"] or "", tables=tables, sql=sql or "", caution=body["caution"]
            )
        )
    return tuple(out)


def _source(check: Checker, key: str, source: str | None, sources: Mapping[str, tuple[str, ...]]) -> str | None:
    if source is not None and source not in sources:
        check.problem(None, key, f"unknown source {source!r}", "name a table or a join path of this model")
        return None
    return source


def _dimensions(
    check: Checker,
    value: Any,
    columns_by_table: Mapping[str, set[str]],
    sources: Mapping[str, tuple[str, ...]],
    source_sql: Mapping[str, str],
) -> tuple[Dimension, ...]:
    if value is None:
        return ()
    out: list[Dimension] = []
    for name, raw in _named(check, value, "dimensions").items():
        key = f"dimensions.{name}"
        body = check.mapping(raw, DIMENSION_FIELDS, key=key) or dict.fromkeys(DIMENSION_FIELDS)
        source = _source(check, f"{key}.from", body["from"], sources)
        sql = body["sql"]
        if source and sql:
            query = f"SELECT {sql} FROM {source_sql[source]}"
            _check_sql(check, f"{key}.sql", query, sources[source], columns_by_table)
        out.append(
            Dimension(
                name=name,
                description=body["description"] or "",
                sql=sql or "",
                source=source or "",
                synonyms=_strings(check, body["synonyms"], f"{key}.synonyms"),
            )
        )
    return tuple(out)


def _metrics(
    check: Checker,
    value: Any,
    columns_by_table: Mapping[str, set[str]],
    sources: Mapping[str, tuple[str, ...]],
    source_sql: Mapping[str, str],
) -> tuple[Metric, ...]:
    out: list[Metric] = []
    for name, raw in _named(check, value, "metrics").items():
        key = f"metrics.{name}"
        body = check.mapping(raw, METRIC_FIELDS, key=key) or dict.fromkeys(METRIC_FIELDS)
        source = _source(check, f"{key}.from", body["from"], sources)
        sql, filter_, time_column = body["sql"], body["filter"], body["time_column"]
        if source and time_column:
            qualified = _qualified_column(check, time_column, f"{key}.time_column", columns_by_table)
            if qualified and qualified[0] not in sources[source]:
                check.problem(
                    None,
                    f"{key}.time_column",
                    f"{time_column!r} is not in the source {source!r}",
                    "use a date or timestamp column of the source tables",
                )
        if source and sql:
            where = f" WHERE {filter_}" if filter_ else ""
            _check_sql(
                check, f"{key}.sql", f"SELECT {sql} FROM {source_sql[source]}{where}", sources[source], columns_by_table
            )
        out.append(
            Metric(
                name=name,
                description=body["description"] or "",
                sql=sql or "",
                source=source or "",
                filter=filter_,
                time_column=time_column,
                unit=body["unit"],
                synonyms=_strings(check, body["synonyms"], f"{key}.synonyms"),
            )
        )
    return tuple(out)
