"""A lay panel's autosaves queue behind the item's row lock (PostgreSQL, real transactions, one
connection per thread). The autosave's first statement resolves the participant's token and locks
the item together (surveys/lay/steps.py, lay_panel_for_save); the answers are read after it, so an
autosave that waited compares with what the save before it committed: the last answer acknowledged
is the one stored, and a revision is kept for each change (never for a first save)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation.models import AnswerRevision, ItemAnswer, LayItem, Participant
from surveys.lay import assignment, panels
from tests.annotation.factories import build_study
from tests.surveys.lock_race import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks of PostgreSQL"),
]
SOME, MOST, ALL = "Some parts of it", "Most of it", "Completely"


def _first_item(slug: str) -> LayItem:
    study = build_study(slug=slug, n_sources=2)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    assignment.lay_survey_start(participant=participant)
    return LayItem.objects.filter(participant=participant).order_by("position").first()


def _understanding(item: LayItem) -> str:
    item = LayItem.objects.select_related("participant__study").get(pk=item.pk)
    return panels.lay_panel_state(item=item, panel="original").answers["understanding"]


def _while_held(item: LayItem, held_value: str, sent_value: str) -> int:
    """Save `held_value` in a transaction that keeps the item locked, send an autosave of
    `sent_value` meanwhile, check that it waits, release: the autosave's status."""
    statuses: list[int] = []

    def holder() -> None:
        panels.lay_panel_save(
            participant=Participant.objects.select_related("study").get(pk=item.participant_id),
            item_id=item.pk,
            panel="original",
            data={"understanding": held_value},
        )

    def autosave() -> None:
        url = reverse(
            "surveys:lay-panel",
            kwargs={"token": item.participant.token, "item_id": item.pk, "panel": "original"},
        )
        data = {"autosave": "1", "understanding": sent_value, "elapsed_ms": "700"}
        statuses.append(Client().post(url, data, HTTP_HX_REQUEST="true").status_code)

    race(holder, autosave, who="the autosave")
    return statuses[0]


def _revisions(item: LayItem) -> list:
    answer = ItemAnswer.objects.get(participant_id=item.participant_id, item_key="understanding")
    rows = AnswerRevision.objects.filter(answer_id=answer.pk).order_by("pk")
    return [row.previous["value"] for row in rows]


def test_an_autosave_that_waited_for_the_item_sees_the_save_before_it():
    item = _first_item("lay-lockstep")
    panels.lay_panel_save(
        participant=item.participant, item_id=item.pk, panel="original", data={"understanding": SOME}
    )
    before = ItemAnswer.objects.get(participant_id=item.participant_id, item_key="understanding").value
    # Held: SOME -> MOST; the autosave waiting meanwhile sends SOME again, a change from MOST.
    assert _while_held(item, MOST, SOME) == 200
    assert _understanding(item) == SOME
    changed = ItemAnswer.objects.get(participant_id=item.participant_id, item_key="understanding").value
    assert changed == before
    assert len(_revisions(item)) == 2  # SOME -> MOST, and MOST -> SOME


def test_two_first_saves_at_once_keep_the_later_one_and_one_revision():
    item = _first_item("lay-first-twice")
    assert _while_held(item, MOST, ALL) == 200
    assert _understanding(item) == ALL
    rows = ItemAnswer.objects.filter(participant_id=item.participant_id, item_key="understanding")
    assert rows.count() == 1
    assert len(_revisions(item)) == 1  # the first save made none; the change from MOST one
