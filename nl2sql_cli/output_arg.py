"""Output paths given on the command line (``--html FILE``, ``--out DIR``, ``--duckdb FILE``), checked before any
work: one that cannot be written is an ``OutputPathError`` naming the option, the path and the cause (bad input,
exit 2), not a traceback after the report was printed. Nothing is created by the check (a file is made and removed
in the nearest existing folder); the command creates the missing folders when it writes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nl2sql_pipeline.errors import Nl2SqlError

DUCKDB_MAGIC = b"DUCK"
"""The bytes at offset 8 of every DuckDB database file."""


class OutputPathError(Nl2SqlError):
    """An output path given on the command line cannot be written."""

    def __init__(self, option: str, path: Path, cause: str, fix: str = "give a path in a folder you can write"):
        self.option = option
        self.path = path
        super().__init__(f"{option} {path} cannot be written: {cause}; {fix}")


def _probe(option: str, path: Path, folder: Path) -> None:
    """Make and remove a file in ``folder``; ``OutputPathError`` for ``path`` when that is refused."""
    try:
        handle, name = tempfile.mkstemp(prefix=".nl2sql-write-check-", dir=folder)
    except OSError as exc:
        raise OutputPathError(option, path, f"{folder} is not writable ({exc.strerror or exc})") from exc
    os.close(handle)
    os.unlink(name)


def _nearest_folder(option: str, path: Path) -> Path:
    """The nearest existing parent of ``path``; ``OutputPathError`` when it is a file, not a folder."""
    parent = next(p for p in path.parents if p.exists() or p.is_symlink())
    if not parent.is_dir():
        raise OutputPathError(option, path, f"{parent} is a file, not a folder")
    return parent


def output_file(option: str, text: str) -> Path:
    """The file ``text`` of ``option``, once a file can be written there (an existing one is replaced)."""
    path = Path(text).expanduser().absolute()
    if path.is_dir():
        raise OutputPathError(option, path, "it is a folder", "give a file name")
    if path.exists():
        try:
            with path.open("ab"):  # opened for writing, nothing changed
                pass
        except OSError as exc:
            raise OutputPathError(option, path, exc.strerror or str(exc)) from exc
        return path
    _probe(option, path, _nearest_folder(option, path))
    return path


def output_folder(option: str, text: str) -> Path:
    """The folder ``text`` of ``option``, once files can be written in it (created later when missing)."""
    path = Path(text).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise OutputPathError(option, path, "it is a file, not a folder", "give a folder (new or existing)")
    _probe(option, path, path if path.exists() else _nearest_folder(option, path))
    return path


def output_duckdb(option: str, text: str) -> Path:
    """The DuckDB file ``text`` of ``option``: writable, and when it exists, a DuckDB database (views are added
    to it; any other file is left alone)."""
    path = output_file(option, text)
    if path.exists():
        with path.open("rb") as handle:
            head = handle.read(12)
        if head[8:12] != DUCKDB_MAGIC:
            raise OutputPathError(
                option, path, "it is not a DuckDB database", "give a new file name or an existing DuckDB file"
            )
    return path


@contextmanager
def written(option: str, path: Path) -> Iterator[None]:
    """The block writes ``path`` (of ``option``): a write refused all the same (a full disk, a race) is an
    ``OutputPathError`` naming it. DuckDB's I/O errors count as such for a ``--duckdb`` file."""
    import duckdb

    try:
        yield
    except (OSError, duckdb.IOException) as exc:
        cause = getattr(exc, "strerror", None) or " ".join(str(exc).split())
        raise OutputPathError(option, path, cause) from exc


def write_output(option: str, path: Path, text: str) -> None:
    """Write ``text`` to the file ``path`` of ``option`` (its folders created), as ``written`` reports."""
    with written(option, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
