"""Seed 000's sentence matching (Layman's RRG, section 4.4) set up, run and archived entirely
through the console and the participants' links, in headless Chromium against the live server
(PostgreSQL): the researcher creates the study from the preset's card, uploads two reports with a
human-written reference and two systems' texts, chooses the reference system on the Flows page,
invites three annotators picked from the instrument's rater groups and launches; each annotator
ticks, per reference sentence, the generated sentences that match it. "Answers · CSV" must hold
exactly the ticks, the dashboard must count them and show the matched proportion they give, and the
study archive, downloaded and imported in the browser, gives a copy whose dashboard gives the same
analysis and exports."""

from __future__ import annotations

import json
import random
from statistics import mean

import pytest
from django.urls import get_resolver

from evaluation.pages.report import fmt
from tests.e2e import console_walk as walk
from tests.e2e.dashboard import download
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS

SLUG, COPY = "layman", "layman-copy"
FIELD = "layman_rrg_000_matching.sentence_match"
REPORTS = {
    "s1": {
        "source": "Lungs clear. Normal heart size. No effusion.",
        "reference": "The lungs are clear. The heart is normal in size. There is no fluid.",
        "gen_a": "The lungs are clear. The heart is normal in size. There is no fluid around the lungs.",
        "gen_b": "Your lungs are clear. Nothing urgent was found.",
    },
    "s2": {
        "source": "Small right lung nodule, not urgent. Follow-up CT advised.",
        "reference": (
            "There is a small nodule in the right lung. It is not urgent. A follow-up scan is advised."
        ),
        "gen_a": "There is a small nodule in the right lung. It is not urgent.",
        "gen_b": "Your right lung has a tiny spot. Get a follow-up scan.",
    },
}
SYSTEMS = ("gen_a", "gen_b")


def _sources_csv(tmp_path):
    path = tmp_path / "reports.csv"
    lines = ["source_key,source_text,reference,gen_a,gen_b"]
    for key, texts in REPORTS.items():
        lines.append(",".join([key, *(f'"{texts[c]}"' for c in ("source", "reference", "gen_a", "gen_b"))]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pair_of(page) -> tuple[str, str]:
    """(source, system) of the page, from the reference and the text to rate it shows."""
    reference = page.locator(".pair-text.reference p").inner_text().strip()
    shown = page.locator(".pair-text.shown p").inner_text().strip()
    (source,) = [key for key, texts in REPORTS.items() if texts["reference"] == reference]
    (system,) = [s for s in SYSTEMS if REPORTS[source][s] == shown]
    return source, system


def _annotate(browser, live_server, link: str, seed: int) -> dict[tuple[str, str], dict]:
    """Tick every page's grid; returns (source, system) -> the answer the ticks make."""
    from playwright.sync_api import expect

    rng = random.Random(seed)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(link)
    page.click("#agree")
    ticked = {}
    for _ in range(len(REPORTS) * len(SYSTEMS)):
        page.wait_for_selector("#pairs-form[data-ready]", state="attached")
        pair = _pair_of(page)
        generated = page.locator(".generated-sentences li").count()
        references = page.locator(f'.item[data-field="{FIELD}"] .match-grid tbody tr').count()
        rows = []
        for r in range(references):
            chosen = sorted({g for g in range(generated) if rng.random() < 0.45})
            for g in chosen:
                page.locator(f'.item[data-field="{FIELD}"] input[value="{r}-{g}"]').check()
            if not chosen:
                page.locator(f'.item[data-field="{FIELD}"] input[name="{FIELD}.none"][value="{r}"]').check()
            rows.append(chosen)
        expect(page.locator(f'.item[data-field="{FIELD}"] .row-status .saved')).to_be_visible()
        ticked[pair] = {"generated_count": generated, "matches": rows}
        page.click("#next-page")
    expect(page.locator("#done")).to_contain_text("you have finished")
    context.close()
    return ticked


def _proportion(answer: dict) -> float:
    """Seed 000's matched proportion: the generated sentences that match some reference sentence."""
    matched = set().union(*map(set, answer["matches"]))
    return len(matched) / answer["generated_count"]


@pytest.mark.django_db(transaction=True)
def test_seed_000_sentence_matching_is_set_up_run_and_archived_in_the_browser(
    page, browser, live_server, tmp_path, settings
):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    page.set_default_timeout(60_000)
    page.set_viewport_size({"width": 1280, "height": 900})
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    walk.log_in(page)
    walk.create(page, title="Layman reports", slug=SLUG, kind="layman_rrg_000_matching")
    walk.upload(page, _sources_csv(tmp_path), sources=len(REPORTS))

    # The reference system, chosen on the Flows page.
    walk.follow(page, "Flows")
    expect(page.locator('#asked-table tr[data-flow="pairs"]')).to_be_visible()
    page.select_option("#reference-system", "reference")
    with page.expect_navigation():
        page.locator("#reference-form").get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("The reference system is reference.")

    # Three annotators, their group picked from the instrument's list.
    walk.invite(page, "annotator, as laypeople (0 invited)", 3)
    expect(page.locator("#id_role")).to_contain_text("annotator, as laypeople (3 invited)")
    walk.launch(page)
    links = walk.links(page, SLUG)
    assert len(links) == 3

    ticks = {
        person: _annotate(browser, live_server, link, n) for n, (person, link) in enumerate(links.items())
    }
    n_answers = 3 * len(REPORTS) * len(SYSTEMS)

    # "Answers · CSV": one row per page, its value the ticks.
    rows = walk.answers_csv(page, SLUG)
    assert len(rows) == n_answers
    got = {
        (r["participant"], r["source"], r["systems"].split(" vs ")[0]): json.loads(r["value"]) for r in rows
    }
    assert got == {
        (person, source, system): answer
        for person, pages in ticks.items()
        for (source, system), answer in pages.items()
    }
    assert all(r["question"] == FIELD and r["systems"].endswith(" vs reference") for r in rows)
    assert {r["phase"] for r in rows} == {"pairs"} and {r["language"] for r in rows} == {"en"}

    # The dashboard: counts, and the matched proportion the ticks give, overall and per system.
    page.goto(f"/dashboard/{SLUG}/", timeout=180_000)
    expect(page.locator("#count-participants")).to_have_text("3")
    expect(page.locator("#count-answers")).to_have_text(str(n_answers))
    expect(page.locator('#flow-counts [data-flow="pairs"]')).to_contain_text(
        f"3 participants, {n_answers} answers"
    )
    assert page.locator("#table1").count() == 0
    proportions = [_proportion(a) for pages in ticks.values() for a in pages.values()]
    row = page.locator('#instrument-items ~ * tr:has(td[title="sentence_match"])').first
    assert row.locator("td.num").nth(1).inner_text().startswith(fmt(mean(proportions)))
    analysis = json.loads(download(page, page.get_by_role("link", name="Analysis · JSON")))
    (group,) = analysis["instrument_items"]["groups"]
    (item,) = [i for i in group["items"] if i["key"] == "sentence_match"]
    assert item["mean"]["mean"] == pytest.approx(mean(proportions))
    for system in SYSTEMS:
        per_system = [_proportion(pages[(s, system)]) for pages in ticks.values() for s in REPORTS]
        (key,) = [k for k in item["by_system"] if k.startswith(system)]
        assert item["by_system"][key]["mean"] == pytest.approx(mean(per_system))
    page.goto(f"/dashboard/{SLUG}/progress/")
    expect(page.locator('#units-table tr[data-group="annotator"]')).to_contain_text(
        f"{n_answers} / {n_answers}"
    )

    # The archive, moved in the browser: the copy's dashboard gives the same files.
    counts = walk.copy_reproduces_the_files(page, slug=SLUG, copy=COPY, tmp_path=tmp_path)
    assert counts["annotation.itemanswer"] == n_answers
    page.goto(f"/console/{COPY}/flows/")
    expect(page.locator("#reference-system")).to_have_value("reference")
