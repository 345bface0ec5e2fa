"""Dagster definitions of nl2sql-eval: thin assets over the core library, split by stage."""
