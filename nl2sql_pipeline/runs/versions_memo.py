"""The run versions of a gold set, remembered by the content of the files they are computed from.

Computing a run's versions loads and validates the whole gold set (every expected SQL parsed), the
semantic model and the policies: about as long as a small run. A no-op re-run only needs to know that
nothing changed, so the versions (all but the model's config hash) are stored under a key hashing the
bytes of every file of the data directory, the gold set's own file and a policy override file, with the
harness, comparator and policy-engine versions. Any edit is a new key, computed (and stored) once.
A DuckDB database file is keyed by its identity (path, size, modification time), as the prompt texts
and the variants read from it are: its bytes (tens of MB for an imported benchmark) are not read.
The memo also keeps the file each case database resolves to, so that the stamp of their content
(``gold_database_stamp``, ``databases.stamp``) is taken afresh on every call without loading the gold set.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

from nl2sql_pipeline import HARNESS_VERSION, paths
from nl2sql_pipeline.runs.identity import RunVersions

DATABASE_SUFFIXES = (".duckdb", ".duckdb.wal")
"""Files keyed by identity, not content."""


def _files(gold_file: Path, policy: str | None) -> list[Path]:
    files = sorted(p for p in paths.data_dir().rglob("*") if p.is_file())
    extra = [gold_file] + ([Path(policy)] if policy and Path(policy).is_file() else [])
    return files + [p for p in extra if p.is_file() and p not in files]


def memo_key(gold_set: str, policy: str | None = None) -> str:
    """A hash of everything the versions of (gold set, policy override) are computed from."""
    from nl2sql_pipeline.compare.names import COMPARATOR_VERSION
    from nl2sql_pipeline.gold.registry import gold_set_info
    from nl2sql_pipeline.policy.loader import POLICY_ENGINE_VERSION

    digest = hashlib.sha256(
        f"{gold_set}|{policy}|h{HARNESS_VERSION}|c{COMPARATOR_VERSION}|p{POLICY_ENGINE_VERSION}\n".encode()
    )
    info = gold_set_info(gold_set)
    for path in _files(info.path, policy) + _policy_files(info):
        digest.update(f"{path}\n".encode())
        if path.name.endswith(DATABASE_SUFFIXES):
            stat = path.stat()
            digest.update(f"identity {stat.st_size} {stat.st_mtime_ns}\n".encode())
        else:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    for path in _database_files(info):  # the schemas the prompts are introspected from live in these
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"db {path} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _policy_files(info) -> list[Path]:
    """Policy files the database registry names by path (those under the data directory are hashed already)."""
    from nl2sql_pipeline.databases.registry import load_database_registry
    from nl2sql_pipeline.policy.loader import looks_like_policy_file

    entries = [*load_database_registry().values(), *(info.databases or {}).values()]
    found = {Path(e.policy) for e in entries if e.policy and looks_like_policy_file(e.policy)}
    inside = paths.data_dir().resolve()
    return sorted(p for p in found if p.is_file() and not p.resolve().is_relative_to(inside))


def _database_files(info) -> list[Path]:
    """Every DuckDB file a case of the gold set may name: registered, inline, beside the gold file, built samples."""
    from nl2sql_pipeline.databases.registry import load_database_registry

    files = {entry.path for entry in load_database_registry().values()}
    files |= {entry.path for entry in (info.databases or {}).values()}
    files |= set(info.path.parent.rglob("*.duckdb"))
    files |= set(paths.databases_dir().glob("*.duckdb"))
    return sorted(Path(f) for f in files)


def _memo_path(key: str) -> Path:
    return paths.storage_root() / "cache" / "versions" / f"{key}.json"


def _memo(gold_set: str, policy: str | None) -> dict:
    """The memo of (gold set, policy override): the versions' fields and ``databases`` (name -> file or None),
    computed and stored when missing (or written before it held the databases)."""
    path = _memo_path(memo_key(gold_set, policy))
    if path.exists():
        memo = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(memo, dict) and isinstance(memo.get("databases"), dict):
            return memo
    from nl2sql_pipeline.databases.stamp import case_database_paths
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.runs.identity import run_versions

    cases, resolver = load_gold_set(gold_set), case_databases(gold_set)
    versions = run_versions("", cases, policy, resolver)
    files = {name: str(p) if p is not None else None for name, p in case_database_paths(cases, resolver).items()}
    memo = {**versions.as_dict(), "databases": files}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(memo), encoding="utf-8")
    os.replace(tmp, path)
    return memo


def gold_versions(gold_set: str, policy: str | None = None) -> RunVersions:
    """The versions of a run on ``gold_set`` (``model_config_hash`` left empty), from the memo when possible."""
    return RunVersions.from_mapping(_memo(gold_set, policy))


def gold_database_stamp(gold_set: str, policy: str | None = None) -> str:
    """The stamp of the databases ``gold_set``'s cases run on now (their files from the memo, stamped afresh)."""
    from nl2sql_pipeline.databases.stamp import database_stamp

    files = _memo(gold_set, policy)["databases"]
    return database_stamp({name: Path(p) if p else None for name, p in files.items()})


def model_versions(base: RunVersions, model_config_hash: str) -> RunVersions:
    """``base`` versions for one model."""
    return replace(base, model_config_hash=model_config_hash)
