"""Shared test set-up: every test writes under its own storage root, never the checkout's .nl2sql/."""

from __future__ import annotations

import os
import tempfile

import pytest

# Set before anything imports litellm (collection imports test modules).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_SESSION_HOME = tempfile.mkdtemp(prefix="nl2sql-test-home-")
os.environ.setdefault("NL2SQL_HOME", _SESSION_HOME)
os.environ.setdefault("DAGSTER_HOME", os.path.join(_SESSION_HOME, "dagster_home"))
os.makedirs(os.environ["DAGSTER_HOME"], exist_ok=True)


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """A fresh storage root and Dagster home for one test."""
    home = tmp_path / "nl2sql-home"
    monkeypatch.setenv("NL2SQL_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    (home / "dagster_home").mkdir(parents=True)
    return home
