"""Planted controls end to end: on a study with 20% planted controls, two radiologists
answer every page in headless Chromium, one at random (seeded random Likert choices), one as a
careful rater does (real simplifications 4-5; a planted copy, where they notice its error, 1-2 on
factual correctness, completeness and hallucination). The progress page then flags the random one
unreliable and not the careful one, and no page ever said which rows were planted."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth import get_user_model

from annotation import participant_services
from annotation.models import ExpertItem, Participant, PlantedControl
from evaluation.analysis.planted_control_scores import RELIABILITY_ASPECTS, study_rater_reliability
from generation.services.controls import study_controls_plant
from studies import source_services, study_services
from tests.annotation import answers

SIDES = ("left", "right")
# Four systems' wordings of each source: negations, sides and sizes for the controls to change.
WORDINGS = (
    "There is a {size} cm spot in the {side} kidney. It is not dangerous.",
    "A small {size} cm spot was seen in the {side} kidney, with no sign of spread.",
    "The scan shows a {size} cm lump on the {side} kidney. There is no fluid around it.",
    "Your {side} kidney has a {size} cm spot that is probably harmless.",
)


def _study():
    study, _ = study_services.study_get_or_create(slug="attention-browser", title="Kidney sentences")
    study.status = study.Status.OPEN
    study.save()
    systems = [source_services.system_upsert(study=study, key=key) for key in ("a", "b", "c", "d")]
    for i in range(10):
        size, side = f"1.{i + 1}", SIDES[i % 2]
        source = source_services.source_upsert(
            study=study,
            key=f"s{i + 1:02d}",
            text=f"{size} cm hypodense lesion in the {side} kidney, likely a cyst.",
        )
        for system, wording in zip(systems, WORDINGS, strict=True):
            text = wording.format(size=size, side=side)
            source_services.simplification_upsert(source=source, system=system, text=text)
    return study


# Set every row's answers in the page, then the form is posted by its own "Save and next" button
# (a plain POST of the whole page: the server saves it as it saves a rater's clicks).
FILL = """([choices, severity]) => {
  for (const [field, value] of Object.entries(choices)) {
    document.querySelector(`input[name="${field}"][value="${value}"]`).checked = true;
  }
  document.querySelector(`input[name="original-severity"][value="${severity}"]`).checked = true;
  document.querySelector('input[name="original-simplicity"][value="3"]').checked = true;
}"""
CARDS = """() => [...document.querySelectorAll("section.simplification")].map(s => ({
  label: s.dataset.label, text: s.querySelector(".simp-text").textContent,
  fields: [...s.querySelectorAll(".rate-row")].map(r => r.dataset.field)}))"""


def _answer_every_page(page, participant: Participant, planted_texts: set[str], *, careful: bool, seed: int):
    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    pages = ExpertItem.objects.filter(participant=participant).count()
    for _ in range(pages):
        page.wait_for_selector("#expert-form[data-ready]", state="attached")
        html = page.content().lower()
        assert "planted" not in html and "degrad" not in html
        choices = {}
        for card in page.evaluate(CARDS):
            planted = card["text"] in planted_texts
            for field in card["fields"]:
                aspect = field.split("-", 1)[1]
                # Drawn per (text, aspect): the answers do not depend on where a row landed.
                rng = random.Random(f"{seed}:{card['text']}:{aspect}")
                if not careful:
                    value = rng.randint(1, 5)
                elif planted and aspect in RELIABILITY_ASPECTS:
                    value = rng.choice((1, 2))
                else:
                    value = rng.choice((4, 5))
                choices[field] = str(value)
        page.evaluate(FILL, [choices, "Mild"])
        with page.expect_navigation():
            page.click("#next-page")
    page.wait_for_url(f"**/r/{participant.token}/done/")


@pytest.mark.django_db(transaction=True)
def test_a_random_rater_is_flagged_unreliable_and_a_careful_one_is_not(page, browser, live_server):
    from playwright.sync_api import expect

    study = _study()
    planting = study_controls_plant(study=study, rate=0.2, seed=0)
    assert planting.planted == 10 and planting.share == pytest.approx(0.2)
    planted_texts = set(PlantedControl.objects.filter(study=study).values_list("text", flat=True))
    kinds = set(PlantedControl.objects.filter(study=study).values_list("kind", flat=True))
    assert len(kinds) >= 3, kinds  # a mix of degradations, not one kind
    careful = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    careless = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    for seed, participant in enumerate((careful, careless)):
        Participant.objects.filter(pk=participant.pk).update(order_seed=seed + 7)
        participant.refresh_from_db()
    _answer_every_page(page, careful, planted_texts, careful=True, seed=1)
    other = browser.new_context(base_url=live_server.url)
    try:
        _answer_every_page(other.new_page(), careless, planted_texts, careful=False, seed=2)
    finally:
        other.close()
    # Every control was answered, by both, in the store apart from the real ratings.
    for participant in (careful, careless):
        assert len(answers.control_answers(participant=participant)) == 10
        assert len(answers.ratings(participant=participant)) == 40

    get_user_model().objects.create_superuser("researcher", password="pw-planted-1")
    page.goto("/dashboard/login/")
    page.fill("#id_username", "researcher")
    page.fill("#id_password", "pw-planted-1")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    page.goto(f"/dashboard/{study.slug}/progress/")
    table = page.locator("#reliability-table")
    expect(table).to_be_visible()
    statuses = {}
    for participant in (careful, careless):
        participant.refresh_from_db()
        label = participant.pseudonym or f"P{participant.pk}"
        row = table.locator("tbody tr", has=page.locator("td", has_text=label)).first
        statuses[participant.pk] = row.get_attribute("data-status")
        expect(row.locator("td").nth(2)).to_have_text("10")
    assert statuses == {careful.pk: "reliable", careless.pk: "unreliable"}
    figures = {row["participant"]: row for row in study_rater_reliability(study=study)}
    # Measured: the careful rater p = 7e-5, every control caught; the random one p = 0.42, 30% caught.
    assert sorted(row["caught"] for row in figures.values()) == [0.3, 1.0]
