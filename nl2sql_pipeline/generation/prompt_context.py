"""Build the ``PromptContext`` of a gold set from the semantic model and the built databases.

The schema text is the database's DDL annotated with the semantic model's descriptions, the semantic
text is ``semantic_model.render_for_prompt(model)`` and the reference date is the model's. Both are read
from files, so the same inputs give the same prompt (and the same cache keys) on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext

if TYPE_CHECKING:
    from nl2sql_pipeline.semantic_model import SemanticModel


def build_prompt_context(
    databases: Iterable[str],
    *,
    resolve_database: Callable[[str], Path] = paths.database_path,
    semantic_model: SemanticModel | None = None,
) -> PromptContext:
    """Prompt texts for each database name (default semantic model: ``data/semantic_model.yml``).

    Raises ConfigError when the semantic model does not describe a database, DatabaseNotFoundError
    when a database file has not been built.
    """
    from nl2sql_pipeline.semantic_model import database_ddl_with_descriptions, load_semantic_model, render_for_prompt

    model = semantic_model or load_semantic_model()
    texts: dict[str, DatabasePromptText] = {}
    for name in sorted(set(databases)):
        if name != model.database:
            raise ConfigError(
                f"{model.path}: the semantic model describes database {model.database!r}, not {name!r} "
                "(point the cases at a described database or describe it in the semantic model)"
            )
        texts[name] = DatabasePromptText(
            schema_text=database_ddl_with_descriptions(resolve_database(name), model),
            semantic_text=render_for_prompt(model),
            reference_date=model.reference_date.isoformat(),
        )
    return PromptContext(texts)


def prompt_context_for_cases(
    cases: Iterable[Case],
    *,
    resolve_database: Callable[[str], Path] = paths.database_path,
    semantic_model: SemanticModel | None = None,
) -> PromptContext:
    """``build_prompt_context`` over the databases the query cases use (probes need no prompt)."""
    databases = {case.database for case in cases if not case.is_probe}
    return build_prompt_context(databases, resolve_database=resolve_database, semantic_model=semantic_model)
