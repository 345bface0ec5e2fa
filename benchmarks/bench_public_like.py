"""A public-benchmark-shaped evaluation end to end (issue 21): nl2sql-eval against the plain loop of the public scripts.

Builds, under a temporary folder and from a seeded RNG, a Spider-layout folder (``database/<db_id>/<db_id>.sqlite``,
``tables.json``, ``dev.json``): ``--databases`` small SQLite databases (default 15; three tables each, a parent,
a child with a foreign key to it and a lookup) and ``--per-db`` questions on each (default 42: 630 in all) whose
gold SQL filters, counts, groups, orders on unique keys with a LIMIT, joins and aggregates. It is imported as a
user would (``nl2sql-eval gold import --format spider ... --register --gold-set public-like``) into a private copy
of ``data/`` (``NL2SQL_DATA``) and storage root (``NL2SQL_HOME``), with a 1-case set (one more database, one
question) beside it. A replay model (``kind: predictions``, ``format: lines``, ``source_dialect: sqlite``, as a
Spider predictions file) answers about half the questions with the gold SQL and the rest with a changed
literal, LIMIT or column; every measured run uses a fresh model slug replaying that same file, so no stored
score is reused.

Timed in one run, side by side (wall seconds, best of ``--rounds``):

- **the limit**: a plain Python loop that, per question, opens the SQLite database, runs the predicted and the
  gold query and compares the results as sets (BIRD's ``execute_sql`` and Spider's execution match at their
  core; no process start); also the same loop over the gold queries alone;
- ``nl2sql-eval run`` as a fresh CLI process on the prepared gold version, ``--test-suite-variants 0`` and the
  default (3), on the 1-case set (the fixed cost of a run) and on the whole set;
- **preparation** of a new gold version (preflight, oracle, 3 variants): the first run of a model on the freshly
  imported set minus the default run of another model on the prepared set. (The sample database is built
  first, in an unmeasured warm-up that prepares the 1-case set.)

Derived and checked against issue 21's targets (exit 0 only when every one holds): fixed cost (the 1-case run)
<= 2 s; marginal cost per case, ``(whole - 1-case) / (N - 1)``, <= 5x the plain loop's per-case time with
``--test-suite-variants 0`` and <= 10x with the default; preparation <= 30x the plain loop over the gold queries.
``--scale`` also imports sets of 1,000 and 10,000 questions (long) and checks that the marginal cost per case
at 10,000 is within 1.2x of that at 1,000, for both settings.

``--profile K`` profiles one more whole-set run (``--test-suite-variants 0``, unmeasured) and prints its top K entries.
``--planning`` prints where DuckDB's own time goes on the set's gold queries (its detailed query profile: binding,
each optimizer pass, physical planning, execution), the part of the floors no harness change can remove.

``python benchmarks/bench_public_like.py [--databases 15] [--per-db 42] [--rounds 1] [--scale] [--keep] [--profile K]
[--planning]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

ROOT = Path(__file__).resolve().parent.parent
SEED = 21
REFERENCE_DATE = "2026-06-30"
GOLD_SET = "public-like"
ONE_SET = "public-like-one"
SCALE_SIZES = (1000, 10000)

FIXED_COST_S = 2.0
MARGINAL_V0_X = 5.0
MARGINAL_DEFAULT_X = 10.0
PREPARATION_X = 30.0
LINEARITY_X = 1.2

THEMES = (
    ("singer", "concert", "genre"),
    ("student", "enrollment", "major"),
    ("employee", "assignment", "department"),
    ("airport", "flight", "region"),
    ("museum", "visit", "city"),
    ("player", "match_stat", "team"),
    ("book", "loan", "publisher"),
    ("ship", "voyage", "port"),
)
"""(parent, child, lookup) table names; database i takes theme i mod 8, so 15 databases repeat shapes, not data."""

NAMES = (
    "Ada Alan Bea Carl Dora Emil Fay Gus Hana Ivo Jill Karl Lena Milo Nora Otto Pia Quin Rosa Saul Tara Uma Vic Wes "
    "Xena Yuri Zoe"
).split()


# ------------------------------------------------------------------ the Spider-layout folder (after tests/eval_support)


@dataclass(frozen=True)
class SpiderDatabase:
    """One SQLite database of a Spider-layout folder: its id, the SQL script that fills it, and the keys that
    only ``tables.json`` declares (``primary``: table -> column; ``foreign``: ((table, column), (table, column)))."""

    db_id: str
    script: str
    primary: Mapping[str, str] = field(default_factory=dict)
    foreign: Sequence[tuple[tuple[str, str], tuple[str, str]]] = ()


def write_sqlite(path: Path, script: str) -> sqlite3.Connection:
    """A SQLite file at ``path`` (folders created) filled by ``script``; the open connection is returned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(script)
    con.commit()
    return con


def spider_tables_entry(db_id: str, con: sqlite3.Connection, primary: Mapping, foreign: Sequence) -> dict:
    """The ``tables.json`` entry of the SQLite database on ``con``, as Spider writes it."""
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    columns = [[-1, "*"]] + [[i, r[1]] for i, t in enumerate(tables) for r in con.execute(f"PRAGMA table_info({t})")]
    types = ["text"] + ["number" for _ in columns[1:]]
    index = {(tables[t], c): i for i, (t, c) in enumerate(columns) if t >= 0}
    return {
        "db_id": db_id,
        "table_names_original": tables,
        "table_names": tables,
        "column_names_original": columns,
        "column_names": columns,
        "column_types": types,
        "primary_keys": [index[(t, c)] for t, c in primary.items()],
        "foreign_keys": [[index[child], index[parent]] for child, parent in foreign],
    }


def build_spider_folder(
    root: Path, databases: Sequence[SpiderDatabase], questions: Sequence[tuple[str, str, str]]
) -> Path:
    """A Spider-layout folder at ``root``: ``database/<db_id>/<db_id>.sqlite`` per database, ``tables.json``, and
    ``dev.json`` from ``questions`` (db_id, question, gold SQL)."""
    entries = []
    for database in databases:
        con = write_sqlite(root / "database" / database.db_id / f"{database.db_id}.sqlite", database.script)
        entries.append(spider_tables_entry(database.db_id, con, database.primary, database.foreign))
        con.close()
    (root / "tables.json").write_text(json.dumps(entries), encoding="utf-8")
    (root / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in questions]), encoding="utf-8"
    )
    return root


# ---------------------------------------------------------------------------- databases, questions, predictions


@dataclass(frozen=True)
class Shape:
    """What the question templates need to know of one generated database."""

    db_id: str
    parent: str
    child: str
    lookup: str
    categories: tuple[str, ...]
    names: tuple[str, ...]
    years: tuple[int, ...]


def make_database(db_id: str, theme: tuple[str, str, str], rng: random.Random) -> tuple[SpiderDatabase, Shape]:
    """A small database: ``lookup`` (5-6 codes), ``parent`` (30-60 rows, unique names), ``child`` (100-300 rows)."""
    parent, child, lookup = theme
    codes = tuple(f"{lookup[:2].upper()}{n}" for n in range(1, rng.randint(5, 6) + 1))
    names = tuple(f"{rng.choice(NAMES)} {parent.title()} {n}" for n in range(1, rng.randint(30, 60) + 1))
    years = tuple(range(2015, 2025))
    lines = [
        f"CREATE TABLE {lookup} (code TEXT PRIMARY KEY, title TEXT, rank INTEGER);",
        f"CREATE TABLE {parent} (id INTEGER PRIMARY KEY, name TEXT, category TEXT REFERENCES {lookup}(code), "
        "value INTEGER, since INTEGER);",
        f"CREATE TABLE {child} (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES {parent}(id), amount INTEGER, "
        "year INTEGER, label TEXT);",
    ]
    for rank, code in enumerate(codes, start=1):
        lines.append(f"INSERT INTO {lookup} VALUES ('{code}', '{lookup.title()} {code}', {rank});")
    for pid, name in enumerate(names, start=1):
        lines.append(
            f"INSERT INTO {parent} VALUES ({pid}, '{name}', '{rng.choice(codes)}', {rng.randint(0, 1000)}, "
            f"{rng.choice(years)});"
        )
    # a few parents get no child rows (for the NOT IN questions)
    with_children = [pid for pid in range(1, len(names) + 1) if rng.random() < 0.85]
    for cid in range(1, rng.randint(100, 300) + 1):
        lines.append(
            f"INSERT INTO {child} VALUES ({cid}, {rng.choice(with_children)}, {rng.randint(1, 500)}, "
            f"{rng.choice(years)}, '{rng.choice('ABCD')}');"
        )
    database = SpiderDatabase(
        db_id,
        "\n".join(lines),
        primary={lookup: "code", parent: "id", child: "id"},
        foreign=(((parent, "category"), (lookup, "code")), ((child, "parent_id"), (parent, "id"))),
    )
    return database, Shape(db_id, parent, child, lookup, codes, names, years)


Template = Callable[[Shape, random.Random], tuple[str, str, str]]
"""A question template: (question, gold SQL, a wrong SQL: a changed literal, LIMIT or column)."""


def _count_in_category(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    code, other = rng.sample(s.categories, 2)
    sql = "SELECT count(*) FROM {p} WHERE category = '{c}'"
    return (
        f"How many {s.parent}s are in category {code}?",
        sql.format(p=s.parent, c=code),
        sql.format(p=s.parent, c=other),
    )


def _names_above(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    threshold = rng.randint(100, 900)
    sql = "SELECT name FROM {p} WHERE value > {t}"
    return (
        f"List the names of the {s.parent}s with a value above {threshold}.",
        sql.format(p=s.parent, t=threshold),
        sql.format(p=s.parent, t=threshold + rng.randint(20, 80)),
    )


def _count_per_category(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    since = rng.choice(s.years)
    return (
        f"For each category, how many {s.parent}s started in or after {since}?",
        f"SELECT category, count(*) FROM {s.parent} WHERE since >= {since} GROUP BY category",
        f"SELECT category, count(*) FROM {s.parent} WHERE since > {since} GROUP BY category",
    )


def _top_by_value(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    k = rng.randint(2, 8)
    sql = "SELECT name, value FROM {p} ORDER BY value DESC, id LIMIT {k}"
    return (
        f"Which {k} {s.parent}s have the highest value? Give names and values.",
        sql.format(p=s.parent, k=k),
        sql.format(p=s.parent, k=k + 1),
    )


def _children_per_parent(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    year = rng.choice(s.years)
    sql = (
        "SELECT p.name, count(*) FROM {p} AS p JOIN {c} AS x ON x.parent_id = p.id WHERE x.year = {y} "
        "GROUP BY p.id, p.name"
    )
    return (
        f"How many {s.child} records did each {s.parent} have in {year}?",
        sql.format(p=s.parent, c=s.child, y=year),
        sql.format(p=s.parent, c=s.child, y=year + 1 if year < s.years[-1] else year - 1),
    )


def _total_in_category(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    code = rng.choice(s.categories)
    return (
        f"What is the total {s.child} amount of the {s.parent}s in category {code}?",
        f"SELECT sum(x.amount) FROM {s.child} AS x JOIN {s.parent} AS p ON x.parent_id = p.id WHERE p.category = '{code}'",
        f"SELECT sum(x.amount) FROM {s.child} AS x JOIN {s.parent} AS p ON x.parent_id = p.id WHERE p.category <> '{code}'",
    )


def _amount_stats(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    year = rng.choice(s.years)
    return (
        f"What are the average, largest and smallest {s.child} amounts in {year}?",
        f"SELECT avg(amount), max(amount), min(amount) FROM {s.child} WHERE year = {year}",
        f"SELECT avg(amount), max(amount), min(id) FROM {s.child} WHERE year = {year}",
    )


def _per_lookup_title(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    floor = rng.randint(0, 600)
    return (
        f"For each {s.lookup}, how many {s.parent}s with a value of at least {floor} belong to it? Give its title.",
        f"SELECT l.title, count(*) FROM {s.parent} AS p JOIN {s.lookup} AS l ON p.category = l.code "
        f"WHERE p.value >= {floor} GROUP BY l.title",
        f"SELECT l.code, count(*) FROM {s.parent} AS p JOIN {s.lookup} AS l ON p.category = l.code "
        f"WHERE p.value >= {floor} GROUP BY l.code",
    )


def _without_children(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    since = rng.choice(s.years)
    return (
        f"Which {s.parent}s that started before {since} have no {s.child} records?",
        f"SELECT name FROM {s.parent} WHERE since < {since} AND id NOT IN (SELECT parent_id FROM {s.child})",
        f"SELECT name FROM {s.parent} WHERE since <= {since} AND id NOT IN (SELECT parent_id FROM {s.child})",
    )


def _busy_years(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    floor, label = rng.randint(1, 6), rng.choice("ABCD")
    sql = "SELECT year, count(*) FROM {c} WHERE label = '{a}' GROUP BY year HAVING count(*) > {f} ORDER BY year"
    return (
        f"Which years have more than {floor} {s.child} records with label {label}? Order by year.",
        sql.format(c=s.child, a=label, f=floor),
        sql.format(c=s.child, a=label, f=floor) + " DESC LIMIT 3",
    )


def _name_of(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    name = rng.choice(s.names)
    return (
        f"What is the value and category of {name}?",
        f"SELECT value, category FROM {s.parent} WHERE name = '{name}'",
        f"SELECT value, since FROM {s.parent} WHERE name = '{name}'",
    )


def _top_spenders(s: Shape, rng: random.Random) -> tuple[str, str, str]:
    k = rng.randint(1, 5)
    sql = (
        "SELECT p.name, sum(x.amount) AS total FROM {p} AS p JOIN {c} AS x ON x.parent_id = p.id "
        "GROUP BY p.id, p.name ORDER BY total DESC, p.id LIMIT {k}"
    )
    return (
        f"Which {k} {s.parent}s have the largest total {s.child} amount?",
        sql.format(p=s.parent, c=s.child, k=k),
        sql.format(p=s.parent, c=s.child, k=k + 2),
    )


TEMPLATES: tuple[Template, ...] = (
    _count_in_category,
    _names_above,
    _count_per_category,
    _top_by_value,
    _children_per_parent,
    _total_in_category,
    _amount_stats,
    _per_lookup_title,
    _without_children,
    _busy_years,
    _name_of,
    _top_spenders,
)


@dataclass(frozen=True)
class Question:
    """One question of the set: its database, text, gold SQL and the replay's prediction (SQLite SQL)."""

    db_id: str
    text: str
    gold: str
    predicted: str


def make_set(
    prefix: str, databases: int, per_db: int, seed: int
) -> tuple[list[SpiderDatabase], list[Question], list[str]]:
    """``databases`` databases named ``<prefix><theme>_<i>`` with ``per_db`` questions each; about half the
    predictions are the gold SQL. Also returns the database paths' ids in order."""
    rng = random.Random(seed)
    built: list[SpiderDatabase] = []
    questions: list[Question] = []
    for i in range(databases):
        theme = THEMES[i % len(THEMES)]
        database, shape = make_database(f"{prefix}{theme[0]}_{i + 1}", theme, rng)
        built.append(database)
        seen: set[str] = set()
        for n in range(per_db):
            text, gold, wrong = TEMPLATES[n % len(TEMPLATES)](shape, rng)
            for _ in range(20):  # a question asked twice on one database is drawn again
                if text not in seen:
                    break
                text, gold, wrong = TEMPLATES[n % len(TEMPLATES)](shape, rng)
            if text in seen:
                text = f"{text} (asked again, {n})"
            seen.add(text)
            questions.append(Question(shape.db_id, text, gold, gold if rng.random() < 0.5 else wrong))
    return built, questions, [d.db_id for d in built]


# ------------------------------------------------------------------------------------------------ the plain loop


def plain_loop(folder: Path, questions: Sequence[Question], *, gold_only: bool = False) -> tuple[float, int]:
    """Seconds to run every question as the public scripts do (open the SQLite file, run the prediction and the
    gold, compare the results as sets) and the number judged equal; ``gold_only``: run the gold queries alone."""
    started = time.perf_counter()
    equal = 0
    for q in questions:
        con = sqlite3.connect(folder / "database" / q.db_id / f"{q.db_id}.sqlite")
        try:
            cursor = con.cursor()
            gold = cursor.execute(q.gold).fetchall()
            if gold_only:
                continue
            try:
                predicted = cursor.execute(q.predicted).fetchall()
            except sqlite3.Error:
                continue
            equal += set(predicted) == set(gold)
        finally:
            con.close()
    return time.perf_counter() - started, equal


def duckdb_loop(data: Path, key: str, questions: Sequence[Question], *, run_floor: bool = False) -> tuple[float, int]:
    """The engine's floor, for context (no target): seconds to run every imported gold query and the prediction
    converted to DuckDB, one read-only connection per database opened before the clock starts, and compare the
    results as sets; the number judged equal. The predictions are converted untimed.

    ``run_floor``: the least a model run on a prepared gold version does per case instead: the gold results are
    fetched untimed (a prepared version has them), and the prediction's conversion from SQLite (sqlglot), its
    execution and the set comparison are timed."""
    import duckdb

    from nl2sql_pipeline.dialect.convert import ConversionError, convert_sql

    def converted(sql: str) -> str | None:
        try:
            return convert_sql(sql, "sqlite").sql
        except ConversionError:
            return None

    with gold_on_duckdb(data, key) as gold_queries:
        if run_floor:
            golds = [con.execute(record["expected_sql"]).fetchall() for con, record in gold_queries]
        else:
            predictions = [converted(q.predicted) for q in questions]
        started = time.perf_counter()
        equal = 0
        for i, ((con, record), q) in enumerate(zip(gold_queries, questions, strict=True)):
            if run_floor:
                gold, predicted_sql = golds[i], converted(q.predicted)
            else:
                gold, predicted_sql = con.execute(record["expected_sql"]).fetchall(), predictions[i]
            if predicted_sql is None:
                continue
            try:
                predicted = con.execute(predicted_sql).fetchall()
            except duckdb.Error:
                continue
            equal += set(predicted) == set(gold)
        return time.perf_counter() - started, equal


@contextmanager
def gold_on_duckdb(
    data: Path, key: str, *settings: str
) -> Iterator[list[tuple[duckdb.DuckDBPyConnection, dict[str, Any]]]]:
    """Every imported gold record of set ``key`` with a read-only DuckDB connection to its database (one per
    database, opened here with ``SET threads = 1`` and then ``settings``, closed on exit), in the set's order."""
    import duckdb

    gold_file = data / "gold" / key / f"{key}.jsonl"
    records = [json.loads(line) for line in gold_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    paths = [str(gold_file.parent / record["database"]) for record in records]
    connections: dict[str, duckdb.DuckDBPyConnection] = {}
    try:
        for path in dict.fromkeys(paths):
            con = connections[path] = duckdb.connect(path, read_only=True)
            for setting in ("SET threads = 1", *settings):
                con.execute(setting)
        yield [(connections[path], record) for path, record in zip(paths, records, strict=True)]
    finally:
        for con in connections.values():
            con.close()


def duckdb_planning(data: Path, key: str) -> tuple[int, dict[str, float]]:
    """DuckDB's own profile of every imported gold query (``profiling_mode = 'detailed'``, connections as in
    :func:`gold_on_duckdb`): the number profiled and the mean seconds per query of each phase, keyed ``query``
    (the whole query as DuckDB times it), ``execution (CPU)``, ``binding``, ``planner`` (binding included),
    ``optimizer`` and ``optimizer: <pass>`` for each pass, and ``physical planner``. Profiling inflates every
    figure; the shares are what it shows."""
    output = data.parent / "duckdb-profile.json"
    quoted = output.as_posix().replace("'", "''")
    settings = (
        "PRAGMA enable_profiling = 'json'",
        "SET profiling_mode = 'detailed'",
        f"SET profiling_output = '{quoted}'",
    )
    totals: dict[str, float] = {}
    try:
        with gold_on_duckdb(data, key, *settings) as gold_queries:
            for con, record in gold_queries:
                con.execute(record["expected_sql"]).fetchall()
                profile = json.loads(output.read_text(encoding="utf-8"))
                phases = {
                    "query": profile["query"]["total_time"],
                    "execution (CPU)": profile["query"]["cpu_time"],
                    "binding": profile["planner"]["binding_time"],
                    "planner": profile["planner"]["total_time"],
                    "optimizer": profile["optimizer"]["total_time"],
                    "physical planner": profile["physical_planner"]["total_time"],
                }
                phases.update(
                    (f"optimizer: {name}", seconds)
                    for name, seconds in profile["optimizer"].items()
                    if name != "total_time" and isinstance(seconds, int | float)
                )
                for phase, seconds in phases.items():
                    totals[phase] = totals.get(phase, 0.0) + seconds
    finally:
        output.unlink(missing_ok=True)
    profiled = len(gold_queries)
    return profiled, {phase: seconds / max(profiled, 1) for phase, seconds in totals.items()}


def print_planning(data: Path, key: str, top: int = 8) -> None:
    """Print :func:`duckdb_planning`: the phases, then the ``top`` costliest optimizer passes."""
    profiled, phases = duckdb_planning(data, key)
    passes = sorted(((s, p) for p, s in phases.items() if p.startswith("optimizer: ")), reverse=True)
    print(
        f"\nDuckDB's own profile of the {profiled} gold queries (detailed profiling, mean ms a query; inflated by it):"
    )
    for phase in ("query", "binding", "planner", "optimizer", "physical planner", "execution (CPU)"):
        print(f"  {phase:<44} {1000 * phases[phase]:>7.3f}")
    rest = phases["query"] - sum(phases[p] for p in ("planner", "optimizer", "physical planner", "execution (CPU)"))
    print(f"  {'the rest (parsing, results, the profiler)':<44} {1000 * rest:>7.3f}")
    print(f"  optimizer passes: {len(passes)}; the {min(top, len(passes))} costliest:")
    for seconds, phase in passes[:top]:
        print(f"    {phase.removeprefix('optimizer: '):<42} {1000 * seconds:>7.3f}")


# ----------------------------------------------------------------------------------------------- the CLI runs


class BenchError(RuntimeError):
    """A step of the benchmark failed (a command exited non-zero, or a set did not import whole)."""


@dataclass
class Lab:
    """The private data directory, storage root and environment of this benchmark's CLI processes."""

    work: Path
    env: dict[str, str]
    slugs: int = 0

    @property
    def data(self) -> Path:
        return self.work / "data"

    def cli(self, *args: str, profile: Path | None = None) -> tuple[float, str]:
        """Run ``nl2sql-eval ARGS`` as a fresh process (under cProfile, writing ``profile``, when given);
        (wall seconds, stdout). BenchError on a non-zero exit."""
        if profile is None:
            command = [sys.executable, "-m", "nl2sql_cli.main", *args]
        else:  # main() under cProfile: the console entry ends with os._exit, which would skip the profile's dump
            script = (
                "import cProfile, sys; path = sys.argv.pop(1); sys.argv[0] = 'nl2sql-eval'; "
                "cProfile.run('from nl2sql_cli.main import main; main()', path)"
            )
            command = [sys.executable, "-c", script, str(profile), *args]
        started = time.perf_counter()
        done = subprocess.run(command, env=self.env, cwd=ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise BenchError(
                f"nl2sql-eval {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}{done.stdout[-1000:]}"
            )
        return elapsed, done.stdout

    def import_set(self, key: str, folder: Path, expected: int) -> float:
        """``gold import --format spider`` of ``folder`` as gold set ``key``; its wall seconds."""
        out = self.data / "gold" / key / f"{key}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        seconds, _ = self.cli(
            "gold",
            "import",
            "--format",
            "spider",
            str(folder),
            "--out",
            str(out),
            "--register",
            "--gold-set",
            key,
            "--reference-date",
            REFERENCE_DATE,
        )
        kept = sum(1 for line in out.read_text(encoding="utf-8").splitlines() if line.strip())
        if kept != expected:
            raise BenchError(f"{out}: {kept} of {expected} questions imported; the generated gold must import whole")
        return seconds

    def replay(self, key: str, questions: Sequence[Question]) -> Path:
        """The Spider-style predictions file (``SQL<TAB>db_id`` per line, gold order) of gold set ``key``."""
        path = self.work / f"{key}.predictions.txt"
        path.write_text("".join(f"{q.predicted}\t{q.db_id}\n" for q in questions), encoding="utf-8")
        return path

    def new_model(self, predictions: Path) -> str:
        """A fresh model slug replaying ``predictions`` (registered now: nothing stored can be reused for it)."""
        self.slugs += 1
        slug = f"replay-{self.slugs:03d}"
        models = self.data / "models.yml"
        entry = f"  {slug}:\n    kind: predictions\n    path: {predictions}\n    format: lines\n    source_dialect: sqlite\n"
        models.write_text(models.read_text(encoding="utf-8").rstrip("\n") + "\n" + entry, encoding="utf-8")
        return slug

    def run(
        self, key: str, predictions: Path, variants: int | None, profile: Path | None = None
    ) -> tuple[float, float]:
        """``nl2sql-eval run`` of a fresh replay model on ``key`` (``variants`` None: the default); (wall seconds,
        semantic correctness rate)."""
        slug = self.new_model(predictions)
        args = ["run", "--gold-set", key, "--model", slug, "--json", "-q"]
        if variants is not None:
            args += ["--test-suite-variants", str(variants)]
        seconds, out = self.cli(*args, profile=profile)
        runs = json.loads(out)["runs"]
        return seconds, float(runs[0]["scores"]["semantic_correctness_rate"])


def make_lab(work: Path) -> Lab:
    shutil.copytree(ROOT / "data", work / "data")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "NL2SQL_DATA": str(work / "data"),
        "NL2SQL_HOME": str(work / "home"),
        "DAGSTER_HOME": str(work / "home" / "dagster_home"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("NL2SQL_ASSETS_URL", None)
    # Bytecode cached as on a user's machine (pip compiles an installed package; an editable one writes its cache
    # on first import): a PYTHONDONTWRITEBYTECODE=1 inherited from the caller made every CLI process compile the
    # project's ~240 modules again (0.2-0.3 s). The cache goes to the work folder (the checkout is not written);
    # the unmeasured warm-up run fills it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return Lab(work, env)


# ---------------------------------------------------------------------------------------------------- main


@dataclass
class Check:
    """One of issue 21's targets: the measured value against its limit."""

    label: str
    value: float
    limit: float
    unit: str

    @property
    def holds(self) -> bool:
        """Within the limit; a negative value (a bigger set ran faster than a smaller one) is noise, not a pass."""
        return 0 <= self.value <= self.limit


def prepared_set(
    lab: Lab, key: str, prefix: str, databases: int, per_db: int, seed: int, limit: int | None = None
) -> tuple[list[Question], Path, Path, float]:
    """Build and import one set (its first ``limit`` questions); (questions, folder, predictions, import seconds)."""
    built, questions, _ = make_set(prefix, databases, per_db, seed)
    questions = questions[:limit]
    folder = build_spider_folder(lab.work / "sources" / key, built, [(q.db_id, q.text, q.gold) for q in questions])
    seconds = lab.import_set(key, folder, len(questions))
    return questions, folder, lab.replay(key, questions), seconds


def scale_checks(
    lab: Lab, databases: int, rounds: int, fixed: Mapping[str, float], sizes: tuple[int, int] = SCALE_SIZES
) -> list[Check]:
    """Marginal cost per case at 10,000 against 1,000 cases (``sizes``), for both settings (``--scale``)."""
    per_size: dict[int, dict[str, float]] = {}
    for size in sizes:
        per_db = -(-size // databases)
        key = f"public-like-{size}"
        questions, _, predictions, imported = prepared_set(
            lab, key, f"s{size}_", databases, per_db, SEED + size, limit=size
        )
        n = len(questions)
        first, _ = lab.run(key, predictions, None)  # prepares the gold version (3 variants)
        per_size[size] = {}
        for variants in (0, None):
            best = min(lab.run(key, predictions, variants)[0] for _ in range(rounds))
            per_size[size][str(variants)] = (best - fixed[str(variants)]) / (n - 1)
        print(
            f"  {n} cases: import {imported:.1f} s, first run {first:.1f} s, marginal ms/case "
            f"v0 {1000 * per_size[size]['0']:.2f}, default {1000 * per_size[size]['None']:.2f}",
            flush=True,
        )
    small, large = sizes
    return [
        Check(
            f"linearity {label}: per case at {large} / at {small}",
            per_size[large][setting] / per_size[small][setting],
            LINEARITY_X,
            "x",
        )
        for setting, label in (("0", "variants 0"), ("None", "default"))
    ]


def print_profile(lab: Lab, predictions: Path, top: int) -> None:
    """Profile one more whole-set run with ``--test-suite-variants 0`` (a fresh process) and print its top
    ``top`` entries by cumulative and by own time (cProfile's overhead makes its seconds larger than above)."""
    import pstats

    path = lab.work / "run.prof"
    seconds, _ = lab.run(GOLD_SET, predictions, 0, profile=path)
    print(f"\nprofile of a whole-set run, --test-suite-variants 0, fresh process ({seconds:.2f} s under cProfile):")
    stats = pstats.Stats(str(path), stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--databases", type=int, default=15, help="SQLite databases in the set (default 15)")
    parser.add_argument("--per-db", type=int, default=42, help="questions per database (default 42: 630 in all)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each measured command; the best is kept")
    parser.add_argument("--scale", action="store_true", help="also check linearity at 1,000 and 10,000 cases (long)")
    parser.add_argument(
        "--scale-sizes",
        default=",".join(map(str, SCALE_SIZES)),
        metavar="SMALL,LARGE",
        help="the two set sizes of --scale (default 1000,10000; smaller ones only to check that it works)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="K",
        help="after the measurements, run the whole set once more with --test-suite-variants 0 under cProfile "
        "(not measured) and print its top K entries by cumulative and by own time",
    )
    parser.add_argument(
        "--planning",
        action="store_true",
        help="after the measurements, print DuckDB's own profile of the gold queries (binding, optimizer passes, "
        "physical planning, execution; not measured)",
    )
    args = parser.parse_args()
    if args.databases < 1 or args.per_db < 1 or args.rounds < 1 or args.databases * args.per_db < 2:
        parser.error("--databases, --per-db and --rounds must be >= 1, with at least 2 questions in all")
    try:
        small, large = (int(size) for size in args.scale_sizes.split(","))
    except ValueError:
        parser.error(f"--scale-sizes {args.scale_sizes!r}: give two sizes, SMALL,LARGE (e.g. 1000,10000)")
    if not 2 <= small < large:
        parser.error(f"--scale-sizes {args.scale_sizes!r}: SMALL must be >= 2 and below LARGE")
    args.scale_sizes = (small, large)
    work = Path(tempfile.mkdtemp(prefix="bench-public-like-"))
    try:
        return measure(make_lab(work), args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def measure(lab: Lab, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    questions, folder, predictions, imported = prepared_set(lab, GOLD_SET, "", args.databases, args.per_db, SEED)
    _, _, one_predictions, _ = prepared_set(lab, ONE_SET, "one_", 1, 1, SEED + 1)
    n = len(questions)
    print(
        f"{n} questions over {args.databases} SQLite databases (Spider layout, seed {SEED}); imported in "
        f"{imported:.1f} s; work folder {lab.work}",
        flush=True,
    )

    loop = min(plain_loop(folder, questions)[0] for _ in range(max(3, args.rounds)))
    loop_gold = min(plain_loop(folder, questions, gold_only=True)[0] for _ in range(max(3, args.rounds)))
    _, equal = plain_loop(folder, questions)
    engine = min(duckdb_loop(lab.data, GOLD_SET, questions)[0] for _ in range(max(3, args.rounds)))
    run_floor = min(duckdb_loop(lab.data, GOLD_SET, questions, run_floor=True)[0] for _ in range(max(3, args.rounds)))

    lab.run(ONE_SET, one_predictions, None)  # warm-up: builds the sample database, prepares the 1-case set
    first, _ = lab.run(GOLD_SET, predictions, None)  # preparation (preflight, oracle, 3 variants) + one model
    timings: dict[tuple[str, str], float] = {}
    correct: dict[str, float] = {}
    for _ in range(args.rounds):
        for variants in (0, None):
            for label, key, file in (("one", ONE_SET, one_predictions), ("whole", GOLD_SET, predictions)):
                seconds, rate = lab.run(key, file, variants)
                name = (label, str(variants))
                timings[name] = min(seconds, timings.get(name, seconds))
                if label == "whole":
                    correct[str(variants)] = rate
    print(f"measured in {time.perf_counter() - started:.0f} s\n", flush=True)

    per_case = loop / n
    fixed = {v: timings[("one", v)] for v in ("0", "None")}
    marginal = {v: (timings[("whole", v)] - fixed[v]) / (n - 1) for v in ("0", "None")}
    preparation = first - timings[("whole", "None")]

    print(f"{'what':<62} {'wall s':>8} {'ms/case':>8}")
    rows = (
        ("plain loop: SQLite, prediction + gold, results as sets", loop),
        ("plain loop: SQLite, gold queries only", loop_gold),
        ("engine floor: DuckDB, gold + converted prediction, as sets", engine),
        ("run floor: convert prediction + DuckDB + sets (gold stored)", run_floor),
        ("nl2sql-eval run, 1 case, --test-suite-variants 0", fixed["0"]),
        ("nl2sql-eval run, 1 case, default (3 variants)", fixed["None"]),
        (f"nl2sql-eval run, {n} cases, --test-suite-variants 0", timings[("whole", "0")]),
        (f"nl2sql-eval run, {n} cases, default (3 variants)", timings[("whole", "None")]),
        (f"nl2sql-eval run, {n} cases, first model on a fresh gold version", first),
    )
    for label, seconds in rows:
        print(f"{label:<62} {seconds:>8.2f} {1000 * seconds / n:>8.2f}")
    print(
        f"correct: plain loop {equal}/{n} ({equal / n:.1%}); nl2sql-eval semantic correctness "
        f"{correct['0']:.1%} (variants 0), {correct['None']:.1%} (default)\n"
    )

    checks = [
        Check("fixed cost of a run (1 case), variants 0", fixed["0"], FIXED_COST_S, "s"),
        Check("fixed cost of a run (1 case), default", fixed["None"], FIXED_COST_S, "s"),
        Check("marginal per case / plain loop's, variants 0", marginal["0"] / per_case, MARGINAL_V0_X, "x"),
        Check("marginal per case / plain loop's, default", marginal["None"] / per_case, MARGINAL_DEFAULT_X, "x"),
        Check("preparation / plain loop over the gold queries", preparation / loop_gold, PREPARATION_X, "x"),
    ]
    if args.scale:
        checks += scale_checks(lab, args.databases, args.rounds, fixed, args.scale_sizes)
    print(
        f"derived: marginal ms/case {1000 * marginal['0']:.2f} (variants 0), {1000 * marginal['None']:.2f} "
        f"(default); plain loop {1000 * per_case:.3f} ms/case; preparation {preparation:.2f} s; "
        f"DuckDB engine floor {1000 * engine / n:.3f} ms/case ({engine / loop:.1f}x the plain loop); run floor "
        f"{1000 * run_floor / n:.3f} ms/case ({run_floor / loop:.1f}x; marginal v0 / run floor "
        f"{marginal['0'] * n / run_floor:.1f}x)"
    )
    if min(marginal.values()) <= 0:
        print("warning: a whole-set run took less than the 1-case run: noise larger than the set's cost (run bigger)")
    print(f"{'target (issue 21)':<52} {'value':>9} {'limit':>7}  holds")
    for check in checks:
        print(f"{check.label:<52} {check.value:>8.2f}{check.unit} {check.limit:>6.1f}{check.unit}  {check.holds}")
    if not args.scale:
        print("(linearity to 10,000 cases: not measured; --scale)")
    if args.profile:
        print_profile(lab, predictions, args.profile)
    if args.planning:
        print_planning(lab.data, GOLD_SET)
    return 0 if all(check.holds for check in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
