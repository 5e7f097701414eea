"""radlay's PostgreSQL backend: Django's, run with server-side parameters and prepared statements
(config/settings/base.py, DJANGO_DB_PREPARED_STATEMENTS), so that a statement the survey repeats is
planned once per connection.

PostgreSQL's protocol takes at most 65,535 parameters per statement, and Django does not split a
statement for it (an `__in` of a whole study's ids, a large `bulk_create`): such a statement is
bound on the client instead, as Django binds every statement by default. The same holds for named
cursors, which stream large results (`QuerySet.iterator()`)."""

from __future__ import annotations

import psycopg
from django.db.backends.postgresql import base

MAX_PARAMETERS = 65_535  # the protocol's parameter count is a 16-bit number


class _ParameterLimit:
    def execute(self, query, params=None, **kwargs):
        if params is not None and len(params) > MAX_PARAMETERS:
            query, params = psycopg.ClientCursor(self.connection).mogrify(query, params), None
        return super().execute(query, params, **kwargs)


class ServerBindingCursor(_ParameterLimit, base.ServerBindingCursor):
    pass


class ServerCursor(_ParameterLimit, psycopg.ServerCursor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
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
