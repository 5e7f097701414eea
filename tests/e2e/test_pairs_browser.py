"""The pairs flow in headless Chromium, the two designs it was built for:

(a) seed 002 (MedLayBench-V, section 4.3): two radiologists and one lay reader rate caption pairs on
    Factual Correctness, Completeness, Simplicity and Fluency (1-5) — the stored ItemAnswer values
    must equal what each of them clicked;
(b) seed 000 (Layman's RRG, section 4.4): three annotators tick, per reference sentence, the
    generated sentences that match it — each stored score must equal sentence_matching_proportion
    of the ticks (computed here from what was ticked, not from the stored grid)."""

from __future__ import annotations

import re

import pytest

from annotation import source_services
from annotation.models import ItemAnswer
from annotation.pairs import design
from annotation.pairs.setup import pairs_participants_invite, study_instrument_attach
from instruments.answers import SentenceMatches, sentence_matching_proportion
from instruments.schema import ProportionOf
from measures.metrics.sentences import split_sentences
from tests.annotation.factories import build_study

CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")
PHONE = {"width": 390, "height": 844}


def _agree(page, token: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"/s/{token}/")
    expect(page.locator("h2", has_text="Information and consent")).to_be_visible()
    page.click("#agree")
    page.wait_for_selector("#pairs-form[data-ready]", state="attached")


def _wait_saved(page, field: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(f'.item[data-field="{field}"] .row-status .saved')).to_be_visible()


@pytest.mark.django_db(transaction=True)
def test_seed_002_two_radiologists_and_a_lay_reader_rate_caption_pairs(page, live_server, artifacts_dir):
    from playwright.sync_api import expect

    study = build_study(slug="medlay", n_sources=2, systems=("lay_a", "lay_b"))
    study_instrument_attach(study=study, preset_name="medlaybench_002", actor="test")
    raters = [
        *pairs_participants_invite(study=study, rater_group="radiologist", count=2),
        *pairs_participants_invite(study=study, rater_group="layperson", count=1),
    ]
    clicked: dict[tuple[int, int, str], int] = {}  # (participant, shown text, criterion) -> code
    for n, rater in enumerate(raters):
        _agree(page, rater.token)
        order = design.participant_pairs(participant=rater)
        assert len(order) == 4
        for index, pair in enumerate(order):
            expect(page).to_have_url(re.compile(rf"/p/{rater.token}/pair/{pair.shown_text_id}/$"))
            page.wait_for_selector("#pairs-form[data-ready]", state="attached")
            expect(page.locator("#progress")).to_contain_text(f"{index} of 4 pairs done")
            for c, criterion in enumerate(CRITERIA):
                code = (n + index + c) % 5 + 1
                field = f"medlaybench_002.{criterion}"
                page.locator(f'.item[data-field="{field}"] label:has(input[value="{code}"])').click()
                _wait_saved(page, field)
                clicked[(rater.pk, pair.shown_text_id, criterion)] = code
            if n == 0 and index == 0:
                # Changing one's mind: the last click is what is stored.
                field = "medlaybench_002.fluency"
                page.locator(f'.item[data-field="{field}"] label:has(input[value="1"])').click()
                _wait_saved(page, field)
                clicked[(rater.pk, pair.shown_text_id, "fluency")] = 1
                _no_serious_violation(page)
                page.set_viewport_size(PHONE)
                page.screenshot(path=str(artifacts_dir / "pairs_medlay_phone.png"), full_page=True)
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
                _no_serious_violation(page)
                page.set_viewport_size({"width": 1024, "height": 768})
            page.click("#next-page")
        expect(page.locator("#done")).to_contain_text("you have finished")
    stored = {
        (a.participant_id, a.shown_text_id, a.item_key): (a.value, a.score)
        for a in ItemAnswer.objects.filter(participant__study=study)
    }
    assert stored == {key: (code, float(code)) for key, code in clicked.items()}
    assert all(
        a.reference_text_id is None and a.instrument.key == "medlaybench_002" and a.time_spent_ms >= 0
        for a in ItemAnswer.objects.filter(participant__study=study)
    )


def _no_serious_violation(page) -> None:
    """axe-core's serious and critical violations (tests/e2e/test_accessibility.py), at the width
    the page is shown at; none is allowed."""
    from tests.e2e.test_accessibility import blocking_violations

    assert not blocking_violations(page), blocking_violations(page)


def _tick(page, selector: str, *, by_keyboard: bool) -> None:
    """Tick a grid box by mouse, or by keyboard (focus, then Space) as a keyboard user does."""
    box = page.locator(selector)
    if by_keyboard:
        box.focus()
        page.keyboard.press("Space")
        assert box.is_checked()
    else:
        box.check()


@pytest.mark.django_db(transaction=True)
def test_seed_000_three_annotators_match_sentences(page, live_server, artifacts_dir):
    from playwright.sync_api import expect

    study = build_study(slug="layman", n_sources=1, systems=("reference", "gen_a", "gen_b"))
    source_services.system_upsert(study=study, key="reference", is_reference=True)
    source = study.sources.get()
    texts = {
        "reference": "The lungs are clear. The heart is normal in size. There is no fluid.",
        "gen_a": "Your lungs look clear. Your heart is a normal size.",
        "gen_b": "The heart looks normal. There is a small spot on the left lung. No fluid is seen.",
    }
    for key, text in texts.items():
        source_services.simplification_upsert(source=source, system=study.systems.get(key=key), text=text)
    study_instrument_attach(study=study, preset_name="layman_rrg_000_matching", actor="test")
    annotators = pairs_participants_invite(study=study, rater_group="annotator", role="layperson", count=3)
    field = "layman_rrg_000_matching.sentence_match"
    references = split_sentences(texts["reference"])
    assert len(references) == 3
    ticked: dict[tuple[int, int], list[list[int]]] = {}
    for n, annotator in enumerate(annotators):
        _agree(page, annotator.token)
        for pair in design.participant_pairs(participant=annotator):
            page.wait_for_selector("#pairs-form[data-ready]", state="attached")
            generated = page.locator(".generated-sentences li").count()
            rows: list[list[int]] = []
            for r in range(len(references)):
                # Annotators disagree a little: each ticks a different subset.
                chosen = [g for g in range(generated) if (r + g + n) % 3 == 0]
                if chosen:
                    for g in chosen:
                        _tick(page, f'.item[data-field="{field}"] input[value="{r}-{g}"]', by_keyboard=n == 1)
                else:
                    _tick(
                        page,
                        f'.item[data-field="{field}"] input[name="{field}.none"][value="{r}"]',
                        by_keyboard=n == 1,
                    )
                rows.append(chosen)
            _wait_saved(page, field)
            ticked[(annotator.pk, pair.shown_text_id)] = rows
            if n == 0:
                _no_serious_violation(page)
                page.set_viewport_size(PHONE)
                page.screenshot(path=str(artifacts_dir / "pairs_matching_phone.png"), full_page=True)
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
                _no_serious_violation(page)
                page.set_viewport_size({"width": 1024, "height": 768})
            page.click("#next-page")
        expect(page.locator("#done")).to_contain_text("you have finished")
    answers = ItemAnswer.objects.filter(participant__study=study)
    assert answers.count() == 3 * 2
    for answer in answers:
        rows = ticked[(answer.participant_id, answer.shown_text_id)]
        generated = len(split_sentences(answer.shown_text.text))
        expected = sentence_matching_proportion(
            SentenceMatches(generated_count=generated, matches=tuple(frozenset(row) for row in rows)),
            ProportionOf.GENERATED,
        )
        assert answer.score == pytest.approx(expected)
        assert answer.value == {"generated_count": generated, "matches": rows}
        assert answer.reference_text_id == source.simplifications.get(system__key="reference").shown_text_id


@pytest.mark.django_db(transaction=True)
def test_a_spanish_study_runs_the_pairs_flow_in_spanish(page, live_server):
    """The interface in the study's language, the scripts' own messages too (static/radlay/pairs.js
    reads them from the page); the English-only preset's questions stay in English and the answer
    records that, the participant records Spanish."""
    from playwright.sync_api import expect

    study = build_study(slug="emparejar", n_sources=1, systems=("reference", "gen_a"))
    study.language = "es"
    study.save(update_fields=["language"])
    source_services.system_upsert(study=study, key="reference", is_reference=True)
    source = study.sources.get()
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="reference"),
        text="The lungs are clear. The heart is normal in size. There is no fluid.",
    )
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="gen_a"),
        text="Your lungs look clear. Your heart is fine.",
    )
    study_instrument_attach(study=study, preset_name="layman_rrg_000_matching", actor="test")
    annotator = pairs_participants_invite(study=study, rater_group="annotator", role="layperson", count=1)[0]
    field = "layman_rrg_000_matching.sentence_match"
    page.goto(f"/s/{annotator.token}/")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("h2", has_text="Información y consentimiento")).to_be_visible()
    page.click("#agree")
    page.wait_for_selector("#pairs-form[data-ready]", state="attached")
    expect(page.locator("#pair-heading")).to_have_text("Par 1 de 1")
    expect(page.locator(".match-grid thead th").first).to_have_text("Frase de referencia")
    status = page.locator(f'.item[data-field="{field}"] .row-status')
    page.locator(f'.item[data-field="{field}"] input[value="0-0"]').check()
    expect(status).to_have_text("Faltan responder 2 frases de referencia antes de guardar esto")
    page.locator(f'.item[data-field="{field}"] input[value="1-1"]').check()
    expect(status).to_have_text("Falta responder 1 frase de referencia antes de guardar esto")
    page.locator(f'.item[data-field="{field}"] input[name="{field}.none"][value="2"]').check()
    expect(status.locator(".saved")).to_have_text("Guardado")
    expect(page.locator("#progress-label")).to_have_text("1 de 1 par hecho")
    page.click("#next-page")
    expect(page.locator("#done h1")).to_have_text("Gracias, ha terminado")
    annotator.refresh_from_db()
    assert annotator.language == "es"
    answer = ItemAnswer.objects.get(participant=annotator)
    assert answer.language == "en" and answer.value["matches"] == [[0], [1], []]
