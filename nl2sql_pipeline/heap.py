"""Keep the cyclic garbage collector off the objects that live as long as the process.

An evaluation process holds ~500,000 long-lived objects: the modules it imported (dagster, pandas,
pyarrow, litellm, which imports its provider modules on the first call). CPython's full (generation 2)
collection walks all of them every time it runs, ~50-450 ms each on this project's machine, several
times per model run, and finds nothing to free there. ``settle_long_lived`` collects once, then moves
every object still alive into the permanent generation (``gc.freeze``, as the ``gc`` documentation
suggests for long-lived processes), which later collections skip; what is made afterwards is collected
as before, and reference counting still frees frozen objects that fall out of use (only a frozen
object that later becomes part of an unreachable cycle stays until exit).

It acts once per process, whoever calls it: the generation client calls it after each provider's first
model call, when the process's long-lived objects are in place (one full collection then, instead of
several during the run).
"""

from __future__ import annotations

import gc
import logging
import threading

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_settled = False


def settle_long_lived() -> bool:
    """Freeze the objects alive now, once per process; True when this call froze them."""
    global _settled
    with _lock:
        if _settled:
            return False
        _settled = True
    before = gc.get_freeze_count()
    gc.collect()  # garbage alive now would otherwise be frozen for good
    gc.freeze()
    logger.debug("froze %d long-lived objects", gc.get_freeze_count() - before)
    return True
