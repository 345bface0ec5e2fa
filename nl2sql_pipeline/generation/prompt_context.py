"""Build the ``PromptContext`` of a gold set from each database's semantic model, or its introspection.

Which semantic model describes a database, in order: the ``semantic_model`` of its registry entry
(``data/databases.yml`` or a gold-set entry), else the default ``data/semantic_model.yml`` when that
model's ``database`` is the database's name. With a model, the schema text is the database's DDL
annotated with the model's descriptions, the semantic text is ``render_for_prompt(model)`` and the
reference date is the model's. Whatever the database's texts say, ``PromptContext.for_case`` states each
case's own reference date (its gold set's, the instant its SQL's clock is pinned at). Without one, the schema text is introspected from the database
(``semantic_model.introspect``: tables, columns, keys, comments, sampled values, within a token budget).
Both are read from files, so the same inputs give the same prompt (and the same cache keys) on every
run; the texts are memoized in the process by the identity (path, inode, size, mtime) of those files,
and on disk under the storage root (``cache/prompt_texts/``) by the same identities plus those of the
code that renders them, so a new process (the next run, a Dagster step of its own) does not read the
semantic model and the database's catalog again (~100 ms) while none of them changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
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
    from nl2sql_pipeline.databases.registry import DatabaseEntry
    from nl2sql_pipeline.semantic_model import SemanticModel

logger = logging.getLogger(__name__)

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
    """Prompt texts for each database name (see the module docstring for which model describes which).

    ``semantic_model`` (tests) replaces every database's model; a database it does not describe is
    introspected. Raises ConfigError when a registry entry's semantic model describes another database,
    DatabaseNotFoundError when a database file is missing.
    """
    from nl2sql_pipeline.semantic_model import default_semantic_model_path

    texts: dict[str, DatabasePromptText] = {}
    for name in sorted(set(databases)):
        entry = _registry_entry(resolve_database, name)
        model_path = (
            entry.semantic_model if entry is not None and entry.semantic_model else default_semantic_model_path()
        )
        model_file = _file_identity(model_path) if semantic_model is None else None
        db_path = resolve_database(name)
        db_file = _file_identity(db_path)
        schemas = entry.schemas if entry is not None else None
        budget = entry.prompt_token_budget if entry is not None else None
        identified = model_file is not None and db_file is not None
        key = (model_file, name, db_file, schemas, budget) if identified else None
        cached = _TEXTS.get(key) if key is not None else None
        if cached is None and key is not None:
            cached = _read_stored(key)
            if cached is not None:
                with _TEXTS_LOCK:
                    _TEXTS[key] = cached
        if cached is None:
            cached = _database_texts(name, db_path, semantic_model, entry, model_path)
            if key is not None:
                _store(key, cached)
                with _TEXTS_LOCK:
                    if len(_TEXTS) >= _TEXTS_MAX:
                        _TEXTS.clear()
                    _TEXTS[key] = cached
        texts[name] = cached
    return PromptContext(texts)


def _registry_entry(resolve_database: Callable[[str], Path], name: str) -> DatabaseEntry | None:
    """The registry entry of ``name``: from a ``CaseDatabases`` resolver, else the global registry."""
    from nl2sql_pipeline.databases.registry import load_database_registry
    from nl2sql_pipeline.databases.resolve import looks_like_path

    lookup = getattr(resolve_database, "entry", None)
    if lookup is not None:
        return lookup(name)
    return None if looks_like_path(name) else load_database_registry().get(name)


def _database_texts(
    name: str, db_path: Path, given: SemanticModel | None, entry: DatabaseEntry | None, model_path: Path
) -> DatabasePromptText:
    from nl2sql_pipeline.semantic_model import database_ddl_with_descriptions, load_semantic_model, render_for_prompt
    from nl2sql_pipeline.semantic_model.introspect import (
        NO_REFERENCE_DATE,
        NO_SEMANTIC_MODEL_TEXT,
        introspected_schema_text,
    )

    naming_entry = entry if entry is not None and entry.semantic_model is not None else None
    if given is not None:
        model = given
    elif naming_entry is not None or model_path.is_file():
        model = load_semantic_model(model_path)
    else:
        model = None
    if model is not None and name != model.database:
        if naming_entry is not None:
            raise ConfigError(
                f"{model.path}: the semantic model describes database {model.database!r}, not {name!r} "
                f"(set 'database: {name}' in it, or remove 'semantic_model:' from the registry entry "
                f"{naming_entry.source} to describe the database by introspection)"
            )
        model = None
    if model is None:
        logger.info(
            "database %r has no semantic model: its prompt schema is introspected from %s "
            "(to describe it, add 'semantic_model: <file>' to its entry in data/databases.yml)",
            name,
            db_path,
        )
        return DatabasePromptText(
            schema_text=introspected_schema_text(db_path, *_introspection_settings(entry)),
            semantic_text=NO_SEMANTIC_MODEL_TEXT,
            reference_date=NO_REFERENCE_DATE,
        )
    return DatabasePromptText(
        schema_text=database_ddl_with_descriptions(db_path, model),
        semantic_text=render_for_prompt(model),
        reference_date=model.reference_date.isoformat(),
    )


def introspection_notes(databases: Iterable[str], resolve_database: Callable[[str], Path]) -> list[str]:
    """One line per database whose prompt will be introspected (no semantic model describes it), saying
    how to describe it instead. A broken semantic model file is left to prompt building to report."""
    from nl2sql_pipeline.semantic_model import default_semantic_model_path, load_semantic_model

    default = default_semantic_model_path()
    described_by_default = None
    notes = []
    for name in sorted(set(databases)):
        entry = _registry_entry(resolve_database, name)
        if entry is not None and entry.semantic_model is not None:
            continue
        if described_by_default is None:
            try:
                described_by_default = load_semantic_model(default).database if default.is_file() else ""
            except ConfigError:
                described_by_default = ""
        if name == described_by_default:
            continue
        notes.append(
            f"database {name!r} has no semantic model: its prompt schema is introspected from the database "
            "(to describe it instead, add 'semantic_model: <file>' to its entry in data/databases.yml)"
        )
    return notes


def _introspection_settings(entry: DatabaseEntry | None) -> tuple[tuple[str, ...] | None, int]:
    """(exposed schemas, token budget) of an introspected database."""
    from nl2sql_pipeline.semantic_model.introspect import DEFAULT_TOKEN_BUDGET

    if entry is None:
        return None, DEFAULT_TOKEN_BUDGET
    return entry.schemas, entry.prompt_token_budget or DEFAULT_TOKEN_BUDGET


def _file_identity(path: Path) -> tuple | None:
    """(path, device, inode, size, mtime) of ``path``; None when it cannot be read (no memo then)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _stored_path(key: tuple) -> Path:
    """The file holding the texts of ``key`` (file identities) as rendered by this code."""
    digest = hashlib.sha256(repr((key, _code_identity())).encode()).hexdigest()[:32]
    return paths.cache_dir() / "prompt_texts" / f"{digest}.json"


def _code_identity() -> tuple:
    """The harness version and the identity of every source file that renders prompt texts."""
    from nl2sql_pipeline import HARNESS_VERSION

    here = Path(__file__)
    sources = [here, here.with_name("prompts.py"), *sorted((here.parent.parent / "semantic_model").glob("*.py"))]
    return (HARNESS_VERSION, *(_file_identity(source) for source in sources))


def _read_stored(key: tuple) -> DatabasePromptText | None:
    """The texts stored for ``key`` by an earlier process; None when absent or unreadable."""
    try:
        data = json.loads(_stored_path(key).read_text(encoding="utf-8"))
        return DatabasePromptText(data["schema_text"], data["semantic_text"], data["reference_date"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.debug("stored prompt texts unreadable, reading the files again: %s", exc)
        return None


def _store(key: tuple, texts: DatabasePromptText) -> None:
    """Store ``texts`` for ``key`` (atomically; a failure to write only costs the next process a read)."""
    path = _stored_path(key)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    data = {
        "schema_text": texts.schema_text,
        "semantic_text": texts.semantic_text,
        "reference_date": texts.reference_date,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        logger.debug("cannot store prompt texts in %s: %s", path, exc)


def clear_prompt_context_memo(stored: bool = False) -> None:
    """Forget the memoized prompt texts (benchmarks measuring a cold start; tests); ``stored`` also
    deletes the ones stored on disk under the current storage root."""
    with _TEXTS_LOCK:
        _TEXTS.clear()
    if stored:
        folder = paths.cache_dir() / "prompt_texts"
        for path in folder.glob("*.json") if folder.is_dir() else ():
            path.unlink(missing_ok=True)


def prompt_context_for_cases(
    cases: Iterable[Case],
    *,
    resolve_database: Callable[[str], Path] = paths.database_path,
    semantic_model: SemanticModel | None = None,
    with_probes: bool = False,
) -> PromptContext:
    """``build_prompt_context`` over the databases the query cases use (probes need no prompt unless
    ``with_probes``: a system asked the probes' questions gets their schema too)."""
    databases = {case.database for case in cases if with_probes or not case.is_probe}
    return build_prompt_context(databases, resolve_database=resolve_database, semantic_model=semantic_model)
