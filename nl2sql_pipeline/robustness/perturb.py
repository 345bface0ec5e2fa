"""Schema perturbations: a DuckDB copy of a database spelled another way, and the gold SQL rewritten for it.

Each kind is a plan (``plan_perturbation``: which table and column gets which name, in which order, which
distractors are added), built into a copy of the source (``build_perturbed``: the source attached
read-only, never written) and applied to the gold SQL through sqlglot's AST (``rewrite_sql``: ``qualify``
against the source schema, then every table and column identifier renamed; never text replacement).

Kinds (``PERTURBATION_KINDS``):

- ``abbreviate``: words of table and column names abbreviated (``customer_name`` -> ``cust_nm``);
- ``synonym``: words replaced by synonyms from a small vocabulary (``users`` -> ``members``);
- ``camel_case``: another naming convention (``watch_sessions`` -> ``WatchSessions``, ``user_id`` -> ``userId``);
- ``reorder_columns``: every table's columns in another (seeded) order;
- ``distractors``: look-alike tables (``<table>_archive``: a sample of its rows) and columns (``legacy_<col>``:
  a shifted copy) added beside the real ones.

    >>> rename_word_abbreviate("customer")
    'cust'
    >>> camel("watch_sessions", upper_first=True)
    'WatchSessions'

Perturbed files live under the storage root (``perturbed/<stem>-<fingerprint>/<kind>.duckdb``), built once per
source file identity, kind and builder version, and shared by every model and run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.sql.identifiers import quote_identifier as quote
from nl2sql_pipeline.sql.parse import SqlParseError, parse
from nl2sql_pipeline.variants.build import attach_source, read_source_schema
from nl2sql_pipeline.variants.schema import SOURCE_ALIAS, SourceSchema, Table
from nl2sql_pipeline.variants.steps import parents_first

logger = logging.getLogger(__name__)

KIND_ABBREVIATE = "abbreviate"
KIND_SYNONYM = "synonym"
KIND_CAMEL_CASE = "camel_case"
KIND_REORDER = "reorder_columns"
KIND_DISTRACTORS = "distractors"
PERTURBATION_KINDS: tuple[str, ...] = (KIND_ABBREVIATE, KIND_SYNONYM, KIND_CAMEL_CASE, KIND_REORDER, KIND_DISTRACTORS)
BUILDER_VERSION = "2"
"""Bump when a plan or the build changes: every cached perturbed database is then built again."""
DISTRACTOR_SHARE = 0.3
"""Share of a table's rows its ``_archive`` distractor holds."""
DISTRACTOR_TABLES = 4
"""At most this many tables get an ``_archive`` look-alike (the largest first)."""

ABBREVIATIONS: dict[str, str] = {
    "number": "num",
    "quantity": "qty",
    "amount": "amt",
    "customer": "cust",
    "name": "nm",
    "date": "dt",
    "price": "prc",
    "description": "dscr",
    "category": "cat",
    "status": "stat",
    "country": "ctry",
    "subscription": "sub",
    "subscriptions": "subs",
    "session": "sess",
    "sessions": "sess",
    "episode": "ep",
    "episodes": "eps",
    "impression": "imp",
    "impressions": "imps",
    "campaign": "cmp",
    "campaigns": "cmps",
    "advertiser": "adv",
    "advertisers": "advs",
    "revenue": "rev",
    "minutes": "mins",
    "seconds": "secs",
    "watched": "wtchd",
    "started": "strt",
    "start": "strt",
    "end": "nd",
    "order": "ord",
    "orders": "ords",
    "product": "prod",
    "products": "prods",
    "user": "usr",
    "users": "usrs",
    "rating": "rtg",
    "ratings": "rtgs",
    "season": "ssn",
    "format": "fmt",
    "title": "ttl",
    "count": "cnt",
    "total": "tot",
    "average": "avg",
    "year": "yr",
    "month": "mo",
    "line": "ln",
    "lines": "lns",
    "plan": "pln",
    "plans": "plns",
    "monthly": "mthly",
    "maximum": "max",
    "streams": "strms",
    "founded": "fndd",
    "industry": "ind",
    "budget": "bdgt",
    "target": "tgt",
    "shipping": "shp",
    "clicked": "clkd",
    "served": "srvd",
    "score": "scr",
    "review": "rvw",
    "device": "dev",
    "completed": "cmpl",
    "duration": "dur",
    "signup": "sgnup",
    "username": "usrnm",
    "email": "eml",
    "synopsis": "syn",
    "studio": "std",
    "studios": "stds",
    "genre": "gnr",
    "genres": "gnrs",
    "anime": "anm",
    "merch": "mrch",
}
"""Common abbreviations of words in names (a word not listed keeps its first letter and consonants)."""
SYNONYMS: dict[str, str] = {
    "user": "member",
    "users": "members",
    "anime": "show",
    "studio": "producer",
    "studios": "producers",
    "episode": "installment",
    "episodes": "installments",
    "rating": "review",
    "ratings": "reviews",
    "watch": "viewing",
    "sessions": "events",
    "session": "event",
    "subscription": "membership",
    "subscriptions": "memberships",
    "plan": "tier",
    "plans": "tiers",
    "genre": "category",
    "genres": "categories",
    "advertiser": "sponsor",
    "advertisers": "sponsors",
    "ad": "promo",
    "campaign": "drive",
    "campaigns": "drives",
    "impression": "view",
    "impressions": "views",
    "merch": "store",
    "product": "item",
    "products": "items",
    "order": "purchase",
    "orders": "purchases",
    "customer": "client",
    "customers": "clients",
    "name": "label",
    "title": "heading",
    "country": "nation",
    "status": "state",
    "score": "points",
    "price": "cost",
    "revenue": "income",
    "started": "began",
    "date": "day",
    "format": "kind",
    "season": "period",
    "quantity": "units",
    "founded": "established",
    "industry": "sector",
    "budget": "funds",
    "device": "hardware",
    "completed": "finished",
    "clicked": "tapped",
    "email": "mail",
    "synopsis": "summary",
}
"""Everyday synonyms of words in names (a word not listed is kept)."""
_KEYWORDS = frozenset(
    {"desc", "asc", "end", "order", "group", "select", "from", "where", "by", "on", "to", "as", "in", "is", "table"}
)


class PerturbationError(Nl2SqlError):
    """A perturbed database could not be built, or a gold query could not be rewritten for it."""


@dataclass(frozen=True)
class TablePlan:
    """One table of the perturbed database: its new name and its columns as (original, new) in their new order."""

    source: str
    name: str
    columns: tuple[tuple[str, str], ...]
    distractor_columns: tuple[tuple[str, str], ...] = ()
    """(source column, distractor name): a look-alike column computed from the source column."""

    def column_name(self, original: str) -> str | None:
        """The new name of original column ``original`` (case-insensitive), or None."""
        lowered = original.lower()
        return next((new for old, new in self.columns if old.lower() == lowered), None)


@dataclass(frozen=True)
class PerturbationPlan:
    """What one kind does to one database: every table's plan, and the look-alike tables it adds."""

    kind: str
    tables: tuple[TablePlan, ...]
    distractor_tables: tuple[tuple[str, str], ...] = ()
    """(source table, distractor table name): a sample of the source table's rows under another name."""

    def table(self, original: str) -> TablePlan | None:
        """The plan of original table ``original`` (case-insensitive), or None."""
        lowered = original.lower()
        return next((t for t in self.tables if t.source.lower() == lowered), None)

    def renames(self) -> dict[str, Any]:
        """{table: {"name": new, "columns": {old: new}}} for the tables or columns that changed (the manifest)."""
        out: dict[str, Any] = {}
        for table in self.tables:
            changed = {old: new for old, new in table.columns if old != new}
            if table.name != table.source or changed:
                out[table.source] = {"name": table.name, "columns": changed}
        return out


def parse_kinds(text: str) -> tuple[str, ...]:
    """Kinds from ``KIND[,KIND]`` (``all``: every kind); raises PerturbationError naming an unknown one."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if kinds == ["all"]:
        return PERTURBATION_KINDS
    unknown = [k for k in kinds if k not in PERTURBATION_KINDS]
    if unknown:
        raise PerturbationError(
            f"unknown perturbation kind {unknown[0]!r}; choose from {', '.join(PERTURBATION_KINDS)} or 'all'"
        )
    return tuple(dict.fromkeys(kinds))


def _split_words(name: str) -> list[str]:
    return [w for w in re.split(r"_+", name) if w]


def rename_word_abbreviate(word: str) -> str:
    """A word's abbreviation: ``ABBREVIATIONS``, else first letter plus consonants (at most 4 letters); short
    words (three letters or fewer, ``id``) are kept."""
    lowered = word.lower()
    if lowered in ABBREVIATIONS:
        return ABBREVIATIONS[lowered]
    if len(lowered) <= 3 or not lowered.isalpha():
        return lowered
    return (lowered[0] + re.sub(r"[aeiou]", "", lowered[1:]))[:4]


def rename_word_synonym(word: str) -> str:
    """A word's synonym from ``SYNONYMS`` (the word itself when none is listed)."""
    return SYNONYMS.get(word.lower(), word.lower())


def camel(name: str, *, upper_first: bool = False) -> str:
    """``snake_case`` as ``camelCase`` (``PascalCase`` with ``upper_first``)."""
    words = _split_words(name.lower())
    if not words:
        return name
    head = words[0].capitalize() if upper_first else words[0]
    return head + "".join(w.capitalize() for w in words[1:])


def _by_words(name: str, rename_word) -> str:
    return "_".join(rename_word(w) for w in _split_words(name)) or name


def _unique(name: str, taken: set[str]) -> str:
    candidate = name if name.lower() not in _KEYWORDS else f"{name}_"
    number = 2
    while candidate.lower() in taken:
        candidate = f"{name}_{number}"
        number += 1
    taken.add(candidate.lower())
    return candidate


def _renamed(schema: SourceSchema, kind: str) -> tuple[TablePlan, ...]:
    if kind == KIND_ABBREVIATE:
        table_name = column_name = lambda n: _by_words(n, rename_word_abbreviate)
    elif kind == KIND_SYNONYM:
        table_name = column_name = lambda n: _by_words(n, rename_word_synonym)
    elif kind == KIND_CAMEL_CASE:
        table_name = lambda n: camel(n, upper_first=True)  # noqa: E731
        column_name = camel
    else:
        table_name = column_name = lambda n: n
    taken_tables: set[str] = set()
    plans = []
    for table in schema.tables:
        taken_columns: set[str] = set()
        columns = tuple((c.name, _unique(column_name(c.name), taken_columns)) for c in table.columns)
        if kind == KIND_REORDER and len(columns) > 1:
            rng = random.Random(f"nl2sql-perturb|{kind}|{table.name}")
            shuffled = list(columns)
            while shuffled == list(columns):
                rng.shuffle(shuffled)
            columns = tuple(shuffled)
        plans.append(TablePlan(table.name, _unique(table_name(table.name), taken_tables), columns))
    return tuple(plans)


def plan_perturbation(schema: SourceSchema, kind: str) -> PerturbationPlan:
    """The plan of ``kind`` for a database of shape ``schema`` (a pure function of both)."""
    if kind not in PERTURBATION_KINDS:
        raise PerturbationError(f"unknown perturbation kind {kind!r} (known: {', '.join(PERTURBATION_KINDS)})")
    if len(schema.tables) == 0:
        raise PerturbationError("the database has no tables to perturb")
    tables = _renamed(schema, kind)
    if kind != KIND_DISTRACTORS:
        return PerturbationPlan(kind, tables)
    taken = {t.name.lower() for t in tables}
    with_distractors = []
    for plan, table in zip(tables, schema.tables, strict=True):
        columns = {c.lower() for _, c in plan.columns}
        numeric = [
            c
            for c in table.columns
            if _is_numeric(c.data_type)
            and c.name.lower() not in table.key_columns
            and not c.name.lower().endswith("id")
        ]
        extra = tuple((c.name, _unique(f"legacy_{c.name}", columns)) for c in numeric[:2])
        with_distractors.append(TablePlan(plan.source, plan.name, plan.columns, extra))
    distractor_tables = tuple(
        (t.name, _unique(f"{t.name}_archive", taken)) for t in sorted(schema.tables, key=lambda t: t.name)
    )[:DISTRACTOR_TABLES]
    return PerturbationPlan(kind, tuple(with_distractors), distractor_tables)


def _is_numeric(data_type: str) -> bool:
    return bool(re.match(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|DOUBLE|FLOAT|REAL|DECIMAL)", data_type.upper()))


# ------------------------------------------------------------------------------------------------ the SQL


def qualify_schema(schema: SourceSchema) -> dict[str, object]:
    """The ``{table: {column: type}}`` mapping ``qualify`` resolves columns against (tables of ``main``)."""
    return {t.name: {c.name: c.data_type for c in t.columns} for t in schema.tables if t.schema == "main"}


def rewrite_sql(sql: str, schema: SourceSchema, plan: PerturbationPlan) -> str:
    """``sql`` (DuckDB) rewritten for the database of ``plan``: qualified against the source ``schema`` (every
    column bound to its table, ``*`` expanded in the source's column order, every projection named as
    before), then every identifier that names a source table or one of its columns renamed in the tree.

    Raises ``PerturbationError`` when the SQL does not parse or a column cannot be bound to a table.
    """
    try:
        tree = parse(sql).copy()  # the parsed tree is shared: never modify it
        tree = qualify(
            tree,
            schema=qualify_schema(schema),
            dialect="duckdb",
            validate_qualify_columns=True,
            quote_identifiers=True,
        )
    except (SqlParseError, SqlglotError) as exc:
        raise PerturbationError(f"cannot qualify the gold SQL against the source schema: {exc}") from exc
    renamed_aliases: dict[int, dict[str, str]] = {}
    for scope in traverse_scope(tree):
        real: dict[str, TablePlan] = {}
        alias_map: dict[str, str] = {}
        for alias, source in scope.sources.items():
            if not isinstance(source, exp.Table):
                continue
            table_plan = plan.table(source.name)
            if table_plan is None:
                continue
            real[alias] = table_plan
            if id(source) not in renamed_aliases:
                renamed_aliases[id(source)] = {}
                source.set("this", exp.to_identifier(table_plan.name, quoted=True))
                if source.alias and source.alias.lower() == table_plan.source.lower():
                    source.set("alias", exp.TableAlias(this=exp.to_identifier(table_plan.name, quoted=True)))
                    alias_map[alias] = table_plan.name
        for column in scope.columns:
            table_plan = real.get(column.table)
            if table_plan is None:
                continue
            new = table_plan.column_name(column.name)
            if new is None:
                raise PerturbationError(f"column {column.table}.{column.name} is not in table {table_plan.source}")
            column.set("this", exp.to_identifier(new, quoted=True))
            if column.table in alias_map:
                column.set("table", exp.to_identifier(alias_map[column.table], quoted=True))
    return tree.sql(dialect="duckdb", pretty=True)


# ------------------------------------------------------------------------------------------------ the files


def perturbation_fingerprint(source: Path, kind: str) -> str:
    """The cache key of ``kind``'s copy of ``source`` (16 hex digits)."""
    stat = source.stat()
    payload = json.dumps(
        {
            "builder": BUILDER_VERSION,
            "duckdb": duckdb.__version__,
            "source": str(source.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "kind": kind,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def perturbed_path(source: Path, kind: str) -> Path:
    """Where ``kind``'s copy of ``source`` lives under the storage root."""
    source = Path(source).resolve()
    return (
        paths.storage_root()
        / "perturbed"
        / f"{source.stem}-{perturbation_fingerprint(source, kind)}"
        / f"{kind}.duckdb"
    )


@dataclass
class PerturbedDatabase:
    """A built perturbed copy: its file, the plan it was built from and the source's shape."""

    path: Path
    plan: PerturbationPlan
    source_schema: SourceSchema = field(repr=False)


def ensure_perturbed(source: Path, kind: str) -> PerturbedDatabase:
    """``kind``'s copy of ``source``, built when missing (atomically: a reader never sees half a file)."""
    source = Path(source).resolve()
    schema = read_source_schema(source)
    plan = plan_perturbation(schema, kind)
    target = perturbed_path(source, kind)
    if not target.is_file():
        logger.info("building the %s perturbation of %s", kind, source)
        build_perturbed(source, target, schema, plan)
        manifest = target.with_suffix(".json")
        manifest.write_text(
            json.dumps(
                {"source": str(source), "kind": kind, "renames": plan.renames(), "distractors": plan.distractor_tables},
                indent=1,
            ),
            encoding="utf-8",
        )
    return PerturbedDatabase(target, plan, schema)


def build_perturbed(source: Path, target: Path, schema: SourceSchema, plan: PerturbationPlan) -> None:
    """Write ``plan``'s copy of ``source`` to ``target``: tables parents first with their keys, then distractors."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp), config={"threads": 1, "autoinstall_known_extensions": False})
    try:
        attach_source(con, source)
        [(database,)] = con.execute("SELECT current_database()").fetchall()
        ordered, _ = parents_first([t for t in schema.tables if t.schema == "main"])
        for table in ordered:
            table_plan = plan.table(table.name)
            assert table_plan is not None
            _copy_table(con, database, table, table_plan, plan)
        for source_name, name in plan.distractor_tables:
            copied = plan.table(source_name)
            assert copied is not None
            con.execute(
                f"CREATE TABLE {quote(database)}.main.{quote(name)} AS SELECT * FROM "
                f"{quote(database)}.main.{quote(copied.name)} "
                f"USING SAMPLE {int(DISTRACTOR_SHARE * 100)} PERCENT (bernoulli, 7)"
            )
        con.execute(f"DETACH {SOURCE_ALIAS}")
        con.execute("CHECKPOINT")
    except duckdb.Error as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise PerturbationError(f"building the {plan.kind} perturbation of {source} failed ({exc})") from exc
    con.close()
    os.replace(tmp, target)
    Path(f"{tmp}.wal").unlink(missing_ok=True)


def _copy_table(con: duckdb.DuckDBPyConnection, database: str, table: Table, table_plan: TablePlan, plan) -> None:
    types = {c.name: c.data_type for c in table.columns}
    nullable = {c.name: c.nullable for c in table.columns}
    definitions = [
        f"{quote(new)} {types[old]}{'' if nullable[old] else ' NOT NULL'}" for old, new in table_plan.columns
    ]
    if table.primary_key:
        definitions.append(
            f"PRIMARY KEY ({', '.join(quote(table_plan.column_name(c) or c) for c in table.primary_key)})"
        )
    for fk in table.foreign_keys:
        parent = plan.table(fk.parent)
        if parent is None or parent.source.lower() == table.name.lower():
            continue  # a self-reference is left out (rows are copied in one statement)
        definitions.append(
            f"FOREIGN KEY ({', '.join(quote(table_plan.column_name(c) or c) for c in fk.columns)}) "
            f"REFERENCES {quote(parent.name)} ({', '.join(quote(parent.column_name(c) or c) for c in fk.parent_columns)})"
        )
    for old, new in table_plan.distractor_columns:
        definitions.append(f"{quote(new)} {types[old]}")
    qualified = f"{quote(database)}.main.{quote(table_plan.name)}"
    con.execute(f"CREATE TABLE {qualified} ({', '.join(definitions)})")
    selected = [quote(old) for old, _ in table_plan.columns]
    selected += [f"{quote(old)} + 1" for old, _ in table_plan.distractor_columns]
    con.execute(f"INSERT INTO {qualified} SELECT {', '.join(selected)} FROM {SOURCE_ALIAS}.{table.qualified}")
