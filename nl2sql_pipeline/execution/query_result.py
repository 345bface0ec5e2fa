"""``QueryResult``: the outcome of one sandboxed query, and the error classes it can carry."""

from __future__ import annotations

from dataclasses import dataclass, field

ERROR_CLASSES: tuple[str, ...] = ("syntax", "binder", "catalog", "timeout", "resource", "forbidden", "runtime")


@dataclass
class QueryResult:
    """Columns, types and (at most ``row_cap``) rows of a query, or why it did not run.

    ``truncated`` is True when more than ``row_cap`` rows existed (``rows`` then holds ``row_cap``
    rows). ``error_class`` is None on success, else one of ``ERROR_CLASSES``. ``elapsed_ms`` is the
    wall-clock time of execute + fetch only (0 for a query refused before execution).
    """

    ok: bool
    columns: list[str] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False
    error_class: str | None = None
    error_message: str | None = None
    elapsed_ms: float = 0.0

    @classmethod
    def failure(cls, error_class: str, message: str, elapsed_ms: float = 0.0) -> QueryResult:
        """A result for a query that was refused or failed."""
        if error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class {error_class!r}; expected one of {ERROR_CLASSES}")
        return cls(ok=False, error_class=error_class, error_message=message, elapsed_ms=elapsed_ms)
