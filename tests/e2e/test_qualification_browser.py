"""A radiologist fails the qualification round, reads the explanations, tries again and passes,
then reaches the study's first real page: in headless Chromium at phone width (390 px), against
the live server and PostgreSQL."""

from __future__ import annotations

import re

import pytest

from annotation import participant_services
from annotation.models import ExpertItem, ItemAnswer, Participant
from instruments.presets import preset_load
from qualification.models import PracticeAnswer, QualificationAttempt
from qualification.rule_services import qualification_rule_save
from tests.annotation.factories import build_study

PHONE = {"width": 390, "height": 844}
PRACTICE = preset_load("protocol_003_radiologist").practice


def no_sideways_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def take_round(page, *, wrong: set[int], shots=None) -> None:
    """Answer every practice item, the ones at the indexes in `wrong` far from their gold."""
    from playwright.sync_api import expect

    for i, entry in enumerate(PRACTICE):
        expect(page.locator("#practice-page")).to_have_attribute("data-practice-key", entry.key)
        no_sideways_scroll(page)
        value = (1 if entry.gold >= 4 else 5) if i in wrong else entry.gold
        page.locator(f'[data-field="answer"] label:has(input[value="{value}"])').click()
        page.click("#practice-check")
        feedback = page.locator("#practice-feedback")
        expect(feedback).to_be_visible()
        verdict = "Not within the expected answer" if i in wrong else "Within the expected answer"
        expect(feedback.locator("h2")).to_have_text(verdict)
        expect(feedback.locator(".explanation")).to_have_text(entry.explanation["en"])
        if shots is not None and i == 1:
            page.screenshot(path=str(shots / "qualification_feedback_phone.png"), full_page=True)
        no_sideways_scroll(page)
        page.click("#practice-next")


@pytest.mark.django_db(transaction=True)
def test_a_radiologist_fails_then_passes_and_reaches_the_first_page(browser, live_server, artifacts_dir):
    from playwright.sync_api import expect

    study = build_study(slug="qualbrowser", n_sources=2, systems=("a", "b"))
    qualification_rule_save(
        study=study, flow="expert", group="radiologist", share_percent=80, retries=1, on_fail="screen_out"
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"/s/{participant.token}/")
        page.click("#begin")
        expect(page).to_have_url(re.compile(rf"/q/{participant.token}/expert/$"))
        expect(page.locator("#practice-outcome")).to_contain_text("4 answers within the expected answer pass")
        page.click("#practice-start")

        take_round(page, wrong={0, 2, 3}, shots=artifacts_dir)
        outcome = page.locator("#practice-outcome")
        expect(outcome.locator("#practice-score")).to_have_text(
            "2 of 5 answers were within the expected answer (4 needed)."
        )
        # A real page is out of reach while the round is due.
        first = ExpertItem.objects.filter(participant=participant).order_by("position").first()
        page.goto(f"/r/{participant.token}/page/{first.pk}/")
        expect(page).to_have_url(re.compile(rf"/q/{participant.token}/expert/$"))
        page.click("#practice-start")  # "Try again"

        take_round(page, wrong={4})
        expect(page.locator("#practice-score")).to_have_text(
            "4 of 5 answers were within the expected answer (4 needed)."
        )
        expect(page.locator("#practice-outcome")).to_contain_text("You passed the practice round")
        page.screenshot(path=str(artifacts_dir / "qualification_passed_phone.png"), full_page=True)
        page.click("#practice-continue")
        expect(page).to_have_url(re.compile(rf"/r/{participant.token}/page/{first.pk}/$"))
        page.wait_for_selector("#expert-form[data-ready]", state="attached")
    finally:
        context.close()
    assert not errors, errors
    attempts = QualificationAttempt.objects.filter(participant=participant).order_by("number")
    assert [(a.correct, a.passed) for a in attempts] == [(2, False), (4, True)]
    assert PracticeAnswer.objects.filter(attempt__participant=participant).count() == 10
    # Practice is not rating: nothing reached the study's answers.
    assert not ItemAnswer.objects.filter(participant=participant).exists()
    participant.refresh_from_db()
    assert participant.qualification == "passed"
