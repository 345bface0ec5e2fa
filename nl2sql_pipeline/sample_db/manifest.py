"""The sidecar manifest ``<database>.json`` of a build, and whether a build is current."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.sample_db.spec import BUILDER_VERSION, DEFAULT_SCALE, DEFAULT_SEED, REFERENCE_DATE


@dataclass(frozen=True)
class BuildInfo:
    """What a build produced: where, from which seed and scale, and a hash of every row."""

    path: Path
    seed: int
    scale: float
    builder_version: str
    row_counts: dict[str, int]
    content_hash: str
    reference_date: str = REFERENCE_DATE.isoformat()
    built_at: str = field(default="", compare=False)

    def to_manifest(self) -> dict[str, Any]:
        """The JSON-serialisable manifest (the path is implied by the manifest's location)."""
        data = asdict(self)
        data.pop("path")
        data["database"] = self.path.stem
        return data


def manifest_path(path: Path) -> Path:
    """The sidecar manifest of a database file: ``<path>.json``."""
    return path.with_name(path.name + ".json")


def manifest_text(info: BuildInfo) -> str:
    """The manifest file's text (sorted keys, indented, newline-terminated)."""
    return json.dumps(info.to_manifest(), indent=2, sort_keys=True) + "\n"


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest beside database ``path``, or None when missing or unreadable."""
    try:
        return json.loads(manifest_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_current(path: Path, *, seed: int = DEFAULT_SEED, scale: float = DEFAULT_SCALE) -> bool:
    """True when ``path`` exists and its manifest matches ``seed``, ``scale`` and ``BUILDER_VERSION``."""
    if not path.exists():
        return False
    manifest = read_manifest(path)
    return (
        manifest is not None
        and manifest.get("seed") == seed
        and manifest.get("scale") == float(scale)
        and manifest.get("builder_version") == BUILDER_VERSION
    )
