"""The sample world's vocabulary, kept as data in ``words/*.txt`` beside this module.

Each file holds one entry per line; blank lines and lines starting with ``#`` are skipped; an entry
with several fields separates them with ``|`` (spaces around a field are dropped). The generators
read these lists when their module is imported, and the order of the lines is part of the data: the
same seed gives the same database only while the files are unchanged (bump ``BUILDER_VERSION`` in
:mod:`.spec` after editing one).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from nl2sql_pipeline.errors import Nl2SqlError

WORDS_DIR = Path(__file__).with_name("words")


class VocabularyError(Nl2SqlError):
    """A vocabulary file is missing or has a line of the wrong shape."""


@functools.cache
def _entries(name: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    path = WORDS_DIR / f"{name}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VocabularyError(
            f"{path}: cannot read the vocabulary file ({exc.strerror}); reinstall nl2sql-eval "
            "(the package data includes sample_db/words/*.txt)"
        ) from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entries.append((number, tuple(field.strip() for field in line.split("|"))))
    if not entries:
        raise VocabularyError(f"{path}: no entries (add one entry per line)")
    return tuple(entries)


def rows(name: str, fields: int, *, count: int | None = None) -> tuple[tuple[str, ...], ...]:
    """The entries of ``words/<name>.txt``, each with exactly ``fields`` fields (VocabularyError otherwise).

    ``count``, when given, is the number of entries the generators rely on.
    """
    entries = _entries(name)
    if count is not None and len(entries) != count:
        raise VocabularyError(
            f"{WORDS_DIR / name}.txt: expected exactly {count} entries, found {len(entries)} (the generator "
            "relies on that number)"
        )
    result = []
    for number, entry in entries:
        if len(entry) != fields or not all(entry):
            raise VocabularyError(
                f"{WORDS_DIR / name}.txt:{number}: expected {fields} non-empty field(s) separated by '|', "
                f"got {len(entry)} (fix the line)"
            )
        result.append(entry)
    return tuple(result)


def words(name: str, *, count: int | None = None) -> tuple[str, ...]:
    """The one-field entries of ``words/<name>.txt`` (exactly ``count`` of them when given)."""
    return tuple(entry[0] for entry in rows(name, 1, count=count))


def weighted(name: str) -> tuple[tuple[str, ...], np.ndarray]:
    """The entries of a ``word | weight`` file: the words and their weights as float64."""
    entries = rows(name, 2)
    try:
        weights = np.array([float(weight) for _, weight in entries], dtype=np.float64)
    except ValueError as exc:
        raise VocabularyError(f"{WORDS_DIR / name}.txt: a weight is not a number ({exc}); fix the line") from None
    return tuple(word for word, _ in entries), weights


def flag(value: str, *, where: str) -> bool:
    """A ``yes``/``no`` field as a bool (VocabularyError for anything else)."""
    if value not in ("yes", "no"):
        raise VocabularyError(f"{where}: expected yes or no, got {value!r}")
    return value == "yes"
