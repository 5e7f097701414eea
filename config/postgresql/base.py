"""radlay's PostgreSQL backend: Django's, run with server-side parameters and prepared statements
(config/settings/base.py, DJANGO_DB_PREPARED_STATEMENTS), so that a statement the survey repeats is
planned once per connection.

PostgreSQL's protocol takes at most 65,535 parameters per statement, and Django does not split a
statement for it (an `__in` of a whole study's ids, a large `bulk_create`): such a statement is
bound on the client instead, as Django binds every statement by default. The same holds for named
cursors, which stream large results (`QuerySet.iterator()`).

A statement with many parameters (an `__in` of a batch of keys) is never prepared: PostgreSQL's
generic plan for a prepared `key IN ($1, …, $2000)` compares each row with every parameter in
turn, where the plan made for the values at hand looks them up in a hash table (a batch lookup
of an import went from a twentieth of a second to seconds as its study grew). Such statements
rarely repeat anyway: each length of an `__in` is a statement of its own.

With server-side binding Django sends the value of an integer field as psycopg's `Int2`/`Int4`
(DatabaseOperations.integerfield_type_map), and psycopg packs those into 2 or 4 bytes without a
range check: 99999999999 reached an `integer` column as 1215752191, 4294967304 as 8. The cursors
here refuse such a parameter with a DataError before it is sent (PostgreSQL itself refuses an
out-of-range value that arrives as text, which is what the client-bound path sends)."""

from __future__ import annotations

import select
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import psycopg
from django.db import DataError
from django.db.backends.postgresql import base
from psycopg.types.numeric import Int2, Int4

MAX_PARAMETERS = 65_535  # the protocol's parameter count is a 16-bit number
# A statement with more parameters than this (an `__in` of a batch of keys) is never prepared: see
# the module's docstring.
MAX_PREPARED_PARAMETERS = 100
# The parameter types psycopg packs into a fixed width without checking that the value fits.
_WIDTHS = ((Int2, "smallint", -(2**15), 2**15 - 1), (Int4, "integer", -(2**31), 2**31 - 1))


def integer_parameters_check(params: Iterable | None) -> None:
    """Raise DataError for an Int2/Int4 parameter outside its type's range (see the module)."""
    if isinstance(params, Mapping):
        params = params.values()
    for value in params or ():
        for kind, name, low, high in _WIDTHS:
            if type(value) is kind and not low <= value <= high:
                raise DataError(f"{int(value)} is out of range for a database {name} ({low} to {high}).")


# The mixin's methods call the cursor's own (psycopg.Cursor and ServerCursor have the same ones).
_CursorBase = psycopg.Cursor if TYPE_CHECKING else object


class _CheckedParameters(_CursorBase):  # type: ignore[misc,valid-type]
    """Integer parameters checked against their width; too many parameters bound on the client."""

    def execute(self, query, params=None, **kwargs):
        integer_parameters_check(params)
        if params is not None and len(params) > MAX_PARAMETERS:
            query, params = psycopg.ClientCursor(self.connection).mogrify(query, params), None
        elif params is not None and len(params) > MAX_PREPARED_PARAMETERS:
            kwargs.setdefault("prepare", False)
        return super().execute(query, params, **kwargs)

    def executemany(self, query, params_seq, **kwargs):
        params_seq = list(params_seq)
        for params in params_seq:
            integer_parameters_check(params)
        return super().executemany(query, params_seq, **kwargs)


class ServerBindingCursor(_CheckedParameters, base.ServerBindingCursor):
    pass


class ServerCursor(_CheckedParameters, psycopg.ServerCursor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        """The health check before a kept connection's first query of a request (CONN_HEALTH_CHECKS),
        without a round trip while nothing says the connection is gone: the server sends nothing to
        an idle connection unless it ends it (a restart, pg_terminate_backend, idle_session_timeout
        send their error and close the socket) or has something the client asked for (LISTEN), so
        a socket with nothing to read is usable, and one with something to read, or a broken one,
        is asked `SELECT 1` as Django asks. Django's check was a round trip on every request: one
        statement in eight of a survey autosave."""
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        if connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return super().is_usable()  # inside a transaction: not idle, so ask
        try:
            readable, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable or super().is_usable()

    def get_connection_params(self):
        params = super().get_connection_params()
        if params.get("cursor_factory") is base.ServerBindingCursor:
            params["cursor_factory"] = ServerBindingCursor
        return params

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        if conn_params.get("cursor_factory") is ServerBindingCursor:
            connection.server_cursor_factory = ServerCursor
        return connection
