"""Proof that a test session leaves the user's storage untouched: snapshot a tree before, compare after.

``snapshot(root)`` records every file under ``root`` (relative path, size, sha256) and every directory;
``changes(before, after)`` names what was added, removed or changed. ``tests/conftest.py`` snapshots the
checkout's ``.nl2sql/`` (and the ``NL2SQL_HOME``/``DAGSTER_HOME`` the session was started with) when the
session starts and fails the session when the tree differs at its end.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DIRECTORY = "<dir>"


@dataclass(frozen=True)
class Snapshot:
    """The state of one tree: ``entries`` maps a relative path to (size, sha256), or to DIRECTORY."""

    root: Path
    exists: bool
    entries: dict[str, tuple[int, str] | str]


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def snapshot(root: Path) -> Snapshot:
    """Every file (size and sha256) and directory under ``root``; symlinks are recorded by their target."""
    root = Path(root)
    if not root.exists():
        return Snapshot(root, False, {})
    entries: dict[str, tuple[int, str] | str] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in dirs:
            path = base / name
            entries[str(path.relative_to(root))] = f"-> {os.readlink(path)}" if path.is_symlink() else DIRECTORY
        for name in files:
            path = base / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                entries[rel] = f"-> {os.readlink(path)}"
                continue
            try:
                entries[rel] = (path.stat().st_size, _digest(path))
            except FileNotFoundError:  # removed while walking: absent from this snapshot
                continue
    return Snapshot(root, True, entries)


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """What differs between two snapshots of one tree, one line per path (empty when identical)."""
    lines: list[str] = []
    if before.exists != after.exists:
        lines.append(f"{after.root}: {'created' if after.exists else 'removed'}")
    for rel in sorted(before.entries.keys() | after.entries.keys()):
        old, new = before.entries.get(rel), after.entries.get(rel)
        if old == new:
            continue
        path = after.root / rel
        if old is None:
            lines.append(f"{path}: added")
        elif new is None:
            lines.append(f"{path}: removed")
        elif isinstance(old, tuple) and isinstance(new, tuple):
            lines.append(f"{path}: changed ({old[0]} -> {new[0]} bytes)")
        else:
            lines.append(f"{path}: changed ({old} -> {new})")
    return lines


def guarded_roots(project_root: Path, user_env: Mapping[str, str | None]) -> list[Path]:
    """The user's state a test session must leave byte-identical: the checkout's ``.nl2sql/`` and ``data/``,
    and the ``NL2SQL_HOME``/``DAGSTER_HOME`` of ``user_env`` (the session's starting environment); a root
    inside another is covered by it."""
    roots = [project_root / ".nl2sql", project_root / "data"]
    roots += [Path(value) for name in ("NL2SQL_HOME", "DAGSTER_HOME") if (value := user_env.get(name))]
    resolved = sorted({root.resolve() for root in roots})
    return [r for r in resolved if not any(r != o and r.is_relative_to(o) for o in resolved)]
