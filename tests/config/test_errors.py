"""Every participant-facing error is a branded page in plain language that says what to do next,
and never shows the study's or the paper's title to a participant."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.test import Client, override_settings

from annotation import participant_services
from annotation.models import Participant, Study
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

PAPER_TITLE = "Two-Pronged Human Evaluation"
NEXT = "What to do next:"


def assert_branded(response, status: int, *phrases: str) -> str:
    html = response.content.decode()
    assert response.status_code == status, html[:500]
    assert 'class="brand"' in html and "radlay" in html
    assert NEXT in html
    assert PAPER_TITLE not in html
    assert "Survey design from ." not in html
    for phrase in phrases:
        assert phrase in html, phrase
    return html


@pytest.mark.parametrize(
    "url",
    ["/s/not-a-token/", "/l/not-a-token/", "/r/not-a-token/", "/l/not-a-token/consent/", "/s/cut/off/link"],
)
def test_unknown_survey_links_get_the_link_not_valid_page(client, url):
    html = assert_branded(client.get(url), 404, "link")
    assert "Not Found</h1>" not in html


@override_settings(DEBUG=True)
def test_a_mistyped_link_gets_the_branded_page_in_the_demo_too(client):
    # With DEBUG (the demo), an unmatched address would show Django's URL list.
    html = assert_branded(client.get("/s/abc/extra/"), 404, "This survey link is not valid")
    assert "URLconf" not in html


def test_unknown_page_gets_the_branded_404(client):
    assert_branded(client.get("/no/such/page/"), 404, "Page not found")


@pytest.mark.parametrize("status", [Study.Status.DRAFT, Study.Status.CLOSED])
@pytest.mark.parametrize("role", ["radiologist", "layperson"])
def test_draft_or_closed_study_names_neither_study_nor_paper(client, status, role):
    study = build_study(slug="hidden", n_sources=1, status=status)
    study.title = "ChatGPT self-correction versus plain prompting"
    study.save()
    participant = participant_services.participant_create(study=study, role=role)
    heading = "has closed" if status == Study.Status.CLOSED else "has not opened yet"
    for url in (f"/s/{participant.token}/", f"/{'r' if role == 'radiologist' else 'l'}/{participant.token}/"):
        html = assert_branded(client.get(url), 403, heading)
        assert study.title not in html
        assert "radlay, research survey software" in html


def test_wrong_role_says_so_and_what_to_do(client):
    study = build_study(slug="roles", n_sources=1)
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    assert_branded(client.get(f"/l/{radiologist.token}/"), 403, "This link is for a radiologist")
    assert_branded(client.get(f"/r/{lay.token}/instructions/"), 403, "This link is for a layperson")


def test_csrf_failure_gets_the_branded_page():
    study = build_study(slug="csrf", n_sources=1)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    client = Client(enforce_csrf_checks=True)
    html = assert_branded(client.post(f"/l/{participant.token}/consent/", {"consent": "yes"}), 403)
    assert "reload the page" in html


def test_server_error_uses_the_custom_500_page(client):
    # The test client re-raises view exceptions unless told otherwise.
    from config import errors

    response = errors.server_error(None)
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in html and NEXT in html and PAPER_TITLE not in html


def test_researchers_see_the_citation_participants_do_not(client):
    study = build_study(slug="cite", n_sources=1)
    user = get_user_model().objects.create_user("res", password="pw")
    assert PAPER_TITLE not in client.get("/").content.decode()
    study.researchers.add(user)
    client.force_login(user)
    assert PAPER_TITLE in client.get("/").content.decode()


def test_favicon_is_linked_and_served(client):
    html = client.get("/").content.decode()
    assert 'rel="icon"' in html
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/radlay/favicon.svg"
    assert finders.find("radlay/favicon.svg")
