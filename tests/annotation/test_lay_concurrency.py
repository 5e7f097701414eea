"""Joining at the same moment (PostgreSQL, real transactions, one connection per thread): every
one of 50 simultaneous consents through the recruitment link is enrolled with its own pseudonym,
and simultaneous first requests with one PID make one participant."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation.models import Participant
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
    return reverse("annotation:lay-join", kwargs={"slug": study.slug}) + f"?PROLIFIC_PID={pid}&STUDY_ID=s"


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
