"""``SystemConfig``: what a ``kind: http | python | command`` registry entry declares about the system.

Kept free of other project imports: ``generation.model_spec`` holds one as ``ModelSpec.system``.
``canonical()`` is the part of the config hash that can change the system's answers (target, method,
header names, options, whether the schema is sent, calibration); timeouts, TLS verification, limits and
header values (secrets) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

KIND_HTTP = "http"
KIND_PYTHON = "python"
KIND_COMMAND = "command"
SYSTEM_KINDS: tuple[str, ...] = (KIND_HTTP, KIND_PYTHON, KIND_COMMAND)
PYTHON_PLACEHOLDER = "{python}"  # in a command's argv: the interpreter running the harness


@dataclass(frozen=True)
class SystemConfig:
    """The system part of a registry entry (one of ``url``, ``target`` or ``command`` is set)."""

    kind: str
    url: str | None = None
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # values may hold ${VAR}
    verify_tls: bool = True
    target: str | None = None  # package.module:callable
    command: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    send_schema: bool = True
    calibration: bool = False  # send the case's expected SQL (only for calibrating a system with gold-echo)
    cache: bool = True

    @property
    def target_text(self) -> str:
        """The system's address as a user reads it (URL, import path, or argv)."""
        if self.kind == KIND_HTTP:
            return f"{self.method} {self.url}"
        if self.kind == KIND_PYTHON:
            return str(self.target)
        return " ".join(self.command)

    @property
    def server(self) -> str | None:
        """``scheme://host:port`` of an HTTP system (the default port filled in), else None: the systems
        behind one server share it (the ``nl2sql/provider`` run tag, so the run queue groups them)."""
        if self.kind != KIND_HTTP or not self.url:
            return None
        parts = urlsplit(str(self.url))
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    def canonical(self) -> dict[str, Any]:
        """The config-hash part: everything that can change what the system answers."""
        return {
            "url": self.url,
            "method": self.method if self.kind == KIND_HTTP else None,
            "header_names": sorted(name.lower() for name in self.headers),
            "target": self.target,
            "command": list(self.command),
            "options": dict(self.options),
            "send_schema": self.send_schema,
            "calibration": self.calibration,
            "cache": self.cache,
        }
