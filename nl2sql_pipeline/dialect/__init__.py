"""Gold SQL written for another engine, converted to DuckDB and checked against that engine.

    converted = convert_sql(sql, "sqlite", columns)     # ConvertedSql: DuckDB SQL + the fixes applied
    check = verify_conversion(source, converted, sqlite_path, duckdb_path)   # same result on both engines?

Modules: ``sqlite_fixes`` / ``postgres_fixes`` (the ordered rewrites that make SQLite's / Postgres's
semantics hold in DuckDB), ``convert`` (sqlglot transpilation + the fixes of the source dialect),
``verify`` (run the original on its engine and the conversion in the sandbox, compare with
``nl2sql_pipeline.compare``), ``postgres_verify`` (databases loaded into PostgreSQL, the originals run
there) on a given server or a throwaway cluster (``postgres_server``).
"""

from nl2sql_pipeline.dialect.convert import ConversionError, ConvertedSql, convert_sql
from nl2sql_pipeline.dialect.verify import CHECK_STATUSES, KEPT_STATUSES, ConversionCheck, run_sqlite, verify_conversion

__all__ = [
    "CHECK_STATUSES",
    "KEPT_STATUSES",
    "ConversionCheck",
    "ConversionError",
    "ConvertedSql",
    "convert_sql",
    "run_sqlite",
    "verify_conversion",
]
