"""Which DuckDB file a database reference names: the one resolver behind every ``--database`` argument.

A reference is either the path of a file or the name of a database:

- a path when it looks like one (it ends in ``.duckdb`` or ``.db``, or holds a ``/``) or names an
  existing file: ``data/x.duckdb``, ``./shop.db``, ``~/dbs/x.duckdb``, ``/abs/file``; a relative path is
  relative to the gold file's folder for a case (``base_dir``), to the working directory otherwise;
- otherwise a name: an entry of the database registry (``data/databases.yml``, plus the inline
  ``databases:`` of a gold-set entry), or else a sample database built under the storage root
  (``<storage root>/databases/<name>.duckdb``, see ``nl2sql-eval db build``), which may not be built yet.

>>> resolve_database("anime_platform").kind.value
'sample'
>>> resolve_database("data/x.duckdb").kind.value
'file'

:class:`CaseDatabases` is the resolver of a gold set's cases (a ``DatabaseResolver``: reference -> file).
"""

from __future__ import annotations

import difflib
import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from nl2sql_pipeline import paths
from nl2sql_pipeline.databases.registry import (
    REGISTERED_POLICY,
    SAMPLE_POLICY,
    DatabaseEntry,
    load_database_registry,
    registry_path,
)
from nl2sql_pipeline.errors import DatabaseNotFoundError

PATH_SUFFIXES = (".duckdb", ".db")
"""Suffixes that make a reference a file path even when the file does not exist."""


class DatabaseKind(enum.Enum):
    """Where a reference was found: a named sample database, or a file given by its path."""

    SAMPLE = "sample"
    FILE = "file"
    REGISTERED = "registered"


class UnknownDatabaseError(DatabaseNotFoundError):
    """A name that no registry entry and no sample database has (a ``DatabaseNotFoundError``: reported as
    a missing database is, exit 3)."""


class NotADatabaseFileError(DatabaseNotFoundError):
    """A reference names a directory, not a DuckDB file (a ``DatabaseNotFoundError`` for callers that
    treat every unusable reference alike)."""


@dataclass(frozen=True)
class ResolvedDatabase:
    """A resolved database reference: what was asked for, the file it means, and whether it is there."""

    reference: str
    """The reference as given (a name or a path)."""
    path: Path
    """The absolute path of the DuckDB file."""
    kind: DatabaseKind
    exists: bool
    """Whether ``path`` was an existing file when the reference was resolved."""
    entry: DatabaseEntry | None = None
    """The registry entry the name was found in (None for a path or an unregistered sample name)."""
    registered: tuple[str, ...] = field(default=(), compare=False)
    """For an unregistered name: the names the registry knows (to suggest one when the name is a typo)."""

    @property
    def is_name(self) -> bool:
        """True when the reference is a database name rather than a file path."""
        return self.kind is not DatabaseKind.FILE

    @property
    def is_unknown_name(self) -> bool:
        """True for a name that is neither registered nor a sample database ``db build`` knows, with no file
        under the storage root either (a typo, or a database never registered): nothing can make it exist."""
        return (
            self.kind is DatabaseKind.SAMPLE
            and self.entry is None
            and self.reference not in buildable_sample_names()
            and not self.path.is_file()
        )

    def not_found_error(self) -> DatabaseNotFoundError:
        """The error for this reference when its file is missing or is a directory: what, where, how to fix."""
        if self.path.is_dir():
            return NotADatabaseFileError(f"{self.path} is a directory, not a .duckdb file")
        if self.is_unknown_name:
            known = sorted({*self.registered, *buildable_sample_names()})
            close = difflib.get_close_matches(self.reference, known, n=3, cutoff=0.6)
            fix = (
                f"did you mean {' or '.join(repr(name) for name in close)}?"
                if close
                else f"known databases: {', '.join(known)}; register a file with: "
                f"nl2sql-eval db register {self.reference} PATH"
            )
            return UnknownDatabaseError(
                f"unknown database {self.reference!r} (not in {registry_path()} and not a sample database; {fix})"
            )
        if self.entry is not None and not self.entry.sample:
            return DatabaseNotFoundError(
                f"database {self.reference!r} (registry entry {self.entry.source}): the file {self.path} does "
                "not exist; fix 'file:' in that entry, or re-register it with: "
                f"nl2sql-eval db register {self.reference} PATH"
            )
        if self.is_name:
            return DatabaseNotFoundError(
                f"sample database {self.reference!r} is not built ({self.path} is missing); "
                f"build it with: nl2sql-eval db build --name {self.reference}"
                + (f" (registry entry {self.entry.source})" if self.entry is not None else "")
            )
        return DatabaseNotFoundError(
            f"the file {self.path} does not exist; pass the path of an existing .duckdb file, "
            "or the name of a sample database built with `nl2sql-eval db build`"
        )

    def require(self) -> Path:
        """``path`` when it is an existing file; else raise :meth:`not_found_error`."""
        if not self.path.is_file():
            raise self.not_found_error()
        return self.path


def buildable_sample_names() -> tuple[str, ...]:
    """The sample databases ``nl2sql-eval db build --name`` can build (imported on first use: the builders
    are heavy, and only a missing database asks)."""
    from nl2sql_pipeline.sample_db import BUILDERS

    return tuple(BUILDERS)


def looks_like_path(reference: str) -> bool:
    """True when ``reference`` reads as a file path whether or not the file exists (a suffix or a ``/``)."""
    return Path(reference).suffix in PATH_SUFFIXES or os.sep in reference or "/" in reference


def sample_database(name: str) -> ResolvedDatabase:
    """The sample database called ``name`` under the storage root (built or not)."""
    path = paths.database_path(name)
    return ResolvedDatabase(reference=name, path=path, kind=DatabaseKind.SAMPLE, exists=path.is_file())


def _resolve_name(name: str, entries: Mapping[str, DatabaseEntry]) -> ResolvedDatabase:
    """The database a name stands for: its registry entry, else the sample database of that name."""
    entry = entries.get(name)
    if entry is None:
        return replace(sample_database(name), registered=tuple(entries))
    kind = DatabaseKind.SAMPLE if entry.sample else DatabaseKind.REGISTERED
    return ResolvedDatabase(reference=name, path=entry.path, kind=kind, exists=entry.path.is_file(), entry=entry)


def resolve_database(
    reference: str, *, base_dir: Path | None = None, entries: Mapping[str, DatabaseEntry] | None = None
) -> ResolvedDatabase:
    """Resolve a database reference (a name or a path, see the module docstring); never raises for a
    missing file (a broken registry file raises ``ConfigError``).

    ``base_dir`` anchors relative paths (a gold file's folder); ``entries`` is the registry to look names
    up in (default: ``data/databases.yml``). Use :meth:`ResolvedDatabase.require` (or
    :func:`require_database`) to insist on an existing file.
    """
    candidate = Path(reference).expanduser()
    if base_dir is not None and not candidate.is_absolute():
        candidate = Path(base_dir) / candidate
    if looks_like_path(reference) or candidate.is_file():
        path = candidate.resolve()
        return ResolvedDatabase(reference=reference, path=path, kind=DatabaseKind.FILE, exists=path.is_file())
    return _resolve_name(reference, load_database_registry() if entries is None else entries)


def require_database(reference: str) -> Path:
    """The existing DuckDB file ``reference`` names.

    Raises ``DatabaseNotFoundError`` when it is missing (saying how to build or where to point instead)
    and ``NotADatabaseFileError`` (a subclass) when it is a directory.
    """
    return resolve_database(reference).require()


@dataclass
class CaseDatabases:
    """The database resolver of a gold set's cases: registry entries (global plus the gold set's inline
    ones) and the gold file's folder for relative paths. Calling it maps a case's ``database`` to its
    existing file (a ``DatabaseResolver``); a missing one raises ``DatabaseNotFoundError``.
    """

    entries: Mapping[str, DatabaseEntry]
    base_dir: Path | None = None
    _resolved: dict[str, ResolvedDatabase] = field(default_factory=dict, repr=False)
    _policies: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_registry(
        cls, base_dir: Path | None = None, inline: Mapping[str, DatabaseEntry] | None = None
    ) -> CaseDatabases:
        """The global registry (``data/databases.yml``) plus ``inline`` entries, relative paths under ``base_dir``."""
        return cls({**load_database_registry(), **(inline or {})}, base_dir)

    def resolve(self, reference: str) -> ResolvedDatabase:
        """The resolved reference (memoized; never raises for a missing file)."""
        if reference not in self._resolved:
            self._resolved[reference] = resolve_database(reference, base_dir=self.base_dir, entries=self.entries)
        return self._resolved[reference]

    def __call__(self, reference: str) -> Path:
        return self.resolve(reference).require()

    def entry(self, reference: str) -> DatabaseEntry | None:
        """The registry entry of a reference (None for a path or an unregistered name)."""
        return self.resolve(reference).entry

    def exposed_schemas(self, reference: str) -> tuple[str, ...] | None:
        """The schemas the registry exposes for a reference (None: every non-system schema)."""
        entry = self.entry(reference)
        return entry.schemas if entry is not None else None

    def policy_of(self, reference: str) -> str:
        """The SQL policy of a reference's cases that name none (see ``registry``): its registry entry's
        (a file path is looked up among the entries by its file too, as an imported gold set names its
        databases), else ``default`` for a sample database and ``safety`` for any other file."""
        if reference not in self._policies:  # asked per case, several times a run: the entries are scanned once
            self._policies[reference] = self._policy_of(reference)
        return self._policies[reference]

    def _policy_of(self, reference: str) -> str:
        resolved = self.resolve(reference)
        entry = resolved.entry
        if entry is None and resolved.kind is DatabaseKind.FILE:
            entry = next((e for e in self.entries.values() if e.path == resolved.path), None)
        if entry is not None:
            return entry.effective_policy
        return SAMPLE_POLICY if resolved.kind is DatabaseKind.SAMPLE else REGISTERED_POLICY

    def missing(self, references: set[str] | list[str]) -> list[DatabaseNotFoundError]:
        """The not-found error of every reference whose file is missing, in sorted order."""
        return [
            self.resolve(r).not_found_error() for r in sorted(set(references)) if not self.resolve(r).path.is_file()
        ]


def default_registry_path() -> Path:
    """``data/databases.yml`` (re-exported for commands)."""
    return registry_path()
