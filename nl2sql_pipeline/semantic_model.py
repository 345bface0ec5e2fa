"""The semantic model: what every table and column means, how tables join, and the business metrics.

``data/semantic_model.yml`` is loaded by :func:`load_semantic_model`, which validates it strictly (unknown
or missing keys, wrong types, duplicate keys, SQL that does not parse or names an unknown table or column)
and raises :class:`SemanticModelError` (a ``ConfigError``) listing every problem with the file and key.

The model feeds prompts (:meth:`SemanticModel.render_for_prompt`, :func:`database_ddl_with_descriptions`)
and its :attr:`SemanticModel.content_hash` is part of a run's identity.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import sqlglot
import yaml
from sqlglot import exp

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError, Nl2SqlError
from nl2sql_pipeline.yaml_strict import describe_yaml_error, load_strict

DEFAULT_FILE_NAME = "semantic_model.yml"
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
CARDINALITIES: tuple[str, ...] = ("many_to_one", "one_to_one")


class SemanticModelError(ConfigError):
    """The semantic model file is invalid; ``problems`` holds one ``<file>: <key>: <what> (<fix>)`` line each."""

    def __init__(self, path: Path, problems: list[str]):
        self.path = path
        self.problems = list(problems)
        count = len(self.problems)
        header = f"{path}: {count} problem{'s' if count != 1 else ''} in the semantic model"
        super().__init__("\n".join([header, *self.problems]))


class UnknownModelItemError(Nl2SqlError, KeyError):
    """A caller asked the model for a table, metric or dimension it does not define."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


# -------------------------------------------------------------------------------------------- content


@dataclass(frozen=True)
class Column:
    """One described column."""

    name: str
    description: str
    synonyms: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    unit: str | None = None
    sensitive: bool = False


@dataclass(frozen=True)
class Table:
    """One described table and its columns (in file order)."""

    name: str
    description: str
    columns: tuple[Column, ...]
    synonyms: tuple[str, ...] = ()
    grain: str | None = None
    primary_key: tuple[str, ...] = ()

    def column(self, name: str) -> Column:
        """The column called ``name``; raises UnknownModelItemError when the table has none."""
        for column in self.columns:
            if column.name == name:
                return column
        raise UnknownModelItemError(f"table {self.name!r} has no column {name!r} in the semantic model")

    @property
    def column_names(self) -> tuple[str, ...]:
        """Names of the columns in file order."""
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Relationship:
    """A foreign key: ``from_table.from_column`` references ``to_table.to_column``."""

    from_table: str
    from_column: str
    to_table: str
    to_column: str
    cardinality: str = "many_to_one"
    description: str | None = None

    @property
    def condition(self) -> str:
        """The join condition as SQL."""
        return f"{self.from_table}.{self.from_column} = {self.to_table}.{self.to_column}"


@dataclass(frozen=True)
class JoinPath:
    """A named, possibly multi-hop join (a SQL FROM clause) over ``tables``."""

    name: str
    description: str
    tables: tuple[str, ...]
    sql: str
    caution: str | None = None


@dataclass(frozen=True)
class Dimension:
    """A named grouping expression over a table or join path (``source``)."""

    name: str
    description: str
    sql: str
    source: str
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Metric:
    """A named aggregate over ``source`` (a table or join path), with an optional filter and time column."""

    name: str
    description: str
    sql: str
    source: str
    filter: str | None = None
    time_column: str | None = None
    unit: str | None = None
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class SemanticModel:
    """A validated semantic model. Build it with :func:`load_semantic_model`."""

    path: Path
    version: int
    name: str
    database: str
    reference_date: datetime.date
    description: str
    conventions: tuple[str, ...]
    tables: tuple[Table, ...]
    relationships: tuple[Relationship, ...]
    join_paths: tuple[JoinPath, ...]
    dimensions: tuple[Dimension, ...]
    metrics: tuple[Metric, ...]
    content_hash: str = field(default="")

    # -- lookups

    @property
    def table_names(self) -> tuple[str, ...]:
        """Every table name in file order."""
        return tuple(t.name for t in self.tables)

    def table(self, name: str) -> Table:
        """The table called ``name``."""
        for table in self.tables:
            if table.name == name:
                return table
        raise UnknownModelItemError(
            f"unknown table {name!r}; the semantic model of {self.name} has: {', '.join(self.table_names)}"
        )

    def metric(self, name: str) -> Metric:
        """The metric called ``name``."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        known = ", ".join(m.name for m in self.metrics)
        raise UnknownModelItemError(f"unknown metric {name!r}; known metrics: {known}")

    def dimension(self, name: str) -> Dimension:
        """The dimension called ``name``."""
        for dimension in self.dimensions:
            if dimension.name == name:
                return dimension
        known = ", ".join(d.name for d in self.dimensions)
        raise UnknownModelItemError(f"unknown dimension {name!r}; known dimensions: {known}")

    def join_path(self, name: str) -> JoinPath:
        """The join path called ``name``."""
        for path in self.join_paths:
            if path.name == name:
                return path
        known = ", ".join(p.name for p in self.join_paths)
        raise UnknownModelItemError(f"unknown join path {name!r}; known join paths: {known}")

    def source_tables(self, source: str) -> tuple[str, ...]:
        """Tables a metric/dimension ``source`` (a table or join path name) covers."""
        if source in self.table_names:
            return (source,)
        return self.join_path(source).tables

    def source_sql(self, source: str) -> str:
        """The FROM clause of a metric/dimension ``source`` (a table or join path name)."""
        if source in self.table_names:
            return source
        return " ".join(self.join_path(source).sql.split())

    # -- SQL

    def metric_sql(
        self, name: str, *, start: datetime.date | None = None, end: datetime.date | None = None
    ) -> str:
        """A query computing metric ``name`` over everything, or over ``start <= time < end`` (dates).

        Raises UnknownModelItemError for an unknown metric and ValueError when a period is asked of a
        metric without a time column (a snapshot such as MRR).
        """
        metric = self.metric(name)
        conditions = [f"({metric.filter})"] if metric.filter else []
        if start is not None or end is not None:
            if metric.time_column is None:
                raise ValueError(f"metric {name!r} is a snapshot at the reference date; it takes no period")
            if start is not None:
                conditions.append(f"{metric.time_column} >= DATE '{start.isoformat()}'")
            if end is not None:
                conditions.append(f"{metric.time_column} < DATE '{end.isoformat()}'")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"SELECT {metric.sql} AS {metric.name} FROM {self.source_sql(metric.source)}{where}"

    def dimension_sql(self, name: str) -> str:
        """A query listing the distinct values of dimension ``name``."""
        dimension = self.dimension(name)
        return (
            f"SELECT DISTINCT {dimension.sql} AS {dimension.name} "
            f"FROM {self.source_sql(dimension.source)} ORDER BY 1 NULLS LAST"
        )

    # -- prompts

    def render_for_prompt(self, tables: list[str] | None = None) -> str:
        """A compact text block (conventions, synonyms, value domains, joins, dimensions, metrics).

        With ``tables``, only what lies entirely within those tables is included.
        """
        selected = self.table_names if tables is None else tuple(self.table(t).name for t in tables)
        chosen = set(selected)
        lines = [f"Semantic model {self.name} (reference date {self.reference_date.isoformat()} = today)."]
        lines.append("Conventions:")
        lines.extend(f"- {c}" for c in self.conventions)

        lines.append("Synonyms and value domains:")
        for table in (self.table(t) for t in selected):
            head = f"- {table.name}"
            if table.synonyms:
                head += f" (also: {', '.join(table.synonyms)})"
            if table.grain:
                head += f"; grain: {table.grain}"
            lines.append(head)
            for column in table.columns:
                notes: list[str] = []
                if column.synonyms:
                    notes.append(f"also: {', '.join(column.synonyms)}")
                if column.values:
                    notes.append("values: " + " | ".join(repr(v) for v in column.values))
                if column.unit:
                    notes.append(f"unit: {column.unit}")
                if column.sensitive:
                    notes.append("SENSITIVE: never select")
                if notes:
                    lines.append(f"    {table.name}.{column.name}: {'; '.join(notes)}")

        joins = [r for r in self.relationships if {r.from_table, r.to_table} <= chosen]
        paths_ = [p for p in self.join_paths if set(p.tables) <= chosen]
        if joins or paths_:
            lines.append("Joins:")
            lines.extend(f"- {r.condition} ({r.cardinality})" for r in joins)
            for path in paths_:
                text = f"- {path.name}: FROM {' '.join(path.sql.split())}"
                if path.caution:
                    text += f"  -- {path.caution}"
                lines.append(text)

        dims = [d for d in self.dimensions if set(self.source_tables(d.source)) <= chosen]
        if dims:
            lines.append("Dimensions:")
            for d in dims:
                also = f" (also: {', '.join(d.synonyms)})" if d.synonyms else ""
                lines.append(f"- {d.name} = {d.sql} FROM {d.source}{also}")

        metrics = [m for m in self.metrics if set(self.source_tables(m.source)) <= chosen]
        if metrics:
            lines.append("Metrics:")
            for m in metrics:
                text = f"- {m.name} = {m.sql} FROM {m.source}"
                if m.filter:
                    text += f" WHERE {m.filter}"
                if m.time_column:
                    text += f" [time: {m.time_column}]"
                text += f" -- {m.description}"
                if m.synonyms:
                    text += f" (also: {', '.join(m.synonyms)})"
                lines.append(text)
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ loading


_TOP_REQUIRED = ("version", "name", "database", "reference_date", "description", "tables", "metrics")
_TOP_OPTIONAL = ("conventions", "relationships", "join_paths", "dimensions")
_TABLE_REQUIRED = ("description", "columns")
_TABLE_OPTIONAL = ("synonyms", "grain", "primary_key")
_COLUMN_REQUIRED = ("description",)
_COLUMN_OPTIONAL = ("synonyms", "values", "unit", "sensitive")
_REL_REQUIRED = ("from", "to")
_REL_OPTIONAL = ("cardinality", "description")
_PATH_REQUIRED = ("description", "tables", "sql")
_PATH_OPTIONAL = ("caution",)
_DIM_REQUIRED = ("description", "sql", "from")
_DIM_OPTIONAL = ("synonyms",)
_METRIC_REQUIRED = ("description", "sql", "from")
_METRIC_OPTIONAL = ("filter", "time_column", "unit", "synonyms")


class _Checker:
    """Collects every problem of one file, each naming the key path that is wrong."""

    def __init__(self, path: Path):
        self.path = path
        self.problems: list[str] = []

    def problem(self, key: str, what: str, fix: str) -> None:
        self.problems.append(f"{self.path}: {key}: {what} ({fix})")

    def mapping(self, value: Any, key: str, required: Iterable[str], optional: Iterable[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.problem(
                key or "(top level)", f"expected a mapping, got {type(value).__name__}", "write it as `key: value` lines"
            )
            return {}
        allowed = [*required, *optional]
        for name in value:
            if name not in allowed:
                self.problem(f"{key}.{name}" if key else str(name), "unknown key",
                             f"allowed keys here: {', '.join(allowed)}")
        for name in required:
            if name not in value or value[name] is None:
                self.problem(f"{key}.{name}" if key else name, "missing required key", "add it")
        return value

    def text(self, value: Any, key: str) -> str | None:
        if value is None:  # a missing required key was already reported by mapping()
            return None
        if not isinstance(value, str) or not value.strip():
            self.problem(
                key, f"expected a non-empty string, got {value!r}", "quote the value if YAML read it as another type"
            )
            return None
        return value.strip()

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            self.problem(key, f"expected a list of non-empty strings, got {value!r}",
                         "write [a, b] and quote values YAML reads as numbers or booleans")
            return ()
        if len(set(value)) != len(value):
            self.problem(key, "duplicate entries", "list each value once")
        return tuple(v.strip() for v in value)

    def named(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict) or not value:
            self.problem(key, "expected a non-empty mapping of name -> definition", "see data/semantic_model.yml")
            return {}
        for name in value:
            if not isinstance(name, str) or not name.isidentifier():
                self.problem(f"{key}.{name}", "names must be identifiers", "use lower_snake_case")
        return {k: v for k, v in value.items() if isinstance(k, str)}


def default_semantic_model_path() -> Path:
    """``<data dir>/semantic_model.yml`` (``$NL2SQL_DATA`` overrides the data dir)."""
    return paths.data_dir() / DEFAULT_FILE_NAME


def load_semantic_model(path: Path | None = None) -> SemanticModel:
    """Load and strictly validate the semantic model at ``path`` (default: the data dir's file).

    Raises SemanticModelError (a ConfigError) naming the file and each wrong key.
    """
    path = Path(path) if path is not None else default_semantic_model_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problem = f"{path}: file not found (pass an existing path or set $NL2SQL_DATA)"
        raise SemanticModelError(path, [problem]) from None
    except OSError as exc:
        raise SemanticModelError(path, [f"{path}: cannot read the file: {exc}"]) from None
    try:
        raw = load_strict(text)
    except yaml.YAMLError as exc:
        raise SemanticModelError(path, [describe_yaml_error(path, exc, "invalid YAML: ")]) from None
    return _build_model(path, raw)


def _canonical_hash(raw: Any) -> str:
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _build_model(path: Path, raw: Any) -> SemanticModel:
    check = _Checker(path)
    if raw is None:
        check.problem("(top level)", "the file is empty", "start from a copy of data/semantic_model.yml")
        raise SemanticModelError(path, check.problems)
    top = check.mapping(raw, "", _TOP_REQUIRED, _TOP_OPTIONAL)
    if not top:
        raise SemanticModelError(path, check.problems)

    version = top.get("version")
    if version not in SUPPORTED_VERSIONS:
        check.problem("version", f"unsupported version {version!r}",
                      f"use one of {', '.join(map(str, SUPPORTED_VERSIONS))}")
    name = check.text(top.get("name"), "name") or ""
    database = check.text(top.get("database"), "database") or ""
    description = check.text(top.get("description"), "description") or ""
    reference_date = _reference_date(check, top.get("reference_date"))
    conventions = check.strings(top.get("conventions"), "conventions")

    tables = _tables(check, top.get("tables"))
    columns_by_table = {t.name: set(t.column_names) for t in tables}
    relationships = _relationships(check, top.get("relationships"), columns_by_table)
    join_paths = _join_paths(check, top.get("join_paths"), columns_by_table)
    sources = {t.name: (t.name,) for t in tables} | {p.name: p.tables for p in join_paths}
    source_sql = {t.name: t.name for t in tables} | {p.name: p.sql for p in join_paths}
    clash = set(columns_by_table) & {p.name for p in join_paths}
    for name_ in sorted(clash):
        check.problem(f"join_paths.{name_}", "a join path has the name of a table", "rename the join path")
    dimensions = _dimensions(check, top.get("dimensions"), columns_by_table, sources, source_sql)
    metrics = _metrics(check, top.get("metrics"), columns_by_table, sources, source_sql)
    overlap = {d.name for d in dimensions} & {m.name for m in metrics}
    for name_ in sorted(overlap):
        check.problem(f"metrics.{name_}", "a metric has the name of a dimension", "rename one of them")

    if check.problems:
        raise SemanticModelError(path, check.problems)
    return SemanticModel(
        path=path,
        version=int(version),
        name=name,
        database=database,
        reference_date=reference_date or datetime.date.min,
        description=description,
        conventions=conventions,
        tables=tables,
        relationships=relationships,
        join_paths=join_paths,
        dimensions=dimensions,
        metrics=metrics,
        content_hash=_canonical_hash(raw),
    )


def _reference_date(check: _Checker, value: Any) -> datetime.date | None:
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass
    if value is not None:
        check.problem("reference_date", f"expected a date YYYY-MM-DD, got {value!r}", 'write e.g. "2026-06-30"')
    return None


def _tables(check: _Checker, value: Any) -> tuple[Table, ...]:
    tables: list[Table] = []
    for name, body in check.named(value, "tables").items():
        key = f"tables.{name}"
        body = check.mapping(body, key, _TABLE_REQUIRED, _TABLE_OPTIONAL)
        columns: list[Column] = []
        for col_name, col_body in check.named(body.get("columns"), f"{key}.columns").items():
            ckey = f"{key}.columns.{col_name}"
            col_body = check.mapping(col_body, ckey, _COLUMN_REQUIRED, _COLUMN_OPTIONAL)
            sensitive = col_body.get("sensitive", False)
            if not isinstance(sensitive, bool):
                check.problem(f"{ckey}.sensitive", f"expected true or false, got {sensitive!r}", "write true or false")
            columns.append(
                Column(
                    name=col_name,
                    description=check.text(col_body.get("description"), f"{ckey}.description") or "",
                    synonyms=check.strings(col_body.get("synonyms"), f"{ckey}.synonyms"),
                    values=check.strings(col_body.get("values"), f"{ckey}.values"),
                    unit=check.text(col_body.get("unit"), f"{ckey}.unit"),
                    sensitive=bool(sensitive),
                )
            )
        primary_key = check.strings(body.get("primary_key"), f"{key}.primary_key")
        for pk in primary_key:
            if pk not in {c.name for c in columns}:
                check.problem(f"{key}.primary_key", f"unknown column {pk!r}", "list columns of this table")
        tables.append(
            Table(
                name=name,
                description=check.text(body.get("description"), f"{key}.description") or "",
                columns=tuple(columns),
                synonyms=check.strings(body.get("synonyms"), f"{key}.synonyms"),
                grain=check.text(body.get("grain"), f"{key}.grain"),
                primary_key=primary_key,
            )
        )
    return tuple(tables)


def _qualified_column(
    check: _Checker, value: Any, key: str, columns_by_table: Mapping[str, set[str]]
) -> tuple[str, str] | None:
    text = check.text(value, key)
    if text is None:
        return None
    table, _, column = text.partition(".")
    if not column or table not in columns_by_table or column not in columns_by_table[table]:
        check.problem(key, f"unknown column {text!r}", "write table.column with a table and column of this model")
        return None
    return table, column


def _relationships(
    check: _Checker, value: Any, columns_by_table: Mapping[str, set[str]]
) -> tuple[Relationship, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        check.problem("relationships", "expected a list", "write one `- {from: t.c, to: t.c}` per foreign key")
        return ()
    out: list[Relationship] = []
    for i, item in enumerate(value):
        key = f"relationships[{i}]"
        body = check.mapping(item, key, _REL_REQUIRED, _REL_OPTIONAL)
        source = _qualified_column(check, body.get("from"), f"{key}.from", columns_by_table)
        target = _qualified_column(check, body.get("to"), f"{key}.to", columns_by_table)
        cardinality = body.get("cardinality", "many_to_one")
        if cardinality not in CARDINALITIES:
            check.problem(
                f"{key}.cardinality", f"unknown cardinality {cardinality!r}", f"use one of {', '.join(CARDINALITIES)}"
            )
        if source and target:
            out.append(Relationship(*source, *target, cardinality=str(cardinality),
                                    description=check.text(body.get("description"), f"{key}.description")))
    return tuple(out)


def _check_sql(
    check: _Checker,
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
        check.problem(key, f"SQL does not parse: {first}", "write a DuckDB SQL expression")
        return None
    allowed = set(allowed_tables)
    aliases: dict[str, str] = {}
    read: set[str] = set()
    for table in tree.find_all(exp.Table):
        if table.name not in columns_by_table:
            check.problem(key, f"unknown table {table.name!r}", "use a table of this model")
            continue
        if table.name not in allowed:
            check.problem(key, f"table {table.name!r} is not part of this item's source",
                          f"use one of {', '.join(sorted(allowed))} or a join path that includes it")
        aliases[table.alias_or_name] = table.name
        read.add(table.name)
    for column in tree.find_all(exp.Column):
        name = column.name
        if column.table:
            table_name = aliases.get(column.table)
            if table_name is None:
                check.problem(key, f"column {column.sql()} names a table that is not in the FROM clause",
                              f"qualify it with one of {', '.join(sorted(aliases)) or 'the source tables'}")
            elif name not in columns_by_table[table_name]:
                check.problem(key, f"unknown column {column.table}.{name}", f"use a column of {table_name}")
        elif not any(name in columns_by_table[t] for t in read):
            check.problem(key, f"unknown column {name!r}", "qualify columns as table.column")
    return read


def _join_paths(
    check: _Checker, value: Any, columns_by_table: Mapping[str, set[str]]
) -> tuple[JoinPath, ...]:
    if value is None:
        return ()
    out: list[JoinPath] = []
    for name, body in check.named(value, "join_paths").items():
        key = f"join_paths.{name}"
        body = check.mapping(body, key, _PATH_REQUIRED, _PATH_OPTIONAL)
        tables = check.strings(body.get("tables"), f"{key}.tables")
        sql = check.text(body.get("sql"), f"{key}.sql")
        unknown = [t for t in tables if t not in columns_by_table]
        if unknown:
            check.problem(f"{key}.tables", f"unknown tables {unknown}", "list tables of this model")
        if len(tables) < 2 and tables:
            check.problem(f"{key}.tables", "a join path needs at least two tables", "list every table it joins")
        if sql and not unknown:
            read = _check_sql(check, f"{key}.sql", f"SELECT 1 FROM {sql}", tables, columns_by_table)
            if read is not None and read != set(tables):
                check.problem(f"{key}.tables", f"lists {sorted(tables)} but the SQL joins {sorted(read)}",
                              "make the list match the SQL")
        out.append(JoinPath(name=name, description=check.text(body.get("description"), f"{key}.description") or "",
                            tables=tables, sql=sql or "",
                            caution=check.text(body.get("caution"), f"{key}.caution")))
    return tuple(out)


def _source(check: _Checker, key: str, value: Any, sources: Mapping[str, tuple[str, ...]]) -> str | None:
    source = check.text(value, key)
    if source is not None and source not in sources:
        check.problem(key, f"unknown source {source!r}", "name a table or a join path of this model")
        return None
    return source


def _dimensions(
    check: _Checker,
    value: Any,
    columns_by_table: Mapping[str, set[str]],
    sources: Mapping[str, tuple[str, ...]],
    source_sql: Mapping[str, str],
) -> tuple[Dimension, ...]:
    if value is None:
        return ()
    out: list[Dimension] = []
    for name, body in check.named(value, "dimensions").items():
        key = f"dimensions.{name}"
        body = check.mapping(body, key, _DIM_REQUIRED, _DIM_OPTIONAL)
        source = _source(check, f"{key}.from", body.get("from"), sources)
        sql = check.text(body.get("sql"), f"{key}.sql")
        if source and sql:
            query = f"SELECT {sql} FROM {source_sql[source]}"
            _check_sql(check, f"{key}.sql", query, sources[source], columns_by_table)
        out.append(Dimension(name=name, description=check.text(body.get("description"), f"{key}.description") or "",
                             sql=sql or "", source=source or "",
                             synonyms=check.strings(body.get("synonyms"), f"{key}.synonyms")))
    return tuple(out)


def _metrics(
    check: _Checker,
    value: Any,
    columns_by_table: Mapping[str, set[str]],
    sources: Mapping[str, tuple[str, ...]],
    source_sql: Mapping[str, str],
) -> tuple[Metric, ...]:
    out: list[Metric] = []
    for name, body in check.named(value, "metrics").items():
        key = f"metrics.{name}"
        body = check.mapping(body, key, _METRIC_REQUIRED, _METRIC_OPTIONAL)
        source = _source(check, f"{key}.from", body.get("from"), sources)
        sql = check.text(body.get("sql"), f"{key}.sql")
        filter_ = check.text(body.get("filter"), f"{key}.filter")
        time_column = check.text(body.get("time_column"), f"{key}.time_column")
        if source and time_column:
            qualified = _qualified_column(check, time_column, f"{key}.time_column", columns_by_table)
            if qualified and qualified[0] not in sources[source]:
                check.problem(f"{key}.time_column", f"{time_column!r} is not in the source {source!r}",
                              "use a date or timestamp column of the source tables")
        if source and sql:
            where = f" WHERE {filter_}" if filter_ else ""
            _check_sql(check, f"{key}.sql", f"SELECT {sql} FROM {source_sql[source]}{where}", sources[source],
                       columns_by_table)
        out.append(Metric(name=name, description=check.text(body.get("description"), f"{key}.description") or "",
                          sql=sql or "", source=source or "", filter=filter_, time_column=time_column,
                          unit=check.text(body.get("unit"), f"{key}.unit"),
                          synonyms=check.strings(body.get("synonyms"), f"{key}.synonyms")))
    return tuple(out)


# ------------------------------------------------------------------------------------ annotated DDL


def database_ddl_with_descriptions(
    db_path: Path, model: SemanticModel, tables: list[str] | None = None
) -> str:
    """CREATE TABLE statements read from the DuckDB file ``db_path`` (read-only), each table and column
    annotated with the model's description, value domain and unit as SQL comments (column synonyms are
    in :meth:`SemanticModel.render_for_prompt`).

    ``tables`` limits the output (unknown names raise UnknownModelItemError). Raises
    DatabaseNotFoundError when the file does not exist.
    """
    import duckdb

    db_path = Path(db_path)
    if not db_path.exists():
        raise DatabaseNotFoundError(
            f"database file {db_path} does not exist (build it with: nl2sql-eval db build)"
        )
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        column_rows = con.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
            "WHERE schema_name = 'main' AND NOT internal ORDER BY table_name, column_index"
        ).fetchall()
        constraint_rows = con.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') ORDER BY table_name, constraint_index"
        ).fetchall()
    finally:
        con.close()

    db_columns: dict[str, list[tuple[str, str, bool]]] = {}
    for table, column, data_type, nullable in column_rows:
        db_columns.setdefault(table, []).append((column, data_type, bool(nullable)))
    primary: dict[str, list[str]] = {}
    foreign: dict[str, list[tuple[list[str], str, list[str]]]] = {}
    for table, kind, cols, ref_table, ref_cols in constraint_rows:
        if kind == "PRIMARY KEY":
            primary[table] = list(cols)
        else:
            foreign.setdefault(table, []).append((list(cols), ref_table, list(ref_cols)))

    if tables is None:
        order = [t for t in model.table_names if t in db_columns]
        order += sorted(t for t in db_columns if t not in model.table_names)
    else:
        order = []
        for name in tables:
            if name not in db_columns:
                known = ", ".join(sorted(db_columns))
                raise UnknownModelItemError(f"table {name!r} is not in {db_path.name}; it has: {known}")
            order.append(name)
    return "\n\n".join(_table_ddl(t, db_columns[t], primary.get(t, []), foreign.get(t, []), model) for t in order)


def _comment(text: str) -> str:
    return " ".join(text.split())


def _table_ddl(
    table: str,
    columns: list[tuple[str, str, bool]],
    primary: list[str],
    foreign: list[tuple[list[str], str, list[str]]],
    model: SemanticModel,
) -> str:
    described = model.table(table) if table in model.table_names else None
    lines: list[str] = []
    if described is not None:
        header = f"-- {table}: {described.description}"
        if described.grain:
            header += f" Grain: {described.grain}."
        if described.synonyms:
            header += f" Also called: {', '.join(described.synonyms)}."
        lines.append(_comment(header))
    else:
        lines.append(f"-- {table}: (not described in the semantic model)")
    single_fk = {cols[0]: (ref, ref_cols[0]) for cols, ref, ref_cols in foreign if len(cols) == 1}
    items: list[tuple[str, str]] = []
    for name, data_type, nullable in columns:
        definition = f"{name} {data_type}"
        if primary == [name]:
            definition += " PRIMARY KEY"
        elif not nullable:
            definition += " NOT NULL"
        if name in single_fk:
            ref, ref_col = single_fk[name]
            definition += f" REFERENCES {ref} ({ref_col})"
        note = ""
        if described is not None and name in described.column_names:
            column = described.column(name)
            note = column.description
            if column.values:
                note += " Values: " + ", ".join(f"'{v}'" for v in column.values) + "."
            if column.unit:
                note += f" Unit: {column.unit}."
            if column.sensitive:
                note += " SENSITIVE: never select."
        else:
            note = "(not described in the semantic model)"
        items.append((definition, _comment(note)))
    if len(primary) > 1:
        items.append((f"PRIMARY KEY ({', '.join(primary)})", ""))
    for cols, ref, ref_cols in foreign:
        if len(cols) > 1:
            items.append((f"FOREIGN KEY ({', '.join(cols)}) REFERENCES {ref} ({', '.join(ref_cols)})", ""))
    lines.append(f"CREATE TABLE {table} (")
    for i, (definition, note) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"    {definition}{comma}" + (f"  -- {note}" if note else ""))
    lines.append(");")
    return "\n".join(lines)
