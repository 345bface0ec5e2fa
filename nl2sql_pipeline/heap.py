"""Keep the cyclic garbage collector off the objects that live as long as the process.

An evaluation process holds ~500,000 long-lived objects: the modules it imported (dagster, pandas,
pyarrow, litellm, which imports its provider modules on the first call). CPython's full (generation 2)
collection walks all of them every time it runs, ~50-450 ms each on this project's machine, several
times per model run, and finds nothing to free there. ``settle_long_lived`` moves every object alive at
that moment into the permanent generation (``gc.freeze``), which collections skip, in O(1); what is
made later is collected as before.

Call it where the process's long-lived objects are in place; each call freezes what is alive then, so
garbage cycles alive at that moment are never freed: call it a bounded number of times (the generation
client calls it once, after the first model call of the process).
"""

from __future__ import annotations

import gc
import logging
import threading

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_settled: set[str] = set()


def settle_long_lived(reason: str) -> bool:
    """Freeze the objects alive now, once per ``reason`` and process; True when this call froze them."""
    with _lock:
        if reason in _settled:
            return False
        _settled.add(reason)
    before = gc.get_freeze_count()
    gc.freeze()
    logger.debug("froze %d long-lived objects (%s)", gc.get_freeze_count() - before, reason)
    return True
