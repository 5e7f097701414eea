"""New rows of one model, many at a time, with the values the ORM would write.

On PostgreSQL the rows go through `COPY … FROM STDIN` on the connection's own transaction, with
primary keys drawn from the table's sequence beforehand: Django's `bulk_create` spends most of a
large import compiling SQL and adapting parameters one value at a time, COPY streams them. Elsewhere
(SQLite) it is the multi-row `INSERT … RETURNING` that `bulk_create` sends, built from the rows as
given instead of from a model instance per row. Either way, every column the caller does not give is filled
as the ORM fills it for a new instance (field defaults, `auto_now`/`auto_now_add`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, models
from psycopg import sql
from psycopg.adapt import PyFormat, Transformer

BATCH = 2000
# Columns of these kinds are written as given (str, int, bool or None, as the database stores them);
# any other kind (JSON, dates) goes through its field's get_db_prep_save, as bulk_create does.
PLAIN_FIELDS = (
    models.CharField,
    models.TextField,
    models.IntegerField,
    models.BooleanField,
    models.ForeignKey,
)


def copy_available() -> bool:
    return connection.vendor == "postgresql"


def rows_insert(
    model: type[models.Model],
    *,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fixed: Mapping[str, Any] | None = None,
) -> list[int]:
    """Insert `rows` (one value per attribute name in `columns`, e.g. "source_id") into `model`'s
    table, each also with the values of `fixed`; returns the new primary keys in the order of
    `rows`. Call inside a transaction: a failure anywhere then leaves none of them."""
    if not rows:
        return []
    if copy_available():
        return _copy(model, columns, rows, fixed or {})
    if connection.features.can_return_rows_from_bulk_insert:
        return _insert_returning(model, columns, rows, fixed or {})
    objects = [model(**dict(fixed or {}), **dict(zip(columns, row, strict=True))) for row in rows]
    model._default_manager.bulk_create(objects, batch_size=BATCH)
    return [obj.pk for obj in objects]


def _column_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):  # a reverse relation has no column
        raise ValueError(f"{model.__name__}.{name} is not a column.")
    return field


def _prepared(
    model: type[models.Model], columns: Sequence[str], rows: Sequence[Sequence[Any]], fixed: Mapping[str, Any]
) -> tuple[list[models.Field], list[models.Field], tuple, Sequence[Sequence[Any]]]:
    """(given fields, the other fields, their values, rows with values as the database takes them)."""
    meta = model._meta
    pk = meta.pk
    given = [_column_field(model, name) for name in columns]
    if pk in given:
        raise ValueError(f"{model.__name__}: primary keys come from the table's sequence.")
    # One new instance stands for every row in what the caller leaves out: the ORM would compute the
    # same defaults for each (auto_now timestamps differ by microseconds only).
    template = model(**fixed)
    rest = [f for f in meta.concrete_fields if f is not pk and f not in given]
    constants = tuple(f.get_db_prep_save(f.pre_save(template, add=True), connection) for f in rest)
    prepared = [None if isinstance(field, PLAIN_FIELDS) else field.get_db_prep_save for field in given]
    if any(prepared):
        rows = [
            tuple(
                value if prep is None else prep(value, connection)
                for value, prep in zip(row, prepared, strict=True)
            )
            for row in rows
        ]
    return given, rest, constants, rows


def _insert_returning(
    model: type[models.Model], columns: Sequence[str], rows: Sequence[Sequence[Any]], fixed: Mapping[str, Any]
) -> list[int]:
    # The statement bulk_create sends (multi-row INSERT … RETURNING, as many rows as the backend
    # takes parameters), built without a model instance per row: most of bulk_create's time goes
    # to building and preparing those instances one value at a time.
    meta = model._meta
    given, rest, constants, rows = _prepared(model, columns, rows, fixed)
    fields = [*given, *rest]
    batch = max(1, min(BATCH, connection.ops.bulk_batch_size(fields, rows)))
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    one_row = f"({', '.join(['%s'] * len(fields))})"
    tail = f" RETURNING {quote(meta.pk.column)}"
    ids: list[int] = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            params = [value for row in chunk for value in (*row, *constants)]
            cursor.execute(head + ", ".join([one_row] * len(chunk)) + tail, params)
            ids.extend(row[0] for row in cursor.fetchall())
    return ids


def _copy(
    model: type[models.Model], columns: Sequence[str], rows: Sequence[Sequence[Any]], fixed: Mapping[str, Any]
) -> list[int]:
    meta = model._meta
    pk = meta.pk
    given, rest, constants, rows = _prepared(model, columns, rows, fixed)
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(meta.db_table),
        sql.SQL(", ").join(sql.Identifier(f.column) for f in (pk, *given, *rest)),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [connection.ops.quote_name(meta.db_table), pk.column, len(rows)],
        )
        ids = [row[0] for row in cursor.fetchall()]
        # Text COPY writes each value as its text dumper gives it: the constants' text once, not
        # once per row (JSON would be serialised again for every row).
        transformer = Transformer(cursor.cursor)
        constants = tuple(
            None
            if value is None
            else bytes(transformer.get_dumper(value, PyFormat.TEXT).dump(value)).decode()
            for value in constants
        )
        started = time.monotonic()
        # The psycopg cursor under Django's wrapper: same connection, same transaction; its errors
        # become Django's (IntegrityError, DataError) as they would through the ORM.
        with connection.wrap_database_errors, cursor.cursor.copy(statement) as copy:
            for pk_value, row in zip(ids, rows, strict=True):
                copy.write_row((pk_value, *row, *constants))
        if connection.queries_logged:
            # Django logs what goes through its own cursor only; the COPY counts as a query too.
            connection.queries_log.append(
                {
                    "sql": f"{statement.as_string(cursor.cursor)} -- {len(rows)} rows",
                    "time": f"{time.monotonic() - started:.3f}",
                }
            )
    return ids
