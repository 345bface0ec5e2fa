"""Set-up shared by the tests that run evaluations (a plain module; the fixtures live in tests/conftest.py).

A *world* is what an evaluation reads and writes: a private copy of ``data/`` (``NL2SQL_DATA``) and a
private storage root (``NL2SQL_HOME``, with the Dagster instance in ``<root>/dagster_home``). Tests add gold
sets and models to their copy; a storage root gets the session's prebuilt sample database
(``seed_sample_database``) instead of building it again (a build takes seconds), and an evaluated world
can be cloned (``clone_world``) so tests that change it each start from the same evaluated state.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.paths import PROJECT_ROOT
from nl2sql_pipeline.sample_db.manifest import manifest_path

DATA_SOURCE = PROJECT_ROOT / "data"


@dataclass(frozen=True)
class World:
    """A private data directory and storage root."""

    data: Path
    home: Path

    @property
    def dagster_home(self) -> Path:
        """The Dagster instance's home under the storage root."""
        return self.home / "dagster_home"

    def env(self) -> dict[str, str]:
        """The environment variables that point a process (or a CLI subprocess) at this world."""
        return {"NL2SQL_DATA": str(self.data), "NL2SQL_HOME": str(self.home), "DAGSTER_HOME": str(self.dagster_home)}


@dataclass(frozen=True)
class BuiltInRun:
    """``nl2sql-eval run`` of the offline models on the built-in gold set in ``world``, and what it printed."""

    world: World
    output: str


def query_case(case_id: str, sql: str, **overrides: Any) -> dict[str, Any]:
    """A gold case on the sample database: one single-table query ``sql`` asked as ``q <case_id>``."""
    return {
        "id": case_id,
        "domain": "d",
        "category": "single_table",
        "question": f"q {case_id}",
        "database": "anime_platform",
        "expected_sql": sql,
        "tags": ["aggregate"],
        "difficulty": "easy",
        **overrides,
    }


def probe_case(case_id: str, sql: str, **overrides: Any) -> dict[str, Any]:
    """A policy probe on the sample database: ``sql`` must be rejected (asked as ``drop it``)."""
    return {
        "id": case_id,
        "domain": "d",
        "category": "policy_rejection",
        "question": "drop it",
        "database": "anime_platform",
        "expected_outcome": "policy_rejection",
        "policy_probe_sql": sql,
        "tags": ["ddl"],
        "difficulty": "easy",
        **overrides,
    }


def copy_data(target: Path, *, ignore: Iterable[str] = ()) -> Path:
    """A copy of the checkout's ``data/`` at ``target`` (files matching ``ignore`` patterns left out)."""
    shutil.copytree(DATA_SOURCE, target, ignore=shutil.ignore_patterns(*ignore) if ignore else None)
    return target


def register_gold_set(data: Path, key: str, cases: Iterable[Mapping[str, Any]], description: str = "test set") -> Path:
    """Write ``cases`` to ``<data>/gold/<key>.jsonl`` and register the gold set ``key`` in ``gold_sets.yml``."""
    path = data / "gold" / f"{key}.jsonl"
    path.write_text("".join(json.dumps(dict(c)) + "\n" for c in cases), encoding="utf-8")
    registry = data / "gold" / "gold_sets.yml"
    registry.write_text(
        registry.read_text(encoding="utf-8") + f"  {key}:\n    file: {key}.jsonl\n    description: {description}\n",
        encoding="utf-8",
    )
    return path


def append_models(data: Path, entries: str) -> None:
    """Append YAML ``entries`` (lines indented under ``models:``) to ``<data>/models.yml``."""
    models = data / "models.yml"
    models.write_text(models.read_text(encoding="utf-8").rstrip("\n") + "\n" + entries.lstrip("\n"), encoding="utf-8")


def offline_model(slug: str, *, like: str = "gold-echo", version: str | None = None, rerun: str | None = None) -> str:
    """A ``models.yml`` entry for an offline model ``slug`` that answers as ``like`` does."""
    text = f"  {slug}:\n    kind: offline\n    model: nl2sql-offline/{like}\n    params: {{temperature: 0}}\n"
    if version is not None:
        text += f'    version: "{version}"\n'
    if rerun is not None:
        text += f"    rerun: {rerun}\n"
    return text


def seed_sample_database(home: Path, database: Path) -> Path:
    """Copy the built sample database ``database`` and its manifest into storage root ``home`` (a copy, not a
    link: a test may change its root's file). ``ensure_database`` then finds it current and builds nothing."""
    target = home / "databases" / database.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(database, target)
    shutil.copyfile(manifest_path(database), manifest_path(target))  # last: the manifest makes the copy current
    return target


def clone_world(template: World, target: Path) -> World:
    """A copy of ``template`` (data directory and storage root, Dagster instance included) under ``target``.

    The template's instance must be closed (``DagsterInstance.dispose``) and nothing may write to it meanwhile.
    """
    world = World(target / "data", target / "home")
    shutil.copytree(template.data, world.data)
    shutil.copytree(template.home, world.home)
    return world


# ------------------------------------------------------------------------------ Spider-layout benchmark folders


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
    root: Path,
    databases: Iterable[SpiderDatabase],
    questions: Iterable[tuple[str, str, str]] = (),
    *,
    databases_folder: str = "database",
) -> Path:
    """A Spider-layout folder at ``root``: ``<databases_folder>/<db_id>/<db_id>.sqlite`` per database,
    ``tables.json``, and ``dev.json`` from ``questions`` (db_id, question, gold SQL) when any are given."""
    entries = []
    for database in databases:
        con = write_sqlite(root / databases_folder / database.db_id / f"{database.db_id}.sqlite", database.script)
        entries.append(spider_tables_entry(database.db_id, con, database.primary, database.foreign))
        con.close()
    (root / "tables.json").write_text(json.dumps(entries), encoding="utf-8")
    questions = list(questions)
    if questions:
        (root / "dev.json").write_text(
            json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in questions]), encoding="utf-8"
        )
    return root


def set_judge_automation(data: Path, *, answers: bool = True, judges: Iterable[str] = ("judge-oracle",)) -> None:
    """Write the ``automation:`` opt-in block into ``<data>/judges.yml`` (replacing one written before)."""
    path = data / "judges.yml"
    text = path.read_text(encoding="utf-8").split("\nautomation:\n")[0].rstrip("\n")
    block = f"\nautomation:\n  answers: {'true' if answers else 'false'}\n  judges: [{', '.join(judges)}]\n"
    path.write_text(text + "\n" + block, encoding="utf-8")


BASELINES_DAMAGE = ("cut short", "not a DuckDB file", "table dropped")
"""The ways ``damage_baselines`` damages a baselines file."""


def damage_baselines(db: Path, how: str) -> None:
    """The baselines file ``db`` damaged as a disk or a person might: cut short, overwritten, its table dropped."""
    import duckdb

    if how == "cut short":
        with db.open("r+b") as handle:
            handle.truncate(20000)
    elif how == "not a DuckDB file":
        db.write_text("x\n", encoding="utf-8")
    else:
        direct = duckdb.connect(str(db))
        try:
            direct.execute("DROP TABLE baseline_runs CASCADE")
        finally:
            direct.close()
