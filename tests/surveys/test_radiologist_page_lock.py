"""A radiologist page's saves queue behind the page's row lock (PostgreSQL, real transactions, one
connection per thread), and the save that waited compares with what the save before it committed,
not with what the page held when it started waiting: two saves of the original's severity, the
second sent back to the value the page had before the first, end with the second's value (the
last answer acknowledged is the one stored)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation.models import ExpertItem, ItemAnswer, Participant
from surveys.radiologist import pages
from tests.annotation.factories import build_study
from tests.surveys.lock_race import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks of PostgreSQL"),
]


def _severity(participant: Participant) -> int:
    return ItemAnswer.objects.get(participant=participant, item_key="severity", control__isnull=True).value


def _on_the_first_page(study) -> tuple[Client, Participant, ExpertItem]:
    """A radiologist of `study` who took the link and began: their client, them and their page."""
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client = Client()
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return client, participant, ExpertItem.objects.get(participant=participant)


def test_a_save_that_waited_for_the_page_sees_the_save_before_it():
    study = build_study(slug="lockstep", n_sources=1)
    client, participant, item = _on_the_first_page(study)
    pages.expert_page_save(participant=participant, item=item, data={"original-severity": "Mild"})
    mild = _severity(participant)

    def first() -> None:
        pages.expert_page_save(
            participant=Participant.objects.get(pk=participant.pk),
            item=ExpertItem.objects.get(pk=item.pk),
            data={"original-severity": "Serious"},
        )

    def second() -> None:
        pages.expert_page_save(
            participant=Participant.objects.get(pk=participant.pk),
            item=ExpertItem.objects.get(pk=item.pk),
            data={"original-severity": "Mild"},
        )

    race(first, second, who="the second save")
    assert _severity(participant) == mild
    assert pages.expert_page_get(item=ExpertItem.objects.get(pk=item.pk)).severity.value == "Mild"


def test_an_autosave_that_waited_for_the_page_sees_the_save_before_it():
    """The same through the autosave's own path, whose first statement resolves the token and locks
    the page together (annotation/access.py, access_expert_page_locked): the request waits for the
    page, then reads the answers the save before it committed, and both saves' times are kept."""
    study = build_study(slug="lockstep-http", n_sources=1)
    client, participant, item = _on_the_first_page(study)
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    assert client.post(url, {"original-severity": "Mild"}, HTTP_HX_REQUEST="true").status_code == 200
    mild = _severity(participant)
    time_before = ExpertItem.objects.get(pk=item.pk).time_spent_ms

    statuses: list[int] = []

    def first() -> None:
        pages.expert_page_save(
            participant=Participant.objects.get(pk=participant.pk),
            item=ExpertItem.objects.get(pk=item.pk),
            data={"original-severity": "Serious"},
            time_spent_ms=300,
        )

    def second() -> None:
        data = {"original-severity": "Mild", "elapsed_ms": "700"}
        statuses.append(Client().post(url, data, HTTP_HX_REQUEST="true").status_code)

    race(first, second, who="the autosave")
    assert statuses == [200]
    assert _severity(participant) == mild
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == time_before + 300 + 700


def test_a_refused_save_adds_no_time_to_the_page():
    study = build_study(slug="lockstep-refused", n_sources=1)
    client, participant, item = _on_the_first_page(study)
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    refused = client.post(url, {"original-severity": "Fatal", "elapsed_ms": "900"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == 0
    assert not ItemAnswer.objects.filter(participant=participant).exists()
    # The plain submit: the page with what was refused, read once the save was rolled back.
    data = {"original-severity": "Fatal", "A-correctness": "4", "elapsed_ms": "900", "action": "next"}
    refused = client.post(url, data)
    assert refused.status_code == 400 and "Nothing on this page was saved" in refused.content.decode()
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == 0
    assert not ItemAnswer.objects.filter(participant=participant).exists()
    study.status = study.Status.CLOSED
    study.save(update_fields=["status"])
    closed = client.post(url, {"original-severity": "Mild", "elapsed_ms": "900"}, HTTP_HX_REQUEST="true")
    assert closed.status_code == 403
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == 0
    assert not ItemAnswer.objects.filter(participant=participant).exists()
