"""Model readiness: can a registered model be called right now, and if not, why not.

Offline models always can; a replay needs its unchanged predictions file; a litellm model needs its
key in the environment and, for a loopback ``api_base``, a listening server (probed with a TCP
connect; a remote server is never contacted here).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from urllib.parse import urlparse

from nl2sql_pipeline.generation.model_spec import ModelSpec, Readiness, file_content_hash

READINESS_TIMEOUT_S = 0.5


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def model_readiness(spec: ModelSpec, *, timeout_s: float = READINESS_TIMEOUT_S) -> Readiness:
    """Can ``spec`` be called now? Offline models always; litellm ones need their key and local server.

    A loopback ``api_base`` is probed with a TCP connect; a remote one is never contacted here.
    """
    if spec.is_offline:
        return Readiness(True, "built-in offline model")
    if spec.system is not None:
        from nl2sql_pipeline.generation.systems.readiness import system_readiness

        ready, reason = system_readiness(spec.system, timeout_s=timeout_s)
        return Readiness(ready, reason)
    if spec.predictions is not None:
        source = spec.predictions
        if not source.path.is_file():
            return Readiness(False, f"predictions file {source.path} not found (write it or fix path: in models.yml)")
        if spec.predictions.content_hash is None or file_content_hash(source.path) != source.content_hash:
            return Readiness(False, f"predictions file {source.path} changed since the registry was loaded; reload it")
        return Readiness(True, f"replays {source.path} ({source.format})")
    if spec.api_key_env and not os.environ.get(spec.api_key_env):
        return Readiness(False, f"environment variable {spec.api_key_env} is not set (export it to use {spec.slug})")
    if spec.api_base:
        parsed = urlparse(spec.api_base)
        host = parsed.hostname or ""
        if not _is_loopback(host):
            return Readiness(True, f"remote api_base {host} (not probed)")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            return Readiness(False, f"no server at {host}:{port} ({exc.strerror or exc}); start it or fix api_base")
        return Readiness(True, f"server listening at {host}:{port}")
    if spec.api_key_env:
        return Readiness(True, f"key {spec.api_key_env} is set")
    return Readiness(True, "no key or server required")
