"""The Dagster Definitions of nl2sql-eval (loaded by workspace.yaml). Nothing is defined here: ``assets.assemble``
builds them, reading the automation opt-in of data/judges.yml."""

from __future__ import annotations

from assets.assemble import build_definitions

defs = build_definitions()
