"""The semantic model's types: what every table and column means, how tables join, the business metrics.

A :class:`SemanticModel` is built and validated by :func:`nl2sql_pipeline.semantic_model.loader.load_semantic_model`;
its :attr:`SemanticModel.content_hash` is part of a run's identity. Prompt rendering lives in
:mod:`nl2sql_pipeline.semantic_model.prompt`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from nl2sql_pipeline.errors import ConfigError, Nl2SqlError

DEFAULT_FILE_NAME = "semantic_model.yml"
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
CARDINALITIES: tuple[str, ...] = ("many_to_one", "one_to_one")


class SemanticModelError(ConfigError):
    """The semantic model file is invalid; ``problems`` holds one ``<file>:<line>: key '<key>': <what> (<fix>)``
    line each."""

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
