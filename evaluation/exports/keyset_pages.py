"""The export's rows a page at a time, by position rather than by count (keyset pagination).

A row's position is its section (answer table, in export order), the sort key of its stored
answer in that section (unique: e.g. participant, item position and phase for a lay answer) and
its index among the rows that stored answer can have (question, aspect). Positions order the rows
exactly as `answer_rows` yields them, so a page starting at a position reads from there with
`(keys) >= (…)` on the section's sorted query: the cost of a page does not grow with how many rows
come before it, and rows written or deleted elsewhere never shift a page onto rows already seen.
A page's lookups (participants, sources, texts) cover only the ids it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db.models import BooleanField, F, Func, QuerySet, Value

from annotation.models import Study
from evaluation.exports.rows import AnswerRow, answer_lookups_of, chosen_text_ids
from evaluation.exports.study_answers import ANSWER_SECTIONS as SECTIONS

# The index of a position that comes after every row of its stored answer.
_AFTER = 1 << 30


class AnswerPosition(NamedTuple):
    section: int
    key: tuple[Any, ...]
    n: int


class AnswerPage(NamedTuple):
    rows: list[AnswerRow]
    next: AnswerPosition | None  # where the next page starts
    previous: AnswerPosition | None  # the previous page ends before this position


class _RowCompare(Func):
    """`(a, b, …) op (x, y, …)`: compared in order, as PostgreSQL and SQLite do with row values;
    an index on the leading columns serves it."""

    output_field = BooleanField()

    def __init__(self, fields: Sequence[str], op: str, values: Sequence[Any]) -> None:
        super().__init__(*(F(name) for name in fields), *(Value(value) for value in values))
        self.op = op
        self.width = len(fields)

    def as_sql(self, compiler, connection, **extra):
        parts, params = [], []
        for expression in self.get_source_expressions():
            text, more = compiler.compile(expression)
            parts.append(text)
            params.extend(more)
        left, right = ", ".join(parts[: self.width]), ", ".join(parts[self.width :])
        return f"({left}) {self.op} ({right})", params


def answer_page(
    *, study: Study, limit: int, start: AnswerPosition | None = None, before: bool = False
) -> AnswerPage:
    """`limit` rows from `start` on (from the first row without it), or with `before` the `limit`
    rows before `start`."""
    if before and start is not None:
        found = _read(study, start, limit + 1, backward=True)
        rows = [row for _, row in reversed(found[:limit])]
        first = found[min(limit, len(found)) - 1][0] if found else start
        return AnswerPage(rows, start, first if len(found) > limit else None)
    found = _read(study, start or AnswerPosition(0, (), 0), limit + 1, backward=False)
    return AnswerPage(
        [row for _, row in found[:limit]], found[limit][0] if len(found) > limit else None, start
    )


def _read(
    study: Study, start: AnswerPosition, wanted: int, *, backward: bool
) -> list[tuple[AnswerPosition, AnswerRow]]:
    """Up to `wanted` (position, row) from `start` (included) on, or before it (excluded) in
    reverse order."""
    found: list[tuple[AnswerPosition, AnswerRow]] = []
    at: AnswerPosition | None = start
    while at is not None and len(found) < wanted:
        batch, at = _stored(study, at, wanted - len(found), backward=backward)
        if not batch:
            break
        known = answer_lookups_of(
            study=study,
            participants={values[0] for _, values, _ in batch},
            sources={values[SECTIONS[s].source_at] for s, values, _ in batch if SECTIONS[s].source_at},
            texts={
                *(
                    values[at]
                    for s, values, _ in batch
                    for at in (SECTIONS[s].text_at, SECTIONS[s].reference_at)
                    if at and values[at]
                ),
                *(
                    text_id
                    for s, values, _ in batch
                    if (chosen := SECTIONS[s].chosen_at) is not None
                    for text_id in chosen_text_ids(values[chosen])
                ),
            },
        )
        for s, values, key in batch:
            if values[0] not in known.people or (
                SECTIONS[s].source_at and values[SECTIONS[s].source_at] not in known.sources
            ):
                continue  # deleted since the stored answer was read
            spread = [
                (AnswerPosition(s, key, n), row)
                for _, n, row in SECTIONS[s].spread([values], known, study.slug)
            ]
            if backward:
                found += [(position, row) for position, row in reversed(spread) if position < start]
            else:
                found += [(position, row) for position, row in spread if position >= start]
            if len(found) >= wanted:  # the batch holds more stored answers than rows are wanted
                break
    return found[:wanted]


def _stored(
    study: Study, at: AnswerPosition, wanted: int, *, backward: bool
) -> tuple[list[tuple[int, tuple[Any, ...], tuple[Any, ...]]], AnswerPosition | None]:
    """Up to `wanted` stored answers (section, values, key) holding the rows from position `at` on
    (backward: before it), crossing into the following (preceding) sections as needed, and the
    position to go on from (None: no more)."""
    batch: list[tuple[int, tuple[Any, ...], tuple[Any, ...]]] = []
    section, key = at.section, at.key
    # Whether the stored answer at `key` can hold rows of the page.
    inclusive = at.n < _AFTER if not backward else at.n > 0
    while 0 <= section < len(SECTIONS) and len(batch) < wanted:
        query = SECTIONS[section].query(study, None)
        width = len(query.queryset.query.order_by)
        queryset = _sorted(query.values_with_order(), key, backward=backward, inclusive=inclusive)
        batch += [(section, values, tuple(values[-width:])) for values in queryset[: wanted - len(batch)]]
        if len(batch) == wanted:
            last = batch[-1]
            return batch, AnswerPosition(last[0], last[2], 0 if backward else _AFTER)
        section, key = (section - 1, ()) if backward else (section + 1, ())
    return batch, None


def _sorted(queryset: QuerySet, key: tuple[Any, ...], *, backward: bool, inclusive: bool) -> QuerySet:
    """`queryset` (its rows sorted by their keys) from `key` on, or down from it with `backward`,
    in that direction; the row at `key` itself only when `inclusive`."""
    keys = list(queryset.query.order_by)
    if backward:
        queryset = queryset.order_by(*(F(name).desc() for name in keys))
    if not key:
        return queryset
    op = ("<" if backward else ">") + ("=" if inclusive else "")
    queryset = queryset.filter(_RowCompare(keys, op, key))
    if len(keys) > 1:  # the leading keys alone: what an index on them can start from
        queryset = queryset.filter(_RowCompare(keys[:-1], op[0] + "=", key[:-1]))
    return queryset


def position_of(*, study: Study, section: Any, key: Any, n: Any) -> AnswerPosition:
    """The position with these parts, checked (ValueError): a section of the export, a sort key of
    its width made of integers (64-bit) and text, and an index."""
    if not (isinstance(section, int) and 0 <= section < len(SECTIONS)):
        raise ValueError("no such section")
    if not isinstance(key, list | tuple) or len(key) not in (0, _key_width(study, section)):
        raise ValueError("not a key of its section")
    for part in key:
        if not (isinstance(part, str) or (type(part) is int and -(2**63) <= part < 2**63)):
            raise ValueError("not a key of its section")
    if not (type(n) is int and 0 <= n <= _AFTER):
        raise ValueError("no such index")
    return AnswerPosition(section, tuple(key), n)


def _key_width(study: Study, section: int) -> int:
    return len(SECTIONS[section].query(study, None).queryset.query.order_by)
