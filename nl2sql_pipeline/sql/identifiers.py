"""Quoting of SQL identifiers for the SQL the harness writes itself (never for generated SQL)."""


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted identifier, inner quotes doubled (valid in DuckDB and SQLite)."""
    return '"' + name.replace('"', '""') + '"'
