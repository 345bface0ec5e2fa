"""A command's imports without the cyclic garbage collector walking them (``nl2sql-eval run``'s fixed cost).

Importing the layers of a run (Dagster, its SQL storage, pandas, pyarrow, the pipeline: ~400,000 objects that
live as long as the process) with the collector on sets off several full collections, each walking every object
built so far and freeing nearly nothing (~1,300 unreachable objects in all): a third of a second of CPU per run.
Inside :func:`imports_without_collection` the collector is off; after it, what was built is frozen (moved to
the permanent generation, as the ``gc`` documentation suggests for long-lived objects), so later collections
skip it, and the collector is on again for the work itself. ``nl2sql_pipeline.heap.settle_long_lived`` still
freezes what a provider's first model call imports later.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def imports_without_collection() -> Iterator[None]:
    """The collector off while the block runs (meant for imports), then what is alive frozen and the collector
    back as it was. The few cycles of garbage the imports left are frozen with the rest (kept until exit)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
