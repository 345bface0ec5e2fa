"""The throwaway PostgreSQL cluster of the integration tests (it lives in the core: ``gold import --verify-with
postgres`` starts one too)."""

from nl2sql_pipeline.dialect.postgres_server import PostgresServer, PostgresServerError, PostgresUnavailable

__all__ = ["PostgresServer", "PostgresServerError", "PostgresUnavailable"]
