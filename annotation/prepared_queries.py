"""Fixed-shape queries that the ORM writes once per process and the survey runs many times.

Django builds and compiles a QuerySet's SQL anew on every call. For the survey's busiest requests
that was most of their CPU time: a radiologist's autosave spent ~60 % of its in-process time in
`QuerySet.filter`/`values_list`/`SQLCompiler.as_sql` for small reads and updates whose SQL never
changes (docs/benchmarks.md). A prepared query asks the ORM for the SQL once per database connection
and argument shape, with placeholder arguments, remembers where each placeholder landed among the
parameters, and then runs that SQL with the real arguments: the ORM still writes every query, only
the repetition is skipped.

The interface (`__all__`; everything else here is private, and tests/work/test_structure.py checks
that callers use only these names and methods):

- `PreparedQuery(build)`: `build(**arguments)` returns a `values_list()` QuerySet;
  `.rows(**arguments)` runs its SQL and returns the rows, converted as values_list() converts them.
  `PreparedQuery(build, locking=update)` (PostgreSQL): `update(**arguments)` returns (a QuerySet of
  the same model, the values its `update()` would set), run first in the same statement (`WITH
  updated AS (UPDATE … RETURNING *) SELECT … FROM updated …`): the rows are locked, updated and
  read as the UPDATE left them (after any writer it waited for), joined to their related rows as
  they were when the statement began. One round trip where a lock and a read were two.
- `PreparedAggregate(build)`: `build(**arguments)` returns (a QuerySet, a field all its rows share,
  {name: aggregate}); `.values(**arguments)` returns {name: value} as `QuerySet.aggregate()` would.
- `PreparedUpdate(build)`: `build(**arguments)` returns (a QuerySet, the values its `update()` would
  set); `.run(**arguments)` runs the UPDATE and returns the number of rows it changed.
- `PreparedUpdateReturningOld(build, model, old)`: a PreparedUpdate whose `.rows(**arguments)`
  returns the updated rows whole, each followed by the values its `old` fields held before (one
  statement where a locked read and an UPDATE were two).
- `Joined(model, *paths)`: the columns of a model and of related models along non-null foreign keys
  (`.columns()`, for the `values_list()` of a build) and the instances built back from one row
  (`.instances(row)`), as `select_related(*paths)` would give them.

Each takes `using="default"` too. Arguments are passed by name, always the same names for one query.

Adding a query: declare it once at module level (or in a `functools.cache`d factory when its shape
depends on a model), next to the code that runs it, and call its method with keyword arguments:

    _ITEM = Joined(LayItem)
    _item_rows = PreparedQuery(
        lambda participant_id: LayItem.objects.filter(participant_id=participant_id).values_list(
            *_ITEM.columns()
        )
    )
    items = [_ITEM.instances(row) for row in _item_rows.rows(participant_id=participant.pk)]

Only what passes through the ORM unchanged can be a placeholder: ints, strings and aware
datetimes (adapted as the backend adapts them) in exact lookups, comparisons and update values,
and tuples of them in `__in`. None and booleans are literals: they change the SQL (IS NULL), so
they are part of the shape. Anything else, or a value the ORM rewrites on its way to SQL, is
refused when the query is first compiled: a query that cannot be prepared fails loudly, never
with wrong rows. A read is sorted only as its `order_by()` asks: the models' default ordering is
left out (rows read by key need none, and it joins the tables it sorts by). Add a test beside the
others in tests/annotation/test_prepared_queries.py when a query uses a lookup none of them uses.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, cast

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.models import Model, signals
from django.db.models.base import ModelState
from django.db.models.sql import UpdateQuery
from django.db.transaction import TransactionManagementError

__all__ = ["Joined", "PreparedAggregate", "PreparedQuery", "PreparedUpdate", "PreparedUpdateReturningOld"]

# Unlikely values, distinct per placeholder: the compiled parameters are searched for them. Ints
# stay inside every integer field's range (also positive ones): Django rewrites a comparison with
# a value out of the column's range (e.g. `position__lte=-1` on a PositiveIntegerField).
_INT_BASE = 2_147_483_000
_MAX_PLACEHOLDERS = 600  # _INT_BASE + 600 < 2**31
_TEXT_MARK = "\x00radlay-placeholder-"
_TIME_BASE = dt.datetime(1901, 2, 3, tzinfo=dt.UTC)

_Slot = tuple[int, str, "int | None", "Callable[[Any], Any] | None"]  # position, argument, item, adapt


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[_Slot, ...]
    compiler: Any
    converters: dict
    locks: bool


def _is_literal(value: Any) -> bool:
    # None and booleans change the SQL itself (IS NULL, a constant): part of the shape, not slots.
    return value is None or isinstance(value, bool)


def _placeholders(arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[Any, tuple[str, int | None]]]:
    counter = itertools.count(1)
    values: dict[str, Any] = {}
    where: dict[Any, tuple[str, int | None]] = {}

    def one(name: str, value: Any, index: int | None) -> Any:
        number = next(counter)
        if number > _MAX_PLACEHOLDERS:
            raise ImproperlyConfigured(f"PreparedQuery: more than {_MAX_PLACEHOLDERS} placeholders.")
        if isinstance(value, int):
            placeholder: Any = _INT_BASE + number
        elif isinstance(value, str):
            placeholder = f"{_TEXT_MARK}{number}"
        elif isinstance(value, dt.datetime) and value.tzinfo is not None:
            placeholder = _TIME_BASE + dt.timedelta(microseconds=number)
        else:
            raise ImproperlyConfigured(
                f"PreparedQuery argument {name!r}: only ints, strings, aware datetimes and tuples of "
                f"them can be placeholders (None and booleans are literals), not {type(value).__name__}."
            )
        where[placeholder] = (name, index)
        return placeholder

    for name, value in arguments.items():
        if _is_literal(value):
            values[name] = value
        elif isinstance(value, tuple | list):
            values[name] = tuple(one(name, item, i) for i, item in enumerate(value))
        else:
            values[name] = one(name, value, None)
    return values, where


def _shape(arguments: dict[str, Any]) -> tuple:
    """What the SQL depends on: argument names, kinds, tuple lengths and literals, not values."""
    return tuple(
        (name, value)
        if _is_literal(value)
        else (name, len(value))
        if isinstance(value, tuple | list)
        else (name, type(value))
        for name, value in sorted(arguments.items())
    )


class _Prepared:
    """SQL compiled once per database connection and argument shape, run with new arguments."""

    def __init__(self, build: Callable[..., Any]) -> None:
        self._build = build
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _query(self, connection, using: str, values: dict[str, Any]) -> tuple[Any, Any]:
        """(the sql.Query to compile, whether it takes row locks)."""
        raise NotImplementedError

    def _compile(self, connection, using: str, arguments: dict[str, Any]) -> _Compiled | None:
        """The SQL for arguments of this shape; None where the ORM knows there are no rows
        without asking (e.g. `pk__in=()`)."""
        values, where = _placeholders(arguments)
        query, locks = self._query(connection, using, values)
        compiler = query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()
            sql, params = self._statement(connection, using, values, sql, tuple(params))
        except EmptyResultSet:
            return None
        # A datetime reaches the SQL as the backend adapts it (a string on SQLite): the same
        # adaptation turns a real argument into its parameter.
        adapt = connection.ops.adapt_datetimefield_value
        adapted = {adapt(p): p for p in where if isinstance(p, dt.datetime)}
        slots: list[_Slot] = []
        for position, param in enumerate(params):
            if isinstance(param, bool) or not isinstance(param, int | str | dt.datetime):
                continue
            if param in where:
                slots.append((position, *where[param], None))
            elif param in adapted:
                slots.append((position, *where[adapted[param]], adapt))
        lost = set(where.values()) - {(name, index) for _, name, index, _ in slots}
        missing = sorted(name if index is None else f"{name}[{index}]" for name, index in lost)
        if missing:
            raise ImproperlyConfigured(
                f"PreparedQuery {self._build.__qualname__}: the ORM changed the parameter(s) "
                f"{', '.join(missing)} on the way to SQL; they cannot be placeholders."
            )
        select = getattr(compiler, "select", None) or []
        fields = [column[0] for column in select[: getattr(compiler, "col_count", 0) or 0]]
        return _Compiled(
            sql=sql,
            params=tuple(params),
            slots=tuple(slots),
            compiler=compiler,
            converters=compiler.get_converters(fields) if fields else {},
            locks=locks,
        )

    def _statement(
        self, connection, using: str, values: dict[str, Any], sql: str, params: tuple
    ) -> tuple[str, tuple]:
        """The statement that runs: the compiled query's own SQL, unless a subclass wraps it."""
        return sql, params

    def _execute(
        self,
        using: str,
        arguments: dict[str, Any],
        run: Callable[[Any, _Compiled, list[Any]], Any],
        empty: Any,
    ) -> Any:
        connection = connections[using]  # one per thread: what it compiled is its own
        by_shape = self._compiled.get(connection)
        if by_shape is None:
            with self._lock:  # a WeakKeyDictionary is not safe to grow from several threads
                by_shape = self._compiled.setdefault(connection, {})
        shape = _shape(arguments)
        if shape not in by_shape:
            by_shape[shape] = self._compile(connection, using, arguments)
        compiled = by_shape[shape]
        if compiled is None:
            return empty
        if compiled.locks and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        for position, name, index, adapt in compiled.slots:
            value = arguments[name] if index is None else arguments[name][index]
            params[position] = value if adapt is None else adapt(value)
        with connection.cursor() as cursor:
            return run(cursor, compiled, params)


def _fetch_converted(cursor, compiled: _Compiled, params: list) -> list[tuple]:
    cursor.execute(compiled.sql, params)
    rows = cursor.fetchall()
    if compiled.converters:
        rows = [tuple(row) for row in compiled.compiler.apply_converters(rows, compiled.converters)]
    return rows


class PreparedQuery(_Prepared):
    """`build(**arguments)` returns a values_list() QuerySet; `rows(**arguments)` runs its SQL.
    With `locking`, the UPDATE it builds runs first in the same statement (the module's docstring)."""

    def __init__(self, build: Callable[..., Any], *, locking: Callable[..., Any] | None = None) -> None:
        super().__init__(build)
        self._locking = locking

    def _statement(self, connection, using, values, sql, params):
        if self._locking is None:
            return sql, params
        if connection.vendor != "postgresql":
            raise ImproperlyConfigured("A locking PreparedQuery needs PostgreSQL (UPDATE in a WITH).")
        queryset, changes = self._locking(**values)
        update = queryset.query.chain(UpdateQuery)
        update.add_update_values(changes)
        update.annotations = {}
        update_sql, update_params = update.get_compiler(using=using).as_sql()
        quote = connection.ops.quote_name
        table, updated = quote(queryset.model._meta.db_table), quote("updated")
        main_from = f" FROM {table} "
        if sql.count(main_from) != 1:
            raise ImproperlyConfigured(f"A locking PreparedQuery reads {table} once, in its FROM: {sql}")
        read = sql.replace(main_from, f" FROM {updated} AS {table} ", 1)
        return (
            f"WITH {updated} AS ({update_sql} RETURNING {table}.*) {read}",
            (*update_params, *params),
        )

    def _query(self, connection, using, values):
        queryset = self._build(**values)
        if not queryset.query.order_by and not queryset.query.is_sliced:
            # Only the order a query asks for: a model's default ordering joins and sorts by
            # related tables (a participant's by its study's creation), for rows read by key.
            queryset = queryset.order_by()
        # A locking read, like select_for_update(), holds its lock only inside a transaction.
        return queryset.query, self._locking is not None or bool(
            queryset.query.select_for_update and connection.features.has_select_for_update
        )

    def rows(self, *, using: str = "default", **arguments: Any) -> list[tuple]:
        return self._execute(using, arguments, _fetch_converted, [])


class PreparedAggregate(PreparedQuery):
    """`build(**arguments)` returns (a QuerySet, a field all its rows share, {name: aggregate});
    `values(**arguments)` returns {name: value} as `QuerySet.aggregate()` would. (An aggregate
    query runs as soon as it is built; grouped by that one field it is a values_list() to prepare.)"""

    def __init__(self, build: Callable[..., Any]) -> None:
        self._empty: dict[str, Any] = {}

        def grouped(**values: Any):
            queryset, field, aggregates = build(**values)
            self._empty = {name: aggregate.empty_result_set_value for name, aggregate in aggregates.items()}
            return queryset.order_by().values(field).annotate(**aggregates).values_list(*aggregates)

        super().__init__(grouped)

    def values(self, *, using: str = "default", **arguments: Any) -> dict[str, Any]:
        rows = self.rows(using=using, **arguments)
        return dict(zip(self._empty, rows[0], strict=True)) if rows else dict(self._empty)


class PreparedUpdate(_Prepared):
    """`build(**arguments)` returns (a QuerySet, the values its update() would set);
    `run(**arguments)` runs that UPDATE and returns the number of rows it changed, as update()."""

    def _query(self, connection, using, values):
        queryset, changes = self._build(**values)
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(changes)
        query.annotations = {}  # as QuerySet.update(): an UPDATE selects nothing
        return query, False

    def run(self, *, using: str = "default", **arguments: Any) -> int:
        def run(cursor, compiled: _Compiled, params: list) -> int:
            cursor.execute(compiled.sql, params)
            return cursor.rowcount

        return self._execute(using, arguments, run, 0)


class _PreparedUpdateReturning(PreparedUpdate):
    """A PreparedUpdate whose `rows(**arguments)` returns the updated rows, whole (the columns of
    `Joined(model)`, converted as values_list() converts them): one statement where a locked read
    and an UPDATE were two. UPDATE … RETURNING: PostgreSQL, and SQLite from 3.35."""

    def __init__(self, build: Callable[..., Any], model: type[Model]) -> None:
        super().__init__(build)
        self.model = model

    def _compile(self, connection, using: str, arguments: dict[str, Any]) -> _Compiled | None:
        compiled = super()._compile(connection, using, arguments)
        if compiled is None:
            return None
        if not connection.features.can_return_columns_from_insert:
            raise ImproperlyConfigured(f"{connection.display_name} cannot return rows from an UPDATE.")
        # The converters of the same columns read by a values_list(), in the same order.
        reader = self.model._default_manager.order_by().values_list(*Joined(self.model).columns()).query
        compiler = reader.get_compiler(using=using)
        compiler.as_sql()
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.model._meta.concrete_fields)
        return replace(
            compiled,
            sql=f"{compiled.sql} RETURNING {columns}",
            compiler=compiler,
            converters=compiler.get_converters(fields),
        )

    def rows(self, *, using: str = "default", **arguments: Any) -> list[tuple]:
        return self._execute(using, arguments, _fetch_converted, [])


class PreparedUpdateReturningOld(_PreparedUpdateReturning):
    """A _PreparedUpdateReturning whose rows also end with the values the `old` columns held before
    this UPDATE, read by the same statement: the table joined to itself (`FROM t AS old`), whose
    scan sees the rows as they were when the statement began. What an answer's revision needs
    without a read before every save. Call with the writers of the row serialised (a lock)."""

    def __init__(self, build: Callable[..., Any], model: type[Model], old: Sequence[str]) -> None:
        super().__init__(build, model)
        self.old = tuple(old)

    def _compile(self, connection, using: str, arguments: dict[str, Any]) -> _Compiled | None:
        compiled = super()._compile(connection, using, arguments)
        if compiled is None or connection.vendor != "postgresql":
            return compiled
        quote = connection.ops.quote_name
        table, pk = quote(self.model._meta.db_table), quote(self.model._meta.pk.column)
        update, where = compiled.sql.split(" WHERE ", 1)
        condition, returning = where.rsplit(" RETURNING ", 1)
        alias = quote("old")
        # The names in `old` are concrete fields of the model, so each has a column.
        old = ", ".join(
            f"{alias}.{quote(self.model._meta.get_field(name).column)}"  # type: ignore[union-attr]
            for name in self.old
        )
        new = ", ".join(f"{table}.{column.strip()}" for column in returning.split(","))
        sql = (
            f"{update} FROM {table} AS {alias} WHERE {alias}.{pk} = {table}.{pk} AND ({condition})"
            f" RETURNING {new}, {old}"
        )
        return replace(compiled, sql=sql)

    def rows(self, *, using: str = "default", **arguments: Any) -> list[tuple]:
        if connections[using].vendor == "postgresql":
            return super().rows(using=using, **arguments)
        # SQLite's RETURNING may not name the FROM table: the old values are read just before
        # (the embedded default, one statement more per save; the writers are serialised).
        queryset, _ = self._build(**arguments)
        before = {row[0]: row[1:] for row in queryset.order_by().values_list("pk", *self.old)}
        updated = super().rows(using=using, **arguments)
        return [(*row, *before[row[0]]) for row in updated]


_M = TypeVar("_M", bound=Model)


class Joined(Generic[_M]):
    """The columns of a model and of related models along non-null foreign keys (paths as in
    select_related), for a values_list() that reads them all, and the instances built back from
    one of its rows."""

    def __init__(self, model: type[_M], *paths: str) -> None:
        self.model, self.paths = model, paths

    @functools.cached_property
    def _layout(self) -> list[tuple[str, type[Model], list[str]]]:
        # Built on first use: related models are resolved once the app registry is ready.
        layout: list[tuple[str, type[Model], list[str]]] = [
            ("", self.model, [f.attname for f in self.model._meta.concrete_fields])
        ]
        for path in self.paths:
            model: type[Model] = self.model
            for step in path.split("__"):
                related = model._meta.get_field(step).related_model
                if not isinstance(related, type):
                    raise ImproperlyConfigured(f"{self.model.__name__}: {path} is no path of foreign keys")
                model = related
            layout.append((path, model, [f.attname for f in model._meta.concrete_fields]))
        return layout

    def columns(self) -> list[str]:
        return [f"{path}__{name}" if path else name for path, _, names in self._layout for name in names]

    def instances(self, row: Sequence[Any], *, using: str = "default") -> _M:
        built: dict[str, Model] = {}
        start = 0
        for path, model, names in self._layout:
            built[path] = _from_db(model, using, names, row[start : start + len(names)])
            start += len(names)
        for path, instance in built.items():
            if path:
                parent, _, step = path.rpartition("__")
                setattr(built[parent], step, instance)
        return cast(_M, built[""])  # built by self.model.from_db


def _from_db(model: type[Model], using: str, names: list[str], values: Sequence[Any]) -> Model:
    """`model.from_db(using, names, values)` for a row of all its concrete fields, without running
    `Model.__init__` field by field (a survey save builds a dozen instances: a tenth of its time):
    the values are set as __init__ would set them on a new instance (no related object cached
    yet), unless something listens to the model's pre_init or post_init signal, or overrides
    from_db, which then runs as it always does."""
    if (
        model.from_db.__func__ is not Model.from_db.__func__  # type: ignore[attr-defined]
        or signals.pre_init.has_listeners(model)
        or signals.post_init.has_listeners(model)
    ):
        return model.from_db(using, names, values)
    new = model.__new__(model)
    new.__dict__.update(zip(names, values, strict=True))
    new._state = ModelState()
    new._state.adding = False
    new._state.db = using
    return new
