"""Can a system be called right now? (``models list`` and the runner ask ``generation.readiness``.)

http: every ``${VAR}`` its headers name is set, and a loopback URL has a listening server (a TCP
connect; a remote one is never contacted here). python: the target's module can be found. command:
its executable is on the PATH (or is a file).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from urllib.parse import urlparse

from nl2sql_pipeline.generation.system_spec import KIND_COMMAND, KIND_HTTP, KIND_PYTHON, SystemConfig


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _http(config: SystemConfig, timeout_s: float) -> tuple[bool, str]:
    from nl2sql_pipeline.generation.systems.http import header_env_vars

    missing = [name for name in header_env_vars(config) if not os.environ.get(name)]
    if missing:
        return False, f"environment variable {', '.join(missing)} is not set (export it to call the system)"
    parsed = urlparse(str(config.url))
    host = parsed.hostname or ""
    if not _is_loopback(host):
        return True, f"remote system {config.url} (not probed)"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        return False, f"no server at {host}:{port} ({exc.strerror or exc}); start the system or fix url"
    return True, f"system listening at {host}:{port}"


def _python(config: SystemConfig) -> tuple[bool, str]:
    module = str(config.target).partition(":")[0]
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        found, detail = None, str(exc)
    else:
        detail = "not found"
    if found is None:
        return False, f"module {module} cannot be imported ({detail}); install the system or fix target"
    return True, f"callable {config.target}"


def _command(config: SystemConfig) -> tuple[bool, str]:
    from nl2sql_pipeline.generation.systems.command import argv_of

    argv = argv_of(config)
    program = argv[0] if argv else ""
    if not (shutil.which(program) or os.path.isfile(program)):
        return False, f"command {program!r} not found on PATH; install it or fix command"
    return True, f"command {' '.join(argv)}"


def system_readiness(config: SystemConfig, *, timeout_s: float = 0.5) -> tuple[bool, str]:
    """(ready, reason) of a system."""
    if config.kind == KIND_HTTP:
        return _http(config, timeout_s)
    if config.kind == KIND_PYTHON:
        return _python(config)
    if config.kind == KIND_COMMAND:
        return _command(config)
    return False, f"unknown system kind {config.kind!r}"
