"""statsmodels' `multipletests` (the reference of the Holm tests) runs `gc.collect()` on every Holm
call: up to a second each in a test process full of objects. Within `frozen_gc()` the objects
alive before it are left out of the collections (`gc.freeze`), so a collection examines only the
new ones; what statsmodels computes is the same."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_gc() -> Iterator[None]:
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
