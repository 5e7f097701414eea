"""Hospital sign-in against a real OpenID Connect provider started here on a loopback port
(tests/signin/oidc_provider.py: authlib's authorization server): the browser's steps are made by
the test (radlay's redirect, the provider's login form, the provider's redirect back), and radlay
itself exchanges the code, fetches the signing key and the user's claims over HTTP. Then the
second factor: required of every researcher when RADLAY_MFA_REQUIRED, the code computed from the
key the set-up page shows, as an authenticator app would. Local accounts, the login lockout and
the Content-Security-Policy keep working."""

from __future__ import annotations

import base64
import re
import time
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django_otp.oath import totp

from annotation.models import StudyMembership
from signin import provider as provider_module
from tests.annotation.factories import build_study
from tests.signin.oidc_provider import Provider

pytestmark = pytest.mark.django_db

CLIENT_ID, CLIENT_SECRET = "radlay-test", "s3cret-for-tests"
CALLBACK = "http://testserver/signin/oidc/callback/"
USERS = {
    "alice": {
        "password": "alice-pw",
        "sub": "alice-0001",
        "email": "alice@hospital.example",
        "given_name": "Alice",
        "family_name": "Researcher",
        "groups": ["radiology-research", "trial-team"],
    },
    "bob": {
        "password": "bob-pw",
        "sub": "bob-0002",
        "email": "bob@hospital.example",
        "groups": ["cafeteria"],
    },
}


@pytest.fixture(scope="module")
def idp():
    server = Provider(client_id=CLIENT_ID, client_secret=CLIENT_SECRET, redirect_uri=CALLBACK, users=USERS)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def hospital(settings, idp):
    settings.RADLAY_OIDC_ISSUER = idp.issuer
    settings.RADLAY_OIDC_CLIENT_ID = CLIENT_ID
    settings.RADLAY_OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.RADLAY_OIDC_GROUP_ROLES = {"radiology-research": "researcher", "trial-team": "trial:editor"}
    provider_module._metadata.clear()
    yield idp
    provider_module._metadata.clear()


def provider_login(client, *, username: str, password: str, deny: bool = False, next_url: str = ""):
    """radlay → the provider's login form → its answer → radlay's callback; radlay's response."""
    start = client.get("/signin/oidc/start/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302
    authorize = start["Location"]
    assert authorize.startswith(cache_free_issuer(client) + "/authorize?")
    params = parse_qs(urlsplit(authorize).query)
    assert params["code_challenge_method"] == ["S256"] and params["nonce"] and params["state"]
    form_page = requests.get(authorize, timeout=10)
    assert form_page.status_code == 200 and "Synthetic hospital sign-in" in form_page.text
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form_page.text))
    fields = {k: unescape(v) for k, v in fields.items()}
    fields.update({"username": username, "password": password})
    if deny:
        fields["deny"] = "1"
    answer = requests.post(
        f"{cache_free_issuer(client)}/authorize", data=fields, allow_redirects=False, timeout=10
    )
    assert answer.status_code == 302, answer.text
    back = answer.headers["Location"]
    assert back.startswith(CALLBACK)
    return client.get(back.removeprefix("http://testserver"))


def cache_free_issuer(client) -> str:
    from django.conf import settings

    return settings.RADLAY_OIDC_ISSUER


def test_the_login_page_offers_the_hospital_sign_in_only_when_configured(client, settings):
    settings.RADLAY_OIDC_ISSUER = ""
    assert "hospital account" not in client.get("/dashboard/login/").content.decode()
    settings.RADLAY_OIDC_ISSUER = "http://127.0.0.1:9"
    assert "Sign in with your hospital account" in client.get("/dashboard/login/").content.decode()


def test_a_researcher_signs_in_through_the_provider_with_groups_mapped_to_roles(client, hospital):
    trial = build_study(slug="trial", n_sources=1)
    tokens_before = hospital.token_requests
    response = provider_login(client, username="alice", password="alice-pw", next_url="/dashboard/trial/")
    assert response.status_code == 302 and response["Location"] == "/dashboard/trial/"
    assert hospital.token_requests == tokens_before + 1  # radlay exchanged the code itself
    user = get_user_model().objects.get(username="oidc-alice-0001")
    assert int(client.session["_auth_user_id"]) == user.pk
    assert (user.email, user.first_name, user.is_staff, user.is_superuser) == (
        "alice@hospital.example",
        "Alice",
        True,
        False,
    )
    assert not user.has_usable_password()
    assert StudyMembership.objects.get(study=trial, user=user).role == "editor"
    assert client.get("/dashboard/trial/").status_code == 200
    # Signing in again finds the same account (by the provider's subject), no second one.
    client.logout()
    provider_login(client, username="alice", password="alice-pw")
    assert get_user_model().objects.filter(username__startswith="oidc-").count() == 1


def test_someone_in_none_of_the_mapped_groups_is_refused(client, hospital):
    response = provider_login(client, username="bob", password="bob-pw")
    assert response.status_code == 302 and response["Location"] == "/dashboard/login/"
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.filter(email="bob@hospital.example").exists()
    page = client.get("/dashboard/login/").content.decode()
    assert "did not let you in" in page


def test_a_sign_in_the_provider_refuses_leaves_nobody_signed_in(client, hospital):
    response = provider_login(client, username="alice", password="alice-pw", deny=True)
    assert response.status_code == 302 and response["Location"] == "/dashboard/login/"
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.filter(username__startswith="oidc-").exists()


def test_a_code_radlay_did_not_ask_for_is_refused_by_the_provider_and_by_radlay(client, hospital):
    start = client.get("/signin/oidc/start/")
    state = parse_qs(urlsplit(start["Location"]).query)["state"][0]
    response = client.get(f"/signin/oidc/callback/?code=forged-code&state={state}")
    assert response.status_code == 302 and response["Location"] == "/dashboard/login/"
    assert "_auth_user_id" not in client.session


def test_without_a_group_mapping_anyone_the_provider_admits_gets_an_account_without_roles(
    client, hospital, settings
):
    settings.RADLAY_OIDC_GROUP_ROLES = {}
    provider_login(client, username="bob", password="bob-pw")
    user = get_user_model().objects.get(username="oidc-bob-0002")
    assert not user.is_staff and not user.memberships.exists()


def test_local_accounts_still_sign_in_beside_the_provider(client, hospital):
    get_user_model().objects.create_user("local-ada", password="ada-pw-123", is_staff=True)
    response = client.post("/dashboard/login/", {"username": "local-ada", "password": "ada-pw-123"})
    assert response.status_code == 302
    assert client.get("/dashboard/").status_code == 200


def test_a_local_account_cannot_be_taken_over_by_a_provider_account_with_its_email(client, hospital):
    local = get_user_model().objects.create_user(
        "alice-local", email="alice@hospital.example", password="pw-12345"
    )
    build_study(slug="trial", n_sources=1)
    provider_login(client, username="alice", password="alice-pw")
    assert int(client.session["_auth_user_id"]) != local.pk


# --- the second factor ------------------------------------------------------------------------


def code_for(key_base32: str, *, drift: int = 0) -> str:
    """What an authenticator app shows for the key (RFC 6238, 30 s, 6 digits); `drift` steps on."""
    return f"{totp(base64.b32decode(key_base32), drift=drift):06d}"


def shown_key(page: str) -> str:
    return re.search(r'<code id="totp-key">([A-Z2-7=]+)</code>', page).group(1)


def set_up_key(client, *, next_url: str = "") -> str:
    """ "Set up my authenticator app" (a POST: a GET shows the button and writes nothing), then the
    key the page shows."""
    before = client.get("/signin/second-factor/").content.decode()
    assert "Set up my authenticator app" in before and 'id="totp-key"' not in before
    started = client.post("/signin/second-factor/", {"start": "1", "next": next_url})
    assert started.status_code == 302
    page = client.get(started["Location"]).content.decode()
    assert "otpauth://totp/" in page
    return shown_key(page)


def test_mfa_required_holds_a_provider_signed_researcher_until_a_totp_code(client, hospital, settings):
    settings.RADLAY_MFA_REQUIRED = True
    build_study(slug="trial", n_sources=1)
    response = provider_login(client, username="alice", password="alice-pw")
    assert response.status_code == 302
    blocked = client.get("/dashboard/")
    assert blocked.status_code == 302 and blocked["Location"] == "/signin/second-factor/?next=%2Fdashboard%2F"
    assert client.get("/console/").status_code == 302
    assert client.get("/api/studies/").status_code == 403
    assert client.get(blocked["Location"]).status_code == 200
    key = set_up_key(client, next_url="/dashboard/")
    wrong = client.post(
        "/signin/second-factor/", {"token": "000000" if code_for(key) != "000000" else "111111"}
    )
    assert wrong.status_code == 400 and client.get("/dashboard/").status_code == 302
    time.sleep(1.1)  # django-otp's throttle: a wrong code makes the next try wait 1 s
    right = client.post("/signin/second-factor/", {"token": code_for(key), "next": "/dashboard/"})
    assert right.status_code == 302 and right["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200
    # A new session asks again, now for the code of the authenticator set up (no new key shown).
    client.logout()
    provider_login(client, username="alice", password="alice-pw")
    again = client.get("/signin/second-factor/").content.decode()
    assert 'id="totp-key"' not in again
    assert client.get("/dashboard/").status_code == 302


def test_mfa_required_applies_to_local_researchers_not_to_participants(client, settings):
    settings.RADLAY_MFA_REQUIRED = True
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    client.post("/dashboard/login/", {"username": "ada", "password": "ada-pw-123"})
    assert client.get("/dashboard/").status_code == 302
    key = set_up_key(client)
    assert client.post("/signin/second-factor/", {"token": code_for(key)}).status_code == 302
    assert client.get("/dashboard/").status_code == 200
    # A radiologist's survey account (no team, not staff) is not held back.
    client.logout()
    get_user_model().objects.create_user("rad", password="rad-pw-123")
    client.post("/radiologist/login/", {"username": "rad", "password": "rad-pw-123"})
    assert client.get("/radiologist/").status_code == 200


def test_mfa_off_by_default(client):
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    client.post("/dashboard/login/", {"username": "ada", "password": "ada-pw-123"})
    assert client.get("/dashboard/").status_code == 200


# --- the lockout and the Content-Security-Policy still hold -------------------------------------


def test_the_login_lockout_still_locks_with_the_provider_configured(client, hospital, settings):
    cache.clear()
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    get_user_model().objects.create_user("ada", password="right-pw-123", is_staff=True)
    statuses = [
        client.post("/dashboard/login/", {"username": "ada", "password": "wrong"}).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    assert (
        client.post("/dashboard/login/", {"username": "ada", "password": "right-pw-123"}).status_code == 429
    )
    # The hospital sign-in goes through the same authenticate() and still works for others.
    build_study(slug="trial", n_sources=1)
    assert provider_login(client, username="alice", password="alice-pw").status_code == 302
    assert "_auth_user_id" in client.session
    cache.clear()


def test_the_sign_in_pages_are_served_under_the_enforced_policy(client, hospital, settings):
    from config.settings.base import CSP_DIRECTIVES

    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": CSP_DIRECTIVES}
    settings.RADLAY_MFA_REQUIRED = True
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    login = client.get("/dashboard/login/")
    assert "script-src" in login["Content-Security-Policy"]
    client.post("/dashboard/login/", {"username": "ada", "password": "ada-pw-123"})
    page = client.get("/signin/second-factor/")
    assert page.status_code == 200 and "script-src" in page["Content-Security-Policy"]
    assert "unsafe-inline" not in page["Content-Security-Policy"].split("script-src")[1].split(";")[0]


def test_mfa_required_an_api_token_needs_the_code_beside_the_password(client, settings):
    from rest_framework.test import APIClient

    settings.RADLAY_MFA_REQUIRED = True
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    api = APIClient()
    first = api.post("/api/token/", {"username": "ada", "password": "ada-pw-123"})
    assert first.status_code == 400 and "second factor" in first.json()["otp"][0]
    none_yet = api.post("/api/token/", {"username": "ada", "password": "ada-pw-123", "otp": "123456"})
    assert none_yet.status_code == 400 and "no authenticator yet" in none_yet.json()["otp"][0]
    client.post("/dashboard/login/", {"username": "ada", "password": "ada-pw-123"})
    key = set_up_key(client)
    used = code_for(key)
    assert client.post("/signin/second-factor/", {"token": used}).status_code == 302
    # A code counts once (django-otp refuses a time step already used): the next step's code, which
    # the device accepts within its one-step tolerance.
    again = api.post("/api/token/", {"username": "ada", "password": "ada-pw-123", "otp": used})
    assert again.status_code == 400 and "not accepted" in again.json()["otp"][0]
    time.sleep(1.1)  # the throttle after that refusal
    answer = api.post(
        "/api/token/", {"username": "ada", "password": "ada-pw-123", "otp": code_for(key, drift=1)}
    )
    assert answer.status_code == 200 and answer.json()["token"]
    # Without the requirement, the password alone gets the token, as before.
    settings.RADLAY_MFA_REQUIRED = False
    assert api.post("/api/token/", {"username": "ada", "password": "ada-pw-123"}).status_code == 200


def test_a_group_mapped_to_no_role_is_refused_at_start(settings):
    from signin.checks import group_roles_check

    settings.RADLAY_OIDC_GROUP_ROLES = {"radiology-research": "researcher", "ct": "ct-study:boss"}
    errors = group_roles_check()
    assert [e.id for e in errors] == ["signin.E001"] and "'ct-study:boss'" in errors[0].msg
    settings.RADLAY_OIDC_GROUP_ROLES = {"a": "researcher", "b": "admin", "c": "trial:viewer"}
    assert group_roles_check() == []
