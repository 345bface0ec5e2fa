"""The registry of named databases: ``data/databases.yml`` and the ``databases:`` of a gold-set entry.

```yaml
databases:
  anime_platform:
    sample: true                       # the sample database built by `nl2sql-eval db build`
    semantic_model: semantic_model.yml # relative to this file (optional)
    policy: default                    # the SQL policy of its cases (a sample database: default)
  shop:
    file: dbs/shop.duckdb              # absolute, or relative to this file
    schemas: [main, sales]             # default: every non-system schema, main first
    prompt_token_budget: 3000          # introspected schema text, when no semantic model (optional)
    policy: policies/shop.yml          # a policy name (data/policies/<name>.yml) or file; default: safety
```

A case's SQL policy is its own ``sql_policy`` when it sets one, else its database's ``policy``, else
``default`` for a sample database and ``safety`` (read-only, no catalog, no file access: what is refused
whatever the schema) for any other (``DatabaseEntry.effective_policy``, ``CaseDatabases.policy_of``).

Every database is opened read-only by evaluation. Entries are checked by the strict config checker:
every problem is reported as ``file:line``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError

REGISTRY_FILE = "databases.yml"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog"})
"""Catalog schemas: never exposed to prompts or queries."""
SAMPLE_POLICY = "default"
"""The policy of a sample database's cases (``data/policies/default.yml``, written for it)."""
REGISTERED_POLICY = "safety"
"""The policy of any other database's cases unless its entry names one (``data/policies/safety.yml``)."""

ENTRY_FIELDS: dict[str, Field] = {
    "file": Field(str, fix="give the DuckDB file, absolute or relative to the registry file"),
    "sample": Field(bool, default=False, fix="write sample: true for a database built by `nl2sql-eval db build`"),
    "schemas": Field(list, items=Field(str), fix="write schemas: [main, sales]"),
    "semantic_model": Field(str, fix="give a semantic-model YAML file, relative to the registry file"),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "prompt_token_budget": Field(int, minimum=100, fix="write a whole number of tokens >= 100 (default 3000)"),
    "policy": Field(
        str,
        fix=f"name a policy of data/policies/ or give a .yml file relative to the registry file "
        f"(default: {SAMPLE_POLICY} for a sample database, {REGISTERED_POLICY} otherwise)",
    ),
}
TOP_FIELDS: dict[str, Field] = {
    "databases": Field(dict, default={}, fix="write a top-level 'databases:' mapping of name -> entry"),
}


@dataclass(frozen=True)
class DatabaseEntry:
    """One registered database: its name, file, exposed schemas and optional semantic model."""

    name: str
    path: Path
    """The absolute path of the DuckDB file (it may not exist yet)."""
    schemas: tuple[str, ...] | None = None
    """The schemas to expose (None: every non-system schema of the file, main first)."""
    semantic_model: Path | None = None
    sample: bool = False
    """True for a sample database built under the storage root (``nl2sql-eval db build``)."""
    description: str = ""
    prompt_token_budget: int | None = None
    """Token budget of the introspected schema text (None: the default)."""
    source: str = ""
    """Where the entry is declared: ``<file>:<line>``."""
    policy: str | None = None
    """The SQL policy its cases use (a name, or an absolute file path); None: ``effective_policy``'s default."""

    @property
    def effective_policy(self) -> str:
        """The policy its cases use unless a case names one: its own, else ``default`` for a sample
        database and ``safety`` for any other."""
        return self.policy or (SAMPLE_POLICY if self.sample else REGISTERED_POLICY)


def registry_path(data_dir: Path | None = None) -> Path:
    """Where the registry lives: ``<data dir>/databases.yml``."""
    return (data_dir or paths.data_dir()) / REGISTRY_FILE


def parse_entries(check: Checker, entries: Any, base_dir: Path, *, key: str = "databases") -> dict[str, DatabaseEntry]:
    """Check a ``name -> entry`` mapping; paths are relative to ``base_dir``. Problems go to ``check``."""
    found: dict[str, DatabaseEntry] = {}
    if not isinstance(entries, dict):
        check.problem(line_of(entries), key, "must be a mapping of name -> entry", "write 'name: {file: x.duckdb}'")
        return found
    for name, entry in entries.items():
        line = line_of(entries, name)
        before = len(check.problems)
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            check.problem(
                line,
                f"{key}.{name}",
                "is not a database name",
                "use letters, digits, '.', '_' and '-', starting with a letter or digit",
            )
        values = check.mapping(entry, ENTRY_FIELDS, key=f"{key}.{name}", line=line)
        if values is None or len(check.problems) > before:
            continue
        if values["sample"] and values["file"]:
            check.problem(line, f"{key}.{name}", "has both 'file' and 'sample: true'", "keep one of them")
            continue
        if values["sample"]:
            path = paths.database_path(str(name))
        elif values["file"]:
            path = (base_dir / Path(values["file"]).expanduser()).resolve()
        else:
            check.problem(
                line,
                f"{key}.{name}",
                "names no database file",
                "add 'file: <path>.duckdb' (or 'sample: true' for a built sample database)",
            )
            continue
        schemas = values["schemas"]
        bad = [s for s in schemas or () if s.lower() in SYSTEM_SCHEMAS]
        if bad:
            check.problem(
                line_of(entry, "schemas") or line,
                f"{key}.{name}.schemas",
                f"{', '.join(bad)} is a system catalog schema",
                "expose only the database's own schemas",
            )
            continue
        model = values["semantic_model"]
        policy = _entry_policy(check, values["policy"], base_dir, line_of(entry, "policy") or line, f"{key}.{name}")
        if len(check.problems) > before:
            continue
        found[name] = DatabaseEntry(
            name=name,
            path=path,
            schemas=tuple(schemas) if schemas else None,
            semantic_model=(base_dir / model).resolve() if model else None,
            sample=bool(values["sample"]),
            description=values["description"] or "",
            prompt_token_budget=values["prompt_token_budget"],
            source=f"{check.source}:{line}" if line else str(check.source),
            policy=policy,
        )
    return found


def _entry_policy(check: Checker, value: str | None, base_dir: Path, line: int | None, key: str) -> str | None:
    """An entry's ``policy``: a name kept as it is, a file made absolute (relative to ``base_dir``); a policy
    that does not exist is a problem."""
    from nl2sql_pipeline.policy.loader import looks_like_policy_file, resolve_policy_path

    if value is None:
        return None
    policy = str((base_dir / Path(value).expanduser()).resolve()) if looks_like_policy_file(value) else value
    try:
        resolve_policy_path(policy)
    except ConfigError as exc:
        check.problem(line, f"{key}.policy", str(exc), "name a policy of data/policies/ or give an existing .yml file")
        return None
    return policy


def load_database_registry(path: Path | None = None) -> dict[str, DatabaseEntry]:
    """The registered databases by name (an absent registry file is an empty registry).

    Raises ``ConfigError`` listing every problem of the file, each as ``file:line``.
    """
    path = path or registry_path()
    try:
        stat = path.stat()
    except OSError:
        return {}
    if not path.is_file():
        return {}
    # sample entries resolve under the storage root: a different root is a different registry
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, os.environ.get(paths.STORAGE_ENV_VAR, ""))
    cached = _LOADED.get(key)
    if cached is None:
        _, data = read_yaml(path, ConfigError, missing="create it with a 'databases:' mapping")
        check = Checker(path)
        top = (
            check.mapping(data, TOP_FIELDS, unknown_fix="write a top-level 'databases:' mapping of name -> entry") or {}
        )
        cached = parse_entries(check, top.get("databases") or {}, path.parent)
        check.raise_if_problems()
        if len(_LOADED) > 64:
            _LOADED.clear()
        _LOADED[key] = cached
    return dict(cached)


# Registries read in this process, by (file, modification time, size, storage root): a changed file is read again.
_LOADED: dict[tuple[str, int, int, str], dict[str, DatabaseEntry]] = {}


def register_database(
    name: str,
    file: Path,
    *,
    registry: Path | None = None,
    schemas: tuple[str, ...] = (),
    semantic_model: Path | None = None,
    policy: str | None = None,
) -> DatabaseEntry:
    """Append an entry ``name -> file`` to the registry (created when absent); returns the checked entry.

    ``policy`` (a policy name, or a ``.yml`` file made absolute) is written into the entry; without it the
    entry records ``safety`` (``REGISTERED_POLICY``), so the registry shows what its cases run under.
    Raises ``ConfigError`` when the name is taken or invalid, the file is not an existing file, or the
    policy does not exist (nothing is written then).
    """
    from nl2sql_pipeline.policy.loader import load_policy, looks_like_policy_file

    registry = registry or registry_path()
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"{name!r} is not a database name (use letters, digits, '.', '_' and '-')")
    existing = load_database_registry(registry)
    if name in existing:
        raise ConfigError(f"database {name!r} is already registered at {existing[name].source} (pick another name)")
    file = Path(file).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"{file}: no such database file (give the path of an existing .duckdb file)")
    policy = policy or REGISTERED_POLICY
    if looks_like_policy_file(policy):
        policy = str(Path(policy).expanduser().resolve())
    load_policy(policy)  # a missing or invalid policy raises ConfigError before anything is written
    lines = [f"  {name}:", f"    file: {_quote(str(file))}"]
    if schemas:
        lines.append(f"    schemas: [{', '.join(_quote(s) for s in schemas)}]")
    if semantic_model is not None:
        lines.append(f"    semantic_model: {_quote(str(Path(semantic_model).expanduser().resolve()))}")
    lines.append(f"    policy: {_quote(policy)}")
    text = registry.read_text(encoding="utf-8") if registry.is_file() else "databases:\n"
    if not text.endswith("\n"):
        text += "\n"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(text + "\n".join(lines) + "\n", encoding="utf-8")
    return load_database_registry(registry)[name]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def merged(
    global_entries: Mapping[str, DatabaseEntry], inline: Mapping[str, DatabaseEntry]
) -> dict[str, DatabaseEntry]:
    """The registry a gold set sees: the global entries, with its inline entries taking precedence."""
    return {**global_entries, **inline}
