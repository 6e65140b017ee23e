"""The cyclic garbage collector kept out of the way of work that builds millions of ``ast`` nodes.

Parsing a large module, a plugin's or SGLang's, makes millions of ``ast`` nodes, none in a
cycle: refcounting frees them, and the cyclic collector only walks them, again at each of the
thousands of collections their allocation triggers at the default threshold.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["few_collections"]


@contextmanager
def few_collections() -> Iterator[None]:
    """Runs the body with the collector's first threshold raised to 100,000 allocations and
    what is alive on entry frozen out of its walks (it is not garbage, and walking it again
    at every collection costs more than the body's own work); both undone on exit. A caller's
    own freeze is left as it was, and the same garbage is still collected."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], 100_000), *before[1:])
    ours = gc.get_freeze_count() == 0
    if ours:
        gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()
        gc.set_threshold(*before)
