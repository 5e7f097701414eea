"""Login lockout, rate limits on the open recruitment link and consent, the cap on open
enrolments and the API's throttling: each switched on here (the suite runs with them off) and shown
to stop the request that goes over it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from annotation import services
from annotation.models import ConsentRefusal, Participant
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

LOGINS = [
    ("/dashboard/login/", "username", "password"),
    ("/radiologist/login/", "username", "password"),
    ("/admin/login/", "username", "password"),
]


@pytest.fixture(autouse=True)
def _fresh_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def lockout(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    return get_user_model().objects.create_user("ada", password="right-pw-123", is_staff=True)


@pytest.mark.parametrize(("url", "user_field", "password_field"), LOGINS)
def test_login_locks_out_after_the_failure_limit(client, lockout, url, user_field, password_field):
    statuses = [client.post(url, {user_field: "ada", password_field: "wrong"}).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]  # the form with its error, then locked at the limit
    response = client.post(url, {user_field: "ada", password_field: "right-pw-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another username from the same address is not locked.
    get_user_model().objects.create_user("bob", password="bob-pw-123", is_staff=True)
    assert client.post(url, {user_field: "bob", password_field: "bob-pw-123"}).status_code == 302


def test_login_below_the_limit_still_works(client, lockout):
    for _ in range(2):
        client.post("/dashboard/login/", {"username": "ada", "password": "wrong"})
    assert (
        client.post("/dashboard/login/", {"username": "ada", "password": "right-pw-123"}).status_code == 302
    )


def test_api_token_locks_out(lockout):
    api = APIClient()
    for _ in range(3):
        assert api.post("/api/token/", {"username": "ada", "password": "wrong"}).status_code == 400
    response = api.post("/api/token/", {"username": "ada", "password": "right-pw-123"})
    assert response.status_code in (400, 429)
    assert "token" not in response.json()
    assert not Token.objects.filter(user=lockout).exists()


@pytest.fixture
def open_study(db):
    return build_study(slug="recruit", n_sources=2)


def _join(client, pid: str, choice: str = "accept", ip: str = "10.0.0.1"):
    return client.post(f"/join/recruit/?PROLIFIC_PID={pid}", {"choice": choice}, REMOTE_ADDR=ip)


def test_join_is_limited_per_ip(client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_JOIN_RATE_PER_IP = "3/h"
    statuses = [_join(client, f"PID{i}", choice="decline").status_code for i in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    assert ConsentRefusal.objects.count() == 3
    assert _join(client, "PIDX", ip="10.0.0.2").status_code == 302  # another address is not limited
    response = _join(client, "PIDY")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


def test_join_is_limited_per_study(client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_JOIN_RATE_PER_IP = ""
    settings.RADLAY_JOIN_RATE_PER_STUDY = "4/h"
    statuses = [_join(client, f"PID{i}", ip=f"10.0.1.{i}").status_code for i in range(6)]
    assert statuses == [302, 302, 302, 302, 429, 429]
    assert Participant.objects.filter(study=open_study).count() == 4


def test_open_enrolments_are_capped(client, open_study, settings):
    settings.RADLAY_MAX_OPEN_ENROLMENTS = 2
    assert [_join(client, f"PID{i}", ip=f"10.0.2.{i}").status_code for i in range(3)] == [302, 302, 503]
    assert Participant.objects.filter(study=open_study).count() == 2
    assert _join(client, "PID0", ip="10.0.2.9").status_code == 302  # a known participant gets back in
    Participant.objects.filter(external_id="PID0").update(completed_at="2026-01-01T00:00:00Z")
    assert _join(client, "PID2", ip="10.0.2.2").status_code == 302  # a place freed up


def test_consent_is_limited_per_ip(client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_CONSENT_RATE_PER_IP = "2/h"
    invited = services.participants_invite(study=open_study, role=Participant.Role.LAYPERSON, count=3)
    statuses = [
        client.post(f"/l/{p.token}/consent/", {"choice": "decline"}, REMOTE_ADDR="10.0.3.1").status_code
        for p in invited
    ]
    assert statuses[:2] == [200, 200] and statuses[2] == 429
    assert Participant.objects.filter(pk=invited[2].pk, declined_at__isnull=True).exists()


def test_api_is_throttled(monkeypatch):
    monkeypatch.setattr(APIView, "throttle_classes", [AnonRateThrottle, UserRateThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min", "user": "3/min"})
    user = get_user_model().objects.create_user("ada", password="pw")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert [api.get("/api/studies/").status_code for _ in range(4)] == [200, 200, 200, 429]
    anonymous = APIClient()
    assert [anonymous.get("/api/schema/").status_code for _ in range(3)] == [200, 200, 429]


def test_api_token_is_throttled(monkeypatch):
    """DRF's token view opts out of throttling; radlay's URL gives it the API's throttles."""
    from django.urls import resolve
    from rest_framework.settings import api_settings

    view = resolve("/api/token/").func
    assert view.view_initkwargs["throttle_classes"] == api_settings.DEFAULT_THROTTLE_CLASSES
    monkeypatch.setitem(view.view_initkwargs, "throttle_classes", [AnonRateThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min"})
    client = APIClient()
    statuses = [client.post("/api/token/", {"username": "x", "password": "y"}).status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
