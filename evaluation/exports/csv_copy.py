"""The CSV export on PostgreSQL, written by the database: one `COPY (SELECT …) TO STDOUT` per
answer table.

Building a million rows in Python and passing them through `csv.writer` costs several times what
PostgreSQL takes to format them (bench/export.py), so on PostgreSQL the CSV export is the output of
one COPY per answer table. The bytes are those of the Python path (`rows.answer_rows` →
`csv.csv_chunks`, still used on SQLite and for XLSX and JSON), which a test checks on a study
holding every kind of answer:

- the same queries: each `rows.*_query` is wrapped in a SELECT that looks up what
  `rows.answer_lookups` computed once, in Python (participants' labels, source and system keys,
  the systems of each text), in the order `answer_rows` yields them;
- one COPY row per stored answer, holding the finished CSV lines it spreads into (one per
  question, aspect, justification), each ending with CRLF: PostgreSQL formats a third as many
  rows, needs no second sort to order the lines of one answer (they are concatenated in order),
  and Python handles a third as many messages;
- the same cells: what is looked up or coded (values from annotation/scales.py) is formatted in
  Python by `csv_text`, as `csv.writer` writes it (QUOTE_MINIMAL: quoted when holding a comma, a
  double quote, CR or LF, quotes doubled) after the formula prefix (cells.csv_cell); free text read
  from the tables gets the same treatment in SQL (`_free_text`);
- the bytes as they are: COPY's binary format carries the text without escaping, one row per
  CopyData message (PostgreSQL's protocol), so reading is taking each message's payload.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from psycopg import ClientCursor, errors, pq, sql

from annotation import scales
from annotation.models import ItemAnswer, Participant, Study
from evaluation.exports.cells import FORMULA_TRIGGERS, PREFIX, csv_cell
from evaluation.exports.csv import csv_chunks
from evaluation.exports.rows import (
    AnswerQuery,
    AnswerRow,
    answer_columns,
    answer_lookups,
    attention_check_query,
    background_query,
    expert_rating_query,
    external_ids,
    justification_query,
    lay_answer_query,
    preference_query,
    source_judgement_query,
)
from evaluation.selectors import EXPERT_ASPECTS, LAY_QUESTIONS

ROWS_PER_CHUNK = 2000  # stored answers (COPY rows) per chunk: about 2,000–10,000 CSV rows

# The columns one stored answer spreads over; the others are the same on all its rows.
_SPREAD = ("question", "value", "value_number")
# Looked up together, by participant.
_PERSON = ("participant", "external_id", "role", "language")

_BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_QUOTE_WHEN = (",", '"', "\r", "\n")


def available() -> bool:
    """Whether the default database can write the export (PostgreSQL through psycopg 3)."""
    if connection.vendor != "postgresql":
        return False
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return is_psycopg3


def csv_copy_chunks(
    *, study: Study, include_external_ids: bool = False, on_rows: Callable[[int], None] | None = None
) -> Iterator[bytes]:
    """The CSV document in chunks of about `ROWS_PER_CHUNK` stored answers, header first;
    `on_rows(n)` is called with the number of CSV rows in each chunk."""
    columns = answer_columns(include_external_ids=include_external_ids)
    yield from csv_chunks((), columns)
    connection.ensure_connection()
    for statement in _statements(study, columns, include_external_ids):
        # Closed with this generator, not whenever the garbage collector gets to it: the
        # connection must be idle before the next query.
        with closing(_copy_out(f"COPY ({statement}) TO STDOUT (FORMAT binary)")) as copy:
            for data in copy:
                yield data
                if on_rows:
                    on_rows(csv_rows(data))


def csv_text(value: Any) -> str:
    """The text `csv.writer` (QUOTE_MINIMAL, as csv.csv_chunks uses it) writes for `value` in a row
    of several cells, after the formula prefix: '' for None."""
    text = str(csv_cell(value))
    if any(char in text for char in _QUOTE_WHEN):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_rows(data: bytes) -> int:
    """The number of CSV rows in `data`, whole rows ending with CRLF: its LFs outside quoted fields
    (the parts between double quotes that are outside alternate, a doubled quote counting twice)."""
    if b'"' not in data:
        return data.count(b"\n")
    return sum(part.count(b"\n") for part in data.split(b'"')[::2])


def _copy_out(statement: str) -> Generator[bytes, None, None]:
    """The text of the one column of a binary `COPY … TO STDOUT`, in chunks of `ROWS_PER_CHUNK`
    rows, read from libpq through psycopg's documented low-level `Connection.pgconn`: psycopg's
    `Copy.read()` spends several microseconds of Python on each row, while a blocking
    `PQgetCopyData` returns it at once. Each message is one row (PostgreSQL's protocol): a field
    count (int16, 1) and the field's length (int32) before its bytes; the file's header comes
    before the first row, the trailer (int16 −1) is a message of its own. Closing the generator
    early cancels the COPY (outside a transaction) and leaves the connection idle."""
    raw = connection.connection
    pgconn = raw.pgconn
    pgconn.send_query(statement.encode())
    _check(raw, pgconn.get_result(), expected=pq.ExecStatus.COPY_OUT)
    finished = False
    # Whether the COPY still has data to read: a generator closed after the COPY's end (at the last
    # chunk's yield) must not cancel or read it again ("no COPY in progress").
    copying = True
    try:
        # Appending to a bytearray costs a third of keeping each row's buffer in a list to join.
        chunk, rows = bytearray(), 0
        size, data = pgconn.get_copy_data(0)
        if size > 0:
            data = _after_header(bytes(data))
        while size > 0:
            if len(data) > 2:  # not the trailer
                chunk += data[6:]
                rows += 1
                if rows == ROWS_PER_CHUNK:
                    yield bytes(chunk)
                    chunk, rows = bytearray(), 0
            size, data = pgconn.get_copy_data(0)
        copying = False
        if chunk:
            yield bytes(chunk)
        finished = True
    finally:
        if copying:
            if not connection.in_atomic_block:
                raw.cancel_safe()
            while pgconn.get_copy_data(0)[0] > 0:
                pass
        while (result := pgconn.get_result()) is not None:
            if finished:
                _check(raw, result, expected=pq.ExecStatus.COMMAND_OK)


def _after_header(message: bytes) -> bytes:
    """The first message of a binary COPY without the file's header (signature, flags, extension)."""
    if not message.startswith(_BINARY_SIGNATURE):
        raise errors.InterfaceError("COPY did not start with the binary file header")
    extension = int.from_bytes(message[15:19], "big")
    return message[19 + extension :]


def _check(raw, result, *, expected: pq.ExecStatus) -> None:
    if result is None or result.status != expected:
        while raw.pgconn.get_result() is not None:  # leave the connection idle
            pass
        if result is None:
            raise errors.InterfaceError(f"no result from PostgreSQL, expected {expected.name}")
        raise errors.error_from_result(result, encoding=raw.info.encoding)


def _statements(study: Study, columns: Sequence[str], include_external_ids: bool) -> list[str]:
    """One SELECT of one text column per answer table, in the order of `answer_rows`, with every
    value bound into the text (COPY takes no parameters).

    The lookups are JSON objects (id → CSV text) looked up with `->>`: a binary search per row, so
    the wrapped query needs no join and keeps the order it was sorted in (a join would let the
    planner hash it and sort every row again). Rows of a participant or source that joined the
    study after the lookups were read are left out, as if the export had been taken a moment
    earlier."""
    raw = connection.connection
    lookups = answer_lookups(study=study)
    external = external_ids(study=study) if include_external_ids else {}
    person = [name for name in columns if name in _PERSON]
    people = _jsonb(
        raw,
        {
            pk: ",".join(
                csv_text(
                    {
                        "participant": label,
                        "role": role,
                        "language": language,
                        "external_id": external.get(pk, ""),
                    }[name]
                )
                for name in person
            )
            for pk, (label, role, language) in lookups.people.items()
        },
    )
    sources = _jsonb(raw, {pk: csv_text(key) for pk, key in lookups.sources.items()})
    systems = _jsonb(raw, {pk: csv_text(key) for pk, key in lookups.systems.items()})
    texts = _jsonb(raw, {pk: csv_text(keys) for pk, keys in lookups.text_systems.items()})
    common = {
        "study": _literal(raw, csv_text(study.slug)),
        "participant": f"{people} ->> a.participant_id::text",
    }
    source_key = f"{sources} ->> a.source_id::text"
    shared = {"time_spent_ms": "a.time_spent_ms", "created_at": "a.created_at", "updated_at": "a.updated_at"}
    # The participant's label, external id, role and language are one lookup, written where the label is.
    line_columns = [name for name in columns if name not in _PERSON or name == "participant"]

    def cells_sql(cells: dict[str, str]) -> list[str]:
        """SQL for the CSV text of each of `line_columns` (AnswerRow's defaults where not given)."""
        return [
            cells.get(name) or common.get(name) or _literal(raw, csv_text(AnswerRow._field_defaults[name]))
            for name in line_columns
        ]

    def statement(
        query: AnswerQuery,
        names: Sequence[str],
        spread: Sequence[tuple[str, str, str]] = (),
        each: str | None = None,
        **cells: str,
    ) -> str | None:
        """SELECT the CSV text of each row of `query` (as subquery `a` with columns `names`), in
        `query`'s order; None when the query can match nothing. Without `spread` a row is one CSV
        row of the cells given; with it, a row is the CSV rows of its (question, condition, SQL of
        the text `value,value_number`) whose condition holds, in that order, the other cells
        computed once per row. With `each` (a column holding a JSON list of text ids) a row is one
        CSV row per id, in ascending order, the id as `c.text_id`."""
        keys = [f"k{i}" for i in range(len(query.queryset.query.order_by))]
        try:
            inner, params = query.values_with_order().query.sql_with_params()
        except EmptyResultSet:  # e.g. a study without participants: `participant_id IN ()`
            return None
        inner = ClientCursor(raw).mogrify(inner, params)
        order = ", ".join(f"a.{key}" for key in keys)
        source = f"({inner} OFFSET 0) AS a({', '.join([*names, *keys])})"
        if each is not None:
            source += f" CROSS JOIN LATERAL jsonb_array_elements_text(a.{each}::jsonb) AS c(text_id)"
            order += ", c.text_id::bigint"
        if not spread:
            line = _concat(raw, _joined(cells_sql(cells), ",") + ["'\r\n'"])
            return f"SELECT {line} FROM {source} ORDER BY {order}"
        parts = cells_sql({**cells, **dict.fromkeys(_SPREAD, "NULL")})
        first = line_columns.index(_SPREAD[0])
        head = _concat(raw, [*_joined(parts[:first], ","), "','"])
        tail = _concat(raw, ["','", *_joined(parts[first + len(_SPREAD) :], ","), "'\r\n'"])
        lines = [
            f"CASE WHEN {condition} THEN concat(a.head, {_literal(raw, csv_text(question) + ',')}, "
            f"{value}, a.tail) END"
            for question, condition, value in spread
        ]
        return (
            f"SELECT concat({', '.join(lines)}) FROM (SELECT {head} AS head, {tail} AS tail, a.*"
            f" FROM {source} ORDER BY {order} OFFSET 0) AS a ORDER BY {order}"
        )

    def coded(expression: str, scale: scales.Scale, *, stored_as: str) -> str:
        """SQL for the text `value,value_number` of an answer on `scale`, stored as the level's
        `name` or `value`: the level's name and number; anything else as it is, with no number."""
        whens = " ".join(
            f"WHEN {_literal(raw, getattr(level, stored_as))}"
            f" THEN {_literal(raw, csv_text(level.name) + ',' + str(level.value))}"
            for level in scale.levels
        )
        other = free(expression) if stored_as == "name" else f"concat(',', {expression})"
        return f"CASE {expression} {whens} ELSE {other} END"

    def free(expression: str) -> str:
        """SQL for the text `value,` of a free-text answer."""
        return f"concat({_free_text(raw, expression)}, ',')"

    phases = {str(phase): csv_text(phase) for phase in (ItemAnswer.Phase.ORIGINAL, ItemAnswer.Phase.ASSISTED)}
    statements = []
    questions = [f"q{i}" for i in range(len(LAY_QUESTIONS))]
    statements.append(
        statement(
            lay_answer_query(study=study, known=lookups),
            ["participant_id", "source_id", "text_id", "system_id", "phase", *questions, *shared],
            [
                (
                    question,
                    f"a.{column} <> ''",
                    coded(f"a.{column}", scales.LAY_SCALES[question], stored_as="name"),
                )
                for question, column in zip(LAY_QUESTIONS, questions, strict=True)
            ],
            source=source_key,
            systems=f"{texts} ->> a.text_id::text",
            assigned_system=f"{systems} ->> a.system_id::text",
            text_id="a.text_id",
            phase=_mapped(raw, "a.phase", phases),
            **shared,
        )
    )
    for side in ("most", "least"):
        statements.append(
            statement(
                preference_query(study=study, known=lookups, side=side),
                ["participant_id", "source_id", "system_id", "chosen", *shared],
                source=source_key,
                # The same lookup twice: `systems` and `value` are the same text.
                systems=f"{texts} ->> c.text_id",
                assigned_system=f"{systems} ->> a.system_id::text",
                text_id="c.text_id",
                phase=_literal(raw, csv_text("preference")),
                question=_literal(raw, csv_text(f"{side}_preferred")),
                value=f"{texts} ->> c.text_id",
                value_number="'1'",
                **shared,
                each="chosen",
            )
        )
    statements.append(
        statement(
            justification_query(study=study, known=lookups),
            ["participant_id", "source_id", "system_id", "most", "least", *shared],
            [
                ("most_justification", "a.most <> ''", free("a.most")),
                ("least_justification", "a.least <> ''", free("a.least")),
            ],
            source=source_key,
            assigned_system=f"{systems} ->> a.system_id::text",
            phase=_literal(raw, csv_text("preference")),
            **shared,
        )
    )
    aspects = [f"r{i}" for i in range(len(EXPERT_ASPECTS))]
    statements.append(
        statement(
            expert_rating_query(study=study, known=lookups),
            ["participant_id", "source_id", "text_id", *aspects, "comment", *shared],
            [
                *(
                    (
                        aspect,
                        f"a.{column} IS NOT NULL",
                        coded(f"a.{column}", scales.LIKERT, stored_as="value"),
                    )
                    for aspect, column in zip(EXPERT_ASPECTS, aspects, strict=True)
                ),
                ("comment", "a.comment <> ''", free("a.comment")),
            ],
            source=source_key,
            systems=f"{texts} ->> a.text_id::text",
            text_id="a.text_id",
            phase=_literal(raw, csv_text("expert")),
            **shared,
        )
    )
    statements.append(
        statement(
            source_judgement_query(study=study, known=lookups),
            ["participant_id", "source_id", "severity", "simplicity", "comment", *shared],
            [
                ("severity", "a.severity <> ''", coded("a.severity", scales.SEVERITY, stored_as="name")),
                (
                    "original_simplicity",
                    "a.simplicity IS NOT NULL",
                    coded("a.simplicity", scales.LIKERT, stored_as="value"),
                ),
                ("comment", "a.comment <> ''", free("a.comment")),
            ],
            source=source_key,
            phase=_literal(raw, csv_text("original")),
            **shared,
        )
    )
    statements.append(
        statement(
            attention_check_query(study=study, known=lookups),
            ["participant_id", "position", "answer", "passed", "answered_at"],
            phase=_literal(raw, csv_text("attention_check")),
            question=f"concat({_literal(raw, 'attention_check_')}, a.position)",
            value=_free_text(raw, "a.answer"),
            value_number="a.passed::integer",
            created_at="a.answered_at",
            updated_at="a.answered_at",
        )
    )
    # Background answers: one CSV row per answered question, the keys in code-point order as
    # rows._background_rows sorts them (the keys any participant of the study gave, read first).
    keys = sorted(_background_keys(study))
    statements.append(
        statement(
            background_query(study=study, known=lookups),
            ["participant_id", "background"],
            [
                (
                    key,
                    f"a.background ->> {_literal(raw, key)} <> ''",
                    free(f"(a.background ->> {_literal(raw, key)})"),
                )
                for key in keys
            ],
            phase=_literal(raw, csv_text("background")),
        )
        if keys
        else None
    )
    return [statement for statement in statements if statement]


def _background_keys(study: Study) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT jsonb_object_keys(background) FROM {Participant._meta.db_table}"
            " WHERE study_id = %s AND jsonb_typeof(background) = 'object'",
            [study.pk],
        )
        return [key for (key,) in cursor.fetchall()]


def _literal(raw, value: Any) -> str:
    return sql.Literal(value).as_string(raw)


def _joined(parts: Sequence[str], separator: str) -> list[str]:
    """`parts` with the literal `separator` between them."""
    joined = []
    for i, part in enumerate(parts):
        if i:
            joined.append(f"'{separator}'")
        joined.append(part)
    return joined


def _concat(raw, parts: Sequence[str]) -> str:
    """SQL concatenating `parts` (NULL as empty), neighbouring string literals merged into one."""
    merged: list[str] = []
    for part in parts:
        if merged and _is_plain_literal(part) and _is_plain_literal(merged[-1]):
            merged[-1] = _literal(raw, merged[-1][1:-1].replace("''", "'") + part[1:-1].replace("''", "'"))
        else:
            merged.append(part)
    return merged[0] if len(merged) == 1 and _is_plain_literal(merged[0]) else f"concat({', '.join(merged)})"


def _is_plain_literal(part: str) -> bool:
    return len(part) >= 2 and part[0] == part[-1] == "'" and "'" not in part[1:-1].replace("''", "")


def _free_text(raw, expression: str) -> str:
    """SQL for the CSV text of a text column, as `csv_text` writes it: formula-like text prefixed,
    then quoted when it holds a comma, a double quote, CR or LF; NULL for an empty value."""
    triggers = ", ".join(_literal(raw, trigger) for trigger in FORMULA_TRIGGERS)
    prefixed = (
        f"CASE WHEN left({expression}, 1) IN ({triggers})"
        f" THEN {_literal(raw, PREFIX)} || {expression} ELSE {expression} END"
    )
    special = _literal(raw, "[" + "".join(_QUOTE_WHEN) + "]")
    return (
        f"CASE WHEN {expression} ~ {special} THEN '\"' || replace({prefixed}, '\"', '\"\"') || '\"'"
        f" ELSE NULLIF({prefixed}, '') END"
    )


def _mapped(raw, expression: str, texts: dict[str, str]) -> str:
    """SQL for the CSV text of a text column whose usual values have their text in `texts`."""
    whens = " ".join(
        f"WHEN {_literal(raw, value)} THEN {_literal(raw, text)}" for value, text in texts.items()
    )
    return f"CASE {expression} {whens} ELSE {_free_text(raw, expression)} END"


def _jsonb(raw, mapping: dict[int, str]) -> str:
    """A lookup by id as a jsonb literal (keys are the ids as text)."""
    text = json.dumps({str(key): value for key, value in mapping.items()}, ensure_ascii=False)
    return _literal(raw, text) + "::jsonb"
