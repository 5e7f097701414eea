"""The embedded default (SQLite) under concurrent autosaves: every answer is stored, none gets
"database is locked". Runs in a subprocess with the local settings on a fresh SQLite file, because
the test suite itself runs on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.annotation.sqlite_run import run_on_sqlite

SCRIPT = r"""
import json, sys, threading
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

call_command("migrate", verbosity=0)
from annotation import participant_services
from surveys.radiologist import assignment
from annotation.answer_selectors import expert_ratings
from annotation.models import Participant
from tests.annotation.factories import build_study

study = build_study(slug="sqlite", n_sources=3, systems=("a", "b", "c"))
raters = [
    participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST) for _ in range(4)
]
rater_pages = {r.pk: assignment.expert_items_ensure(participant=r) for r in raters}
for r in raters:
    participant_services.participant_touch(participant=r)
journal = connection.cursor().execute("PRAGMA journal_mode").fetchone()[0]
statuses, errors = [], []

def rater(participant, items):
    client = Client()
    try:
        for item in items:
            url = reverse("surveys:expert-page", args=[participant.token, item.pk])
            for label in "ABC":
                for aspect in ("correctness", "completeness", "hallucination", "structure", "simplicity"):
                    response = client.post(url, {f"{label}-{aspect}": "3", "elapsed_ms": "50"},
                                           HTTP_HX_REQUEST="true")
                    statuses.append(response.status_code)
            statuses.append(client.get(url).status_code)
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connection.close()

threads = [threading.Thread(target=rater, args=(r, rater_pages[r.pk])) for r in raters]
for t in threads: t.start()
for t in threads: t.join()
stored = sum(1 for r in expert_ratings() if {r.correctness, r.completeness, r.hallucination,
                                            r.structure, r.simplicity} == {3})
print(json.dumps({"journal": journal, "mode": settings.DATABASES["default"]["OPTIONS"]["transaction_mode"],
                  "statuses": sorted(set(statuses)), "requests": len(statuses), "errors": errors,
                  "stored": stored}))
"""


@pytest.mark.heavy
def test_concurrent_autosaves_on_sqlite_all_land(tmp_path):
    outcome = run_on_sqlite(SCRIPT, tmp_path)
    assert outcome["journal"] == "wal" and outcome["mode"] == "IMMEDIATE"
    assert outcome["errors"] == [] and outcome["statuses"] == [200]
    assert outcome["requests"] == 4 * 3 * (15 + 1)
    assert outcome["stored"] == 4 * 3 * 3  # every rating row of every rater, every value given
