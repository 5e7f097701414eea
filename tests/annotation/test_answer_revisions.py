"""Answers keep their revision history: a participant who changes an answer leaves the previous
value and its time in AnswerRevision, written by the same save; the first save and a save that
changes nothing write no revision and cost no extra statement (the survey path's budget)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import participant_services
from annotation.answer_selectors import LayAnswerRow
from annotation.models import AnswerRevision, ItemAnswer, Simplification, SimplificationText
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db
PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}


@pytest.fixture
def lay_item():
    study = build_study(slug="rev", n_sources=1)
    participant = participant_services.participant_create(study=study, role="layperson")
    simplification = (
        Simplification.objects.filter(source__study=study).select_related("source", "system").first()
    )
    return lay_answers.lay_item_create(
        participant=participant,
        source=simplification.source,
        position=0,
        shown_text=simplification.shown_text,
        assigned_system=simplification.system,
    )


def _save(item, given) -> tuple[LayAnswerRow, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        answer = lay_answers.lay_answer_save(item=item, phase="original", answers=given, time_spent_ms=10)
    return answer, [q["sql"] for q in queries.captured_queries]


def _row(item, key: str) -> ItemAnswer:
    return ItemAnswer.objects.get(
        participant_id=item.participant_id, source_id=item.source_id, phase="original", item_key=key
    )


def test_a_changed_lay_answer_keeps_its_previous_value_for_one_insert(lay_item):
    _first, first_sql = _save(lay_item, PANEL1)
    saved_at = _row(lay_item, "understanding").updated_at
    _, same_sql = _save(lay_item, PANEL1)
    assert not AnswerRevision.objects.exists()
    _, changed_sql = _save(lay_item, {**PANEL1, "understanding": "Completely"})
    # One statement more than a save that changes nothing, and it is the revision's INSERT.
    assert len(changed_sql) == len(same_sql) + 1
    extra = [sql for sql in changed_sql if "answerrevision" in sql]
    assert len(extra) == 1 and extra[0].startswith("INSERT")
    assert not any("answerrevision" in sql for sql in first_sql + same_sql)
    revision = AnswerRevision.objects.get()
    understanding = _row(lay_item, "understanding")
    # The item's value: the level's code (Some parts of it = 2).
    assert revision.previous == {"value": 2}
    assert revision.answer_type == "annotation.ItemAnswer" and revision.answer_id == understanding.pk
    assert revision.participant_id == lay_item.participant_id
    # The previous value's time is when it was saved (the second, unchanged save), not the first.
    assert revision.previous_at >= saved_at
    assert revision.revised_at == understanding.updated_at
    assert answers.lay_answer(lay_item, "original").understanding == "Completely"


def test_filling_in_a_field_for_the_first_time_is_not_a_revision(lay_item):
    _save(lay_item, {"understanding": "Some parts of it"})
    _save(lay_item, {"confidence": "With low confidence"})
    assert not AnswerRevision.objects.exists()
    _save(lay_item, {"understanding": "Not at all", "confidence": "With high confidence"})
    revisions = {r.answer_id: r.previous for r in AnswerRevision.objects.all()}
    assert revisions == {
        _row(lay_item, "understanding").pk: {"value": 2},
        _row(lay_item, "confidence").pk: {"value": 2},
    }


def test_a_changed_expert_rating_read_under_the_page_lock_keeps_its_previous_value(lay_item):
    study = lay_item.participant.study
    radiologist = participant_services.participant_create(study=study, role="radiologist")
    text = SimplificationText.objects.filter(source__study=study).first()
    expert_answers.expert_rating_save(participant=radiologist, shown_text=text, scores={"correctness": 4})

    def current():
        return {a.item_key: a for a in ItemAnswer.objects.filter(participant=radiologist, shown_text=text)}

    read = current()
    with CaptureQueriesContext(connection) as same:
        expert_answers.expert_rating_save(
            participant=radiologist, shown_text=text, scores={"correctness": 4}, current=read
        )
    read = current()
    with CaptureQueriesContext(connection) as changed:
        expert_answers.expert_rating_save(
            participant=radiologist, shown_text=text, scores={"correctness": 2}, current=read
        )
    # The same answer again writes nothing; the change is its UPDATE and the revision's INSERT.
    assert (len(same.captured_queries), len(changed.captured_queries)) == (0, 2)
    revision = AnswerRevision.objects.get()
    assert revision.previous == {"value": 4} and revision.participant_id == radiologist.pk
    assert revision.answer_type == "annotation.ItemAnswer" and revision.answer_id == read["correctness"].pk
    # Without the caller's read (the locked path) the service reads the row itself.
    expert_answers.expert_rating_save(participant=radiologist, shown_text=text, scores={"correctness": 5})
    assert list(AnswerRevision.objects.order_by("id").values_list("previous", flat=True)) == [
        {"value": 4},
        {"value": 2},
    ]


SQLITE_SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from annotation import participant_services
from surveys.lay import services as lay_answers
from annotation.models import AnswerRevision, Simplification
from tests.annotation.factories import build_study

study = build_study(slug="rev", n_sources=1)
participant = participant_services.participant_create(study=study, role="layperson")
s = Simplification.objects.filter(source__study=study).select_related("source", "system").first()
item = lay_answers.lay_item_create(
    participant=participant, source=s.source, position=0, shown_text=s.shown_text, assigned_system=s.system
)
for value in ("Some parts of it", "Some parts of it", "Completely"):
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": value})
print(json.dumps({"previous": list(AnswerRevision.objects.values_list("previous", flat=True))}))
"""


@pytest.mark.heavy
def test_the_embedded_sqlite_default_keeps_revisions_too(tmp_path):
    from tests.annotation.sqlite_run import run_on_sqlite

    assert run_on_sqlite(SQLITE_SCRIPT, tmp_path) == {"previous": [{"value": 2}]}
