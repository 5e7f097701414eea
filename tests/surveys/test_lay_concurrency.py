"""Joining at the same moment (PostgreSQL, real transactions, one connection per thread): every
one of 50 simultaneous consents through the recruitment link is enrolled with its own pseudonym,
simultaneous first requests with one PID make one participant, newcomers starting together share
the Latin-square rows out evenly, and a double click on Begin makes one set of items."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation.models import LayItem, Participant
from surveys.lay import assignment
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db(transaction=True)


def _simultaneously(n: int, work) -> list:
    """Run work(i) in n threads released together; each thread closes its own connection."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except Exception as exc:  # reported by the assertion below, with the thread's error
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _join_url(study, pid: str) -> str:
    return reverse("surveys:lay-join", kwargs={"slug": study.slug}) + f"?PROLIFIC_PID={pid}&STUDY_ID=s"


@pytest.mark.heavy
def test_fifty_simultaneous_joins_are_all_enrolled():
    study = build_study(slug="crowd", n_sources=2)
    statuses = _simultaneously(
        50, lambda i: Client().post(_join_url(study, f"PID{i:03d}"), {"choice": "accept"}).status_code
    )
    assert statuses == [302] * 50
    participants = Participant.objects.filter(study=study)
    assert participants.count() == 50
    assert sorted(participants.values_list("pseudonym", flat=True)) == [f"L{n:03d}" for n in range(1, 51)]
    assert not participants.filter(consented_at__isnull=True).exists()


def test_simultaneous_first_requests_with_one_pid_make_one_participant():
    study = build_study(slug="twice", n_sources=2)
    statuses = _simultaneously(
        10, lambda i: Client().post(_join_url(study, "SAMEPID"), {"choice": "accept"}).status_code
    )
    assert statuses == [302] * 10
    assert Participant.objects.filter(study=study).count() == 1


def _consented(study, n: int) -> list[Participant]:
    return [
        participant_services.participant_consent(
            participant=participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON),
            accepted=True,
        )
        for _ in range(n)
    ]


def test_simultaneous_starts_share_the_rows_out_evenly():
    """Eight newcomers press Begin at once on a four-system study: the handout (under the study's
    row lock) gives each row to two of them, and each gets their own items for their row."""
    study = build_study(slug="launch", n_sources=4)
    participants = _consented(study, 8)
    results = _simultaneously(8, lambda i: assignment.lay_survey_start(participant=participants[i]))
    assert all(isinstance(r, list) and len(r) == 4 for r in results), results
    rows = sorted(Participant.objects.filter(study=study).values_list("latin_square_row", flat=True))
    assert rows == [0, 0, 1, 1, 2, 2, 3, 3]
    assert LayItem.objects.filter(participant__study=study).count() == 8 * 4


def test_a_double_click_on_begin_makes_one_set_of_items():
    study = build_study(slug="double", n_sources=4)
    (participant,) = _consented(study, 1)
    results = _simultaneously(
        4, lambda i: [item.pk for item in assignment.lay_survey_start(participant=participant)]
    )
    assert all(r == results[0] for r in results), results
    assert LayItem.objects.filter(participant=participant).count() == 4
