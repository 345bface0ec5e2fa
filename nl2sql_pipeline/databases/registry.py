"""The registry of named databases: ``data/databases.yml`` and the ``databases:`` of a gold-set entry.

```yaml
databases:
  anime_platform:
    sample: true                       # the sample database built by `nl2sql-eval db build`
    semantic_model: semantic_model.yml # relative to this file (optional)
  shop:
    file: dbs/shop.duckdb              # absolute, or relative to this file
    schemas: [main, sales]             # default: every non-system schema, main first
    prompt_token_budget: 3000          # introspected schema text, when no semantic model (optional)
```

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

ENTRY_FIELDS: dict[str, Field] = {
    "file": Field(str, fix="give the DuckDB file, absolute or relative to the registry file"),
    "sample": Field(bool, default=False, fix="write sample: true for a database built by `nl2sql-eval db build`"),
    "schemas": Field(list, items=Field(str), fix="write schemas: [main, sales]"),
    "semantic_model": Field(str, fix="give a semantic-model YAML file, relative to the registry file"),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "prompt_token_budget": Field(int, minimum=100, fix="write a whole number of tokens >= 100 (default 3000)"),
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
        found[name] = DatabaseEntry(
            name=name,
            path=path,
            schemas=tuple(schemas) if schemas else None,
            semantic_model=(base_dir / model).resolve() if model else None,
            sample=bool(values["sample"]),
            description=values["description"] or "",
            prompt_token_budget=values["prompt_token_budget"],
            source=f"{check.source}:{line}" if line else str(check.source),
        )
    return found


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
) -> DatabaseEntry:
    """Append an entry ``name -> file`` to the registry (created when absent); returns the checked entry.

    Raises ``ConfigError`` when the name is taken or invalid, or the file is not an existing file.
    """
    registry = registry or registry_path()
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"{name!r} is not a database name (use letters, digits, '.', '_' and '-')")
    existing = load_database_registry(registry)
    if name in existing:
        raise ConfigError(f"database {name!r} is already registered at {existing[name].source} (pick another name)")
    file = Path(file).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"{file}: no such database file (give the path of an existing .duckdb file)")
    lines = [f"  {name}:", f"    file: {_quote(str(file))}"]
    if schemas:
        lines.append(f"    schemas: [{', '.join(_quote(s) for s in schemas)}]")
    if semantic_model is not None:
        lines.append(f"    semantic_model: {_quote(str(Path(semantic_model).expanduser().resolve()))}")
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
