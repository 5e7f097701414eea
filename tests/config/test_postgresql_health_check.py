"""The health check of a kept PostgreSQL connection (config/postgresql, CONN_HEALTH_CHECKS): an idle
live connection is usable without a statement sent, and one the server ended is found unusable
(so Django opens a new one before the request's first query instead of failing it)."""

from __future__ import annotations

import select
import time
from unittest import mock

import pytest
from django.db import connection, connections
from django.db.backends.postgresql import base as django_postgresql

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
]


@pytest.fixture
def kept():
    """A second connection to the test database, as a request would keep it between requests."""
    wrapper = type(connections["default"])(dict(connection.settings_dict), "health-check")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def test_radlays_backend_is_the_one_configured():
    assert type(connections["default"]).__module__ == "config.postgresql.base"


def test_an_idle_live_connection_is_usable_without_a_round_trip(kept):
    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", side_effect=AssertionError):
        assert kept.is_usable()
    with kept.cursor() as cursor:  # and it is: a statement runs
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_connection_the_server_ended_is_not_usable(kept):
    pid = kept.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while not select.select([kept.connection.fileno()], [], [], 0.05)[0] and time.monotonic() < deadline:
        pass
    assert not kept.is_usable()


def test_a_connection_inside_a_transaction_is_asked(kept):
    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", return_value=True) as asked:
        kept.connection.execute("BEGIN")
        assert kept.is_usable() and asked.called
        kept.connection.execute("ROLLBACK")
