"""Heartbeats: while a worker computes, a thread stamps a column every few seconds, so that the
healing check can tell a live computation from one whose worker died (its heartbeat older than the
scheduler's stale_after). `beating` is the thread (the scheduler's job heartbeat uses it);
`heartbeat` stamps one row, for a computation that is not a job (a judge run's agreement)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from django.db import connection
from django.db.models import Model
from django.utils import timezone

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def beating(stamp: Callable[[], None], *, interval: float, name: str) -> Iterator[None]:
    """Call `stamp()` every `interval` seconds while the block runs, from a thread with its own
    database connection; a failed stamp is logged (it only makes the heartbeat look older)."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    stamp()
                except Exception:  # noqa: BLE001 - a missed beat only makes the work look older
                    logger.warning("heartbeat %s failed", name, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"heartbeat-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 30)


@contextlib.contextmanager
def heartbeat(model: type[Model], *, pk: int, field: str, interval: float) -> Iterator[None]:
    """Stamp `field` of row `pk` now and every `interval` seconds while the block runs."""

    def stamp() -> None:
        model._default_manager.filter(pk=pk).update(**{field: timezone.now()})

    stamp()
    with beating(stamp, interval=interval, name=f"{model.__name__}-{pk}"):
        yield
