"""A pairwise study in the browser: three raters compare the texts of 3 systems (one by
keyboard alone, one on a 390 px phone), and the dashboard's ranking equals bradley_terry fitted
here on the pairs stored in the database."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from annotation import participant_services
from annotation.models import PairwiseTask, Participant
from evaluation import services as evaluation_services
from measures.stats.pairwise import bradley_terry
from surveys.compare_two.services import pairwise_instrument_attach
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS

SYSTEMS = ("a", "b", "c")
PHONE = {"width": 390, "height": 844}
OPTION_KEYS = ("left", "right", "tie", "neither")


def _system_of(text: str) -> str:
    return re.search(r"by (\w+)\.", text).group(1)


def _decide(rater: int, number: int, left: str, right: str) -> str:
    """A rater's answer: mostly a > b > c, with ties, a "neither" and some upsets so that every
    system wins and loses (the strengths then exist)."""
    if (rater + number) % 5 == 0:
        return "tie"
    if rater == 2 and number == 3:
        return "neither"
    better = min(left, right) if (rater * 7 + number) % 4 else max(left, right)
    return "left" if better == left else "right"


def _answer_all(page, token: str, rater: int, *, keyboard: bool) -> int:
    page.goto(f"/s/{token}/")
    if "/consent/" in page.url:
        with page.expect_navigation():
            page.get_by_role("button", name="I agree, continue").click()
    answered = 0
    while "/compare/" in page.url:
        left = _system_of(page.get_by_test_id("text-a").inner_text())
        right = _system_of(page.get_by_test_id("text-b").inner_text())
        choice = _decide(rater, answered, left, right)
        if keyboard:
            page.keyboard.press(str(OPTION_KEYS.index(choice) + 1))
            assert page.locator(f"input[name=choice][value={choice}]").is_checked()
            with page.expect_navigation():
                page.keyboard.press("Enter")
        else:
            page.locator(f"input[name=choice][value={choice}]").check()
            if answered == 0:
                page.fill("#reason", "Clearer wording.")
            with page.expect_navigation():
                page.get_by_role("button", name="Save and continue").click()
        answered += 1
    assert page.url.endswith("/done/")
    return answered


@pytest.mark.django_db(transaction=True)
def test_three_raters_rank_three_systems_and_the_dashboard_shows_the_bradley_terry_fit(
    browser, live_server, settings
):
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    study = build_study(slug="pairwise-e2e", n_sources=8, systems=SYSTEMS)
    pairwise_instrument_attach(study=study)
    raters = participant_services.participants_invite(study=study, role=Participant.Role.RADIOLOGIST, count=3)

    for rater, person in enumerate(raters):
        viewport = PHONE if rater == 1 else {"width": 1024, "height": 768}
        context = browser.new_context(base_url=live_server.url, viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(30_000)  # a loaded CI machine
        if rater == 1:
            page.goto(f"/s/{person.token}/")
            assert "/consent/" in page.url  # consent before the first comparison
            with page.expect_navigation():
                page.get_by_role("button", name="I agree, continue").click()
            # Fine at 390 px: the two texts stack and nothing scrolls sideways.
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            a_box = page.get_by_test_id("text-a").bounding_box()
            b_box = page.get_by_test_id("text-b").bounding_box()
            assert b_box["y"] >= a_box["y"] + a_box["height"]
        assert _answer_all(page, person.token, rater, keyboard=rater == 0) == 8
        context.close()

    answers = typed_answers.item_answers().filter(participant__study=study)
    assert answers.count() == 24
    assert answers.filter(value__reason="Clearer wording.").count() == 2

    # The independent fit: the stored pairs, read here from the answers and the pages that showed them.
    tasks = {
        (t.participant_id, t.left.shown_text_id, t.right.shown_text_id): t
        for t in PairwiseTask.objects.select_related("left__system", "right__system")
    }
    wins, ties, raters_of, sources_of = [], [], [], []
    tie_raters, tie_sources = [], []
    for answer in answers:
        task = tasks[(answer.participant_id, answer.shown_text_id, answer.reference_text_id)]
        left, right = task.left.system.key, task.right.system.key
        choice = answer.value["choice"]
        if choice in ("tie", "neither"):
            ties.append((left, right))
            tie_raters.append(answer.participant_id)
            tie_sources.append(task.source_id)
        else:
            wins.append((left, right) if choice == "left" else (right, left))
            raters_of.append(answer.participant_id)
            sources_of.append(task.source_id)
    expected = bradley_terry(wins, ties=ties, raters=raters_of + tie_raters, sources=sources_of + tie_sources)

    evaluation_services.analysis_snapshot_compute_here(study=study)
    get_user_model().objects.create_user("pw-researcher", password="pw-pass-1")
    study.researchers.add(get_user_model().objects.get(username="pw-researcher"))
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", "pw-researcher")
    page.fill("input[name=password]", "pw-pass-1")
    with page.expect_navigation():
        page.click("form button[type=submit]")
    page.goto(f"/dashboard/{study.slug}/")
    table = page.locator("table[data-ranking=asked]")
    rows = table.locator("tbody tr")
    shown = {
        rows.nth(i).get_attribute("data-system"): float(rows.nth(i).get_attribute("data-strength"))
        for i in range(rows.count())
    }
    assert shown.keys() == set(SYSTEMS)
    for system, strength in shown.items():
        assert strength == pytest.approx(expected[system]["strength"], abs=1e-9)
    order = [rows.nth(i).get_attribute("data-system") for i in range(rows.count())]
    assert order == sorted(SYSTEMS, key=lambda s: expected[s]["rank"])
    first = rows.nth(0).inner_text()
    assert f"{expected[order[0]]['low']:.3f} to {expected[order[0]]['high']:.3f}" in first
    assert page.locator("table[data-ranking=length_controlled]").count() == 1
    assert page.locator("table[data-ranking=derived]").count() == 0
    context.close()
