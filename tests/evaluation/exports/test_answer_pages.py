"""Keyset pages of the export's rows (evaluation/exports/keyset_pages.py): walked forward or backward
they are `answer_rows`, in order, whatever the page size; a page costs a fixed number of queries
wherever it is; rows written before a page do not shift it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.answer_store import Target, answers_upsert, flow_instrument_id
from annotation.models import ItemAnswer, LayItem
from evaluation.exports.keyset_pages import answer_page
from evaluation.exports.rows import answer_rows
from tests.evaluation.exports.test_export_copy import study  # noqa: F401  (every kind of answer)


def _forward(of, limit):
    pages = [answer_page(study=of, limit=limit)]
    while pages[-1].next is not None:
        pages.append(answer_page(study=of, limit=limit, start=pages[-1].next))
    return pages


@pytest.mark.heavy
@pytest.mark.parametrize("limit", [1, 2, 5, 13, 1000])
def test_pages_walked_forward_are_the_export(study, limit):  # noqa: F811
    expected = list(answer_rows(study=study))
    assert len(expected) > 40
    pages = _forward(study, limit)
    assert [row for page in pages for row in page.rows] == expected
    assert all(len(page.rows) == limit for page in pages[:-1])
    assert pages[0].previous is None and all(page.previous is not None for page in pages[1:])


@pytest.mark.heavy
@pytest.mark.parametrize("limit", [1, 4, 13])
def test_pages_walked_backward_from_the_end_are_the_same_pages(study, limit):  # noqa: F811
    forward = _forward(study, limit)
    page = forward[-1]
    for expected in reversed(forward[:-1]):
        start = page.previous
        page = answer_page(study=study, limit=limit, start=start, before=True)
        assert page.rows == expected.rows
        assert page.next == start
    assert page.previous is None


def test_a_page_is_not_shifted_by_answers_written_before_it(study):  # noqa: F811
    first = answer_page(study=study, limit=7)
    second = answer_page(study=study, limit=7, start=first.next)
    # The first item's answers, before the second page, replaced by fewer rows.
    item = LayItem.objects.filter(participant__study=study).order_by("participant_id", "position").first()
    ItemAnswer.objects.filter(participant_id=item.participant_id, source_id=item.source_id).delete()
    answers_upsert(  # written to the store directly: panel 1 is locked for the survey
        participant=item.participant_id,
        instrument_id=flow_instrument_id(study=study, flow="lay"),
        target=Target(source_id=item.source_id, phase="original"),
        values={"understanding": (4, 4.0)},  # Completely
    )
    assert list(answer_rows(study=study))[7:14] != second.rows  # what an offset would now show
    assert answer_page(study=study, limit=7, start=first.next).rows == second.rows


@pytest.mark.heavy
def test_a_page_takes_the_same_few_queries_wherever_it_is(study):  # noqa: F811
    """Four queries for its lookups (participants, sources, systems, the texts' systems) and one
    for the stored answers of each section it reads (a page of 3 rows reads one, or two where
    it reaches a section's end), however many rows come before it."""
    pages = _forward(study, 3)
    starts = [None, *(page.next for page in pages[:-1])]
    counts = []
    for start, page in zip(starts, pages, strict=True):
        with CaptureQueriesContext(connection) as queries:
            assert answer_page(study=study, limit=3, start=start).rows == page.rows
        counts.append(len(queries))
    assert len(counts) > 15 and counts[0] == 5 and max(counts) <= 6  # 4: no texts to look up
    assert counts[len(counts) // 2 :].count(5) >= 4  # deep in the export as at its start
    with CaptureQueriesContext(connection) as queries:
        answer_page(study=study, limit=5000)
    # every section once (the protocol's eight, the item answers', the controls'), one set of lookups
    assert len(queries) == 4 + 8 + 2
