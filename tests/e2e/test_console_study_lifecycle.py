"""The whole life of a study in the browser, by a researcher who has never used a shell:
logs in, creates the study from the dashboard's "New study" form, uploads a CSV with one bad row
(sees its row and column), fixes and re-uploads it, adds a background question and an attention
check as form rows, generates simplifications with the glossary backend, previews both surveys
(the previews count nowhere), invites 1 radiologist and 3 laypeople, opens the study with the
console's Open button; the participants answer through their invite links; the researcher then sees
their progress, downloads exports holding the background answers, withdraws one participant and
finds every one of those steps on the Activity page. Headless Chromium, the live server, PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from annotation.models import AttentionCheck, ExpertItem, Participant, Study
from annotation.selectors import study_counts
from evaluation.progress import participants_progress

BAD = (
    "source_key,source_text,plain_bs\n"
    "s1,No acute fracture.,No broken bone.\n"
    "s2,Mild cardiomegaly.,A slightly big heart.,one cell too many\n"
    "s3,Small left pleural effusion.,A little fluid around the left lung.\n"
)
GOOD = BAD.replace(",one cell too many", "")


def _log_in(page, username: str, password: str) -> None:
    page.goto("/dashboard/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def _follow(page, link: str) -> None:
    """Click the first link named `link` (the console's own navigation, not typed URLs)."""
    with page.expect_navigation():
        page.get_by_role("link", name=link, exact=True).first.click()


def _upload(page, path) -> None:
    _follow(page, "Upload sources")
    page.set_input_files("input[type=file]", str(path))
    with page.expect_navigation():
        page.get_by_role("button", name="Upload and import").click()


def _new_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    return context, opened


def _layperson_answers(browser, live_server, link: str, age: str, answer_first_sentence: bool) -> None:
    from playwright.sync_api import expect

    context, lay = _new_page(browser, live_server)
    lay.goto(link)
    with lay.expect_navigation():
        lay.get_by_role("button", name="I agree, continue").click()
    expect(lay.locator("h1")).to_have_text("A few questions about you")
    lay.locator(f'label:has(input[name=age_group][value="{age}"])').click()
    with lay.expect_navigation():
        lay.get_by_role("button", name="Continue").click()
    with lay.expect_navigation():
        lay.get_by_role("button", name="Start the survey").click()
    if answer_first_sentence:  # part of panel 1: the first sentence's first two questions
        for field, value in (("understanding", "Most of it"), ("confidence", "With low confidence")):
            with lay.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url):
                lay.locator(f'#q-{field} label:has(input[value="{value}"])').click()
    context.close()


def _radiologist_rates_one_page(
    browser, live_server, link: str, participant: Participant, *, key_of=lambda field: "2"
) -> list[str]:
    """Answer every row of the first page with the choice `key_of(field)` (the n-th point: "2");
    returns the page's fields."""
    from playwright.sync_api import expect

    context, expert = _new_page(browser, live_server)
    expert.goto(link)
    with expert.expect_navigation():
        expert.click("#begin")
    expert.wait_for_selector("#expert-form[data-ready]", state="attached")
    fields = expert.eval_on_selector_all(".rate-row", "rows => rows.map(r => r.dataset.field)")
    assert fields[:2] == ["original-severity", "original-simplicity"]
    for field in fields:
        expert.locator(f'[data-field="{field}"] label:has(input[data-key="{key_of(field)}"])').click()
        expect(expert.locator(f'[data-field="{field}"] .row-status .saved')).to_be_visible()
    expect(expert.locator("#page-state")).to_contain_text("Page complete")
    context.close()
    assert ExpertItem.objects.filter(participant=participant, completed_at__isnull=False).count() == 1
    return fields


@pytest.mark.django_db(transaction=True)
def test_a_researcher_runs_a_whole_study_from_the_browser(page, browser, live_server, tmp_path, settings):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = ""  # the glossary backend is the default
    page.set_default_timeout(20_000)
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    # An administrator made the account (staff: may create studies); everything else is the browser.
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    _log_in(page, "ada", "ada-pw-123")

    # 1. Create the study from the dashboard's study list.
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    with page.expect_navigation():
        page.click("#new-study")
    page.fill("#id_title", "Liver lesions")
    page.fill("#id_slug", "liver")
    with page.expect_navigation():
        page.click("#create-study")
    expect(page.locator("h1")).to_have_text("Set up Liver lesions")
    expect(page.locator("#study-status")).to_have_text("Draft")
    study = Study.objects.get(slug="liver")
    # Opening without sources says why it cannot.
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator(".messages")).to_contain_text("no sources yet")
    expect(page.locator("#study-status")).to_have_text("Draft")

    # 2. A CSV with one bad row: nothing imported, the row and the column shown.
    sources = tmp_path / "sources.csv"
    sources.write_text(BAD, encoding="utf-8")
    _upload(page, sources)
    expect(page.locator("[data-upload-status=failed]")).to_contain_text("Nothing was imported")
    error_row = page.locator("table.upload-errors tbody tr")
    expect(error_row).to_have_count(1)
    expect(error_row.locator("td").nth(0)).to_have_text("sources.csv")
    expect(error_row.locator("td").nth(1)).to_have_text("3")
    expect(error_row.locator("td").nth(3)).to_contain_text("4 cells but the header has 3 columns")
    assert not study.sources.exists()
    # A bad cell names its column.
    sources.write_text(GOOD.replace("s3,", "s1,"), encoding="utf-8")
    _upload(page, sources)
    expect(page.locator("table.upload-errors tbody tr td").nth(1)).to_have_text("4")
    expect(page.locator("table.upload-errors tbody tr td").nth(2)).to_have_text("source_key")
    # Fixed and uploaded again.
    sources.write_text(GOOD, encoding="utf-8")
    _upload(page, sources)
    expect(page.locator("[data-upload-status=succeeded]")).to_contain_text("Imported: 3 sources")
    assert study.sources.count() == 3

    # 3. A background question and an attention check as form rows (an invalid key first).
    _follow(page, "Set up")
    page.fill("#id_background-0-key", "1age")
    page.fill("#id_background-0-question", "Your age group?")
    page.fill("#id_background-0-options", "18-39\n40-64\n65+")
    page.fill("#id_checks-0-position", "3")
    page.fill("#id_checks-0-prompt", "To show you read this, please choose Mild.")
    page.fill("#id_checks-0-options", "Critical\nMild\nHealthy")
    page.fill("#id_checks-0-expected_answer", "Mild")
    with page.expect_navigation():
        page.click("#save-setup")
    expect(page.locator("#background-row-1 [role=alert]")).to_contain_text(
        '"key" may hold only letters, digits and _'
    )
    study.refresh_from_db()
    assert study.background_questions == [] and not AttentionCheck.objects.filter(study=study).exists()
    expect(page.locator("#id_checks-0-prompt")).to_have_value("To show you read this, please choose Mild.")
    page.fill("#id_background-0-key", "age_group")
    with page.expect_navigation():
        page.click("#save-setup")
    expect(page.locator(".messages")).to_contain_text("Saved: background questions, attention checks.")
    study.refresh_from_db()
    assert study.background_questions == [
        {"key": "age_group", "question": "Your age group?", "options": ["18-39", "40-64", "65+"]}
    ]
    assert list(AttentionCheck.objects.filter(study=study).values_list("position", "expected_answer")) == [
        (3, "Mild")
    ]

    # 4. Simplifications generated with the glossary backend.
    _follow(page, "Generate")
    expect(page.locator("select[name=backend]")).to_have_value("glossary")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    # plain_bs was uploaded: generating over it is refused until the replacement is confirmed.
    expect(page.locator("[role=alert]").first).to_contain_text("overwrite uploaded texts: plain_bs (3 texts)")
    assert not study.sources.filter(simplifications__origin="generation").exists()
    page.check("input[name=replace_uploaded]")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    expect(page.locator("h1")).to_contain_text("Generation batch")
    assert study.sources.filter(simplifications__origin="generation").distinct().count() == 3

    # 5. Both surveys previewed from the set-up page.
    page.goto("/console/liver/")
    with page.expect_navigation():
        page.click("#preview-layperson")
    expect(page.locator("h2.panel-intro")).to_have_text("Information and consent")
    with page.expect_navigation():
        page.click("button[value=accept]")
    expect(page.locator("body")).to_contain_text("Your age group?")
    page.goto("/console/liver/")
    with page.expect_navigation():
        page.click("#preview-radiologist")
    with page.expect_navigation():
        page.click("#begin")
    expect(page.locator("body")).to_contain_text(re.compile("fracture|cardiomegaly|effusion"))
    # The previews count nowhere: the progress page shows no participant.
    page.goto("/dashboard/liver/progress/")
    expect(page.locator("details summary", has_text="Per participant")).to_have_text("Per participant (0)")
    assert sorted(Participant.objects.filter(study=study).values_list("role", "is_preview")) == [
        ("layperson", True),
        ("radiologist", True),
    ]
    assert participants_progress(study=study) == []
    assert study_counts(study=study)["participants"] == {"radiologist": 0, "layperson": 0}
    page.goto("/dashboard/")
    expect(page.locator("tbody tr").first).to_contain_text("none invited")  # previews count nowhere

    # 6. Invites: one radiologist with name and e-mail, three laypeople.
    page.goto("/console/liver/")
    _follow(page, "Participants")
    page.select_option("select[name=role]", "radiologist")
    page.fill("textarea[name=contacts]", "Dr Grey, grey@example.org")
    with page.expect_navigation():
        page.get_by_role("button", name="Create invites").click()
    page.select_option("select[name=role]", "layperson")
    page.fill("input[name=count]", "3")
    with page.expect_navigation():
        page.get_by_role("button", name="Create invites").click()
    expect(page.locator("tr[data-participant]")).to_have_count(4)
    expect(page.locator("tr[data-participant=R001]")).to_contain_text("grey@example.org")
    links = {
        row: page.locator(f"tr[data-participant={row}] input.link-box").input_value()
        for row in ("R001", "L001", "L002", "L003")
    }

    # 7. Opened with the console's Open button.
    _follow(page, "Set up")
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator("#study-status")).to_have_text("Open")

    # 8. The participants answer through their links.
    _radiologist_rates_one_page(
        browser, live_server, links["R001"], Participant.objects.get(study=study, pseudonym="R001")
    )
    _layperson_answers(browser, live_server, links["L001"], "40-64", answer_first_sentence=True)
    _layperson_answers(browser, live_server, links["L002"], "65+", answer_first_sentence=False)

    # 9. Progress, on the participants page and the dashboard's progress page.
    page.goto("/console/liver/")
    _follow(page, "Participants")
    expect(page.locator("tr[data-participant=L001] [data-status]")).to_have_text("in progress")
    expect(page.locator("tr[data-participant=R001] [data-status]")).to_have_text("in progress")
    expect(page.locator("tr[data-participant=L003] [data-status]")).to_have_text("invited")
    page.goto("/dashboard/liver/progress/")
    expect(page.locator("details summary", has_text="Per participant")).to_have_text("Per participant (4)")

    # 10. Exports from the dashboard hold the background answers. (The study's first analysis is
    # computed inside this request in the test settings' eager mode: minutes on a loaded machine.)
    page.goto("/dashboard/liver/", timeout=180_000)
    page.check("input[name=include_external_ids]")
    with page.expect_download() as download:
        page.get_by_role("button", name="Answers · CSV").click()
    with open(download.value.path(), encoding="utf-8") as exported:
        rows = list(csv.DictReader(io.StringIO(exported.read())))
    background = {(r["participant"], r["question"], r["value"]) for r in rows if r["phase"] == "background"}
    assert background == {("L001", "age_group", "40-64"), ("L002", "age_group", "65+")}
    assert {r["participant"] for r in rows} >= {"R001", "L001"}
    assert "external_id" in rows[0]
    answers = page.request.get("/dashboard/liver/export.json")
    assert answers.ok, answers.status
    assert {
        (r["participant"], r["value"]) for r in json.loads(answers.body()) if r["phase"] == "background"
    } == {("L001", "40-64"), ("L002", "65+")}

    # 11. Withdraw L001: the confirmation page counts what goes, then it is gone.
    _follow(page, "Participants")
    with page.expect_navigation():
        page.locator("tr[data-participant=L001]").get_by_role("link", name="Withdraw…").click()
    expect(page.locator("table.withdraw-counts")).to_contain_text("background answers")
    expect(page.locator("table.withdraw-counts tr:has-text('lay answers') td").nth(1)).to_have_text("1")
    with page.expect_navigation():
        page.get_by_role("button", name="Withdraw L001 and delete these answers").click()
    expect(page.locator("tr[data-participant=L001] [data-status]")).to_have_text("withdrawn")
    withdrawn = Participant.objects.get(study=study, pseudonym="L001")
    assert withdrawn.background == {} and not withdrawn.lay_items.exists()

    # 12. Every step is on the Activity page, by the researcher.
    _follow(page, "Activity")
    log = page.locator("table.data").first.locator("tbody tr")
    verbs = set(log.locator("td:nth-child(3)").all_inner_texts())
    assert {
        "study.created",
        "study.changed",
        "sources.uploaded",
        "sources.refused",
        "sources.imported",
        "generation.launched",
        "study.previewed",
        "participants.invited",
        "study.opened",
        "export.downloaded",
        "participants.withdrawn",
    } <= verbs, verbs
    assert set(log.locator("td:nth-child(2)").all_inner_texts()) == {"ada"}
