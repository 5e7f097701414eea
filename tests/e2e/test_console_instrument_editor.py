"""The instrument editor end to end, in the browser: a researcher creates a study, uploads its sources and
generates simplifications (glossary), adds one 5-point Likert item ("actionability") to the
radiologist instrument through the console's editor, watching the live preview (its errors while
the Spanish text is missing, then the item drawn with the survey's partial, in either language),
invites two radiologists and opens the study. The radiologists answer their first page in their
browsers, the new item included. The item is then in the analysis (the dashboard's item section
shows its mean, checked by hand against the stored answers), the exports (long and wide CSV
downloaded with the browser's session), a glossary judge run launched from the console (its
answers stored, shown on the run page and set against the humans' in the dashboard) and the API
(the item answers endpoint, with a token). Headless Chromium, the live server, PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import get_resolver

from annotation.models import Participant, Study, StudyInstrument
from instruments.validation import instrument_from_data
from judging.models import JudgeAnswer, JudgeRun
from tests.annotation import answers as typed_answers
from tests.e2e.test_console_study_lifecycle import (
    GOOD,
    _follow,
    _log_in,
    _radiologist_rates_one_page,
    _upload,
)

KEY = "protocol_003_radiologist"
WORDING_EN = "Does the text tell the patient what to do next?"
WORDING_ES = "¿Le dice el texto al paciente qué hacer después?"
AGREE_EN = ["strongly disagree", "disagree", "neutral", "agree", "strongly agree"]
AGREE_ES = ["totalmente en desacuerdo", "en desacuerdo", "neutral", "de acuerdo", "totalmente de acuerdo"]


def _add_the_item(page) -> None:
    from playwright.sync_api import expect

    _follow(page, "Instruments")
    expect(page.locator(f"tr[data-instrument={KEY}] [data-answers]")).to_contain_text("none")
    with page.expect_navigation():
        page.click(f"#edit-{KEY}")
    preview = page.locator("#preview")
    page.fill("#id_key", "actionability")
    page.fill("#id_title_en", "Actionability")
    page.fill("#id_wording_en", WORDING_EN)
    page.fill("#id_labels_en", "\n".join(AGREE_EN))
    page.fill("#id_codes", "1 2 3 4 5")
    # Live validation: the Spanish texts are missing, and the preview says where.
    expect(preview.locator("[role=alert]")).to_contain_text("items[9].wording.es: missing")
    page.fill("#id_title_es", "Accionabilidad")
    page.fill("#id_wording_es", WORDING_ES)
    page.fill("#id_labels_es", "\n".join(AGREE_ES))
    item = preview.locator("[data-preview-item=actionability]")
    expect(item).to_contain_text(WORDING_EN)
    expect(item.locator("input[type=radio]")).to_have_count(5)
    expect(item).to_contain_text("strongly agree")
    page.locator("#add-item-form select[name=preview_language]").select_option("es")
    expect(item).to_contain_text(WORDING_ES)
    expect(item).to_contain_text("totalmente de acuerdo")
    # The preview saved nothing.
    row = StudyInstrument.objects.get(study__slug="clinic", key=KEY, is_current=True)
    assert "actionability" not in {i["key"] for i in row.definition["items"]}
    with page.expect_navigation():
        page.click("#save-add")
    expect(page.locator(".messages")).to_contain_text("edited in place: no answers yet")
    expect(page.locator("tr[data-item=actionability]")).to_contain_text(WORDING_EN)


def _half_up(value: float, digits: int = 3) -> str:
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


@pytest.mark.django_db(transaction=True)
def test_an_item_added_in_the_editor_reaches_survey_analysis_exports_judges_and_api(
    page, browser, live_server, tmp_path, settings
):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = ""  # the glossary backend is the default
    page.set_default_timeout(30_000)
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    _log_in(page, "ada", "ada-pw-123")

    # 1. The study, its sources and its simplifications, all in the browser.
    with page.expect_navigation():
        page.click("#new-study")
    page.fill("#id_title", "Clinic letters")
    page.fill("#id_slug", "clinic")
    with page.expect_navigation():
        page.click("#create-study")
    study = Study.objects.get(slug="clinic")
    sources = tmp_path / "sources.csv"
    sources.write_text(GOOD, encoding="utf-8")
    _upload(page, sources)
    expect(page.locator("[data-upload-status=succeeded]")).to_contain_text("Imported: 3 sources")
    _follow(page, "Generate")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    # plain_bs was uploaded: generating over it is refused until the replacement is confirmed.
    expect(page.locator("[role=alert]").first).to_contain_text("overwrite uploaded texts: plain_bs")
    page.check("input[name=replace_uploaded]")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    expect(page.locator("h1")).to_contain_text("Generation batch")

    # 2. The item, added through the editor with its live preview (reached from the set-up page).
    page.goto("/console/clinic/")
    _add_the_item(page)
    row = StudyInstrument.objects.get(study=study, key=KEY, is_current=True)
    item = instrument_from_data(row.definition).item("actionability")
    assert (row.version, [p.code for p in item.scale.points]) == (1, [1, 2, 3, 4, 5])
    assert [p.label["es"] for p in item.scale.points] == AGREE_ES

    # The survey asks it: the researcher's preview of the radiologist page shows it in each card.
    page.goto("/console/clinic/")
    with page.expect_navigation():
        page.click("#preview-radiologist")
    with page.expect_navigation():
        page.click("#begin")
    expect(page.locator('[data-field="A-actionability"]')).to_contain_text(WORDING_EN)
    expect(page.locator('[data-field="A-actionability"] input[type=radio]')).to_have_count(5)
    page.goto("/console/clinic/")

    # 3. Two radiologists invited, the study opened.
    _follow(page, "Participants")
    page.select_option("select[name=role]", "radiologist")
    page.fill("input[name=count]", "2")
    with page.expect_navigation():
        page.get_by_role("button", name="Create invites").click()
    links = {
        who: page.locator(f"tr[data-participant={who}] input.link-box").input_value()
        for who in ("R001", "R002")
    }
    _follow(page, "Set up")
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator("#study-status")).to_have_text("Open")

    # 4. The radiologists answer in their browsers, the new item included.
    for who, value in (("R001", "4"), ("R002", "5")):
        # "2" on the protocol's rows, `value` on the new item's (asked on each simplification).
        fields = _radiologist_rates_one_page(
            browser,
            live_server,
            links[who],
            Participant.objects.get(study=study, pseudonym=who),
            key_of=lambda field, value=value: value if field.endswith("-actionability") else "2",
        )
        added = [f for f in fields if f.endswith("-actionability")]
        assert added and len(added) == sum(1 for f in fields if f.endswith("-correctness"))
    answers = list(typed_answers.item_answers().filter(participant__study=study, item_key="actionability"))
    by_rater = {
        pseudonym: sorted(a.score for a in answers if a.participant.pseudonym == pseudonym)
        for pseudonym in ("R001", "R002")
    }
    assert by_rater["R001"] and set(by_rater["R001"]) == {4.0} and set(by_rater["R002"]) == {5.0}
    assert {a.instrument_id for a in answers} == {row.pk}
    # Once answers exist, the editor says a change makes version 2.
    page.goto(f"/console/clinic/instruments/{KEY}/")
    expect(page.locator("[data-has-answers]").first).to_contain_text("saving makes version 2")

    # 5. A glossary judge run on the instrument's items, launched from the console.
    _follow(page, "LLM judges")
    for task in ("radiologist", "lay"):
        page.locator(f"input[name=instruments][value={task}]").uncheck()
    page.locator(f"input[name=instruments][value={KEY}]").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    run = JudgeRun.objects.get(study=study)
    # The judge answers the items about each text on each simplification (the source's apart).
    judged = list(JudgeAnswer.objects.filter(item__run=run, item__shown_text__isnull=False))
    assert len(judged) == run.items.filter(shown_text__isnull=False).count() > 0
    assert not run.items.exclude(status="succeeded").exists()
    assert all(a.item_values.get("actionability") in (1, 2, 3, 4, 5) for a in judged)
    assert all(a.item_scores["actionability"] == float(a.item_values["actionability"]) for a in judged)
    page.goto(run.get_absolute_url())
    expect(page.locator("[data-item-value=actionability]").first).to_contain_text(
        re.compile(r"actionability [1-5]")
    )
    run.refresh_from_db()
    assert "actionability" in {r["item"] for r in run.agreement["instrument_items"]}

    # 6. The analysis: the dashboard's item section shows the item's mean (and the judge beside it).
    scores = [a.score for a in answers]
    expected_mean = _half_up(sum(scores) / len(scores))
    cells = page.locator("tr:has(td[title=actionability]) td")
    for _ in range(6):  # the first visits queue the analysis (eager in tests) and may show the old one
        page.goto("/dashboard/clinic/")
        if cells.count() and f"run {run.pk}" in cells.last.inner_text():
            break
        page.wait_for_timeout(1000)
    expect(page.locator("#instrument-items")).to_be_visible()
    expect(cells.nth(2)).to_have_text(str(len(answers)))
    expect(cells.nth(3).locator("span").first).to_have_text(expected_mean)
    # Then one column per system, the raters' means and the agreement (the judge's beside it).
    expect(cells.nth(cells.count() - 2)).to_contain_text(re.compile(r"R001 4\.00±.*R002 5\.00±"))
    expect(cells.last).to_contain_text(f"judges vs humans: run {run.pk}")

    # 7. The exports, downloaded with the researcher's session.
    long = page.request.get("/dashboard/clinic/items.csv")
    assert long.ok, long.status
    rows = list(csv.DictReader(io.StringIO(long.body().decode("utf-8-sig"))))
    mine = [r for r in rows if r["item"] == "actionability"]
    assert len(mine) == len(answers)
    assert sorted(float(r["score"]) for r in mine) == sorted(scores)
    assert {(r["instrument"], r["instrument_version"]) for r in mine} == {(KEY, "1")}
    wide = page.request.get("/dashboard/clinic/items.csv?layout=wide")
    wide_rows = list(csv.DictReader(io.StringIO(wide.body().decode("utf-8-sig"))))
    column = f"{KEY}.actionability"
    assert sorted(float(r[column]) for r in wide_rows if r[column]) == sorted(scores)

    # 8. The API's item answers, with a token.
    api = Client()
    token = api.post("/api/token/", {"username": "ada", "password": "ada-pw-123"}).json()["token"]
    response = api.get("/api/studies/clinic/items/json/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    records = json.loads(b"".join(response.streaming_content))
    given = sorted(r["score"] for r in records if r["item"] == "actionability")
    assert given == sorted(scores)
    assert {r["participant"] for r in records if r["item"] == "actionability"} == {"R001", "R002"}
    assert Participant.objects.filter(study=study, role="radiologist", is_preview=False).count() == 2

    # 9. The editor's save is on the Activity page, by the researcher.
    page.goto("/console/clinic/")
    _follow(page, "Activity")
    expect(page.locator("table.data").first.locator("tbody tr", has_text="instrument.saved")).to_contain_text(
        "ada"
    )
