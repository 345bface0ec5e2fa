"""``kind: python``: the system is a Python callable, ``package.module:callable``, sync or async.

It is called with a ``contract.SystemRequest`` and returns a ``contract.SystemResponse`` or a dict of
the same fields (validated either way), within the entry's ``timeout_s``: a synchronous callable runs
in a worker thread the harness stops waiting for at the deadline (a ``timeout``; the thread is left to
finish), an ``async def`` one (or one returning an awaitable) is awaited under ``asyncio.wait_for``. An exception it raises is classified like a provider's: one
with an HTTP-like ``status_code`` attribute maps as that status would.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Any

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.systems.contract import SystemRequest

_lock = threading.Lock()
_resolved: dict[str, Callable[..., Any]] = {}


class TargetError(ConfigError):
    """The ``target:`` of a python system cannot be imported or is not callable."""


def resolve_target(target: str) -> Callable[..., Any]:
    """The callable named ``package.module:name`` (imported once per process)."""
    with _lock:
        if target in _resolved:
            return _resolved[target]
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(
            f"system target {target!r}: cannot import {module_name} ({exc}); fix target: or install it"
        ) from exc
    found = getattr(module, attribute, None)
    if not callable(found):
        raise TargetError(f"system target {target!r}: {module_name} has no callable {attribute!r}")
    with _lock:
        _resolved[target] = found
    return found


def _call_with_deadline(function: Callable[..., Any], request: SystemRequest, timeout_s: float) -> Any:
    """Run a synchronous callable in a daemon thread; TimeoutError when it outlives ``timeout_s`` (the
    thread cannot be killed: it is left to finish, its result dropped)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = function(request)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"system-call-{request.request_id}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"the callable did not return within {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def call_python(target: str, request: SystemRequest, timeout_s: float) -> Any:
    """Call the target with ``request`` within ``timeout_s``; its raw result (awaited when async)."""
    function = resolve_target(target)
    result = _call_with_deadline(function, request, timeout_s)
    if inspect.isawaitable(result):

        async def bounded() -> Any:
            return await asyncio.wait_for(result, timeout=timeout_s)

        return asyncio.run(bounded())
    return result
