"""Participant friction in headless Chromium: panel 3's overlapping tick (B most, B least, C
least, submit) loses no valid answer; on the lay panels a mouse answer hands the number keys on to
the next question and a finished panel takes digits and Enter; on the radiologist page the
unanswered-rows messages follow the answers, stay in view, and rows are flagged only where the
rater left them."""

from __future__ import annotations

import re

from annotation import participant_services
from annotation.models import LayItem, Participant
from surveys.lay import assignment, panels
from surveys.radiologist import assignment as expert_assignment
from surveys.radiologist import pages
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.e2e.polling import wait_for
from tests.surveys.test_lay_flow import _choices
from tests.surveys.test_radiologist_views import full_answers

PANEL1 = {"understanding": "Most of it", "confidence": "Not at all", "severity_guess": "Mild"}
PANEL2 = {**PANEL1, "helpfulness": "It did not help"}


def _lay_at(slug: str, panel: str) -> tuple[Participant, LayItem]:
    """A layperson of a one-sentence study, at `panel` of their item."""
    study = build_study(slug=slug, n_sources=1)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    assignment.lay_survey_start(participant=participant)
    item = LayItem.objects.get(participant=participant)
    for done, answers in (("original", PANEL1), ("assisted", PANEL2)):
        if done == panel:
            break
        item.refresh_from_db()
        panels.lay_panel_open(item=item, panel=done)
        panels.lay_panel_save(participant=participant, item_id=item.pk, panel=done, data=answers, submit=True)
    item.refresh_from_db()
    assert item.stage == panel
    return participant, item


def _open(page, participant, item, panel: str) -> None:
    page.goto(f"/l/{participant.token}/sentence/{item.pk}/{panel}/")
    page.wait_for_selector("html.js", state="attached")


def _saved_after(page, action, status: int = 200) -> None:
    with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url) as answer:
        action()
    assert answer.value.status == status


def test_b_most_b_least_c_least_submit_keeps_b_most_and_c_least(page):
    """The exact sequence a participant met. The tick stored first (B as most) stays; the new
    conflicting tick (B as least) is refused: unticked again, marked invalid, and named; C as least
    is saved beside it; the submit loses nothing and goes on."""
    from playwright.sync_api import expect

    participant, item = _lay_at("overlap", "preference")
    _, b, c, _ = item.preference_order
    _open(page, participant, item, "preference")

    def tick(question: str, text: int):
        return lambda: page.locator(f'#q-{question} label:has(input[value="{text}"])').click()

    _saved_after(page, tick("most", b))
    _saved_after(page, tick("least", b), status=400)
    refused = page.locator(f'#q-least input[value="{b}"]')
    expect(refused).not_to_be_checked()
    expect(refused).to_have_attribute("aria-invalid", "true")
    expect(refused).to_have_attribute("aria-describedby", "save-status")
    expect(page.locator("#save-status")).to_contain_text(
        "Simplification B cannot be among both the most and the least liked"
    )
    expect(page.locator("#save-status")).to_contain_text("Your other answers are saved.")
    expect(page.locator(f'#q-most input[value="{b}"]')).to_be_checked()
    assert _choices(item) == ({b}, set())

    _saved_after(page, tick("least", c))
    expect(refused).not_to_have_attribute("aria-invalid", "true")
    assert _choices(item) == ({b}, {c})

    page.locator(".submitbar button[type=submit]").click()
    page.wait_for_url(re.compile(r"/done/$"))
    item.refresh_from_db()
    assert item.stage == "done" and _choices(item) == ({b}, {c})


def test_a_mouse_answer_hands_the_number_keys_to_the_next_question(page):
    from playwright.sync_api import expect

    participant, item = _lay_at("click-keys", "original")
    _open(page, participant, item, "original")
    _saved_after(page, lambda: page.locator('#q-understanding label:has(input[value="Most of it"])').click())
    expect(page.locator("#q-confidence input").first).to_be_focused()
    _saved_after(page, lambda: page.keyboard.press("2"))
    expect(page.locator('#q-understanding input[value="Most of it"]')).to_be_checked()
    expect(page.locator('#q-confidence input[value="With low confidence"]')).to_be_checked()

    def saved() -> tuple:
        answer = next(iter(typed_answers.lay_answers(item=item, phase="original")), None)
        return (answer.understanding, answer.confidence) if answer else ()

    assert wait_for(saved, ("Most of it", "With low confidence")) == ("Most of it", "With low confidence")


def test_a_fully_answered_panel_takes_digits_and_enter(page):
    """Back on a panel whose questions are all answered (nothing focused): a digit changes the
    last question, Enter goes on to the next panel."""
    from playwright.sync_api import expect

    participant, item = _lay_at("finished-panel", "original")
    panels.lay_panel_save(participant=participant, item_id=item.pk, panel="original", data=PANEL1)
    _open(page, participant, item, "original")
    _saved_after(page, lambda: page.keyboard.press("5"))
    expect(page.locator('#q-severity_guess input[value="Healthy"]')).to_be_checked()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/assisted/$"))
    expect(page.locator(".simp")).to_be_visible()
    answer = typed_answers.lay_answer(item, "original")
    assert (answer.understanding, answer.severity_guess) == ("Most of it", "Healthy")


# --- Radiologist page ------------------------------------------------------------------------------------


def _radiologist(slug: str, n_sources: int):
    study = build_study(slug=slug, n_sources=n_sources, systems=("a", "b"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    participant_services.participant_touch(participant=participant)
    return participant, expert_assignment.expert_items_ensure(participant=participant)


def _ready(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#expert-form[data-ready]", state="attached")


def test_the_n_key_notice_is_in_view_and_follows_the_answers_until_it_goes(page):
    from playwright.sync_api import expect

    participant, items = _radiologist("notice", 1)
    _ready(page, f"/r/{participant.token}/page/{items[0].pk}/")
    rows = page.locator(".rate-row").count()
    page.keyboard.press("n")
    notice = page.locator("#page-notice")
    expect(notice).to_contain_text(f"This sentence still has {rows} unanswered rows")
    expect(notice).to_be_in_viewport()
    for left in range(rows - 1, 0, -1):
        page.keyboard.press("3")
        expect(notice).to_contain_text(f"still has {left} unanswered row")
        expect(notice).to_be_in_viewport()
    page.keyboard.press("3")
    expect(page.locator("#page-state")).to_have_text("✓ Page complete")
    expect(notice).to_have_text("")
    expect(notice).to_be_hidden()


def test_welcome_back_is_focused_in_view_and_its_count_follows_the_answers(page):
    from playwright.sync_api import expect

    participant, items = _radiologist("welcome", 2)
    pages.expert_page_save(participant=participant, item=items[0], data=full_answers(items[0]))
    pages.expert_page_save(participant=participant, item=items[1], data={"A-correctness": "3"})
    page.goto(f"/s/{participant.token}/")
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    assert page.url.endswith(f"/page/{items[1].pk}/?why=resume")
    why = page.locator("#why-here")
    expect(why).to_be_focused()
    expect(why).to_be_in_viewport()
    flagged = page.locator(".rate-row.missing").count()
    assert flagged == page.locator(".rate-row").count() - 1
    expect(why.locator(".missing-count")).to_have_text(str(flagged))
    # A digit answers the first unanswered row (highlighted) and the count goes down.
    page.keyboard.press("4")
    expect(why.locator(".missing-count")).to_have_text(str(flagged - 1))
    first_open = page.locator(".rate-row").nth(0)
    expect(first_open.locator('input[data-key="4"]')).to_be_checked()


def test_a_page_not_begun_flags_no_row_on_welcome_back(page):
    from playwright.sync_api import expect

    participant, items = _radiologist("not-begun", 2)
    pages.expert_page_save(participant=participant, item=items[0], data=full_answers(items[0]))
    page.goto(f"/s/{participant.token}/")
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    expect(page.locator("#why-here")).to_have_text(
        re.compile(r"Welcome back\. Sentence 2 is the first one not finished\.$")
    )
    expect(page.locator(".rate-row.missing")).to_have_count(0)
    expect(page.locator(".row-status .error")).to_have_count(0)
