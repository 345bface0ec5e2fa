"""The sample world's vocabulary is data (``sample_db/words/*.txt``): loading, shapes and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nl2sql_pipeline.sample_db import words
from nl2sql_pipeline.sample_db.words import VocabularyError


@pytest.fixture()
def words_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private vocabulary folder (the file cache is cleared before and after)."""
    monkeypatch.setattr(words, "WORDS_DIR", tmp_path)
    words._entries.cache_clear()
    yield tmp_path
    words._entries.cache_clear()


def test_every_vocabulary_file_is_read_and_well_formed() -> None:
    files = sorted(words.WORDS_DIR.glob("*.txt"))
    assert len(files) >= 20
    for file in files:
        entries = words._entries(file.stem)
        assert entries, file
        assert all(field and field == field.strip() for _, entry in entries for field in entry), file


def test_words_keeps_order_duplicates_and_skips_comments(words_dir: Path) -> None:
    (words_dir / "countries.txt").write_text("# a comment\nJP\n\n  JP  \nKR\n", encoding="utf-8")
    assert words.words("countries") == ("JP", "JP", "KR")
    assert words.words("countries", count=3) == ("JP", "JP", "KR")


def test_weighted_returns_words_and_float_weights(words_dir: Path) -> None:
    (words_dir / "genres.txt").write_text("Action | 10\nSlice of Life | 0.5\n", encoding="utf-8")
    names, weights = words.weighted("genres")
    assert names == ("Action", "Slice of Life")
    assert weights.dtype == np.float64 and weights.tolist() == [10.0, 0.5]


@pytest.mark.parametrize(
    "name, text, call, message",
    [
        (
            "genres",
            "Action | 10\nDrama\n",
            lambda: words.weighted("genres"),
            r"genres\.txt:2: expected 2 non-empty field",
        ),
        ("genres", "Action | lots\n", lambda: words.weighted("genres"), r"genres\.txt: a weight is not a number"),
        (
            "bands",
            "a\nb\nc\n",
            lambda: words.words("bands", count=4),
            r"bands\.txt: expected exactly 4 entries, found 3",
        ),
        ("empty", "# only a comment\n", lambda: words.words("empty"), r"empty\.txt: no entries"),
        ("plans", "1 | |\n", lambda: words.rows("plans", 3), r"plans\.txt:1: expected 3 non-empty field"),
    ],
)
def test_malformed_files_raise_with_file_and_line(words_dir: Path, name: str, text: str, call, message: str) -> None:
    (words_dir / f"{name}.txt").write_text(text, encoding="utf-8")
    with pytest.raises(VocabularyError, match=message):
        call()


def test_missing_file_says_how_to_fix(words_dir: Path) -> None:
    with pytest.raises(VocabularyError, match=r"nope\.txt: cannot read the vocabulary file.*reinstall"):
        words.words("nope")


@pytest.mark.parametrize("value, expected", [("yes", True), ("no", False)])
def test_flag_reads_yes_and_no(value: str, expected: bool) -> None:
    assert words.flag(value, where="plans.txt") is expected


def test_flag_rejects_anything_else() -> None:
    with pytest.raises(VocabularyError, match="plans.txt: expected yes or no, got 'true'"):
        words.flag("true", where="plans.txt")


def test_the_package_data_globs_ship_every_vocabulary_file() -> None:
    """A non-editable install carries ``words/*.txt``: pyproject's package-data globs match every file."""
    import glob

    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["nl2sql_pipeline"]
    package = root / "nl2sql_pipeline"
    shipped = {Path(p).resolve() for pattern in patterns for p in glob.glob(str(package / pattern), recursive=True)}
    vocabulary = {p.resolve() for p in words.WORDS_DIR.glob("*.txt")}
    assert vocabulary and vocabulary <= shipped
