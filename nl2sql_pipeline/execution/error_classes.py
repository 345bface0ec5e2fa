"""Map a DuckDB exception raised by a sandboxed query onto one of ``ERROR_CLASSES``.

Checked on duckdb 2.0.1: parse errors are ``ParserException`` (``SyntaxException`` is a sibling);
a file, URL, extension or secret access with external access off is ``PermissionException``; a write
on the read-only database (e.g. a data-modifying CTE) and a ``SET`` on the locked configuration are
``InvalidInputException``; a full spill directory is ``OutOfMemoryException`` like memory itself;
``FROM '/etc/passwd'`` (a replacement scan, disabled) is a ``CatalogException`` naming the path.
"""

from __future__ import annotations

import re

import duckdb

_FORBIDDEN_MESSAGES = (
    "read-only mode",
    "configuration has been locked",
    "disabled by configuration",
    "disabled through configuration",
    "external access",
)
_RESOURCE_MESSAGES = ("max_temp_directory_size", "no space left on device", "out of memory")
_FROM_POSITION = frozenset({"FROM", "JOIN", ","})
_MISSING_TABLE = re.compile(r"Table with name (?P<name>.+?) does not exist")


def classify_error(exc: BaseException, sql: str = "") -> str:
    """The error class of ``exc`` raised while running ``sql`` (``sql`` helps spot file reads)."""
    message = str(exc)
    lowered = message.lower()
    if isinstance(exc, duckdb.InterruptException):
        return "timeout"
    if isinstance(exc, duckdb.PermissionException) or "expected a single select statement" in lowered:
        return "forbidden"  # the latter: query('DELETE ...') smuggling a statement into dynamic SQL
    if isinstance(exc, (duckdb.ParserException, duckdb.SyntaxException)):
        return "syntax"
    if isinstance(exc, duckdb.OutOfMemoryException):
        return "resource"
    if any(marker in lowered for marker in _FORBIDDEN_MESSAGES):
        return "forbidden"
    if isinstance(exc, duckdb.BinderException):
        return "binder"
    if isinstance(exc, duckdb.CatalogException):
        return "forbidden" if _names_a_file(message, sql) else "catalog"
    if isinstance(exc, (duckdb.IOException, MemoryError)) and any(m in lowered for m in _RESOURCE_MESSAGES):
        return "resource"
    if isinstance(exc, MemoryError):
        return "resource"
    return "runtime"


def _names_a_file(message: str, sql: str) -> bool:
    """True when the missing "table" is a string literal in a FROM position: a blocked file/URL scan."""
    match = _MISSING_TABLE.search(message)
    if not match or not sql:
        return False
    try:
        tokens = duckdb.tokenize(sql)
    except duckdb.Error:
        return False
    texts = [
        (kind, sql[start : tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)].strip())
        for i, (start, kind) in enumerate(tokens)
        if kind != duckdb.token_type.comment
    ]
    for index, (kind, text) in enumerate(texts):
        if kind != duckdb.token_type.string_const or index == 0:
            continue
        literal = text[1:-1].replace("''", "'") if len(text) >= 2 and text[0] == text[-1] == "'" else None
        previous = texts[index - 1][1].upper()
        if literal == match["name"] and previous in _FROM_POSITION:
            return True
    return False
