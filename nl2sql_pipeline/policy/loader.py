"""Load and strictly validate SQL policies (YAML files under ``data/policies/``).

A policy is named by a case's ``sql_policy`` (``default`` -> ``data/policies/default.yml``) or given
as a file path. Every problem raises ``ConfigError`` naming the file, the key and how to fix it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.policy.model import (
    ALL_TABLES,
    BUILTIN_DENIED_FUNCTIONS,
    Policy,
    function_pattern_matches,
)
from nl2sql_pipeline.yaml_strict import describe_yaml_error, load_strict

POLICY_ENGINE_VERSION = "1"
"""Bumped whenever the engine's rules or built-in deny list change what a policy decides."""

POLICY_KEYS: tuple[str, ...] = (
    "name",
    "allowed_tables",
    "denied_columns",
    "max_limit",
    "max_joins",
    "forbid_cartesian",
    "denied_functions",
    "allowed_table_functions",
)
POLICY_SUFFIXES: tuple[str, ...] = (".yml", ".yaml")

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
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


def resolve_policy_path(name_or_path: str | Path) -> tuple[Path, str | None]:
    """The file of a policy and, when it was given by name, that name.

    A ``Path``, or a string with a path separator or a ``.yml``/``.yaml`` suffix, is a file path;
    anything else is a name looked up in ``policies_dir()``.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or "\\" in text or text.endswith(POLICY_SUFFIXES):
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
        f"(available: {known}; create that file or fix the case's sql_policy)"
    )


def load_policy(name_or_path: str | Path = "default") -> Policy:
    """Load a policy by name (``data/policies/<name>.yml``) or path, validating every key strictly."""
    path, expected_name = resolve_policy_path(name_or_path)
    try:
        data = load_strict(path.read_text(encoding="utf-8"))  # a duplicated key must not silently win
    except yaml.YAMLError as exc:
        raise ConfigError(describe_yaml_error(path, exc, "invalid YAML: ")) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the policy file ({exc})") from exc
    policy = policy_from_mapping(data, source=path)
    if expected_name is not None and policy.name != expected_name.lower():
        raise ConfigError(
            f"{path}: key 'name' is {policy.name!r} but the file is policy {expected_name!r} "
            f"(set name: {expected_name} or rename the file)"
        )
    return policy


def policy_from_mapping(data: Any, source: str | Path = "<policy>") -> Policy:
    """Validate the parsed content of a policy file and build the ``Policy``; ``source`` names it in errors."""
    where = str(source)
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{where}: a policy must be a mapping of keys ({', '.join(POLICY_KEYS)}), got {type(data).__name__}"
        )
    unknown = sorted(str(key) for key in data if key not in POLICY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed keys: {', '.join(POLICY_KEYS)})")
    missing = [key for key in POLICY_KEYS if key not in data]
    if missing:
        raise ConfigError(
            f"{where}: missing key(s) {', '.join(missing)} (every policy states all of: "
            f"{', '.join(POLICY_KEYS)}; see data/policies/default.yml)"
        )
    name = data["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"{where}: key 'name' must be a non-empty name of letters, digits, '_', '-', '.', got {name!r}")
    denied_functions = _function_list(data, "denied_functions", where)
    allowed_table_functions = _function_list(data, "allowed_table_functions", where)
    for function in allowed_table_functions:
        if function.endswith("*"):
            raise ConfigError(f"{where}: key 'allowed_table_functions': {function!r} must be a plain name, not a pattern")
        clash = [p for p in BUILTIN_DENIED_FUNCTIONS + denied_functions if function_pattern_matches(p, function)]
        if clash:
            raise ConfigError(
                f"{where}: key 'allowed_table_functions' lists {function!r}, which is a denied function "
                f"(matches {clash[0]!r}); remove it"
            )
    policy = Policy(
        name=name.lower(),
        allowed_tables=_allowed_tables(data["allowed_tables"], where),
        denied_columns=_denied_columns(data["denied_columns"], where),
        max_limit=_budget(data, "max_limit", where, minimum=1),
        max_joins=_budget(data, "max_joins", where, minimum=0),
        forbid_cartesian=_boolean(data, "forbid_cartesian", where),
        denied_functions=denied_functions,
        allowed_table_functions=allowed_table_functions,
        source=None if where == "<policy>" else Path(source),
    )
    return policy


def policies_hash(names: Iterable[str]) -> str:
    """One SHA-256 over the named policies' content hashes and the engine version (for run versioning)."""
    digest = hashlib.sha256(f"policy-engine:{POLICY_ENGINE_VERSION}\n".encode())
    for name in sorted(set(names)):
        policy = load_policy(name)
        digest.update(f"{name}={policy.content_hash}\n".encode())
    return digest.hexdigest()


def _allowed_tables(value: Any, where: str) -> Any:
    if value == ALL_TABLES:
        return ALL_TABLES
    if not isinstance(value, list) or not value:
        raise ConfigError(
            f"{where}: key 'allowed_tables' must be \"*\" or a non-empty list of table names, got {value!r}"
        )
    tables = []
    for item in value:
        if not isinstance(item, str) or not _IDENT_RE.match(item):
            raise ConfigError(f"{where}: key 'allowed_tables': {item!r} is not a table name (write e.g. anime)")
        tables.append(item.lower())
    return tuple(sorted(set(tables)))


def _denied_columns(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: key 'denied_columns' must be a list of table.column strings, got {value!r}")
    columns = []
    for item in value:
        parts = item.split(".") if isinstance(item, str) else []
        if len(parts) != 2 or not all(_IDENT_RE.match(part) for part in parts):
            raise ConfigError(
                f"{where}: key 'denied_columns': {item!r} is not of the form table.column (write e.g. users.email)"
            )
        columns.append(item.lower())
    return tuple(sorted(set(columns)))


def _function_list(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data[key]
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: key '{key}' must be a list of function names, got {value!r}")
    names = []
    for item in value:
        if not isinstance(item, str) or not _FUNCTION_RE.match(item):
            raise ConfigError(
                f"{where}: key '{key}': {item!r} is not a function name (letters, digits, '_'; "
                f"a trailing '*' makes a prefix)"
            )
        names.append(item.lower())
    return tuple(sorted(set(names)))


def _budget(data: Mapping[str, Any], key: str, where: str, minimum: int) -> int | None:
    value = data[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: key '{key}' must be an integer >= {minimum} or null (no budget), got {value!r}")
    return value


def _boolean(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data[key]
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: key '{key}' must be true or false, got {value!r}")
    return value
