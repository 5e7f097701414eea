"""A study adds one Likert item to the protocol's radiologist instrument: in headless Chromium the
radiologist sees it in each simplification's card, answers it by clicking (autosaved), reloads the
page and sees the answer kept; the database holds it as an ItemAnswer with its code."""

from __future__ import annotations

import dataclasses
import re

import pytest

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.models import ExpertItem, Participant
from instruments.presets import preset_load
from instruments.schema import Point, Scale
from tests.annotation import answers
from tests.annotation.factories import ACTIONABILITY, build_study, instrument_with
from tests.e2e.polling import wait_for

LIKERT = preset_load("protocol_003_radiologist").item("correctness").scale
# The added item on the protocol's own 1-5 Likert scale.
LIKERT_ACTIONABILITY = dataclasses.replace(
    ACTIONABILITY, scale=preset_load("protocol_003_radiologist").item("correctness").scale
)


@pytest.mark.django_db(transaction=True)
def test_a_radiologist_answers_an_added_likert_item_and_sees_it_after_a_reload(page, live_server):
    from playwright.sync_api import expect

    study = build_study(slug="added-browser", n_sources=1, systems=("a", "b"))
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_radiologist", LIKERT_ACTIONABILITY), actor=None
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)

    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    item = ExpertItem.objects.get(participant=participant)
    expect(page).to_have_url(re.compile(rf"/r/{participant.token}/page/{item.pk}/$"))
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    row = page.locator('[data-field="A-actionability"]')
    expect(row).to_contain_text("It tells the patient what to do next.")
    expect(page.locator('[data-field="B-actionability"]')).to_be_visible()

    row.locator('label:has(input[value="4"])').click()
    expect(row.locator(".row-status .saved")).to_be_visible()
    assert wait_for(lambda: answers.item_answers().filter(participant=participant).exists(), True)
    answer = answers.item_answers().get(participant=participant)
    assert (answer.item_key, answer.value, answer.score) == ("actionability", 4, 4.0)
    assert answer.shown_text_id == item.text_order[0]

    page.reload()
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    expect(page.locator('[data-field="A-actionability"] input[value="4"]')).to_be_checked()
    expect(page.locator('[data-field="B-actionability"] input:checked')).to_have_count(0)


LONG_LABELS = dataclasses.replace(
    ACTIONABILITY,
    key="long_labels",
    scale=Scale(
        points=tuple(
            Point(code=code, label={"en": text, "es": text})
            for code, text in enumerate(
                (
                    "Not at all: the patient would not know what to do next after reading it",
                    "Partly: some of the next steps are there but others are missing or unclear",
                    "Mostly: the next steps are there, with a detail or two left out of the text",
                    "Fully: every next step is there, in words the patient can act upon at once",
                ),
                start=1,
            )
        )
    ),
)


@pytest.mark.django_db(transaction=True)
def test_an_added_ordinal_item_with_long_labels_fits_a_phone(page, live_server, artifacts_dir):
    from playwright.sync_api import expect

    study = build_study(slug="long-labels", n_sources=1, systems=("a", "b"))
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_radiologist", LONG_LABELS), actor=None
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    row = page.locator('[data-field="A-long_labels"]')
    expect(row).to_contain_text("every next step is there")
    page.screenshot(path=str(artifacts_dir / "added_item_long_labels_390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # Each long label is an option of its own line, readable, not four squeezed side by side.
    for n in range(4):
        box = row.locator("label").nth(n).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert box["width"] >= 300, box
    row.locator('label:has(input[value="4"])').click()
    expect(row.locator(".row-status .saved")).to_be_visible()
