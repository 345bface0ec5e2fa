"""Exceptions of the sandbox: problems of the environment or the limits, never of one query.

A query that fails (bad SQL, a refused statement, a timeout) is not an exception: it is a
``QueryResult`` with ``ok=False`` and an ``error_class``.
"""

from __future__ import annotations

from nl2sql_pipeline.errors import ConfigError, Nl2SqlError


class SandboxError(Nl2SqlError):
    """The sandbox could not open a database (not a DuckDB file, locked by a writer, conflicting settings)."""


class SandboxConflictError(SandboxError):
    """This process already has the database open with other DuckDB settings (DuckDB allows one set)."""


class SandboxLimitsError(ConfigError):
    """A ``SandboxLimits`` value is out of range (a non-positive timeout, a negative row cap, ...)."""
