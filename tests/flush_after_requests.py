"""The flush that ends a transactional test (pytest-django's `transactional_db`, every browser and
live-server test) waits for the requests the test left in flight.

A browser test can end while the live server still handles a request the page sent last (an
autosave fired by the final key press). Its transaction holds row locks while the flush's TRUNCATE
asks for an exclusive lock on every table, and PostgreSQL may pick the TRUNCATE as the victim of
the deadlock: the test then errors at teardown and leaves its rows for the next test on the worker.
So before flushing, wait (up to a few seconds) until no other session of the test database is in
a transaction, and flush again if a deadlock still took the TRUNCATE."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError
from django.db import OperationalError, connections
from django.test.testcases import TransactionTestCase

WAIT_SECONDS = 10.0
ATTEMPTS = 3

_BUSY = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')
"""


def other_sessions_settle(alias: str, *, seconds: float = WAIT_SECONDS) -> None:
    """Return once no other session of the database `alias` is inside a transaction, or after
    `seconds` (the flush then runs anyway and says what went wrong)."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + seconds
    while True:
        with connection.cursor() as cursor:
            # A transaction reads the statistics once and keeps them: read them afresh each time.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(_BUSY)
            (busy,) = cursor.fetchone()
        if not busy or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _deadlocked(error: BaseException) -> bool:
    cause = error.__cause__ if isinstance(error, CommandError) else error
    return isinstance(cause, OperationalError) and "deadlock detected" in str(cause)


def _patient(teardown: Callable[[Any], None]) -> Callable[[Any], None]:
    def fixture_teardown(self: TransactionTestCase) -> None:
        for attempt in range(ATTEMPTS):
            for alias in self._databases_names(include_mirrors=False):
                other_sessions_settle(alias)
            try:
                teardown(self)
                return
            except (CommandError, OperationalError) as error:
                if attempt == ATTEMPTS - 1 or not _deadlocked(error):
                    raise

    fixture_teardown.wraps_flush = True  # type: ignore[attr-defined]
    return fixture_teardown


def install() -> None:
    """Wrap TransactionTestCase's teardown (the flush) once per process."""
    current = TransactionTestCase._fixture_teardown
    if not getattr(current, "wraps_flush", False):
        TransactionTestCase._fixture_teardown = _patient(current)  # type: ignore[method-assign]
