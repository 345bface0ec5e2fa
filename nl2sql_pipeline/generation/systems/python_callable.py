"""``kind: python``: the system is a Python callable, ``package.module:callable``, sync or async.

It is called with a ``contract.SystemRequest`` and returns a ``contract.SystemResponse`` or a dict of
the same fields (validated either way). An ``async def`` callable (or one returning an awaitable) is
run to completion with a deadline of the entry's ``timeout_s``; a synchronous one runs in the calling
thread (a timeout cannot interrupt it). An exception it raises is classified like a provider's: one
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
        raise TargetError(f"system target {target!r}: cannot import {module_name} ({exc}); fix target: or install it") from exc
    found = getattr(module, attribute, None)
    if not callable(found):
        raise TargetError(f"system target {target!r}: {module_name} has no callable {attribute!r}")
    with _lock:
        _resolved[target] = found
    return found


def call_python(target: str, request: SystemRequest, timeout_s: float) -> Any:
    """Call the target with ``request``; its raw result (awaited within ``timeout_s`` when async)."""
    function = resolve_target(target)
    result = function(request)
    if inspect.isawaitable(result):
        async def bounded() -> Any:
            return await asyncio.wait_for(result, timeout=timeout_s)

        return asyncio.run(bounded())
    return result
