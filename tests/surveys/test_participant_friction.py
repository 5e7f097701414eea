"""Participant friction, server side: panel 3's overlapping tick is refused by itself and named
(the rest of the save is stored), the radiologist page flags rows only after a submit attempt or on
a page begun earlier, consent texts and details for both roles, the decline and screen-out pages
with their return links, the lay instructions page's one "Instructions", and attention-check
screening with the screened-out left out of the analysis."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.urls import reverse

from annotation import participant_services, protocol_texts
from annotation.models import AttentionCheck, LayItem, Participant
from annotation.selectors import analysed_participants
from evaluation import progress
from evaluation.analysis import study_frames
from surveys.lay import selectors as design
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.surveys.test_lay_flow import _choices
from tests.surveys.test_lay_views import HX, PANEL1, PANEL2, _begin, _consented, _panel_url, _url
from tests.surveys.test_radiologist_views import full_answers, page_url, radiologist, started

pytestmark = pytest.mark.django_db


def _at_panel_3(client) -> tuple[Participant, LayItem, str]:
    """A layperson of a one-sentence study at panel 3, and its address."""
    participant = _consented(build_study(n_sources=1))
    item = _begin(client, participant)[0]
    for panel, answers in (("original", PANEL1), ("assisted", PANEL2)):
        assert (
            client.post(_panel_url(participant, item, panel), {**answers, "continue": "1"}).status_code == 302
        )
    item.refresh_from_db()
    return participant, item, _panel_url(participant, item, "preference")


# --- Panel 3: an overlapping tick ----------------------------------------------------------------------


def test_an_overlapping_autosave_is_refused_by_name_and_the_valid_part_is_stored(client):
    participant, item, url = _at_panel_3(client)
    _, b, c, _ = item.preference_order
    both = {"fields": ["most", "least"], "autosave": "1"}
    assert client.post(url, {**both, "most": [b]}, **HX).status_code == 200
    response = client.post(url, {**both, "most": [b], "least": [b, c]}, **HX)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Simplification B cannot be among both" in html and "Your other answers are saved." in html
    assert f'data-conflict="least" data-value="{b}"' in html
    assert f'data-value="{c}"' not in html  # C as least is fine, and stored
    assert _choices(item) == ({b}, {c})


def test_a_submit_with_an_overlapping_tick_shows_the_refused_box_marked_and_keeps_the_rest(client):
    participant, item, url = _at_panel_3(client)
    _, b, c, _ = item.preference_order
    data = {"fields": ["most", "least"], "most": [b], "least": [b, c], "continue": "1"}
    client.post(url, {"fields": ["most", "least"], "most": [b], "autosave": "1"}, **HX)
    response = client.post(url, data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "your tick for B in Q6 (least liked) was not saved (B stays in Q5 (most liked))" in html
    refused = re.search(rf'<input type="checkbox" name="least" value="{b}"[^>]*>', html).group(0)
    assert 'aria-invalid="true"' in refused and "checked" not in refused
    assert 'aria-describedby="q-least-error"' in refused and 'id="q-least-error"' in html
    kept = re.search(rf'<input type="checkbox" name="least" value="{c}"[^>]*>', html).group(0)
    assert "checked" in kept and "aria-invalid" not in kept
    assert _choices(item) == ({b}, {c})
    item.refresh_from_db()
    assert item.stage == "preference"  # shown again, not moved on past the refusal
    assert client.post(url, {**data, "least": [c]}).status_code == 302
    item.refresh_from_db()
    assert item.stage == "done" and _choices(item) == ({b}, {c})


# --- Radiologist page: flags and messages ---------------------------------------------------------------


def test_resume_on_a_page_not_begun_flags_no_row_but_on_a_page_begun_it_does(client):
    study = build_study(n_sources=3)
    participant = radiologist(study)
    items = started(client, participant)
    client.post(page_url(participant, items[0]), full_answers(items[0]))
    start = reverse("surveys:expert-start", args=[participant.token])
    response = client.get(start)
    assert response.url == page_url(participant, items[1]) + "?why=resume"
    html = client.get(response.url).content.decode()
    assert "Please answer" not in html and ' missing"' not in html
    assert "Welcome back. Sentence 2 is the first one not finished." in html and "marked below" not in html

    client.post(page_url(participant, items[1]), {"A-correctness": "3"}, **HX)
    html = client.get(client.get(start).url).content.decode()
    missing = html.count("Please answer")
    counted = f'<span class="missing-count">{missing}</span> unanswered row<span class="missing-plural">s'
    assert missing > 0 and counted in html
    # A plain submit of a page with gaps flags them too (the rater tried to go on).
    html = client.get(page_url(participant, items[2]) + "?missing=1").content.decode()
    assert html.count("Please answer") > 0 and "data-missing-box" in html


# --- Consent: texts and details ----------------------------------------------------------------------------


def test_a_radiologist_gets_radlays_default_consent_and_beginning_records_it(client):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    url = reverse("surveys:expert-instructions", args=[participant.token])
    html = client.get(url).content.decode()
    first_paragraph = protocol_texts.EXPERT_CONSENT_DEFAULT.split("\n\n")[0]
    assert first_paragraph in html and "I agree — begin" in html
    client.post(url)
    participant.refresh_from_db()
    assert participant.consented_at is not None
    # Once agreed, the page offers to continue without asking again.
    assert "I agree — begin" not in client.get(url).content.decode()


def test_the_consent_pages_show_the_studys_duration_ethics_approval_and_contact(client):
    study = build_study(n_sources=1)
    study.expected_duration_minutes = 25
    study.ethics_approval = "University Ethics Board, ref. IRB-2026-0142"
    study.consent_contact = "Dr A. Researcher\nradlay-study@example.org"
    study.save()
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    pages = [
        client.get(_url("lay-consent", lay)).content.decode(),
        client.get(reverse("surveys:lay-join", args=[study.slug]) + "?PROLIFIC_PID=p1").content.decode(),
        client.get(reverse("surveys:expert-instructions", args=[radiologist(study).token])).content.decode(),
    ]
    for html in pages:
        assert "About 25 minutes" in html
        assert "University Ethics Board, ref. IRB-2026-0142" in html
        assert "Dr A. Researcher<br>radlay-study@example.org" in html


def test_no_consent_details_are_shown_when_none_are_set(client):
    study = build_study(n_sources=1)
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    assert "consent-details" not in client.get(_url("lay-consent", lay)).content.decode()


def test_the_admin_edits_the_new_study_settings(client):
    study = build_study(n_sources=1)
    admin = get_user_model().objects.create_superuser("boss", "boss@example.org", "pw-for-tests-only")
    client.force_login(admin)
    html = client.get(reverse("admin:annotation_study_change", args=[study.pk])).content.decode()
    for name in (
        "expected_duration_minutes",
        "ethics_approval",
        "consent_contact",
        "decline_redirect_url",
        "screen_out_after_failed_checks",
        "screened_out_redirect_url",
    ):
        assert f'name="{name}"' in html, name
    assert "radlay&#x27;s own consent texts" in html


def test_the_lay_instructions_page_says_instructions_once(client):
    study = build_study(n_sources=1)
    participant = _consented(study)
    html = client.get(_url("lay-instructions", participant)).content.decode()
    body = html.split("<body", 1)[1]
    assert len(re.findall(r">\s*Instructions\s*<", body)) == 1


# --- Declining ------------------------------------------------------------------------------------------


def test_declining_links_back_to_the_platform_when_the_study_has_a_return_url(client):
    study = build_study(n_sources=1)
    join = reverse("surveys:lay-join", args=[study.slug]) + "?PROLIFIC_PID=p2"
    html = client.post(join, {"choice": "decline"}).content.decode()
    assert "choose its “Return” option there" in html and 'id="return-link"' not in html
    study.decline_redirect_url = "https://app.prolific.com/submissions/complete?cc=NOCONSENT"
    study.save()
    html = client.post(join, {"choice": "decline"}).content.decode()
    assert 'id="return-link" href="https://app.prolific.com/submissions/complete?cc=NOCONSENT"' in html
    invited = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    html = client.post(_url("lay-consent", invited), {"choice": "decline"}).content.decode()
    assert 'id="return-link"' in html


# --- Attention-check screening --------------------------------------------------------------------------


def _checked_study(limit: int | None):
    study = build_study(n_sources=3)
    study.screen_out_after_failed_checks = limit
    study.screened_out_redirect_url = "https://app.prolific.com/submissions/complete?cc=SCREENED"
    study.save()
    checks = [
        AttentionCheck.objects.create(
            study=study,
            position=position,
            prompt="Please choose Mild.",
            options=["Critical", "Mild"],
            expected_answer="Mild",
        )
        for position in (0, 1)
    ]
    return study, checks


def _answer_item(client, participant, item) -> None:
    for panel, answers in (("original", PANEL1), ("assisted", PANEL2)):
        client.post(_panel_url(participant, item, panel), {**answers, "continue": "1"})
    item.refresh_from_db()
    a = item.preference_order[0]
    client.post(
        _panel_url(participant, item, "preference"),
        {"fields": ["most", "least"], "most": [a], "least": [item.preference_order[1]], "continue": "1"},
    )


def test_two_failed_checks_screen_a_participant_out_when_the_study_says_so(client):
    study, (first, second) = _checked_study(limit=2)
    participant = _consented(study)
    items = _begin(client, participant)
    client.post(_url("lay-check", participant, check_id=first.pk), {"answer": "Critical"})
    participant.refresh_from_db()
    assert participant.screened_out_at is None  # one failure: goes on
    _answer_item(client, participant, items[0])
    response = client.post(
        _url("lay-check", participant, check_id=second.pk), {"answer": "Critical"}, follow=True
    )
    html = response.content.decode()
    assert "Thank you for your time" in html and "the survey ends here for you" in html
    assert 'id="screened-out-link" href="https://app.prolific.com/submissions/complete?cc=SCREENED"' in html
    participant.refresh_from_db()
    assert participant.screened_out_at is not None
    # The survey has ended: no page, no answer.
    ended = client.get(_panel_url(participant, items[1], "original"))
    assert ended.status_code == 200 and "the survey ends here for you" in ended.content.decode()
    refused = client.post(_panel_url(participant, items[1], "original"), {**PANEL1, "autosave": "1"}, **HX)
    assert refused.status_code == 403 and not typed_answers.lay_answers(item=items[1])
    # Recorded for the researcher, and out of the analysis (kept in the exports).
    statuses = {r["participant"]: r["status"] for r in progress.participants_progress(study=study)}
    assert statuses[participant.pseudonym] == "screened out"
    assert design.participant_is_abandoned(participant=participant)
    assert participant.latin_square_row not in design.lay_live_rows(study=study)
    assert len(typed_answers.lay_answers(participant=participant)) == 2
    assert study_frames.lay_answers_frame(study=study).empty
    assert study_frames.lay_preferences_frame(study=study).empty


def test_failed_checks_never_end_the_survey_when_screening_is_off(client):
    study, (first, second) = _checked_study(limit=None)
    participant = _consented(study)
    items = _begin(client, participant)
    client.post(_url("lay-check", participant, check_id=first.pk), {"answer": "Critical"})
    _answer_item(client, participant, items[0])
    response = client.post(_url("lay-check", participant, check_id=second.pk), {"answer": "Critical"})
    assert response["Location"] == _panel_url(participant, items[1], "original")
    participant.refresh_from_db()
    assert participant.screened_out_at is None
    assert len(study_frames.lay_answers_frame(study=study)) == 2


def test_the_analysis_keeps_everyone_not_screened_out():
    study = build_study(n_sources=1)
    kept, screened = (_consented(study) for _ in range(2))
    Participant.objects.filter(pk=screened.pk).update(screened_out_at="2026-01-01T00:00:00Z")
    analysed = set(
        Participant.objects.filter(analysed_participants(), study=study).values_list("pk", flat=True)
    )
    assert analysed == {kept.pk}
    assert set(
        LayItem.objects.filter(analysed_participants(path="participant__")).values_list(
            "participant_id", flat=True
        )
    ) <= {kept.pk}


def test_the_screening_limit_is_at_least_one_in_the_database():
    study = build_study(n_sources=1)
    study.screen_out_after_failed_checks = 0
    with pytest.raises(IntegrityError):
        study.save()
