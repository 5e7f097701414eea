"""A cache outage (Redis stopped or restarting) degrades, never 500s: with the cache pointed at a port
where nothing listens, every researcher page serves the stored snapshot and every participant page
works, and each failed cache call leaves a log line. (The shared Redis is never stopped: the cache
is moved instead.)"""

from __future__ import annotations

import logging
import socket
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotation.models import Participant
from evaluation import services
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]

RESEARCHER_PAGES = (
    "evaluation:study-detail",
    "evaluation:study-freshness",
    "evaluation:study-progress-section",
    "evaluation:study-counts",
    "evaluation:study-metrics",
    "evaluation:study-progress",
    "evaluation:study-correlations",
    "evaluation:study-analysis",
    "evaluation:study-metrics-csv",
    "evaluation:study-report",
    "evaluation:study-plan",
)


def closed_port() -> int:
    """A port where nothing listens (bound then released; nothing else binds it within the test)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cache_down(settings):
    # readers go through the cache, as in production
    settings.RADLAY_ANALYSIS = replace(settings.RADLAY_ANALYSIS, check_seconds=10)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 1},
        }
    }
    with pytest.raises(Exception, match="(?i)connect"):
        cache.get("anything")  # the cache really is unreachable


@pytest.mark.heavy
def test_no_page_answers_500_while_the_cache_is_down(client, cache_down, caplog):
    study = build_answered_study(slug="outage")
    snapshot = services.analysis_snapshot_compute_here(study=study)
    user = get_user_model().objects.create_user("ada", password="pw")
    study.researchers.add(user)
    client.force_login(user)
    caplog.set_level(logging.WARNING, logger="evaluation.services")

    for name in RESEARCHER_PAGES:
        response = client.get(reverse(name, args=[study.slug]))
        assert response.status_code in (200, 302), (name, response.status_code)
    for file_format in ("csv", "json", "xlsx"):
        response = client.get(reverse("evaluation:study-export", args=[study.slug, file_format]))
        assert response.status_code == 200, file_format
    dashboard = client.get(reverse("evaluation:study-detail", args=[study.slug])).content.decode()
    assert f"{snapshot.n_answers} answers" in dashboard  # the stored snapshot, served as it is
    api = client.get(reverse("api:analysis", args=[study.slug]))
    assert api.status_code == 200 and api.json()["snapshot"]["n_answers"] == snapshot.n_answers
    # "recompute now" and ?fresh=1 recompute here (the tasks run where they are sent in the suite).
    assert client.post(reverse("evaluation:study-detail", args=[study.slug])).status_code == 302
    assert client.get(reverse("api:analysis", args=[study.slug]), {"fresh": "1"}).status_code == 200
    assert "the cache is unreachable" in caplog.text

    # Participants: every existing one's pages, and a new layperson joining.
    for participant in Participant.objects.filter(study=study):
        visitor = Client()
        response = visitor.get(reverse("surveys:entry", args=[participant.token]), follow=True)
        assert response.status_code == 200, (participant.role, response.redirect_chain)
    join = reverse("surveys:lay-join", kwargs={"slug": study.slug})
    newcomer = Client()
    response = newcomer.get(join, {"PROLIFIC_PID": "outage01", "STUDY_ID": "s"}, follow=True)
    assert response.status_code == 200
