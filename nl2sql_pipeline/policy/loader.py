"""Load and strictly validate SQL policies (YAML files under ``data/policies/``).

A policy is named by a case's ``sql_policy`` (``default`` -> ``data/policies/default.yml``) or given
as a file path. Every problem raises ``ConfigError`` naming the file, the key and how to fix it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.policy.model import (
    ALL_TABLES,
    BUILTIN_DENIED_FUNCTIONS,
    Policy,
    function_pattern_matches,
)

POLICY_ENGINE_VERSION = "1"
"""Bumped whenever the engine's rules or built-in deny list change what a policy decides."""

POLICY_SUFFIXES: tuple[str, ...] = (".yml", ".yaml")

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_BUDGET_FIX = "write an integer {}, or null for no budget"
POLICY_FIELDS: dict[str, Field] = {
    "name": Field(
        str, required=True, pattern=re.compile(_NAME_RE.pattern.strip("^$")), fix="use letters, digits, '_', '-', '.'"
    ),
    "allowed_tables": Field(object, required=True),
    "denied_columns": Field(object, required=True, nullable=True),
    "max_limit": Field(int, required=True, nullable=True, minimum=1, fix=_BUDGET_FIX.format(">= 1")),
    "max_joins": Field(int, required=True, nullable=True, minimum=0, fix=_BUDGET_FIX.format(">= 0")),
    "forbid_cartesian": Field(bool, required=True),
    "denied_functions": Field(object, required=True, nullable=True),
    "allowed_table_functions": Field(object, required=True, nullable=True),
    "allowed_schemas": Field(
        list,
        items=Field(str, pattern=re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")),
        fix="write allowed_schemas: [main, sales] (default: the schemas the registry exposes)",
    ),
}
POLICY_KEYS: tuple[str, ...] = tuple(POLICY_FIELDS)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_FUNCTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\*?$")


def policies_dir() -> Path:
    """The folder holding the named policies (``<data_dir>/policies``)."""
    return paths.data_dir() / "policies"


def available_policies() -> list[str]:
    """Names of the policies found in ``policies_dir()``, sorted."""
    folder = policies_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.iterdir() if p.suffix in POLICY_SUFFIXES and p.is_file())


def looks_like_policy_file(name_or_path: str | Path) -> bool:
    """True when a policy reference is a file path (a ``Path``, a path separator, or a ``.yml``/``.yaml``
    suffix) rather than a name of ``policies_dir()``."""
    text = str(name_or_path)
    return isinstance(name_or_path, Path) or "/" in text or "\\" in text or text.endswith(POLICY_SUFFIXES)


def resolve_policy_path(name_or_path: str | Path) -> tuple[Path, str | None]:
    """The file of a policy and, when it was given by name, that name.

    A ``Path``, or a string with a path separator or a ``.yml``/``.yaml`` suffix, is a file path;
    anything else is a name looked up in ``policies_dir()``.
    """
    text = str(name_or_path)
    if looks_like_policy_file(name_or_path):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ConfigError(f"policy file {path} does not exist (pass an existing .yml file or a policy name)")
        return path, None
    if not _NAME_RE.match(text):
        raise ConfigError(
            f"invalid policy name {text!r}: use letters, digits, '_', '-' or '.' "
            f"(a file under {policies_dir()}), or pass a path to a .yml file"
        )
    for suffix in POLICY_SUFFIXES:
        candidate = policies_dir() / f"{text}{suffix}"
        if candidate.is_file():
            return candidate, text
    known = ", ".join(available_policies()) or "none"
    raise ConfigError(
        f"unknown policy {text!r}: no {policies_dir() / (text + '.yml')} "
        f"(available: {known}; create that file, or fix the case's sql_policy or its database's policy)"
    )


def load_policy(name_or_path: str | Path = "default") -> Policy:
    """Load a policy by name (``data/policies/<name>.yml``) or path, validating every key strictly."""
    path, expected_name = resolve_policy_path(name_or_path)
    _, data = read_yaml(path, ConfigError, missing="pass an existing .yml file or a policy name")
    policy = policy_from_mapping(data, source=path)
    if expected_name is not None and policy.name != expected_name.lower():
        raise ConfigError(
            f"{path}:{line_of(data, 'name') or 1}: key 'name' is {policy.name!r} but the file is policy "
            f"{expected_name!r} (set name: {expected_name} or rename the file)"
        )
    return policy


def policy_from_mapping(data: Any, source: str | Path = "<policy>") -> Policy:
    """Validate the parsed content of a policy file and build the ``Policy``; ``source`` names it in errors.

    Raises ConfigError listing every problem (``<file>:<line>: key '<key>': <what> (<fix>)``).
    """
    check = Checker(source)
    values = check.mapping(data, POLICY_FIELDS, unknown_fix=f"write the keys {', '.join(POLICY_KEYS)}")
    if values is None:
        check.raise_if_problems()
    assert values is not None
    denied_functions = _function_list(check, data, "denied_functions")
    allowed_table_functions = _function_list(check, data, "allowed_table_functions")
    for function in allowed_table_functions:
        line = line_of(data, "allowed_table_functions")
        if function.endswith("*"):
            check.problem(
                line,
                "allowed_table_functions",
                f"{function!r} must be a plain name, not a pattern",
                "list table functions by their full name",
            )
            continue
        clash = [p for p in BUILTIN_DENIED_FUNCTIONS + denied_functions if function_pattern_matches(p, function)]
        if clash:
            check.problem(
                line,
                "allowed_table_functions",
                f"lists {function!r}, which is a denied function (matches {clash[0]!r})",
                "remove it",
            )
    allowed_tables = _allowed_tables(check, data)
    denied_columns = _denied_columns(check, data)
    schemas = values.get("allowed_schemas")
    for schema in schemas or ():
        if schema.lower() in ("information_schema", "pg_catalog"):
            check.problem(
                line_of(data, "allowed_schemas"),
                "allowed_schemas",
                f"{schema!r} is a system catalog schema",
                "list only the database's own schemas",
            )
    check.raise_if_problems()
    where = str(source)
    return Policy(
        name=values["name"].lower(),
        allowed_tables=allowed_tables,
        denied_columns=denied_columns,
        max_limit=values["max_limit"],
        max_joins=values["max_joins"],
        forbid_cartesian=values["forbid_cartesian"],
        denied_functions=denied_functions,
        allowed_table_functions=allowed_table_functions,
        allowed_schemas=tuple(sorted({s.lower() for s in schemas})) if schemas else None,
        source=None if where == "<policy>" else Path(source),
    )


def policies_hash(names: Iterable[str], by_database: Mapping[str, str] | None = None) -> str:
    """One SHA-256 over the named policies' content hashes and the engine version (for run versioning).

    ``by_database`` (database -> policy name) adds which database uses which policy; left empty, the
    hash is the one of the names alone.
    """
    digest = hashlib.sha256(f"policy-engine:{POLICY_ENGINE_VERSION}\n".encode())
    for name in sorted(set(names)):
        policy = load_policy(name)
        digest.update(f"{name}={policy.content_hash}\n".encode())
    for database, name in sorted((by_database or {}).items()):
        digest.update(f"database {database}={name}\n".encode())
    return digest.hexdigest()


def _allowed_tables(check: Checker, data: Mapping[str, Any]) -> Any:
    value = data.get("allowed_tables")
    line = line_of(data, "allowed_tables")
    if value is None:  # reported as a missing key
        return ()
    if value == ALL_TABLES:
        return ALL_TABLES
    if not isinstance(value, list) or not value:
        check.problem(
            line,
            "allowed_tables",
            f'must be "*" or a non-empty list of table names, got {value!r}',
            'write allowed_tables: "*" or [anime, studios]',
        )
        return ()
    tables = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not _IDENT_RE.match(item):
            check.problem(
                line_of(value, index) or line, "allowed_tables", f"{item!r} is not a table name", "write e.g. anime"
            )
            continue
        tables.append(item.lower())
    return tuple(sorted(set(tables)))


def _denied_columns(check: Checker, data: Mapping[str, Any]) -> tuple[str, ...]:
    value = data.get("denied_columns") or []
    line = line_of(data, "denied_columns")
    if not isinstance(value, list):
        check.problem(
            line,
            "denied_columns",
            f"must be a list of table.column strings, got {value!r}",
            "write denied_columns: [users.email]",
        )
        return ()
    columns = []
    for index, item in enumerate(value):
        parts = item.split(".") if isinstance(item, str) else []
        if len(parts) != 2 or not all(_IDENT_RE.match(part) for part in parts):
            check.problem(
                line_of(value, index) or line,
                "denied_columns",
                f"{item!r} is not of the form table.column",
                "write e.g. users.email",
            )
            continue
        columns.append(item.lower())
    return tuple(sorted(set(columns)))


def _function_list(check: Checker, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    line = line_of(data, key)
    if not isinstance(value, list):
        check.problem(line, key, f"must be a list of function names, got {value!r}", f"write {key}: [name, prefix*]")
        return ()
    names = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not _FUNCTION_RE.match(item):
            check.problem(
                line_of(value, index) or line,
                key,
                f"{item!r} is not a function name",
                "letters, digits, '_'; a trailing '*' makes a prefix",
            )
            continue
        names.append(item.lower())
    return tuple(sorted(set(names)))
