"""The generation cache: one JSON file per completed model call, so a re-run never pays twice.

An entry is keyed by what determines the call's output: the model config hash, the prompt hash,
the case fingerprint, the sample index and the candidate index. Files live under
``<root>/<config_hash>/<2-char prefix>/<key>.json`` and are written atomically (a temp file in the
same folder, then ``os.replace``), so concurrent writers never leave a torn file; a corrupt or
partial file reads as a miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import GenerationError

logger = logging.getLogger(__name__)

CACHE_FORMAT_VERSION = 1
_HEX16_RE = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class CacheKey:
    """What identifies one model call's output."""

    model_config_hash: str
    prompt_hash: str
    case_fingerprint: str
    sample_index: int
    candidate_index: int = 0

    @property
    def digest(self) -> str:
        """32 hex chars over every part of the key (the file name)."""
        text = (
            f"v{CACHE_FORMAT_VERSION}|{self.model_config_hash}|{self.prompt_hash}|{self.case_fingerprint}"
            f"|{self.sample_index}|{self.candidate_index}"
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def default_cache_root() -> Path:
    """``<storage root>/cache/generation``."""
    return paths.cache_dir() / "generation"


class GenerationCache:
    """A directory of JSON entries, safe to share between threads and processes."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_cache_root()

    def path_for(self, key: CacheKey) -> Path:
        """The file that holds (or would hold) ``key``'s entry."""
        if not _HEX16_RE.match(key.model_config_hash):
            raise GenerationError(
                f"cache key: model_config_hash must be 16 lowercase hex chars, got {key.model_config_hash!r} "
                "(use ModelSpec.config_hash)"
            )
        digest = key.digest
        return self.root / key.model_config_hash / digest[:2] / f"{digest}.json"

    def get(self, key: CacheKey) -> dict[str, Any] | None:
        """The stored record, or None on a miss (an unreadable, corrupt or foreign file is a miss)."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("generation cache: cannot read %s (%s); treated as a miss", path, exc)
            return None
        try:
            entry = json.loads(text)
        except ValueError as exc:
            logger.warning("generation cache: corrupt entry %s (%s); treated as a miss", path, exc)
            return None
        if not isinstance(entry, dict) or entry.get("key") != key.digest or not isinstance(entry.get("record"), dict):
            logger.warning("generation cache: entry %s does not match its key; treated as a miss", path)
            return None
        return entry["record"]

    def put(self, key: CacheKey, record: dict[str, Any]) -> Path:
        """Store ``record`` (JSON-serialisable) for ``key`` atomically; returns the file written."""
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "key": key.digest,
            "format": CACHE_FORMAT_VERSION,
            "model_config_hash": key.model_config_hash,
            "prompt_hash": key.prompt_hash,
            "case_fingerprint": key.case_fingerprint,
            "sample_index": key.sample_index,
            "candidate_index": key.candidate_index,
            "record": record,
        }
        payload = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            try:
                os.unlink(tmp_name)
            except FileNotFoundError:
                pass
            raise
        return path

    def __contains__(self, key: CacheKey) -> bool:
        return self.get(key) is not None
