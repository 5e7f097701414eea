"""The CSV export on PostgreSQL, written by the database: `COPY (SELECT …) TO STDOUT (FORMAT csv)`.

Building a million rows in Python and passing them through `csv.writer` costs several times what
PostgreSQL takes to format them (bench/export.py), so on PostgreSQL the CSV export is the output of
one COPY per answer table. The bytes are those of the Python path (`rows.answer_rows` →
`csv.csv_chunks`, still used on SQLite and for XLSX and JSON), which a test checks on a study
holding every kind of answer:

- the same queries: each `rows.*_query` is wrapped in a SELECT that looks up what
  `rows.answer_lookups` computed once, in Python (participants' labels, source and system keys,
  the systems of each text), and spreads one stored answer over its rows (one per question,
  aspect, justification) in the order `answer_rows` yields them;
- the same cells: columns in `AnswerRow` order with its defaults; values coded from
  annotation/scales.py; formula-like text prefixed with `'` (cells.csv_cell for the looked-up
  values, the same test in SQL for text read from the tables);
- the same quoting: COPY and `csv.writer` (QUOTE_MINIMAL) both quote exactly the fields holding a
  comma, a double quote, CR or LF, doubling the quotes; COPY would write an empty string as `""`,
  so every empty text is NULL (written as nothing, like csv.writer's empty cell);
- the same line ends: COPY ends rows with LF, turned into CRLF outside quoted fields (`_LineEnds`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from psycopg import ClientCursor, errors, pq, sql

from annotation import scales
from annotation.models import Study
from evaluation.exporters.cells import FORMULA_TRIGGERS, PREFIX, csv_cell
from evaluation.exporters.csv import csv_chunks
from evaluation.exporters.rows import (
    AnswerQuery,
    AnswerRow,
    answer_columns,
    answer_lookups,
    attention_check_query,
    expert_rating_query,
    external_ids,
    justification_query,
    lay_answer_query,
    preference_query,
    source_judgement_query,
)
from evaluation.selectors import EXPERT_ASPECTS, LAY_QUESTIONS

ROWS_PER_CHUNK = 2000


def available() -> bool:
    """Whether the default database can write the export (PostgreSQL through psycopg 3)."""
    if connection.vendor != "postgresql":
        return False
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return is_psycopg3


def csv_copy_chunks(
    *, study: Study, include_external_ids: bool = False, on_rows: Callable[[int], None] | None = None
) -> Iterator[bytes]:
    """The CSV document in chunks of about `ROWS_PER_CHUNK` rows, header first; `on_rows(n)` is
    called with the number of answer rows in each chunk."""
    columns = answer_columns(include_external_ids=include_external_ids)
    yield from csv_chunks((), columns)
    connection.ensure_connection()
    statements = _statements(study, columns, include_external_ids)
    line_ends = _LineEnds()
    for statement in statements:
        for data in _copy_out(f"COPY ({statement}) TO STDOUT (FORMAT csv)"):
            yield line_ends.convert(data)
            if on_rows:
                on_rows(line_ends.take_rows())


def _copy_out(statement: str) -> Iterator[bytes]:
    """The output of `COPY … TO STDOUT` in chunks of `ROWS_PER_CHUNK` rows, read from libpq
    through psycopg's documented low-level `Connection.pgconn`: psycopg's `Copy.read()` spends
    several microseconds of Python on each row, more than PostgreSQL takes to write it, while
    a blocking `PQgetCopyData` returns it at once. Closing the generator early cancels the COPY
    (outside a transaction) and leaves the connection idle."""
    raw = connection.connection
    pgconn = raw.pgconn
    pgconn.send_query(statement.encode())
    _check(raw, pgconn.get_result(), expected=pq.ExecStatus.COPY_OUT)
    finished = False
    try:
        # Appending to a bytearray costs a third of keeping each row's buffer in a list to join.
        chunk, rows = bytearray(), 0
        while (row := pgconn.get_copy_data(0))[0] > 0:
            chunk += row[1]
            rows += 1
            if rows == ROWS_PER_CHUNK:
                yield bytes(chunk)
                chunk, rows = bytearray(), 0
        if rows:
            yield bytes(chunk)
        finished = True
    finally:
        if not finished:
            if not connection.in_atomic_block:
                raw.cancel_safe()
            while pgconn.get_copy_data(0)[0] > 0:
                pass
        while (result := pgconn.get_result()) is not None:
            if finished:
                _check(raw, result, expected=pq.ExecStatus.COMMAND_OK)


def _check(raw, result, *, expected: pq.ExecStatus) -> None:
    if result is None or result.status != expected:
        while raw.pgconn.get_result() is not None:  # leave the connection idle
            pass
        if result is None:
            raise errors.InterfaceError(f"no result from PostgreSQL, expected {expected.name}")
        raise errors.error_from_result(result, encoding=raw.info.encoding)


class _LineEnds:
    """COPY ends each row with LF; the export ends rows with CRLF, as csv.writer does. An LF ends a
    row exactly when it is outside a quoted field: after an even number of double quotes since the
    start of the output (a doubled quote inside a field counts twice, so it keeps the parity)."""

    def __init__(self) -> None:
        self.quoted = False
        self.rows = 0

    def convert(self, data: bytes) -> bytes:
        if not self.quoted and b'"' not in data:
            self.rows += data.count(b"\n")
            return data.replace(b"\n", b"\r\n")
        parts = data.split(b'"')
        outside = not self.quoted
        for i, part in enumerate(parts):
            if outside and b"\n" in part:
                self.rows += part.count(b"\n")
                parts[i] = part.replace(b"\n", b"\r\n")
            outside = not outside
        self.quoted = outside  # after the last part, the state flipped once too many
        return b'"'.join(parts)

    def take_rows(self) -> int:
        rows, self.rows = self.rows, 0
        return rows


def _statements(study: Study, columns: Sequence[str], include_external_ids: bool) -> list[str]:
    """One SELECT per answer table, in the order of `answer_rows`, with every value bound into the
    text (COPY takes no parameters).

    The lookups are JSON objects (id → value) looked up with `->>`: a binary search per row, so the
    wrapped query needs no join and keeps the order it was sorted in (a join would let the planner
    hash it and sort every row again). Rows of a participant or source that joined the study after
    the lookups were read are left out, as if the export had been taken a moment earlier."""
    raw = connection.connection
    lookups = answer_lookups(study=study)
    external = external_ids(study=study) if include_external_ids else {}
    people = _jsonb(
        raw,
        {
            pk: [_text(label), _text(role), _text(external.get(pk, ""))]
            for pk, (label, role) in lookups.people.items()
        },
    )
    sources = _jsonb(raw, {pk: _text(key) for pk, key in lookups.sources.items()})
    systems = _jsonb(raw, {pk: _text(key) for pk, key in lookups.systems.items()})
    texts = _jsonb(raw, {pk: _text(keys) for pk, keys in lookups.text_systems.items()})
    head = {
        "study": _literal(raw, study.slug),
        "participant": f"{people} -> a.participant_id::text ->> 0",
        "role": f"{people} -> a.participant_id::text ->> 1",
        "external_id": f"{people} -> a.participant_id::text ->> 2",
    }
    source_key = f"{sources} ->> a.source_id::text"
    shared = {"time_spent_ms": "a.time_spent_ms", "created_at": "a.created_at", "updated_at": "a.updated_at"}
    likert = {level.value: level.name for level in scales.LIKERT.levels}

    def statement(query: AnswerQuery, names: Sequence[str], spread: str = "", **cells: str) -> str | None:
        """SELECT the row's cells (AnswerRow's defaults where not given) from `query` as subquery `a`
        with columns `names`, in `query`'s order; None when the query can match nothing. With
        `spread`, each stored answer becomes one row per non-empty answer `q` of it, whose
        question, value and number are `q`'s; the other cells are computed once per stored
        answer, before it is spread."""
        keys = [f"k{i}" for i in range(len(query.queryset.query.order_by))]
        try:
            inner, params = query.values_with_order().query.sql_with_params()
        except EmptyResultSet:  # e.g. a study without participants: `participant_id IN ()`
            return None
        inner = ClientCursor(raw).mogrify(inner, params)
        cells = {
            name: cells.get(name) or head.get(name) or _literal(raw, AnswerRow._field_defaults[name])
            for name in columns
        }
        order = ", ".join(f"a.{key}" for key in keys)
        source = f"({inner} OFFSET 0) AS a({', '.join([*names, *keys])})"
        if not spread:
            return f"SELECT {', '.join(cells.values())} FROM {source} ORDER BY {order}"
        spread_cells = {"question": "q.question", "value": _cell("q.answer"), "value_number": "q.number"}
        once = [name for name in columns if name not in spread_cells]
        computed = ", ".join(f"{cells[name]} AS c{i}" for i, name in enumerate(once))
        select = ", ".join(spread_cells.get(name) or f"a.c{once.index(name)}" for name in columns)
        return (
            f"SELECT {select} FROM (SELECT {computed}, a.* FROM {source} ORDER BY {order} OFFSET 0) AS a"
            f" {spread} WHERE q.answer <> '' ORDER BY {order}, q.n"
        )

    statements = []
    questions = [f"q{i}" for i in range(len(LAY_QUESTIONS))]
    statements.append(
        statement(
            lay_answer_query(study=study, known=lookups),
            ["participant_id", "source_id", "text_id", "system_id", "phase", *questions, *shared],
            _spread(
                raw,
                [
                    (question, f"a.{column}", _case(raw, f"a.{column}", scales.LAY_SCALES[question].codes))
                    for question, column in zip(LAY_QUESTIONS, questions, strict=True)
                ],
            ),
            source=source_key,
            systems=f"{texts} ->> a.text_id::text",
            assigned_system=f"{systems} ->> a.system_id::text",
            text_id="a.text_id",
            phase=_cell("a.phase"),
            **shared,
        )
    )
    for side in ("most", "least"):
        statements.append(
            statement(
                preference_query(study=study, known=lookups, side=side),
                ["participant_id", "source_id", "system_id", "text_id", *shared],
                source=source_key,
                systems=f"{texts} ->> a.text_id::text",
                assigned_system=f"{systems} ->> a.system_id::text",
                text_id="a.text_id",
                phase=_literal(raw, "preference"),
                question=_literal(raw, f"{side}_preferred"),
                value=f"{texts} ->> a.text_id::text",
                value_number="1",
                **shared,
            )
        )
    statements.append(
        statement(
            justification_query(study=study, known=lookups),
            ["participant_id", "source_id", "system_id", "most", "least", *shared],
            _spread(
                raw,
                [("most_justification", "a.most", "NULL"), ("least_justification", "a.least", "NULL")],
            ),
            source=source_key,
            assigned_system=f"{systems} ->> a.system_id::text",
            phase=_literal(raw, "preference"),
            **shared,
        )
    )
    aspects = [f"r{i}" for i in range(len(EXPERT_ASPECTS))]
    statements.append(
        statement(
            expert_rating_query(study=study, known=lookups),
            ["participant_id", "source_id", "text_id", *aspects, "comment", *shared],
            _spread(
                raw,
                [
                    *(
                        (aspect, _case(raw, f"a.{column}", likert), f"a.{column}")
                        for aspect, column in zip(EXPERT_ASPECTS, aspects, strict=True)
                    ),
                    ("comment", "a.comment", "NULL"),
                ],
            ),
            source=source_key,
            systems=f"{texts} ->> a.text_id::text",
            text_id="a.text_id",
            phase=_literal(raw, "expert"),
            **shared,
        )
    )
    statements.append(
        statement(
            source_judgement_query(study=study, known=lookups),
            ["participant_id", "source_id", "severity", "simplicity", "comment", *shared],
            _spread(
                raw,
                [
                    ("severity", "a.severity", _case(raw, "a.severity", scales.SEVERITY.codes)),
                    ("original_simplicity", _case(raw, "a.simplicity", likert), "a.simplicity"),
                    ("comment", "a.comment", "NULL"),
                ],
            ),
            source=source_key,
            phase=_literal(raw, "original"),
            **shared,
        )
    )
    statements.append(
        statement(
            attention_check_query(study=study, known=lookups),
            ["participant_id", "position", "answer", "passed", "answered_at"],
            phase=_literal(raw, "attention_check"),
            question=_literal(raw, "attention_check_") + " || a.position",
            value=_cell("a.answer"),
            value_number="a.passed::integer",
            created_at="a.answered_at",
            updated_at="a.answered_at",
        )
    )
    return [statement for statement in statements if statement]


_JUSTIFICATIONS = (("most", "most_justification"), ("least", "least_justification"))


def _text(value: Any) -> str | None:
    """A text value as its CSV cell, NULL where the cell is empty."""
    return None if value is None or value == "" else csv_cell(value)


def _literal(raw, value: Any) -> str:
    if isinstance(value, str):
        value = _text(value)
    return sql.Literal(value).as_string(raw)


def _cell(expression: str) -> str:
    """SQL for the CSV cell of a text column: NULL when empty, formula-like text prefixed."""
    triggers = ", ".join(sql.Literal(trigger).as_string(None) for trigger in FORMULA_TRIGGERS)
    prefix = sql.Literal(PREFIX).as_string(None)
    return (
        f"CASE WHEN left({expression}, 1) IN ({triggers}) THEN {prefix} || {expression}"
        f" ELSE NULLIF({expression}, '') END"
    )


def _case(raw, expression: str, mapping: dict[Any, Any]) -> str:
    """SQL mapping the value of `expression` through `mapping` (NULL for anything else)."""
    whens = " ".join(
        f"WHEN {sql.Literal(key).as_string(raw)} THEN {sql.Literal(value).as_string(raw)}"
        for key, value in mapping.items()
    )
    return f"CASE {expression} {whens} END"


def _spread(raw, answers: Sequence[tuple[str, str, str]]) -> str:
    """A LATERAL list `q` of (n, question, answer, number), one row per (question, answer SQL,
    number SQL) whose answer is neither NULL nor empty, numbered in the order given (the order in
    which `answer_rows` yields them)."""
    rows = ", ".join(
        f"({n}, {_literal(raw, question)}, ({answer})::text, {number})"
        for n, (question, answer, number) in enumerate(answers)
    )
    return f"CROSS JOIN LATERAL (VALUES {rows}) AS q(n, question, answer, number)"


def _jsonb(raw, mapping: dict[int, Any]) -> str:
    """A lookup by id as a jsonb literal (keys are the ids as text)."""
    text = json.dumps({str(key): value for key, value in mapping.items()}, ensure_ascii=False)
    return sql.Literal(text).as_string(raw) + "::jsonb"
