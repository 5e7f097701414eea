"""One rule for the URLs a participant is sent to at the end (annotation/redirect_urls.py), used
by the model, the console's settings form and the admin's form alike: the scheme is read in any
case, a scheme-relative or scheme-less URL is refused, never completed by guessing."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.test import RequestFactory
from django.urls import reverse

from annotation.models import Study
from annotation.redirect_urls import redirect_url_errors
from tests.console.test_study_views import _settings, researcher, study  # noqa: F401 - fixtures

ACCEPTED = [
    "https://ok.example/{code}",
    "HTTPS://ok.example/{code}",
    "Http://ok.example/done?cc={code}",
    "https://app.prolific.com/submissions/complete?cc=C1A2B3",
]
REFUSED = [
    "//evil.example/{code}",
    "ok.example/{code}",
    "https:/evil.example/{code}",
    "https:///evil.example",
    "https:\\\\evil.example/{code}",
    "javascript:alert(1)//{code}",
    "ftp://ok.example/{code}",
    "https://ok.example/ {code}",
]


@pytest.mark.parametrize("url", ACCEPTED)
def test_the_rule_takes_an_absolute_http_url_in_any_case(url):
    assert redirect_url_errors(url, label="URL", placeholder=True) == []


@pytest.mark.parametrize("url", REFUSED)
def test_the_rule_refuses_scheme_relative_scheme_less_and_other_schemes(url):
    assert redirect_url_errors(url, label="URL", placeholder=True)


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "ok"), [(u, True) for u in ACCEPTED] + [(u, False) for u in REFUSED])
@pytest.mark.parametrize(
    "field", ["completion_redirect_url", "decline_redirect_url", "screened_out_redirect_url"]
)
def test_the_model_applies_the_rule_to_every_redirect(url, ok, field):
    if field != "completion_redirect_url":
        url = url.replace("{code}", "CODE")
    row = Study(slug="rule", title="rule", **{field: url})
    try:
        row.full_clean()
    except ValidationError as exc:
        assert not ok and field in exc.message_dict, exc.message_dict
    else:
        assert ok


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "ok"), [(u, True) for u in ACCEPTED] + [(u, False) for u in REFUSED])
def test_the_console_form_saves_the_url_as_typed_or_refuses_it(client, study, url, ok):  # noqa: F811
    response = client.post(
        reverse("console:study-setup", args=["setup"]), _settings(study, completion_redirect_url=url)
    )
    study.refresh_from_db()
    if ok:
        assert response.status_code == 302 and study.completion_redirect_url == url
    else:
        assert response.status_code == 400 and study.completion_redirect_url == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "ok"), [("//evil.example/{code}", False), ("HTTPS://ok.example/{code}", True)]
)
def test_the_admin_form_uses_the_same_rule(url, ok, admin_user):
    model_admin = admin.site._registry[Study]
    request = RequestFactory().get("/")
    request.user = admin_user
    field = model_admin.get_form(request)().fields["completion_redirect_url"]
    if ok:
        assert field.clean(url) == url
    else:
        with pytest.raises(ValidationError):
            field.clean(url)
