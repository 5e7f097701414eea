"""Setting up and running studies other than the protocol entirely through the console and the
participants' links, in headless Chromium against the live server (PostgreSQL): a researcher who
never opens the admin or a shell creates the study from a preset on the new-study form, uploads its
texts, chooses the reference system, invites the instrument's rater groups from the list, launches,
and after the participants' clicks reads the dashboard's counts and the answers CSV, which must
hold exactly the clicks; the study archive, downloaded and imported in the browser, then gives a
copy whose dashboard gives the same analysis and exports.

(b) seed 002's design: two radiologists and one lay reader rate each (text, reference) pair on the
    four criteria;
(d) a pairwise study: two judges compare two texts of each source.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from statistics import mean

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from annotation.models import Participant, Study
from evaluation.pages.report import fmt
from surveys.rate_each_pair import selectors as design
from tests.e2e import console_walk as walk
from tests.e2e.dashboard import download
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS

CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")
SOURCES = (
    "source_key,source_text,lay_a,lay_b,ref\n"
    "s1,No acute fracture.,No broken bone.,The bone is not broken.,No bone is broken.\n"
    "s2,Mild cardiomegaly.,A slightly big heart.,The heart is a bit large.,The heart is a little big.\n"
)


def _log_in(page) -> None:
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    page.goto("/dashboard/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "ada-pw-123")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def _follow(page, link: str) -> None:
    with page.expect_navigation():
        page.get_by_role("link", name=link, exact=True).first.click()


def _create(page, *, title: str, slug: str, kind: str) -> Study:
    from playwright.sync_api import expect

    with page.expect_navigation():
        page.click("#new-study")
    page.fill("#id_title", title)
    page.fill("#id_slug", slug)
    kind_card = page.locator(f'.kind[data-kind="{kind}"]')
    expect(kind_card.locator(".citation")).to_contain_text("From:")
    page.check(f"#kind-{kind}")
    with page.expect_navigation():
        page.click("#create-study")
    expect(page.locator("#study-status")).to_have_text("Draft")
    return Study.objects.get(slug=slug)


def _upload(page, tmp_path) -> None:
    from playwright.sync_api import expect

    path = tmp_path / "sources.csv"
    path.write_text(SOURCES)
    _follow(page, "Upload sources")
    page.set_input_files("input[type=file]", str(path))
    with page.expect_navigation():
        page.get_by_role("button", name="Upload and import").click()
    expect(page.locator("[data-upload-status=succeeded]")).to_contain_text("Imported: 2 sources")


def _invite(page, group_label: str, count: int) -> None:
    _follow(page, "Participants")
    page.select_option("#id_role", label=group_label)
    page.fill("#id_count", str(count))
    with page.expect_navigation():
        page.get_by_role("button", name="Create invites").click()


def _launch(page) -> None:
    from playwright.sync_api import expect

    _follow(page, "Flows")
    with page.expect_navigation():
        page.click("#launch-study")
    expect(page.locator("#study-status")).to_have_text("Open")


def _answers_csv(page, slug: str) -> list[dict]:
    page.goto(f"/dashboard/{slug}/")
    document = download(page, page.get_by_role("button", name="Answers · CSV"))
    return list(csv.DictReader(io.StringIO(document.decode("utf-8"))))


@pytest.mark.django_db(transaction=True)
def test_seed_002_is_set_up_run_and_counted_from_the_console(page, browser, live_server, tmp_path, settings):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS  # the dashboard's first analysis, quickly
    page.set_default_timeout(60_000)
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    _log_in(page)
    study = _create(page, title="Caption pairs", slug="medlay", kind="medlaybench_002")
    _upload(page, tmp_path)

    # The reference system, on the Flows page; launching first is refused with the reason.
    _follow(page, "Flows")
    expect(page.locator('#asked-table tr[data-flow="pairs"]')).to_contain_text("Factual Correctness")
    with page.expect_navigation():
        page.click("#launch-study")
    expect(page.locator("#launch-errors")).to_contain_text("'radiologist' has no participants")
    page.select_option("#reference-system", "ref")
    with page.expect_navigation():
        page.locator("#reference-form").get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("The reference system is ref.")

    # The rater groups come from a list, with their counts.
    _invite(page, "radiologist (0 invited)", 2)
    _invite(page, "layperson (0 invited)", 1)
    expect(page.locator("#id_role")).to_contain_text("radiologist (2 invited)")
    _launch(page)

    pairs = design.study_pairs(study=study)
    assert len(pairs) == 4 and all(pair.reference_text_id for pair in pairs)
    rng = random.Random(7)
    clicked: dict[tuple[str, int, str], int] = {}
    raters = list(Participant.objects.filter(study=study).order_by("pk"))
    rater_context = browser.new_context(base_url=live_server.url)
    rater_page = rater_context.new_page()
    rater_page.set_default_timeout(30_000)
    for rater in raters:
        rater_page.goto(f"/s/{rater.token}/")
        rater_page.click("#agree")
        for _ in pairs:
            rater_page.wait_for_selector("#pairs-form[data-ready]", state="attached")
            text_id = int(re.search(r"/pair/(\d+)/", rater_page.url).group(1))
            for criterion in CRITERIA:
                code = rng.randint(1, 5)
                field = f"medlaybench_002.{criterion}"
                rater_page.locator(f'.item[data-field="{field}"] label:has(input[value="{code}"])').click()
                expect(rater_page.locator(f'.item[data-field="{field}"] .row-status .saved')).to_be_visible()
                rater.refresh_from_db()
                clicked[(rater.pseudonym, text_id, criterion)] = code
            rater_page.click("#next-page")
        expect(rater_page.locator("#done")).to_contain_text("you have finished")
    rater_context.close()

    # The dashboard counts every flow's participants and answers; the protocol's tables are absent.
    page.goto("/dashboard/medlay/")
    expect(page.locator("#count-participants")).to_have_text("3")
    expect(page.locator("#count-answers")).to_have_text(str(len(clicked)))
    expect(page.locator('#flow-counts [data-flow="pairs"]')).to_contain_text("3 participants, 48 answers")
    assert page.locator("#table1").count() == 0
    rows = _answers_csv(page, "medlay")
    assert len(rows) == len(clicked) == 3 * 4 * 4
    got = {
        (row["participant"], int(row["text_id"]), row["question"].split(".")[1]): int(row["value"])
        for row in rows
    }
    assert got == clicked
    assert {row["phase"] for row in rows} == {"pairs"} and {row["language"] for row in rows} == {"en"}
    assert all(row["systems"].endswith(" vs ref") for row in rows)
    # The results: each criterion's mean over every rater's clicks, in the analysis and on the page.
    analysis = json.loads(download(page, page.get_by_role("link", name="Analysis · JSON")))
    (group,) = analysis["instrument_items"]["groups"]
    items = {item["key"]: item for item in group["items"]}
    for criterion in CRITERIA:
        codes = [code for (_, _, asked), code in clicked.items() if asked == criterion]
        assert items[criterion]["mean"]["mean"] == pytest.approx(mean(codes))
        row = page.locator(f'table.data tr:has(td[title="{criterion}"])').first
        assert row.locator("td.num").nth(1).inner_text().startswith(fmt(mean(codes)))
    # The progress page: units done per flow and rater group.
    page.goto("/dashboard/medlay/progress/")
    expect(page.locator('#units-table tr[data-group="radiologist"]')).to_contain_text("8 / 8")
    expect(page.locator('#units-table tr[data-group="layperson"]')).to_contain_text("4 / 4")

    # The archive, moved in the browser: the copy's dashboard gives the same files.
    counts = walk.copy_reproduces_the_files(page, slug="medlay", copy="medlay-copy", tmp_path=tmp_path)
    assert counts["annotation.itemanswer"] == len(clicked)


@pytest.mark.django_db(transaction=True)
def test_a_pairwise_study_is_set_up_run_and_counted_from_the_console(
    page, browser, live_server, tmp_path, settings, artifacts_dir
):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS  # the dashboard's first analysis, quickly
    page.set_default_timeout(60_000)
    get_resolver().url_patterns  # noqa: B018
    _log_in(page)
    study = _create(page, title="Which is better", slug="pw", kind="pairwise_clinical")
    _upload(page, tmp_path)
    _follow(page, "Flows")
    expect(page.locator("#pairwise-plan")).to_contain_text("Sources with two texts to compare: 2")
    _invite(page, "radiologist (0 invited)", 2)
    _follow(page, "Flows")
    expect(page.locator("#pairwise-plan")).to_contain_text("2 radiologists")
    _launch(page)

    chosen: dict[tuple[str, str], str] = {}
    judges = list(Participant.objects.filter(study=study).order_by("pk"))
    context = browser.new_context(base_url=live_server.url)
    judge_page = context.new_page()
    judge_page.set_default_timeout(30_000)
    for n, judge in enumerate(judges):
        judge_page.goto(f"/s/{judge.token}/")
        with judge_page.expect_navigation():
            judge_page.get_by_role("button", name="I agree, continue").click()
        answered = 0
        if n == 0:
            walk.screenshots(judge_page, artifacts_dir, "pairwise_page")
        while "/compare/" in judge_page.url:
            choice = ("left", "right", "tie")[(n + answered) % 3]
            judge_page.locator(f"input[name=choice][value={choice}]").check()
            with judge_page.expect_navigation():
                judge_page.get_by_role("button", name="Save and continue").click()
            answered += 1
            chosen[(judge.pseudonym, str(answered))] = choice
        assert answered == 2
    context.close()

    page.goto("/dashboard/pw/")
    expect(page.locator("#count-participants")).to_have_text("2")
    expect(page.locator("#count-answers")).to_have_text("4")
    rows = _answers_csv(page, "pw")
    assert len(rows) == 4 and {row["question"] for row in rows} == {"pairwise_clinical.preference"}
    by_judge: dict[str, list[str]] = {}
    for row in rows:
        by_judge.setdefault(row["participant"], []).append(json.loads(row["value"])["choice"])
    expected: dict[str, list[str]] = {}
    for (pseudonym, _), choice in chosen.items():
        expected.setdefault(pseudonym, []).append(choice)
    assert {p: sorted(c) for p, c in by_judge.items()} == {p: sorted(c) for p, c in expected.items()}
    assert {row["phase"] for row in rows} == {"pairwise"} and all(row["language"] == "en" for row in rows)
    expect(page.locator("h2#pairwise")).to_have_text("Pairwise ranking")  # the study's own results
    page.goto("/dashboard/pw/progress/")
    expect(page.locator('#units-table tr[data-flow="pairwise"]')).to_contain_text("4 / 4")

    # The archive, moved in the browser: the copy's dashboard gives the same files.
    counts = walk.copy_reproduces_the_files(page, slug="pw", copy="pw-copy", tmp_path=tmp_path)
    assert counts["annotation.itemanswer"] == 4 and counts["annotation.pairwisetask"] == 4
