"""A researcher who has never used a shell runs a draft study from the console in headless
Chromium: uploads a CSV with one bad row (sees its row and column), fixes and re-uploads it,
generates simplifications with the glossary backend, invites 1 radiologist and 3 laypeople; the
study is opened (the service the open button calls); participants answer through their invite
links (background questions included); the researcher then sees their progress, downloads exports
holding the background answers, withdraws one participant, and finds every step on the Activity
page."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from annotation.models import Participant, Study
from annotation.study_services import study_open
from annotation.team_services import study_member_add
from tests.annotation.factories import build_study

BAD = (
    "source_key,source_text,plain_bs\n"
    "s1,No acute fracture.,No broken bone.\n"
    "s2,Mild cardiomegaly.,A slightly big heart.,one cell too many\n"
    "s3,Small left pleural effusion.,A little fluid around the left lung.\n"
)
GOOD = BAD.replace(",one cell too many", "")


def _login(page, username: str) -> None:
    page.goto("/dashboard/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def _upload(page, path) -> None:
    page.goto("/console/draft/upload/")
    page.set_input_files("input[type=file]", str(path))
    with page.expect_navigation():
        page.get_by_role("button", name="Upload and import").click()


@pytest.mark.django_db(transaction=True)
def test_a_researcher_runs_a_study_from_the_console(page, browser, live_server, tmp_path, settings):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = ""
    page.set_default_timeout(60_000)
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    researcher = get_user_model().objects.create_user("pi", password="pw")
    study = build_study(slug="draft", n_sources=0, systems=(), status=Study.Status.DRAFT)
    study.background_questions = [
        {"key": "age", "question": "How old are you?", "options": ["18-29", "30-49", "50+"]},
        {"key": "job", "question": "What is your job?"},
    ]
    study.save()
    study_member_add(study=study, user=researcher, role="owner", actor="test")
    _login(page, "pi")

    # A CSV with one bad row: nothing imported, the row and column shown.
    bad = tmp_path / "sources.csv"
    bad.write_text(BAD, encoding="utf-8")
    _upload(page, bad)
    expect(page.locator("[data-upload-status=failed]")).to_contain_text("Nothing was imported")
    error_row = page.locator("table.upload-errors tbody tr")
    expect(error_row).to_have_count(1)
    expect(error_row.locator("td").nth(0)).to_have_text("sources.csv")
    expect(error_row.locator("td").nth(1)).to_have_text("3")
    expect(error_row.locator("td").nth(3)).to_contain_text("4 cells but the header has 3 columns")
    assert not study.sources.exists()
    # A bad cell names its column too.
    bad.write_text(GOOD.replace("s3,", "s1,"), encoding="utf-8")
    _upload(page, bad)
    expect(page.locator("table.upload-errors tbody tr td").nth(2)).to_have_text("source_key")

    # Fixed and uploaded again.
    bad.write_text(GOOD, encoding="utf-8")
    _upload(page, bad)
    expect(page.locator("[data-upload-status=succeeded]")).to_contain_text("Imported: 3 sources")
    assert study.sources.count() == 3

    # Generation with the glossary backend (the default here: no OpenAI-compatible server).
    page.goto("/console/draft/generate/")
    expect(page.locator("select[name=backend]")).to_have_value("glossary")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    expect(page.locator("h1")).to_contain_text("Generation batch")
    assert study.sources.filter(simplifications__origin="generation").distinct().count() == 3

    # Invites: one radiologist with name and e-mail, three laypeople.
    page.goto("/console/draft/participants/")
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

    # Opened (the service the open button calls; it records who opened it).
    assert study_open(study=study, actor=researcher)

    # Two laypeople answer through their links: consent, background questions, the first panel.
    for label, age, job in (("L001", "30-49", "teacher"), ("L002", "50+", "")):
        context = browser.new_context(base_url=live_server.url)
        lay = context.new_page()
        lay.set_default_timeout(60_000)
        lay.goto(links[label])
        with lay.expect_navigation():
            lay.get_by_role("button", name="I agree, continue").click()
        expect(lay.locator("h1")).to_have_text("A few questions about you")
        lay.locator(f'label:has(input[name=age][value="{age}"])').click()
        lay.fill("input[name=job]", job)
        with lay.expect_navigation():
            lay.get_by_role("button", name="Continue").click()
        with lay.expect_navigation():
            lay.get_by_role("button", name="Start the survey").click()
        if label == "L001":
            for field, value in (("understanding", "Most of it"), ("confidence", "With low confidence")):
                with lay.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url):
                    lay.locator(f'#q-{field} label:has(input[value="{value}"])').click()
        context.close()
    # The radiologist opens their link.
    context = browser.new_context(base_url=live_server.url)
    expert = context.new_page()
    expert.goto(links["R001"])
    expect(expert.locator("body")).to_contain_text("radiolog")
    context.close()

    # Progress on the participants page.
    page.goto("/console/draft/participants/")
    expect(page.locator("tr[data-participant=L001] [data-status]")).to_have_text("in progress")
    expect(page.locator("tr[data-participant=L003] [data-status]")).to_have_text("invited")

    # Exports from the dashboard hold the background answers (with the Prolific/external IDs box).
    page.goto("/dashboard/draft/")
    page.check("input[name=include_external_ids]")
    with page.expect_download() as download:
        page.get_by_role("button", name="Answers · CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    background = {(r["participant"], r["question"], r["value"]) for r in rows if r["phase"] == "background"}
    assert background == {("L001", "age", "30-49"), ("L001", "job", "teacher"), ("L002", "age", "50+")}
    assert "external_id" in rows[0]
    exported = page.request.get("/dashboard/draft/export.json")
    assert {
        (r["participant"], r["question"]) for r in json.loads(exported.body()) if r["phase"] == "background"
    } == {
        ("L001", "age"),
        ("L001", "job"),
        ("L002", "age"),
    }

    # Withdraw L001: the confirmation counts what goes, then it is gone.
    page.goto("/console/draft/participants/")
    with page.expect_navigation():
        page.locator("tr[data-participant=L001]").get_by_role("link", name="Withdraw…").click()
    expect(page.locator("table.withdraw-counts")).to_contain_text("background answers")
    expect(page.locator("table.withdraw-counts tr:has-text('lay answers') td").nth(1)).to_have_text("1")
    with page.expect_navigation():
        page.get_by_role("button", name="Withdraw L001 and delete these answers").click()
    expect(page.locator("tr[data-participant=L001] [data-status]")).to_have_text("withdrawn")
    withdrawn = Participant.objects.get(study=study, pseudonym="L001")
    assert withdrawn.background == {} and not withdrawn.lay_items.exists()

    # Every step is on the Activity page.
    page.goto("/dashboard/draft/activity/")
    verbs = set(page.locator("table.data").first.locator("tbody tr td:nth-child(3)").all_inner_texts())
    assert {
        "sources.uploaded",
        "sources.refused",
        "sources.imported",
        "generation.launched",
        "participants.invited",
        "study.opened",
        "export.downloaded",
        "participants.withdrawn",
    } <= verbs, verbs
    expect(page.locator("table.data").first).to_contain_text("pi")
