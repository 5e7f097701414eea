"""Login lockout, rate limits on the open recruitment link and consent, the cap on open
enrolments and the API's throttling: each switched on here (the suite runs with them off) and shown
to stop the request that goes over it."""

from __future__ import annotations

import logging
import socket
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from annotation import participant_services
from annotation.models import ConsentRefusal, Participant
from config.request_limits import CACHE_ERRORS, AnonThrottle, UserThrottle, client_ip
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
    statuses = [
        api.post("/api/token/", {"username": "ada", "password": "wrong"}).status_code for _ in range(3)
    ]
    assert statuses == [400, 400, 429]  # as the login pages: refused, then locked at the limit
    response = api.post("/api/token/", {"username": "ada", "password": "right-pw-123"})
    assert response.status_code == 429
    assert "token" not in response.json() and "Too many failed logins" in response.json()["detail"]
    assert not Token.objects.filter(user=lockout).exists()


@pytest.fixture
def open_study(db):
    return build_study(slug="recruit", n_sources=2)


def _join(client, pid: str, choice: str = "accept", ip: str = "10.0.0.1"):
    url = f"/join/recruit/?PROLIFIC_PID={pid}&STUDY_ID=recruit&SESSION_ID=S-{pid}"
    return client.post(url, {"choice": choice}, REMOTE_ADDR=ip)


def test_join_is_limited_per_ip(client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_RATE_LIMITS = replace(settings.RADLAY_RATE_LIMITS, join_ip="3/h")
    statuses = [_join(client, f"PID{i}", choice="decline").status_code for i in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    assert ConsentRefusal.objects.count() == 3
    assert _join(client, "PIDX", ip="10.0.0.2").status_code == 302  # another address is not limited
    response = _join(client, "PIDY")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


def test_join_is_limited_per_study(client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_RATE_LIMITS = replace(settings.RADLAY_RATE_LIMITS, join_ip="", join_study="4/h")
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
    settings.RADLAY_RATE_LIMITS = replace(settings.RADLAY_RATE_LIMITS, consent_ip="2/h")
    invited = participant_services.participants_invite(
        study=open_study, role=Participant.Role.LAYPERSON, count=3
    )
    statuses = [
        client.post(f"/l/{p.token}/consent/", {"choice": "decline"}, REMOTE_ADDR="10.0.3.1").status_code
        for p in invited
    ]
    assert statuses[:2] == [200, 200] and statuses[2] == 429
    assert Participant.objects.filter(pk=invited[2].pk, declined_at__isnull=True).exists()


def test_api_is_throttled(monkeypatch):
    monkeypatch.setattr(APIView, "throttle_classes", [AnonThrottle, UserThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min", "user": "3/min"})
    user = get_user_model().objects.create_user("ada", password="pw")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert [api.get("/api/studies/").status_code for _ in range(4)] == [200, 200, 200, 429]
    anonymous = APIClient()
    assert [anonymous.get("/api/schema/").status_code for _ in range(3)] == [200, 200, 429]


def test_api_token_is_throttled(monkeypatch):
    """DRF's token view opts out of throttling; radlay's gives it the API's throttles."""
    monkeypatch.setattr(APIView, "throttle_classes", [AnonThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min"})
    client = APIClient()
    statuses = [client.post("/api/token/", {"username": "x", "password": "y"}).status_code for _ in range(3)]
    assert statuses == [400, 400, 429]


# --- One client address for every limit: a rotated X-Forwarded-For escapes none ----------------

# Behind no proxy (the header is not trusted at all), and behind one proxy that appends the
# address it received the request from: the client writes the left part, the proxy the last entry.
PROXIES = {
    "direct": ("", lambda i: {"HTTP_X_FORWARDED_FOR": f"203.0.113.{i}"}),
    "one proxy": (
        "HTTP_X_FORWARDED_FOR",
        lambda i: {
            "HTTP_X_FORWARDED_FOR": f"203.0.113.{i}, 192.0.2.{i}, 198.51.100.7",
            "REMOTE_ADDR": "10.0.0.1",
        },
    ),
}


@pytest.fixture(params=list(PROXIES))
def spoofed(request, settings):
    """Headers of the i-th request of one client that writes a new X-Forwarded-For every time."""
    header, headers = PROXIES[request.param]
    settings.RADLAY_CLIENT_IP = replace(settings.RADLAY_CLIENT_IP, header=header, proxies=1)
    return headers


def test_client_address_rule(rf, settings):
    settings.RADLAY_CLIENT_IP = replace(settings.RADLAY_CLIENT_IP, header="")
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR="1.2.3.4", REMOTE_ADDR="10.0.0.1")) == "10.0.0.1"
    settings.RADLAY_CLIENT_IP = replace(settings.RADLAY_CLIENT_IP, header="HTTP_X_FORWARDED_FOR")
    chain = "1.1.1.1, 2.2.2.2, 3.3.3.3"
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR=chain)) == "3.3.3.3"
    # two proxies: the outer one appended 2.2.2.2
    settings.RADLAY_CLIENT_IP = replace(settings.RADLAY_CLIENT_IP, proxies=2)
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR=chain)) == "2.2.2.2"
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR="9.9.9.9")) == "9.9.9.9"  # shorter than the chain
    # No header or a value that is not an address: the connection's peer.
    assert client_ip(rf.get("/", REMOTE_ADDR="10.0.0.2")) == "10.0.0.2"
    assert client_ip(rf.get("/", HTTP_X_FORWARDED_FOR="x, <b>", REMOTE_ADDR="10.0.0.3")) == "10.0.0.3"
    settings.RADLAY_CLIENT_IP = replace(settings.RADLAY_CLIENT_IP, header="HTTP_X_REAL_IP")
    assert (
        client_ip(rf.get("/", HTTP_X_REAL_IP="2001:db8::1", HTTP_X_FORWARDED_FOR="1.1.1.1")) == "2001:db8::1"
    )


def test_rotating_forwarded_for_escapes_no_api_throttle(spoofed, monkeypatch):
    monkeypatch.setattr(APIView, "throttle_classes", [AnonThrottle, UserThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "2/min", "user": "3/min"})
    anonymous = APIClient()
    assert [anonymous.get("/api/schema/", **spoofed(i)).status_code for i in range(3)] == [200, 200, 429]
    token = APIClient()
    statuses = [
        token.post("/api/token/", {"username": "x", "password": "y"}, **spoofed(i)).status_code
        for i in range(3)
    ]
    assert statuses[2] == 429
    user = get_user_model().objects.create_user("ada", password="pw")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert [api.get("/api/studies/", **spoofed(i)).status_code for i in range(4)] == [200, 200, 200, 429]


def test_rotating_forwarded_for_escapes_no_join_or_consent_limit(spoofed, client, open_study, settings):
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_RATE_LIMITS = replace(settings.RADLAY_RATE_LIMITS, join_ip="2/h", consent_ip="2/h")
    statuses = [
        client.post(f"/join/recruit/?PROLIFIC_PID=P{i}", {"choice": "decline"}, **spoofed(i)).status_code
        for i in range(3)
    ]
    assert statuses == [200, 200, 429]
    invited = participant_services.participants_invite(
        study=open_study, role=Participant.Role.LAYPERSON, count=3
    )
    statuses = [
        client.post(f"/l/{p.token}/consent/", {"choice": "decline"}, **spoofed(i)).status_code
        for i, p in enumerate(invited)
    ]
    assert statuses == [200, 200, 429]


@pytest.mark.parametrize(("url", "user_field", "password_field"), LOGINS)
def test_rotating_forwarded_for_escapes_no_login_lockout(
    spoofed, client, lockout, url, user_field, password_field
):
    statuses = [
        client.post(url, {user_field: "ada", password_field: "wrong"}, **spoofed(i)).status_code
        for i in range(3)
    ]
    assert statuses == [200, 200, 429]
    assert (
        client.post(url, {user_field: "ada", password_field: "right-pw-123"}, **spoofed(7)).status_code == 429
    )


def test_rotating_forwarded_for_escapes_no_token_lockout(spoofed, lockout):
    api = APIClient()
    statuses = [
        api.post("/api/token/", {"username": "ada", "password": "wrong"}, **spoofed(i)).status_code
        for i in range(3)
    ]
    assert statuses == [400, 400, 429]
    assert (
        api.post("/api/token/", {"username": "ada", "password": "right-pw-123"}, **spoofed(9)).status_code
        == 429
    )


# --- A cache outage: the limits fail open, with a log line, never a 500 ----------------------------


@pytest.fixture
def cache_down(settings):
    """The default cache pointed at a Redis port nothing listens on (the shared Redis keeps running)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }
    with pytest.raises(CACHE_ERRORS):
        cache.get("anything")
    yield
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def test_limits_fail_open_when_the_cache_is_down(
    cache_down, client, open_study, settings, monkeypatch, caplog
):
    settings.RATELIMIT_ENABLE = True
    settings.AXES_ENABLED = True
    monkeypatch.setattr(APIView, "throttle_classes", [AnonThrottle, UserThrottle])
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "1/min", "user": "1/min"})
    caplog.set_level(logging.WARNING, logger="radlay.limits")
    # A new layperson can join and consent; an invited one can consent.
    response = client.post("/join/recruit/?PROLIFIC_PID=NEW1&SESSION_ID=S1", {"choice": "accept"})
    assert response.status_code == 302
    participant = Participant.objects.get(external_id="NEW1")
    assert client.get("/join/recruit/?PROLIFIC_PID=NEW1&SESSION_ID=S1").status_code == 302  # resumes
    invited = participant_services.participants_invite(
        study=open_study, role=Participant.Role.LAYPERSON, count=1
    )[0]
    assert client.post(f"/l/{invited.token}/consent/", {"choice": "accept"}).status_code == 302
    # The API answers (its throttles let everything through), so does the token endpoint.
    user = get_user_model().objects.create_user("ada", password="pw-123-right")
    api = APIClient()
    assert [api.get("/api/schema/").status_code for _ in range(2)] == [200, 200]
    assert api.post("/api/token/", {"username": "ada", "password": "pw-123-right"}).status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=user).key}")
    assert [api.get("/api/studies/").status_code for _ in range(2)] == [200, 200]
    logged = [r.getMessage() for r in caplog.records if r.name == "radlay.limits"]
    assert any("join-ip" in m for m in logged) and any("consent-ip" in m for m in logged)
    assert any("API anon" in m for m in logged) and any("API user" in m for m in logged)
    assert participant.consented_at is not None
