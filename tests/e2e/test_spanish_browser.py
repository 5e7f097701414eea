"""The protocol in Spanish, end to end in headless Chromium: a layperson
of a Spanish study sees the consent, the instructions, panel 1's questions and the completion page
in Spanish, answers by the Spanish labels, and the answers export a researcher downloads from the
dashboard says "es" for every answer; a radiologist of the same study gets the instructions and the
rating page in Spanish."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from django.urls import get_resolver

from annotation import participant_services
from annotation.models import LayItem, Participant
from annotation.wording import protocol_wording
from evaluation.exports.rows import answer_columns, answer_rows
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.e2e.dashboard import download, researcher_page
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS


@pytest.fixture
def spanish_study(transactional_db):
    get_resolver().url_patterns  # noqa: B018 - import the views before the live server's first page
    study = build_study(slug="estudio-es", n_sources=2, systems=("plain_bs", "plain_sc"))
    study.language = "es"
    study.full_clean()
    study.save()
    return study


def _continue(page) -> None:
    before = page.url
    page.evaluate("document.querySelector('main').dataset.left = 'yes'")
    page.locator(".submitbar button[type=submit]").click()
    page.wait_for_selector("main:not([data-left])", state="attached")
    page.wait_for_load_state()
    assert page.url != before or page.locator(".errorbox, .error").count() == 0


def _choose(page, field: str, stored: str) -> None:
    with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url) as saved:
        page.locator(f'#q-{field} label:has(input[value="{stored}"])').click()
    assert saved.value.status == 200


def test_a_spanish_layperson_takes_the_protocol_and_the_export_says_es(
    page, browser, live_server, spanish_study, settings
):
    from playwright.sync_api import expect

    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS

    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    page.goto(f"/s/{person.token}/")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("h2.panel-intro")).to_have_text("Información y consentimiento")
    expect(page.locator(".prose")).to_contain_text("Le invitamos a participar en un estudio de investigación")
    with page.expect_navigation():
        page.get_by_role("button", name="Acepto, continuar").click()
    expect(page.locator("h1")).to_have_text("Instrucciones")
    expect(page.locator(".severity-table")).to_contain_text("Crítico")
    with page.expect_navigation():
        page.get_by_role("button", name="Empezar la encuesta").click()

    answers = {"understanding": "Most of it", "confidence": "With low confidence", "severity_guess": "Mild"}
    for _ in range(20):
        if page.url.endswith("/done/"):
            break
        match = re.search(r"/sentence/(\d+)/(original|assisted|preference)/$", page.url)
        assert match, page.url
        panel = match.group(2)
        if panel == "original":
            expect(page.locator("h1.panel-intro")).to_have_text(protocol_wording("intro:original", "es"))
            expect(page.locator("#q-understanding legend")).to_contain_text(
                "Usted entiende el significado de la frase."
            )
            expect(page.locator("#q-confidence legend")).to_contain_text(
                "¿Puede adivinar el nivel de gravedad de la afección médica descrita en la frase?"
            )
            expect(page.locator('#q-understanding label:has(input[value="Most of it"])')).to_contain_text(
                "La mayor parte"
            )
            expect(page.locator('#q-severity_guess label:has(input[value="Mild"])')).to_contain_text("Leve")
            expect(page.locator(".submitbar button")).to_have_text("Mostrar la simplificación")
            for field, stored in answers.items():
                _choose(page, field, stored)
        elif panel == "assisted":
            expect(page.locator("details.locked summary")).to_have_text(
                "Sus respuestas antes de ver la simplificación (bloqueadas)"
            )
            expect(page.locator("details.locked")).to_contain_text("La mayor parte")
            for field, stored in {**answers, "helpfulness": "I understand much better"}.items():
                _choose(page, field, stored)
        else:
            expect(page.locator("#q-most legend")).to_contain_text("¿Qué simplificaciones le gustan más?")
            page.locator("#q-most input").first.click()
            page.locator("#q-least input").last.click()
        _continue(page)
    assert page.url.endswith("/done/"), page.url
    expect(page.locator("h1")).to_have_text("Gracias — ha terminado la encuesta")
    expect(page.locator("main")).to_contain_text("Su código de finalización es")
    expect(page.locator("footer")).to_contain_text("Diseño de la encuesta de")

    person.refresh_from_db()
    assert person.language == "es" and person.completed_at is not None
    stored = typed_answers.lay_answers(participant=person, phase="original")
    assert {answer.understanding for answer in stored} == {"Most of it"}  # stored as the level name
    assert LayItem.objects.filter(participant=person).count() == 2
    rows = list(answer_rows(study=spanish_study))
    assert len(rows) >= 2 * (3 + 4)
    # The file a researcher downloads: every row names the language the participant saw.
    context, dashboard = researcher_page(browser, live_server, spanish_study)
    exported = pd.read_csv(
        io.BytesIO(download(dashboard, dashboard.locator(":is(a, button)", has_text="Answers · CSV"))),
        keep_default_na=False,
    )
    context.close()
    assert list(exported.columns) == list(answer_columns())
    assert len(exported) == len(rows)
    assert set(exported["phase"]) >= {"original", "assisted", "preference"}
    assert set(exported["language"]) == {"es"}


def test_a_spanish_radiologist_rates_in_spanish(page, live_server, spanish_study):
    from playwright.sync_api import expect

    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.RADIOLOGIST)
    page.goto(f"/s/{person.token}/")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("h2", has_text="Instrucciones")).to_be_visible()
    expect(page.locator(".rubric").first).to_contain_text("Alucinación")
    expect(page.locator("#begin")).to_have_text("Acepto — empezar")
    page.click("#begin")
    page.wait_for_url(re.compile(r"/page/\d+/"))
    expect(page.locator("#about-original")).to_have_text("La frase original")
    expect(page.locator(".legend")).to_contain_text("totalmente de acuerdo")
    expect(page.locator(".severity-row .choices")).to_contain_text("Crítico")
    expect(page.locator(".simplification .statement").first).to_have_text(
        "Toda la información es médicamente correcta."
    )
    expect(page.locator("#next-page")).to_contain_text("Guardar y siguiente")
    with page.expect_response(lambda r: r.request.method == "POST" and "/page/" in r.url) as saved:
        page.locator('.severity-row label:has(input[value="Serious"])').click()
    assert saved.value.status == 200
    expect(page.locator(".severity-row .row-status")).to_contain_text("Guardado")
    expect(page.locator("#page-state")).to_contain_text("respuestas")
    person.refresh_from_db()
    assert person.language == "es"
    assert typed_answers.judgement(participant=person).severity == "Serious"  # stored as the level name
    rows = list(answer_rows(study=spanish_study))
    columns = answer_columns()
    assert [(row[columns.index("question")], row[columns.index("language")]) for row in rows] == [
        ("severity", "es")
    ]
