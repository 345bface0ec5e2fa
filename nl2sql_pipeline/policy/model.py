"""Plain data of the policy engine: the ``Policy`` (one YAML file) and the ``PolicyDecision`` it yields.

The built-in deny list of dangerous functions lives here too: a policy's ``denied_functions`` is
added to it, never replaces it. Entries ending in ``*`` are prefixes (``read_*`` covers every
file reader, present and future).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

ALL_TABLES: Final = "*"

BUILTIN_DENIED_FUNCTIONS: tuple[str, ...] = (
    # file readers and scanners (table functions and their scalar cousins)
    "read_*",
    "parquet_*",
    "glob",
    "sniff_csv",
    "seq_scan",
    "arrow_scan",
    "arrow_scan_dumb",
    "pandas_scan",
    "python_arrow_scan",
    "python_map_function",
    "iceberg_*",
    "delta_*",
    "ducklake_*",
    "sqlite_*",
    "postgres_*",
    "mysql_*",
    "st_read",
    "st_read_meta",
    # the environment, settings, secrets and the catalog
    "getenv",
    "current_setting",
    "getvariable",
    "which_secret",
    "load_aws_credentials",
    "duckdb_*",
    "pragma_*",
    # dynamic SQL
    "query",
    "query_table",
    "json_execute_serialized_sql",
    # side effects on the database or the session
    "checkpoint",
    "force_checkpoint",
    "enable_logging",
    "disable_logging",
    "truncate_duckdb_logs",
    "write_log",
    "enable_profiling",
    "disable_profiling",
    "enable_profile",
    "disable_profile",
    "create_external_resource",
    "register_external_resource",
    "register_external_resource_type",
    "deregister_external_resource",
    "destroy_external_resource",
    "add_grammar_extension",
    "remove_grammar_extension",
)


def function_pattern_matches(pattern: str, name: str) -> bool:
    """True when ``name`` (lower case) matches ``pattern``: an exact name, or a prefix ending in ``*``."""
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern


@dataclass(frozen=True)
class PolicyDecision:
    """The verdict on one SQL text: allowed or not, the rule that decided it and why."""

    allowed: bool
    rule: str | None
    policy_name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """The decision as a JSON-ready dict."""
        return {
            "allowed": self.allowed,
            "rule": self.rule,
            "policy_name": self.policy_name,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Policy:
    """One SQL policy. Names are lower case; lists are sorted tuples so that equal policies compare equal.

    ``allowed_tables`` is ``"*"`` (every table and view of the database's main schema) or the names
    allowed; ``denied_columns`` holds ``table.column`` strings; ``max_limit``/``max_joins`` of None
    mean no budget; ``denied_functions`` adds to ``BUILTIN_DENIED_FUNCTIONS``.
    """

    name: str
    allowed_tables: Literal["*"] | tuple[str, ...] = ALL_TABLES
    denied_columns: tuple[str, ...] = ()
    max_limit: int | None = None
    max_joins: int | None = None
    forbid_cartesian: bool = False
    denied_functions: tuple[str, ...] = ()
    allowed_table_functions: tuple[str, ...] = ()
    allowed_schemas: tuple[str, ...] | None = None
    """Schemas queries may read (None: every schema the database registry exposes)."""
    source: Path | None = field(default=None, compare=False)

    def allows_schema(self, schema: str) -> bool:
        """True when the policy lets queries read tables of ``schema`` (None allows every exposed one)."""
        return self.allowed_schemas is None or schema.lower() in self.allowed_schemas

    def allows_table(self, table: str) -> bool:
        """True when the policy lets queries read ``table`` (case-insensitive)."""
        return self.allowed_tables == ALL_TABLES or table.lower() in self.allowed_tables

    @property
    def denied_columns_by_table(self) -> dict[str, frozenset[str]]:
        """``{table: {column, ...}}`` of the denied columns, lower case."""
        result: dict[str, set[str]] = {}
        for entry in self.denied_columns:
            table, _, column = entry.lower().partition(".")
            result.setdefault(table, set()).add(column)
        return {table: frozenset(columns) for table, columns in result.items()}

    @property
    def all_denied_functions(self) -> tuple[str, ...]:
        """The built-in deny list plus this policy's additions (patterns, lower case)."""
        return tuple(dict.fromkeys(BUILTIN_DENIED_FUNCTIONS + tuple(f.lower() for f in self.denied_functions)))

    def to_dict(self) -> dict[str, Any]:
        """The policy's content as plain data (what ``content_hash`` hashes)."""
        return {
            "name": self.name,
            "allowed_tables": self.allowed_tables if self.allowed_tables == ALL_TABLES else sorted(self.allowed_tables),
            "denied_columns": sorted(self.denied_columns),
            "max_limit": self.max_limit,
            "max_joins": self.max_joins,
            "forbid_cartesian": self.forbid_cartesian,
            "denied_functions": sorted(self.denied_functions),
            "allowed_table_functions": sorted(self.allowed_table_functions),
            # only when set, so that policies without it keep their content hash
            **({"allowed_schemas": list(self.allowed_schemas)} if self.allowed_schemas is not None else {}),
        }

    @property
    def content_hash(self) -> str:
        """SHA-256 of the normalized content: comments, key order and formatting do not change it."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
