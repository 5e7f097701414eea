"""The lay survey pages (surveys/lay/views.py) through Django's test client: invite and
recruitment entry, consent, background, the three panels with autosave and the plain-POST fallback,
the panel-1 lock, access rules, bad input (always 4xx, never 500), attention checks, completion and
the researcher's balance page."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotation import participant_services
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    ConsentRefusal,
    LayItem,
    Participant,
    Simplification,
    Study,
)
from studies import study_services
from surveys.lay import panels
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db
LAY = Participant.Role.LAYPERSON
HX = {"HTTP_HX_REQUEST": "true"}
PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}
PANEL2 = {
    "understanding": "Most of it",
    "confidence": "With high confidence",
    "severity_guess": "Moderate",
    "helpfulness": "I understand much better",
}


def _url(name, participant, **kwargs):
    return reverse(f"surveys:{name}", kwargs={"token": participant.token, **kwargs})


def _panel_url(participant, item, panel):
    return _url("lay-panel", participant, item_id=item.pk, panel=panel)


def _consented(study, **kwargs):
    participant = participant_services.participant_create(study=study, role=LAY, **kwargs)
    return participant_services.participant_consent(participant=participant, accepted=True)


def _rendered(item, panel: str, seconds_ago: float) -> dict:
    """The form field of a panel rendered `seconds_ago`."""
    return {"rendered_at": panels.panel_stamp(item=item, panel=panel, now=time.time() - seconds_ago)}


def _begin(client, participant):
    response = client.post(_url("lay-instructions", participant))
    assert response.status_code == 302
    return list(LayItem.objects.filter(participant=participant).order_by("position"))


def _mild_check(study, *, position: int) -> AttentionCheck:
    return AttentionCheck.objects.create(
        study=study,
        position=position,
        prompt="Please choose Mild.",
        options=["Critical", "Mild"],
        expected_answer="Mild",
    )


def _follow_to(client, url):
    response = client.get(url, follow=True)
    assert response.status_code == 200
    return response


# --- Entry, consent ----------------------------------------------------------------------------------


def test_invite_link_goes_through_consent_and_instructions_to_panel_1(client):
    study = build_study(n_sources=2)
    participant = participant_services.participant_create(study=study, role=LAY)
    response = client.get(reverse("surveys:entry", kwargs={"token": participant.token}), follow=True)
    assert response.redirect_chain[-1][0] == _url("lay-consent", participant)
    assert "research study" in response.content.decode()  # the protocol's default consent text
    participant.refresh_from_db()
    assert participant.started_at is None  # nothing recorded before consent
    response = client.post(_url("lay-consent", participant), {"choice": "accept"}, follow=True)
    assert response.redirect_chain[-1][0] == _url("lay-instructions", participant)
    page = response.content.decode()
    for level in ("Critical", "Serious", "Moderate", "Mild", "Healthy"):
        assert level in page
    assert "poses a threat to a person&#x27;s life" in page  # appendix A.2 definitions
    items = _begin(client, participant)
    assert len(items) == 2
    response = client.get(_url("lay-start", participant), follow=True)
    assert response.redirect_chain[-1][0] == _panel_url(participant, items[0], "original")
    page = response.content.decode()
    assert "Given a radiology sentence, please answer the following questions." in page
    assert "You understand the meaning of the sentence." in page
    assert items[0].source.text in page and items[0].shown_text.text not in page


def test_invite_decline_records_only_declined_at(client):
    study = build_study(n_sources=1)
    participant = participant_services.participant_create(study=study, role=LAY)
    response = client.post(_url("lay-consent", participant), {"choice": "decline"})
    assert response.status_code == 200 and "not to take part" in response.content.decode()
    participant.refresh_from_db()
    assert participant.declined_at is not None and participant.consented_at is None
    assert participant.started_at is None and not LayItem.objects.filter(participant=participant).exists()
    assert not ConsentRefusal.objects.exists()
    # The survey stays closed to them until they consent again.
    assert client.get(_url("lay-instructions", participant)).status_code == 302
    assert "not to take part" in _follow_to(client, _url("lay-start", participant)).content.decode()


def test_consent_bad_choice_is_400(client):
    participant = participant_services.participant_create(study=build_study(n_sources=1), role=LAY)
    assert client.post(_url("lay-consent", participant), {"choice": "maybe"}).status_code == 400
    participant.refresh_from_db()
    assert participant.consented_at is None and participant.declined_at is None


def test_join_link_creates_participant_on_consent_and_same_pid_resumes(client):
    study = build_study(slug="lay-join", n_sources=2)
    url = reverse("surveys:lay-join", kwargs={"slug": study.slug}) + (
        "?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=abc&SESSION_ID=s1"
    )
    response = client.get(url)
    assert response.status_code == 200 and "I agree" in response.content.decode()
    assert not Participant.objects.exists()
    response = client.post(url, {"choice": "accept"})
    participant = Participant.objects.get()
    assert response.status_code == 302 and response["Location"] == _url("lay-start", participant)
    assert participant.external_id == "5f1a2b3c4d5e6f7a8b9c0d1e" and participant.consented_at is not None
    assert participant.recruitment == {
        "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
        "STUDY_ID": "abc",
        "SESSION_ID": "s1",
    }
    _begin(client, participant)
    # Same PID again from the same browser, even with a new SESSION_ID: the same participant.
    response = client.get(url.replace("SESSION_ID=s1", "SESSION_ID=s2"))
    assert response.status_code == 302 and response["Location"] == _url("lay-start", participant)
    # From another browser, Prolific's link of the same submission (same SESSION_ID) resumes.
    other = client.__class__()
    assert other.post(url, {"choice": "accept"})["Location"] == _url("lay-start", participant)
    assert Participant.objects.count() == 1


RESUME_PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture
def resumable(client):
    """A participant who joined from `client` through Prolific's link and finished the survey."""
    study = build_study(slug="lay-resume", n_sources=1)
    url = reverse("surveys:lay-join", kwargs={"slug": study.slug})
    first = f"{url}?PROLIFIC_PID={RESUME_PID}&STUDY_ID=st1&SESSION_ID=se1"
    assert client.post(first, {"choice": "accept"}).status_code == 302
    participant = Participant.objects.get(external_id=RESUME_PID)
    Participant.objects.filter(pk=participant.pk).update(
        created_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T01:00:00Z"
    )
    participant.refresh_from_db()
    return participant, url


@pytest.mark.parametrize(
    "query",
    [
        "",
        "&STUDY_ID=st1",
        "&STUDY_ID=st1&SESSION_ID=se2",
        "&STUDY_ID=other&SESSION_ID=se1",
        "&SESSION_ID=se1x",
    ],
)
def test_a_known_pid_alone_does_not_resume_from_another_browser(resumable, query, caplog):
    participant, url = resumable
    stranger = Client()
    probe = f"{url}?PROLIFIC_PID={RESUME_PID}{query}"
    for response in (stranger.get(probe), stranger.post(probe, {"choice": "accept"})):
        page = response.content.decode()
        assert response.status_code == 403 and "another browser" in page and "contact the researcher" in page
        assert participant.token not in page and participant.completion_code not in page
        assert "Location" not in response
    assert stranger.post(probe, {"choice": "decline"}).status_code == 403
    participant.refresh_from_db()
    assert participant.declined_at is None and Participant.objects.count() == 1
    refusals = [r.getMessage() for r in caplog.records if "Resumption refused" in r.getMessage()]
    assert len(refusals) == 3 and RESUME_PID not in " ".join(refusals)
    assert hashlib.sha256(RESUME_PID.encode()).hexdigest()[:12] in refusals[0]


def test_a_double_click_on_i_agree_without_session_id_is_one_participant(client):
    """The second "I agree" of a double-click arrives before the first one's cookie: within seconds
    of the participant's creation it resumes them; a GET (a probe) never does."""
    study = build_study(slug="lay-double", n_sources=1)
    url = reverse("surveys:lay-join", kwargs={"slug": study.slug}) + "?PROLIFIC_PID=double1"
    first = client.post(url, {"choice": "accept"})
    second = Client().post(url, {"choice": "accept"})  # no cookie yet
    assert first.status_code == second.status_code == 302 and first["Location"] == second["Location"]
    assert Client().get(url).status_code == 403
    Participant.objects.filter(external_id="double1").update(created_at="2026-01-01T00:00:00Z")
    assert Client().post(url, {"choice": "accept"}).status_code == 403
    assert Participant.objects.filter(study=study).count() == 1


def test_a_forged_join_cookie_does_not_resume(resumable):
    participant, url = resumable
    stranger = Client()
    stranger.cookies["radlay_join_lay-resume"] = str(participant.pk)  # unsigned
    assert stranger.get(f"{url}?PROLIFIC_PID={RESUME_PID}").status_code == 403


def test_the_starting_browser_and_the_matching_session_resume(resumable, client):
    participant, url = resumable
    done = _url("lay-done", participant)
    # The browser that started, with or without Prolific's parameters.
    response = client.get(f"{url}?PROLIFIC_PID={RESUME_PID}", follow=True)
    assert response.redirect_chain[-1][0] == done and participant.completion_code in response.content.decode()
    # Another browser with the SESSION_ID (and STUDY_ID) of the submission, e.g. Prolific reopened
    # on another device; from then on that browser resumes by its own cookie.
    other = Client()
    response = other.get(f"{url}?PROLIFIC_PID={RESUME_PID}&STUDY_ID=st1&SESSION_ID=se1")
    assert response.status_code == 302 and response["Location"] == _url("lay-start", participant)
    assert other.get(f"{url}?PROLIFIC_PID={RESUME_PID}").status_code == 302


def test_resumption_probes_are_throttled(resumable, settings):
    participant, url = resumable
    cache.clear()
    settings.RATELIMIT_ENABLE = True
    settings.RADLAY_RATE_LIMITS = replace(settings.RADLAY_RATE_LIMITS, resume_refusals_ip="3/h")
    prober = Client(REMOTE_ADDR="10.7.0.1")
    statuses = [
        prober.get(f"{url}?PROLIFIC_PID={RESUME_PID}&SESSION_ID=guess{i}").status_code for i in range(5)
    ]
    assert statuses == [403, 403, 403, 429, 429]
    # Once over the limit, that address cannot resume even with the right SESSION_ID...
    right = f"{url}?PROLIFIC_PID={RESUME_PID}&STUDY_ID=st1&SESSION_ID=se1"
    assert prober.get(right).status_code == 429
    # ...other addresses can, and a PID the study does not know still gets the consent page.
    assert Client(REMOTE_ADDR="10.7.0.2").get(right).status_code == 302
    assert prober.get(f"{url}?PROLIFIC_PID=someone-new").status_code == 200
    cache.clear()


def test_join_decline_records_a_refusal_only(client):
    study = build_study(slug="lay-decline", n_sources=1)
    url = reverse("surveys:lay-join", kwargs={"slug": study.slug}) + "?PROLIFIC_PID=abcdef"
    response = client.post(url, {"choice": "decline"})
    assert response.status_code == 200 and "not to take part" in response.content.decode()
    assert not Participant.objects.exists()
    assert ConsentRefusal.objects.filter(study=study, role=LAY).count() == 1


def test_join_bad_links(client):
    study = build_study(slug="lay-bad", n_sources=1)
    base = reverse("surveys:lay-join", kwargs={"slug": study.slug})
    assert client.get(base + "?PROLIFIC_PID=%3Cscript%3E").status_code == 400
    assert client.get(reverse("surveys:lay-join", kwargs={"slug": "nope"})).status_code == 404
    study_services.study_set_status(study=study, status=Study.Status.CLOSED)
    response = client.get(base + "?PROLIFIC_PID=abc")
    assert response.status_code == 403 and "closed" in response.content.decode()
    assert not Participant.objects.exists()


def test_background_questions_are_stored(client):
    study = build_study(n_sources=1)
    study.background_questions = [
        {"key": "education", "question": "Highest education?", "options": ["School", "College", "Graduate"]}
    ]
    study.save()
    participant = _consented(study)
    response = client.get(_url("lay-start", participant), follow=True)
    assert response.redirect_chain[-1][0] == _url("lay-background", participant)
    assert "Highest education?" in response.content.decode()
    assert client.post(_url("lay-background", participant), {"education": "PhD"}).status_code == 400
    response = client.post(_url("lay-background", participant), {"education": "College"})
    assert response["Location"] == _url("lay-instructions", participant)
    participant.refresh_from_db()
    assert participant.background == {"education": "College"}


# --- Panels -------------------------------------------------------------------------------------------


def test_autosave_plain_post_lock_and_no_way_back(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    url1 = _panel_url(participant, item, "original")
    # Autosave of a partial panel: a fragment, one row, time added (the page was rendered 10 s ago).
    rendered = _rendered(item, "original", 10)
    response = client.post(
        url1, {**rendered, "understanding": "Most of it", "autosave": "1", "elapsed_ms": "1500"}, **HX
    )
    assert response.status_code == 200 and "Saved" in response.content.decode()
    client.post(url1, {**rendered, "understanding": "Completely", "autosave": "1", "elapsed_ms": "500"}, **HX)
    answer = answers.lay_answer(item, "original")
    assert answer.understanding == "Completely" and answer.time_spent_ms == 2000
    # Plain POST with a missing answer: 400 page that says what is missing; nothing advances.
    response = client.post(url1, {"understanding": "Completely", "confidence": "Not at all", "continue": "1"})
    assert response.status_code == 400 and "Please answer this question." in response.content.decode()
    # The answers given stay checked, and the first unanswered question's first option has the focus.
    page = response.content.decode()
    assert re.findall(r'<input type="radio" name="(\w+)" value="([^"]+)" checked>', page) == [
        ("understanding", "Completely"),
        ("confidence", "Not at all"),
    ]
    assert re.findall(r"<input [^>]*autofocus>", page) == [
        '<input type="radio" name="severity_guess" value="Critical" autofocus>'
    ]
    item.refresh_from_db()
    assert item.stage == "original"
    response = client.post(url1, {**PANEL1, "continue": "1"})
    # Straight to the next panel, without a round trip through the start page.
    assert response.status_code == 302 and response["Location"] == _panel_url(participant, item, "assisted")
    # Panel 2 shows the simplification and locks panel 1 (shown read-only).
    response = _follow_to(client, _url("lay-start", participant))
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == _panel_url(participant, item, "assisted")
    assert item.shown_text.text in page and "(locked)" in page and "Some parts of it" in page
    assert "Has the simplified sentence improved your understanding of the original sentence?" in page
    item.refresh_from_db()
    assert item.original_locked_at is not None
    # No way back: GET panel 1 goes to panel 2; a changed POST is a 409 and changes nothing.
    assert client.get(url1)["Location"] == _panel_url(participant, item, "assisted")
    for headers in ({}, HX):
        response = client.post(url1, {**PANEL1, "understanding": "Not at all", "autosave": "1"}, **headers)
        assert response.status_code == 409 and "locked" in response.content.decode()
    assert answers.lay_answer(item, "original").understanding == "Some parts of it"
    # Panel 2 through the plain-POST fallback, timed by the signed render stamp.
    stamp = panels.panel_stamp(item=item, panel="assisted")
    response = client.post(
        _panel_url(participant, item, "assisted"), {**PANEL2, "rendered_at": stamp, "continue": "1"}
    )
    assert response.status_code == 302
    assisted = answers.lay_answer(item, "assisted")
    assert assisted.helpfulness == "I understand much better" and assisted.understanding == "Most of it"


def test_preference_panel_and_completion(client):
    study = build_study(n_sources=1)
    study.completion_redirect_url = "https://app.prolific.com/submissions/complete?cc=C0DE42"
    study.save()
    participant = _consented(study)
    item = _begin(client, participant)[0]
    client.post(_panel_url(participant, item, "original"), {**PANEL1, "continue": "1"})
    client.get(_panel_url(participant, item, "assisted"))
    client.post(_panel_url(participant, item, "assisted"), {**PANEL2, "continue": "1"})
    response = _follow_to(client, _url("lay-start", participant))
    page = response.content.decode()
    assert "Given all simplifications, please answer the following questions." in page
    assert "Which simplifications do you like the most?" in page
    for text in Simplification.objects.filter(source=item.source).values_list("shown_text__text", flat=True):
        assert text in page
    item.refresh_from_db()
    a, b, c, d = item.preference_order
    url3 = _panel_url(participant, item, "preference")
    assert (
        client.post(url3, {"fields": ["most", "least"], "most": ["x"], "autosave": "1"}, **HX).status_code
        == 400
    )
    response = client.post(
        url3, {"fields": ["most", "least"], "most": [a], "least": [a], "autosave": "1"}, **HX
    )
    assert response.status_code == 400 and "both" in response.content.decode()
    response = client.post(
        url3,
        {
            "fields": ["most", "least"],
            "most": [a, c],
            "least": [d],
            "most_justification": "Plain words",
            "continue": "1",
        },
    )
    assert response.status_code == 302
    preference = answers.preference(item)
    assert set(preference.most) == {a, c}
    assert preference.most_justification == "Plain words"
    response = _follow_to(client, _url("lay-start", participant))
    page = response.content.decode()
    participant.refresh_from_db()
    assert participant.completed_at is not None
    assert participant.completion_code in page and study.completion_redirect_url in page
    # The code stays reachable after the study closed.
    study_services.study_set_status(study=study, status=Study.Status.CLOSED)
    assert participant.completion_code in client.get(_url("lay-done", participant)).content.decode()


NAVIGATE = {"HTTP_X_RADLAY_NAVIGATE": "1"}


def test_a_navigating_submit_answers_with_the_next_panel_itself(client):
    """survey.js's submit (header X-Radlay-Navigate) gets the next panel in its response, with the
    panel's address in X-Radlay-Page, and the same effects as the submit + redirect + GET it stands
    for: panel 1 is locked once panel 2 is served. Gaps answer with the same panel and its errors;
    a next page that is not a panel (an attention check, the end) is a 204 naming it."""
    study = build_study(n_sources=2)
    _mild_check(study, position=1)
    participant = _consented(study)
    first, second = _begin(client, participant)
    url1 = _panel_url(participant, first, "original")
    client.get(url1)

    response = client.post(url1, {"understanding": PANEL1["understanding"], "continue": "1"}, **NAVIGATE)
    assert response.status_code == 400 and response["X-Radlay-Page"] == url1
    assert response.content.decode().count("Please answer this question.") == 2
    first.refresh_from_db()
    assert first.stage == "original"

    response = client.post(url1, {**PANEL1, "continue": "1"}, **NAVIGATE)
    url2 = _panel_url(participant, first, "assisted")
    assert response.status_code == 200 and response["X-Radlay-Page"] == url2
    page = response.content.decode()
    assert first.source.text in page and f'action="{url2}"' in page
    first.refresh_from_db()
    assert first.stage == "assisted" and first.original_locked_at is not None
    assert (
        client.post(url1, {**PANEL1, "understanding": "Completely", "autosave": "1"}, **HX).status_code == 409
    )

    response = client.post(url2, {**PANEL2, "continue": "1"}, **NAVIGATE)
    url3 = _panel_url(participant, first, "preference")
    assert response.status_code == 200 and response["X-Radlay-Page"] == url3
    a, b = LayItem.objects.get(pk=first.pk).preference_order[:2]
    response = client.post(url3, {"fields": ["most", "least"], "most": [a], "least": [b]}, **NAVIGATE)
    check = AttentionCheck.objects.get()
    assert response.status_code == 204 and response.content == b""
    assert response["X-Radlay-Location"] == _url("lay-check", participant, check_id=check.pk)
    assert set(answers.preference(first).most) == {a}

    # A plain submit (no script) is still a redirect, and the end of the survey is a 204 too.
    client.post(_url("lay-check", participant, check_id=check.pk), {"answer": "Mild"})
    response = client.post(_panel_url(participant, second, "original"), {**PANEL1, "continue": "1"})
    assert response.status_code == 302 and response["Location"] == _panel_url(participant, second, "assisted")
    client.get(response["Location"])
    response = client.post(
        _panel_url(participant, second, "assisted"), {**PANEL2, "continue": "1"}, **NAVIGATE
    )
    a, b = LayItem.objects.get(pk=second.pk).preference_order[:2]
    url = _panel_url(participant, second, "preference")
    response = client.post(url, {"fields": ["most", "least"], "most": [a], "least": [b]}, **NAVIGATE)
    assert response.status_code == 204 and response["X-Radlay-Location"] == _url("lay-done", participant)


def test_a_navigating_submit_whose_next_panel_the_safety_gate_ends_goes_to_the_start_page(client):
    from tests.surveys.test_lay_flow import _rate

    study = build_study(n_sources=2, systems=("a", "b"))
    study.safety_gate_enabled = True
    study.save()
    participant, other = _consented(study), _consented(study)
    first, second = _begin(client, participant)
    item = LayItem.objects.get(pk=_begin(client, other)[0].pk)
    # Every text of each one's first source withheld after the survey began (panel 1 is not gated).
    for source in {first.source, item.source}:
        for key in ("a", "b"):
            _rate(study, source, key, hallucination=1)
    response = client.post(
        _panel_url(participant, first, "original"), {**PANEL1, "continue": "1"}, **NAVIGATE
    )
    assert response.status_code == 204 and response["X-Radlay-Location"] == _url("lay-start", participant)
    assert LayItem.objects.get(pk=first.pk).stage == "done"
    followed = _follow_to(client, response["X-Radlay-Location"])
    assert followed.redirect_chain[-1][0] == _panel_url(participant, second, "original")
    # The plain way: the submit's redirect to panel 2, whose GET ends the source the same way.
    response = client.post(_panel_url(other, item, "original"), {**PANEL1, "continue": "1"})
    assert response["Location"] == _panel_url(other, item, "assisted")
    assert client.get(response["Location"])["Location"] == _url("lay-start", other)
    assert LayItem.objects.get(pk=item.pk).stage == "done"


def test_a_navigating_submit_out_of_turn_is_refused_like_a_plain_one(client):
    """A navigating submit of a panel the participant has left is the same 409 (no page header:
    survey.js then submits the plain way and the browser shows the message)."""
    study = build_study(n_sources=1)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    url1 = _panel_url(participant, item, "original")
    client.get(url1)
    assert client.post(url1, {**PANEL1, "continue": "1"}, **NAVIGATE).status_code == 200
    response = client.post(url1, {**PANEL1, "understanding": "Completely", "continue": "1"}, **NAVIGATE)
    assert response.status_code == 409 and "X-Radlay-Page" not in response
    assert answers.lay_answer(item, "original").understanding == PANEL1["understanding"]


def test_bad_values_are_400_and_save_nothing(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    url = _panel_url(participant, item, "original")
    for data in ({"understanding": "Very much"}, {"severity_guess": "5"}, {"helpfulness": "It did not help"}):
        assert client.post(url, {**data, "autosave": "1"}, **HX).status_code == 400
        assert client.post(url, {**data, "continue": "1"}).status_code == 400
    assert not [a for a in answers.lay_answers() if a.understanding or a.severity_guess or a.helpfulness]
    assert client.get(_url("lay-panel", participant, item_id=item.pk, panel="bogus")).status_code == 404
    assert (
        client.post(_panel_url(participant, item, "assisted"), {**PANEL2, "continue": "1"}).status_code == 409
    )


def test_later_source_cannot_be_answered_ahead(client):
    study = build_study(n_sources=2)
    participant = _consented(study)
    first, second = _begin(client, participant)
    assert client.get(_panel_url(participant, second, "original"))["Location"] == _panel_url(
        participant, first, "original"
    )
    assert (
        client.post(_panel_url(participant, second, "original"), {**PANEL1, "continue": "1"}).status_code
        == 409
    )
    assert not answers.lay_answers(item=second)


def test_access_rules(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    other = _consented(study)
    _begin(client, other)
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    # A radiologist's token on lay pages: 403.
    for name in ("lay-start", "lay-consent", "lay-instructions", "lay-done"):
        assert client.get(_url(name, radiologist)).status_code == 403
    assert client.get(_panel_url(radiologist, item, "original")).status_code == 403
    # Another participant's item: 404, nothing saved.
    response = client.post(_panel_url(other, item, "original"), {**PANEL1, "continue": "1"})
    assert response.status_code == 404
    assert not answers.lay_answers()
    # An unknown token: 404.
    assert client.get(reverse("surveys:lay-start", kwargs={"token": "nope"})).status_code == 404
    # A closed study: a clear 403 page, and autosave refused.
    study_services.study_set_status(study=study, status=Study.Status.CLOSED)
    response = client.get(_panel_url(participant, item, "original"))
    assert response.status_code == 403 and "closed" in response.content.decode()
    assert (
        client.post(_panel_url(participant, item, "original"), {**PANEL1, "autosave": "1"}, **HX).status_code
        == 403
    )
    assert not answers.lay_answers()


def test_returned_participant_cannot_continue(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    _begin(client, participant)
    item = LayItem.objects.get(participant=participant)
    Participant.objects.filter(pk=participant.pk).update(returned_at=participant.consented_at)
    assert client.get(_url("lay-start", participant)).status_code == 403
    # Nor can they answer a panel directly, with or without JavaScript.
    url = _panel_url(participant, item, "original")
    assert client.get(url).status_code == 403
    assert client.post(url, {**PANEL1, "autosave": "1"}, **HX).status_code == 403
    assert client.post(url, {**PANEL1, "continue": "1"}).status_code == 403
    assert not answers.lay_answers(item=item)


def test_double_clicked_submit_is_answered_like_the_first(client):
    study = build_study(n_sources=2)
    check = AttentionCheck.objects.create(
        study=study, position=1, prompt="Choose Blue.", options=["Red", "Blue"], expected_answer="Blue"
    )
    participant = _consented(study)
    first, second = _begin(client, participant)
    url = _panel_url(participant, first, "original")
    for _ in range(2):
        response = client.post(url, {**PANEL1, "continue": "1"})
        assert response.status_code == 302 and response["Location"] == _panel_url(
            participant, first, "assisted"
        )
    client.get(_panel_url(participant, first, "assisted"))
    url = _panel_url(participant, first, "assisted")
    for _ in range(2):
        assert client.post(url, {**PANEL2, "continue": "1"}).status_code == 302
    first.refresh_from_db()
    a, b = first.preference_order[:2]
    url = _panel_url(participant, first, "preference")
    data = {"fields": ["most", "least"], "most": [a], "least": [b], "continue": "1"}
    # The last panel before an attention check: the second click finds the check due, not a 409.
    for _ in range(2):
        response = client.post(url, data)
        assert response.status_code == 302
        assert response["Location"] == _url("lay-check", participant, check_id=check.pk)
    assert _follow_to(client, _url("lay-start", participant)).redirect_chain[-1][0] == _url(
        "lay-check", participant, check_id=check.pk
    )
    # A second click that would change an answer is still refused.
    assert client.post(url, {**data, "most": [b], "least": [a]}).status_code == 409
    assert sorted(answers.preference(first).most) == [a]
    assert len(answers.lay_answers(item=first)) == 2 and not answers.lay_answers(item=second)


def test_autosave_time_is_capped_by_the_time_since_rendering(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    url = _panel_url(participant, item, "original")
    rendered = _rendered(item, "original", 3)
    # A client claiming 30 minutes on a page rendered 3 s ago.
    client.post(
        url, {**rendered, "understanding": "Completely", "autosave": "1", "elapsed_ms": "1800000"}, **HX
    )
    spent = answers.lay_answer(item, "original").time_spent_ms
    assert 3000 <= spent < 60_000
    # Without a render stamp the claim is not counted at all.
    client.post(url, {"confidence": "Not at all", "autosave": "1", "elapsed_ms": "1800000"}, **HX)
    assert answers.lay_answer(item, "original").time_spent_ms == spent


def test_nul_bytes_and_overlong_text_are_a_clear_400(client):
    study = build_study(n_sources=1)
    study.background_questions = [{"key": "job", "question": "Your job?"}]
    study.save()
    participant = _consented(study)
    response = client.post(_url("lay-background", participant), {"job": "nurse\x00"})
    assert response.status_code == 400 and "cannot be saved" in response.content.decode()
    response = client.post(_url("lay-background", participant), {"job": "x" * 501})
    assert response.status_code == 400 and "500 characters" in response.content.decode()
    participant.refresh_from_db()
    assert participant.background == {}
    assert client.post(_url("lay-background", participant), {"job": "nurse"}).status_code == 302
    check = AttentionCheck.objects.create(
        study=study, position=0, prompt="Type blue.", expected_answer="blue"
    )
    item = _begin(client, participant)[0]
    check_url = _url("lay-check", participant, check_id=check.pk)
    for bad in ("blue\x00", "b" * 201):
        assert client.post(check_url, {"answer": bad}).status_code == 400
    assert not AttentionCheckResponse.objects.exists()
    assert client.post(check_url, {"answer": "blue"}).status_code == 302
    client.post(_panel_url(participant, item, "original"), {**PANEL1, "continue": "1"})
    client.get(_panel_url(participant, item, "assisted"))
    client.post(_panel_url(participant, item, "assisted"), {**PANEL2, "continue": "1"})
    item.refresh_from_db()
    url = _panel_url(participant, item, "preference")
    fields = {"fields": ["most", "least"], "most": [item.preference_order[0]]}
    for bad, message in (("Clear\x00words", "cannot be saved"), ("w" * 2001, "under 2000 characters")):
        response = client.post(url, {**fields, "most_justification": bad, "autosave": "1"}, **HX)
        assert response.status_code == 400 and message in response.content.decode()
        response = client.post(url, {**fields, "least_justification": bad, "continue": "1"})
        assert response.status_code == 400 and message in response.content.decode()
    assert not [p for p in answers.preferences(item=item) if p.most_justification or p.least_justification]


def test_attention_check_pages(client):
    study = build_study(n_sources=1)
    check = _mild_check(study, position=0)
    participant = _consented(study)
    item = _begin(client, participant)[0]
    response = _follow_to(client, _url("lay-start", participant))
    assert response.redirect_chain[-1][0] == _url("lay-check", participant, check_id=check.pk)
    assert "Please choose Mild." in response.content.decode()
    assert client.get(_panel_url(participant, item, "original"))["Location"] == _url(
        "lay-check", participant, check_id=check.pk
    )
    assert (
        client.post(_url("lay-check", participant, check_id=check.pk), {"answer": "Other"}).status_code == 400
    )
    response = client.post(
        _url("lay-check", participant, check_id=check.pk), {"answer": "Critical"}, follow=True
    )
    # Not told: straight on to the first sentence.
    assert response.redirect_chain[-1][0] == _panel_url(participant, item, "original")
    assert "wrong" not in response.content.decode().lower()
    assert AttentionCheckResponse.objects.get().passed is False
    assert (
        client.post(_url("lay-check", participant, check_id=check.pk), {"answer": "Mild"}).status_code == 409
    )
    assert AttentionCheckResponse.objects.get().passed is False
