"""The layout of the storage root, written down once.

Asset outputs live under the assets root (``paths.assets_dir()``: ``<storage root>/assets``, or the fsspec
URL of ``NL2SQL_ASSETS_URL``), one Parquet file per asset partition:

- ``<root>/<asset>/gold=<g>/model=<m>.parquet`` for a gold x model partition;
- ``<root>/<asset>/gold=<g>.parquet`` for a gold partition;
- ``<root>/<asset>.parquet`` for an unpartitioned asset.

That file is the partition's *latest* materialization. Every run writes its own file beside it,
``<partition file without .parquet>.runs/<run_id>.parquet``, and then points the latest file at it.

Markers of prepared gold versions live under the storage root itself:
``<storage root>/prepared/gold=<g>/<fingerprint>-h<harness version>.json``. The quarantine the gold preflight
found for a gold version lives beside the asset files (every machine running a model's steps reads it):
``<root>/gold_quarantine/gold=<g>/<fingerprint>-h<harness version>.json``.

Nothing here touches a file: these are names only (no pandas, no fsspec until a URL root is asked for).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, overload

from nl2sql_pipeline import HARNESS_VERSION, paths

if TYPE_CHECKING:
    from typing import TypeAlias

    from upath import UPath

    AnyPath: TypeAlias = Path | UPath

SUFFIX = ".parquet"
RUNS_SUFFIX = ".runs"

# The assets whose files the core reads back (their Dagster asset keys are these names).
SAMPLE_DATABASE = "sample_database"
GOLD_SET = "gold_set"
ORACLE_RESULTS = "oracle_results"
DATABASE_VARIANTS = "database_variants"
CANDIDATE_RESULTS = "candidate_results"
CANDIDATE_ANSWERS = "candidate_answers"
ANSWER_JUDGEMENTS = "answer_judgements"
CASE_VERDICTS = "case_verdicts"
RUN_SCORES = "run_scores"
SQL_JUDGEMENTS = "sql_judgements"
GOLD_QUARANTINE = "gold_quarantine"  # not an asset: the gold preflight's quarantine record per gold version


class LayoutError(ValueError):
    """A partition asked for in a shape the layout does not have (a model without a gold set)."""


def assets_root(root: str | Path | UPath | None = None) -> AnyPath:
    """The folder of the asset files: ``root`` when given (a path, or a string that is a folder or an fsspec
    URL), else ``paths.assets_dir()``."""
    if root is None or root == "":
        return paths.assets_dir()
    if isinstance(root, str):
        if "://" in root:
            from upath import UPath

            return UPath(root)
        return Path(root)
    return root


def partition_path(
    asset: str | Sequence[str],
    gold: str | None = None,
    model: str | None = None,
    root: str | Path | UPath | None = None,
) -> AnyPath:
    """The latest file of ``asset`` (a name, or the parts of a nested asset key) at the partition
    (``gold``, ``model``): both for a gold x model partition, ``gold`` alone for a gold partition, neither
    for an unpartitioned asset."""
    parts = [asset] if isinstance(asset, str) else list(asset)
    if not parts:
        raise LayoutError("an asset needs a name")
    base = assets_root(root).joinpath(*parts)
    if model is not None:
        if gold is None:
            raise LayoutError(f"{'/'.join(parts)}: a model partition needs its gold set")
        return base / f"gold={gold}" / f"model={model}{SUFFIX}"
    if gold is not None:
        return base / f"gold={gold}{SUFFIX}"
    return base.with_name(base.name + SUFFIX)


@overload
def run_path(latest: Path, run_id: str) -> Path: ...
@overload
def run_path(latest: UPath, run_id: str) -> UPath: ...
def run_path(latest: AnyPath, run_id: str) -> AnyPath:
    """The file run ``run_id`` wrote for the partition whose latest file is ``latest``."""
    if not latest.name.endswith(SUFFIX):
        raise LayoutError(f"{latest} is not a partition file (no {SUFFIX} suffix)")
    return latest.with_name(latest.name[: -len(SUFFIX)] + RUNS_SUFFIX) / f"{run_id}{SUFFIX}"


def run_file(
    asset: str | Sequence[str],
    run_id: str,
    gold: str | None = None,
    model: str | None = None,
    root: str | Path | UPath | None = None,
) -> AnyPath:
    """The file run ``run_id`` wrote for ``asset`` at the partition (``gold``, ``model``)."""
    return run_path(partition_path(asset, gold, model, root), run_id)


@overload
def temp_path(path: Path, purpose: str = "") -> Path: ...
@overload
def temp_path(path: UPath, purpose: str = "") -> UPath: ...
def temp_path(path: AnyPath, purpose: str = "") -> AnyPath:
    """A hidden temp file beside ``path``, private to this process, renamed into place once written."""
    tag = f".{purpose}" if purpose else ""
    return path.with_name(f".{path.name}.{os.getpid()}{tag}.tmp")


@dataclass(frozen=True)
class StoredPartition:
    """Whose file a path of the layout is: the asset, its partition (gold set, model) and, for a run's own
    file, the run."""

    asset: str
    gold: str | None = None
    model: str | None = None
    run_id: str | None = None

    def describe(self) -> str:
        """``case_verdicts of gold set 'g', model 'm'`` (and ``, run r`` for a run's own file)."""
        where = [f"gold set {self.gold!r}"] if self.gold is not None else []
        where += [f"model {self.model!r}"] if self.model is not None else []
        where += [f"run {self.run_id}"] if self.run_id is not None else []
        return f"{self.asset} of {', '.join(where)}" if where else self.asset

    def fix(self) -> str:
        """How to get the partition back: the plain run that evaluates (or prepares) it again."""
        if self.model is not None and self.gold is not None:
            return (
                f"`nl2sql-eval run --gold-set {self.gold} --model {self.model}` evaluates it again "
                "(the generation cache still serves its answers)"
            )
        if self.gold is not None:
            return f"`nl2sql-eval run --gold-set {self.gold}` prepares the gold version again"
        return "delete it and `nl2sql-eval run` writes it again"


def stored_partition(path: AnyPath) -> StoredPartition:
    """Whose file ``path`` is, read from its name alone (the inverse of :func:`partition_path` and
    :func:`run_path`)."""
    name, parent = path.name, path.parent
    run_id = None
    if parent.name.endswith(RUNS_SUFFIX) and name.endswith(SUFFIX):
        run_id = name[: -len(SUFFIX)]
        name, parent = parent.name[: -len(RUNS_SUFFIX)] + SUFFIX, parent.parent
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    if stem.startswith("model=") and parent.name.startswith("gold="):
        gold = parent.name.removeprefix("gold=")
        return StoredPartition(parent.parent.name, gold, stem.removeprefix("model="), run_id)
    if stem.startswith("gold="):
        return StoredPartition(parent.name, stem.removeprefix("gold="), None, run_id)
    return StoredPartition(stem, None, None, run_id)


def model_partition_glob(asset: str, root: str | Path | UPath | None = None) -> AnyPath:
    """The glob pattern of every gold x model partition's latest file of ``asset`` (for a DuckDB view)."""
    return assets_root(root) / asset / "gold=*" / f"model=*{SUFFIX}"


def model_partitions(asset: str, root: str | Path | UPath | None = None) -> list[tuple[str, str, AnyPath]]:
    """``(gold set, model, latest file)`` of every gold x model partition of ``asset`` that has a file, sorted
    by gold set then model."""
    found = []
    for path in assets_root(root).joinpath(asset).glob(f"gold=*/model=*{SUFFIX}"):
        gold = path.parent.name.removeprefix("gold=")
        model = path.name[: -len(SUFFIX)].removeprefix("model=")
        found.append((gold, model, path))
    return sorted(found, key=lambda item: (item[0], item[1]))


def prepared_marker_path(gold_set: str, fingerprint: str) -> Path:
    """The marker recording that the gold version ``gold_set`` at ``fingerprint`` was prepared."""
    return paths.storage_root() / "prepared" / f"gold={gold_set}" / f"{fingerprint}-h{HARNESS_VERSION}.json"


def quarantine_path(gold_set: str, fingerprint: str, root: str | Path | UPath | None = None) -> AnyPath:
    """The record of the cases the gold preflight quarantined in the gold version ``gold_set`` at ``fingerprint``."""
    return assets_root(root) / GOLD_QUARANTINE / f"gold={gold_set}" / f"{fingerprint}-h{HARNESS_VERSION}.json"
