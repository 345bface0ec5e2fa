"""Build the ``PromptContext`` of a gold set from the semantic model and the built databases.

The schema text is the database's DDL annotated with the semantic model's descriptions, the semantic
text is ``semantic_model.render_for_prompt(model)`` and the reference date is the model's. Both are read
from files, so the same inputs give the same prompt (and the same cache keys) on every run; the texts
are memoized in the process by the identity (path, inode, size, mtime) of those files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext

if TYPE_CHECKING:
    from nl2sql_pipeline.semantic_model import SemanticModel

# Prompt texts by (semantic model file, database name, database file): the same files give the same
# texts, so a second model run in the process (or a re-run) does not re-read the semantic model and
# the database's catalog. Only the default semantic model file is memoized (a model passed in is not).
_TEXTS: dict[tuple, DatabasePromptText] = {}
_TEXTS_LOCK = threading.Lock()
_TEXTS_MAX = 64


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
    from nl2sql_pipeline.semantic_model import default_semantic_model_path, load_semantic_model

    model_file = _file_identity(default_semantic_model_path()) if semantic_model is None else None
    model = semantic_model
    texts: dict[str, DatabasePromptText] = {}
    for name in sorted(set(databases)):
        db_path = resolve_database(name)
        db_file = _file_identity(db_path)
        key = (model_file, name, db_file) if model_file is not None and db_file is not None else None
        cached = _TEXTS.get(key) if key is not None else None
        if cached is None:
            model = model or load_semantic_model()
            cached = _database_texts(name, db_path, model)
            if key is not None:
                with _TEXTS_LOCK:
                    if len(_TEXTS) >= _TEXTS_MAX:
                        _TEXTS.clear()
                    _TEXTS[key] = cached
        texts[name] = cached
    return PromptContext(texts)


def _database_texts(name: str, db_path: Path, model: SemanticModel) -> DatabasePromptText:
    from nl2sql_pipeline.semantic_model import database_ddl_with_descriptions, render_for_prompt

    if name != model.database:
        raise ConfigError(
            f"{model.path}: the semantic model describes database {model.database!r}, not {name!r} "
            "(point the cases at a described database or describe it in the semantic model)"
        )
    return DatabasePromptText(
        schema_text=database_ddl_with_descriptions(db_path, model),
        semantic_text=render_for_prompt(model),
        reference_date=model.reference_date.isoformat(),
    )


def _file_identity(path: Path) -> tuple | None:
    """(path, device, inode, size, mtime) of ``path``; None when it cannot be read (no memo then)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def clear_prompt_context_memo() -> None:
    """Forget the memoized prompt texts (benchmarks measuring a cold start; tests)."""
    with _TEXTS_LOCK:
        _TEXTS.clear()


def prompt_context_for_cases(
    cases: Iterable[Case],
    *,
    resolve_database: Callable[[str], Path] = paths.database_path,
    semantic_model: SemanticModel | None = None,
) -> PromptContext:
    """``build_prompt_context`` over the databases the query cases use (probes need no prompt)."""
    databases = {case.database for case in cases if not case.is_probe}
    return build_prompt_context(databases, resolve_database=resolve_database, semantic_model=semantic_model)
