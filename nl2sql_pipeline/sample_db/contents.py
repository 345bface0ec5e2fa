"""What a built database holds: a hash of every row and the live row counts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from nl2sql_pipeline.sample_db.spec import TABLE_ORDER


def _primary_key_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    rows = con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'",
        [table],
    ).fetchall()
    if rows:
        return list(rows[0][0])
    return [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [table]
        ).fetchall()
    ]


def content_hash(con: duckdb.DuckDBPyConnection) -> str:
    """SHA-256 over every table's rows (as JSON, in primary-key order), tables sorted by name."""
    digest = hashlib.sha256()
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_name"
        ).fetchall()
    ]
    for table in tables:
        keys = ", ".join(f'"{c}"' for c in _primary_key_columns(con, table))
        [(table_md5,)] = con.execute(
            f"SELECT md5(coalesce(string_agg(to_json(t)::VARCHAR, chr(10) ORDER BY {keys}), '')) FROM \"{table}\" AS t"
        ).fetchall()
        digest.update(f"{table}:{table_md5}\n".encode())
    return digest.hexdigest()


def live_row_counts(path: Path) -> dict[str, int]:
    """Row count of every table of the database file at ``path`` (opened read-only), by name."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()
        ]
        counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in tables}
    finally:
        con.close()
    known = [t for t in TABLE_ORDER if t in counts]
    return {t: counts[t] for t in known + sorted(set(counts) - set(known))}
