"""A lease on one row: while a worker computes something for the row (a judge run's agreement), a
thread stamps a heartbeat column every few seconds, so that the healing check can tell a live
computation from one whose worker died (its heartbeat older than the scheduler's stale_after)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from django.db import connection
from django.db.models import Model
from django.utils import timezone

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def heartbeat(model: type[Model], *, pk: int, field: str, interval: float) -> Iterator[None]:
    """Stamp `field` of row `pk` now and every `interval` seconds while the block runs (from a
    thread with its own database connection)."""
    model.objects.filter(pk=pk).update(**{field: timezone.now()})
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    model.objects.filter(pk=pk).update(**{field: timezone.now()})
                except Exception:  # noqa: BLE001 - a missed beat only makes the lease look older
                    logger.warning("heartbeat of %s %s failed", model.__name__, pk, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"lease-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 30)
