"""Databases a case can name: the registry of named DuckDB files and the one resolver of a database reference."""
