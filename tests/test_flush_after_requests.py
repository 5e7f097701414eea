"""The flush at the end of a transactional test waits for a session still inside a transaction
(a request the live server was finishing), and flushes again after a deadlock."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.core.management.base import CommandError
from django.db import OperationalError, connection

from tests import flush_after_requests

pytestmark = pytest.mark.django_db


def _other_session():
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=False)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads pg_stat_activity")
def test_the_flush_waits_for_a_session_inside_a_transaction():
    other = _other_session()
    other.execute("SELECT 1")  # now "idle in transaction", as a request holding its locks
    threading.Timer(0.6, other.commit).start()
    started = time.monotonic()
    flush_after_requests.other_sessions_settle("default", seconds=5)
    waited = time.monotonic() - started
    other.close()
    assert 0.5 <= waited < 5


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads pg_stat_activity")
def test_an_idle_session_is_not_waited_for():
    other = _other_session()
    other.execute("SELECT 1")
    other.commit()
    started = time.monotonic()
    flush_after_requests.other_sessions_settle("default", seconds=5)
    other.close()
    assert time.monotonic() - started < 0.5


def test_a_deadlocked_flush_runs_again_and_any_other_error_is_raised(monkeypatch):
    calls = []

    def flush(_case):
        calls.append(1)
        if len(calls) == 1:
            raise CommandError("couldn't be flushed") from OperationalError("deadlock detected")

    class Case:
        def _databases_names(self, include_mirrors=True):
            return []

    flush_after_requests._patient(flush)(Case())
    assert len(calls) == 2

    def broken(_case):
        raise CommandError("couldn't be flushed") from OperationalError("relation does not exist")

    with pytest.raises(CommandError):
        flush_after_requests._patient(broken)(Case())
