"""Two saves racing for one row lock (PostgreSQL, real transactions, one connection per thread):
`hold` runs in a transaction that stays open, `wait` runs in a second thread meanwhile and must be
seen waiting for a lock before the first commits. The lock tests of both survey flows use it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, connections, transaction


def waiting_for_a_lock() -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0] > 0


def race(hold: Callable[[], object], wait: Callable[[], object], *, who: str) -> None:
    """Run `hold` in a transaction kept open until `wait` (another thread) waits for a lock, then
    commit it and let `wait` finish; fails naming `who` if it never waited, and re-raises what
    either raised."""
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def in_a_thread(run: Callable[[], object], *, holding: bool) -> None:
        try:
            if holding:
                with transaction.atomic():
                    run()
                    held.set()
                    release.wait(10)
            else:
                run()
        except BaseException as exc:  # reported below
            errors.append(exc)
            held.set()
        finally:
            connection.close()

    first = threading.Thread(target=in_a_thread, args=(hold,), kwargs={"holding": True})
    first.start()
    assert held.wait(10)
    second = threading.Thread(target=in_a_thread, args=(wait,), kwargs={"holding": False})
    second.start()
    deadline = time.monotonic() + 10
    while not waiting_for_a_lock() and time.monotonic() < deadline and not errors:
        time.sleep(0.02)
    waited = waiting_for_a_lock()
    release.set()
    first.join(10)
    second.join(10)
    assert not errors, errors
    assert waited, f"{who} should wait for the lock"
