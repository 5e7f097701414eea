"""A protocol study (seed 003) with error spans and planted controls, set up, run and archived
entirely through the console and the participants' links, in headless Chromium against the live
server (PostgreSQL). The researcher creates it from the protocol's card, uploads three sources with
one system's texts, generates a second system's with the glossary backend, adds the error-span
typology on the Instruments page, previews and plants controls on the Flows page, invites two
radiologists and two laypeople and opens the study. The radiologists rate every row of every page
(planted rows among them: a careful rater gives the real texts 4-5 and a planted copy, whose error
they notice, 1-2), one marks a span; the laypeople complete the three panels of every sentence.

The dashboard's counts, Table 1's radiologist and lay figures, the error-span section and the
planted controls' reliability must then equal what was clicked, and so must "Answers · CSV"; the
study archive, downloaded and imported in the browser, gives a copy whose dashboard gives the same
analysis and exports."""

from __future__ import annotations

import json
import re
from statistics import mean

import pytest
from django.urls import get_resolver

from annotation.models import ItemAnswer, Study
from evaluation.analysis.planted_control_scores import RELIABILITY_ASPECTS
from tests.annotation import answers
from tests.e2e import console_walk as walk
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS

SLUG, COPY = "kidney", "kidney-copy"
# Each source's original and the uploaded system's text: sides, sizes and negations for the planted
# controls to change.
SOURCES = {
    "s1": (
        "1.2 cm hypodense lesion in the left kidney, likely a cyst.",
        "There is a 1.2 cm spot in the left kidney. It is not dangerous.",
    ),
    "s2": ("No acute fracture of the right femur.", "The right thigh bone is not broken."),
    "s3": (
        "Small left pleural effusion, no pneumothorax.",
        "A little fluid around the left lung. The lung has not collapsed.",
    ),
}
ASPECTS_REAL = (4, 5)
ASPECTS_PLANTED = (1, 2)
LAY_CHOICES = {
    "understanding": ["Not at all", "Some parts of it", "Most of it", "Completely"],
    "confidence": ["Not at all", "With low confidence", "With high confidence"],
    "severity_guess": ["Critical", "Serious", "Moderate", "Mild", "Healthy"],
    "helpfulness": [
        "It further confused me",
        "It did not help",
        "I understand slightly better",
        "I understand much better",
    ],
}
ORIGINAL_FIELDS = ("understanding", "confidence", "severity_guess")
ASSISTED_FIELDS = (*ORIGINAL_FIELDS, "helpfulness")

CARDS = """() => [...document.querySelectorAll("section.simplification")].map(s => ({
  label: s.dataset.label, text: s.querySelector(".simp-text").textContent.trim(),
  fields: [...s.querySelectorAll(".rate-row")].map(r => r.dataset.field)}))"""
FILL = """(choices) => {
  for (const [field, value] of Object.entries(choices)) {
    document.querySelector(`input[name="${field}"][value="${value}"]`).checked = true;
  }
}"""


def _sources_csv(tmp_path):
    path = tmp_path / "sources.csv"
    lines = ["source_key,source_text,human"]
    lines += [f'{key},"{source}","{text}"' for key, (source, text) in SOURCES.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _source_key(original: str) -> str:
    (key,) = [key for key, (source, _) in SOURCES.items() if source == original.strip()]
    return key


def _mark_first_word(page, widget: str) -> str:
    """Mark the text's first word by keyboard as unexplained jargon, minor; returns the word."""
    from playwright.sync_api import expect

    page.wait_for_selector(f"{widget}[data-ready]", state="attached")
    box = page.locator(f"{widget} [data-span-text]")
    box.scroll_into_view_if_needed()
    box.focus()
    page.keyboard.press("Home")
    page.keyboard.press("Control+Shift+ArrowRight")
    status = page.locator(f"{widget} [data-span-status]")
    expect(status).to_contain_text("Selected: “")
    word = re.search(r"Selected: “([^”]+)”", status.inner_text()).group(1)
    page.locator(widget).get_by_label("Unexplained jargon").check()
    page.locator(widget).get_by_label("Minor").check()
    page.locator(f"{widget} [data-span-add]").click()
    expect(status).to_contain_text(f"Mark 1 added: “{word}”, Unexplained jargon, Minor.")
    expect(page.locator(f"{widget} .row-status .saved")).to_be_visible()
    return word


def _radiologist(browser, live_server, link: str, *, planted: set[str], texts: dict, mark: bool, seed: int):
    """Rate every row of every page; returns the clicks: (source, text, aspect) -> value, the
    original's (source, question) -> value, and the marked (source, text, word) if any."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(link)
    with page.expect_navigation():
        page.click("#begin")
    ratings: dict[tuple[str, str, str], int] = {}
    originals: dict[tuple[str, str], str] = {}
    marked = None
    while "/done/" not in page.url:
        page.wait_for_selector("#expert-form[data-ready]", state="attached")
        html = page.content().lower()
        assert "planted" not in html and "degrad" not in html  # nothing says which rows are planted
        source = _source_key(page.locator("p.original").inner_text())
        choices: dict[str, str] = {}
        for card in page.evaluate(CARDS):
            is_planted = card["text"] in planted
            if not is_planted:
                texts.setdefault(source, set()).add(card["text"])
            if mark and marked is None and not is_planted:
                widget = f'[data-span-item][data-field="{card["label"]}-error_spans"]'
                marked = (source, card["text"], _mark_first_word(page, widget))
            for n, field in enumerate(card["fields"]):
                aspect = field.split("-", 1)[1]
                value = (ASPECTS_PLANTED if is_planted else ASPECTS_REAL)[(seed + n + len(choices)) % 2]
                choices[field] = str(value)
                ratings[(source, "planted" if is_planted else card["text"], aspect)] = value
        severity = ("Mild", "Moderate")[seed % 2]
        choices["original-severity"] = severity
        choices["original-simplicity"] = str(2 + seed)
        originals[(source, "severity")] = severity
        originals[(source, "simplicity")] = 2 + seed
        page.evaluate(FILL, choices)
        with page.expect_navigation():
            page.click("#next-page")
    context.close()
    return ratings, originals, marked


def _continue(page) -> None:
    """The panel's submit button; the next panel comes in place of this one (or a page loads)."""
    page.evaluate("document.querySelector('main').dataset.left = 'yes'")
    page.locator(".submitbar button[type=submit]").click()
    page.wait_for_selector("main:not([data-left])", state="attached")
    page.wait_for_load_state()


def _choose(page, field: str, value: str) -> None:
    with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url) as answer:
        page.locator(f'#q-{field} label:has(input[value="{value}"])').click()
    assert answer.value.status == 200


def _layperson(browser, live_server, link: str, offset: int) -> dict:
    """Every panel of every sentence; returns (source, panel, question) -> the answer's wording
    (panel 3: most/least -> the chosen text)."""
    from playwright.sync_api import expect

    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(link)
    with page.expect_navigation():
        page.get_by_role("button", name="I agree, continue").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").click()
    given: dict[tuple[str, str, str], str] = {}
    for _ in range(30):
        if page.url.endswith("/done/"):
            break
        panel = re.search(r"/sentence/\d+/(original|assisted|preference)/$", page.url).group(1)
        source = _source_key(page.locator("p.original").inner_text())
        if panel == "original":
            expect(page.locator(".simp")).to_have_count(0)
            for n, field in enumerate(ORIGINAL_FIELDS):
                value = LAY_CHOICES[field][(offset + n) % len(LAY_CHOICES[field])]
                _choose(page, field, value)
                given[(source, panel, field)] = value
        elif panel == "assisted":
            for n, field in enumerate(ASSISTED_FIELDS):
                value = LAY_CHOICES[field][(offset + n + 1) % len(LAY_CHOICES[field])]
                _choose(page, field, value)
                given[(source, panel, field)] = value
        else:
            shown_texts = page.locator(".simplifications li").count()
            most, least = offset % shown_texts, (offset + 1) % shown_texts
            for question, n in (("most", most), ("least", least)):
                label = page.locator(f"#q-{question} label").nth(n)
                label.click()
                shown = page.locator(".simplifications li div").nth(n).inner_text()
                given[(source, panel, question)] = shown.split(":", 1)[1].strip()
            page.locator("#most_justification").fill("Clearest wording.")
            page.locator("#least_justification").fill("Too many medical words.")
        _continue(page)
    expect(page.locator("#completion-code")).to_be_visible()
    context.close()
    return given


@pytest.mark.django_db(transaction=True)
def test_a_protocol_study_with_spans_and_controls_is_run_and_archived_in_the_browser(
    page, browser, live_server, tmp_path, settings, artifacts_dir
):
    from playwright.sync_api import expect

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = ""  # the glossary backend is the default
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    page.set_default_timeout(60_000)
    page.set_viewport_size({"width": 1280, "height": 900})
    get_resolver().url_patterns  # noqa: B018 - import every view module before the first page
    walk.log_in(page)

    # 1. Created from the protocol's card; three sources uploaded; the glossary's texts generated.
    walk.create(page, title="Kidney and chest", slug=SLUG, kind="protocol")
    walk.upload(page, _sources_csv(tmp_path), sources=3)
    walk.follow(page, "Generate")
    expect(page.locator("select[name=backend]")).to_have_value("glossary")
    walk.screenshots(page, artifacts_dir, "console_generate")
    for system in ("plain_sc", "cot_bs", "cot_sc"):  # one generated system beside the uploaded one
        page.uncheck(f"input[name=systems][value={system}]")
    with page.expect_navigation():
        page.get_by_role("button", name="Launch").click()
    expect(page.locator("h1")).to_contain_text("Generation batch")

    # 2. The error-span typology, from the Instruments page.
    page.goto(f"/console/{SLUG}/")
    walk.follow(page, "Instruments")
    with page.expect_navigation():
        page.click("#add-error-spans")
    expect(page.locator("#add-error-spans")).to_have_count(0)
    expect(page.locator("body")).to_contain_text("clinical_error_spans")

    # 3. Planted controls, previewed then planted, on the Flows page; their texts are read there.
    walk.follow(page, "Flows")
    page.fill("#id_rate", "0.25")
    page.fill("#id_seed", "3")
    with page.expect_navigation():
        page.click("#controls-preview")
    preview = page.locator("#controls-preview-table tbody tr")
    expect(page.locator("h3", has_text="Preview:")).to_contain_text("(nothing planted yet)")
    previewed = {preview.nth(i).locator("td").nth(3).inner_text() for i in range(preview.count())}
    assert previewed and "None at this rate." not in previewed
    expect(page.locator("#no-controls")).to_be_visible()  # nothing planted by a preview
    with page.expect_navigation():
        page.click("#controls-plant")
    planted_rows = page.locator("#controls-table tbody tr")
    expect(planted_rows).to_have_count(len(previewed))
    planted = {planted_rows.nth(i).locator("td").nth(4).inner_text() for i in range(len(previewed))}
    assert planted == previewed  # the preview showed what the same rate and seed plant
    walk.screenshots(page, artifacts_dir, "console_flows")

    # 4. Two radiologists and two laypeople invited; the study opened from the set-up page.
    walk.invite(page, "radiologist (0 invited)", 2)
    walk.invite(page, "layperson (0 invited)", 2)
    walk.follow(page, "Set up")
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator("#study-status")).to_have_text("Open")
    links = walk.links(page, SLUG)
    assert set(links) == {"R001", "R002", "L001", "L002"}

    # 5. The radiologists rate every page; R001 marks a span. Then the laypeople.
    texts: dict[str, set[str]] = {}
    rated, originals, marks = {}, {}, {}
    for seed, rater in enumerate(("R001", "R002")):
        rated[rater], originals[rater], marks[rater] = _radiologist(
            browser, live_server, links[rater], planted=planted, texts=texts, mark=seed == 0, seed=seed
        )
    assert marks["R001"] is not None
    lay = {
        person: _layperson(browser, live_server, links[person], n)
        for n, person in enumerate(("L001", "L002"))
    }
    assert all(len(texts[key]) == 2 for key in SOURCES)  # two systems' texts per source

    # 6. "Answers · CSV" holds exactly the clicks, row for row.
    page.goto(f"/dashboard/{SLUG}/", timeout=180_000)
    rows = walk.answers_csv(page, SLUG)
    system = {
        text: ("human" if text == SOURCES[key][1] else "plain_bs") for key in SOURCES for text in texts[key]
    }
    got_ratings = {
        (r["participant"], r["source"], r["systems"], r["question"]): int(r["value_number"])
        for r in rows
        if r["phase"] == "expert" and "." not in r["question"]
    }
    assert got_ratings == {
        (rater, source, system[text], aspect): value
        for rater, clicks in rated.items()
        for (source, text, aspect), value in clicks.items()
        if text != "planted"
    }
    got_controls = {
        (r["participant"], r["source"], r["question"]): int(r["value_number"])
        for r in rows
        if r["phase"] == "planted_control"
    }
    assert got_controls == {
        (rater, source, aspect): value
        for rater, clicks in rated.items()
        for (source, text, aspect), value in clicks.items()
        if text == "planted"
    }
    assert all(r["systems"].startswith("planted ") for r in rows if r["phase"] == "planted_control")
    got_originals = {
        (r["participant"], r["source"], r["question"]): r["value"]
        if r["question"] == "severity"
        else int(r["value_number"])
        for r in rows
        if r["role"] == "radiologist" and r["phase"] == "original"
    }
    assert got_originals == {
        (rater, source, "original_simplicity" if question == "simplicity" else question): value
        for rater, clicks in originals.items()
        for (source, question), value in clicks.items()
    }
    spans = [r for r in rows if r["question"].endswith(".error_spans")]
    assert len(spans) == 2 * 2 * len(SOURCES)  # every real text each radiologist saw
    (marked,) = [
        (r["participant"], r["source"], r["systems"], json.loads(r["value"]))
        for r in spans
        if json.loads(r["value"])
    ]
    source, text, word = marks["R001"]
    assert marked[:3] == ("R001", source, system[text])
    assert [text[m["start"] : m["end"]] for m in marked[3]] == [word]
    assert [(m["category"], m["severity"]) for m in marked[3]] == [("unexplained_jargon", "minor")]
    got_lay = {
        (r["participant"], r["source"], r["phase"], r["question"]): r["value"]
        for r in rows
        if r["role"] == "layperson" and r["phase"] in ("original", "assisted")
    }
    assert got_lay == {
        (person, source, panel, question): value
        for person, given in lay.items()
        for (source, panel, question), value in given.items()
        if panel != "preference"
    }
    got_preferences = {
        (r["participant"], r["source"], r["question"]): r["value"] for r in rows if r["phase"] == "preference"
    }
    assert got_preferences == {
        **{
            (person, source, f"{question}_preferred"): system[value]
            for person, given in lay.items()
            for (source, panel, question), value in given.items()
            if panel == "preference"
        },
        **{
            (person, source, f"{question}_justification"): text
            for person in lay
            for source in SOURCES
            for question, text in (("most", "Clearest wording."), ("least", "Too many medical words."))
        },
    }
    assert {r["language"] for r in rows} == {"en"}

    # 7. The dashboard: counts, Table 1, the error spans, the planted controls.
    page.goto(f"/dashboard/{SLUG}/", timeout=180_000)
    expect(page.locator("#count-participants")).to_have_text("4")
    for flow in ("expert", "lay", "controls"):
        expect(page.locator(f'#flow-counts [data-flow="{flow}"]')).to_contain_text("2 participants")
    table1 = _table(page.locator("#table1 + div table"))
    columns = table1.pop("Measure")
    for system_key in ("human", "plain_bs"):
        column = columns.index("human" if system_key == "human" else "Plain_BS")
        for aspect in ("correctness", "hallucination", "simplicity"):
            clicks = [
                value
                for clicks in rated.values()
                for (_, text, asked), value in clicks.items()
                if asked == aspect and text != "planted" and system[text] == system_key
            ]
            assert table1[aspect.capitalize()][column] == f"{mean(clicks):.3f}", (aspect, system_key)
        # Q1 of panel 2, coded 1-4, over the laypeople who were shown this system's text.
        understood = [
            LAY_CHOICES["understanding"].index(value) + 1
            for person, given in lay.items()
            for (source, panel, question), value in given.items()
            if panel == "assisted"
            and question == "understanding"
            and _assigned(rows, person, source) == system_key
        ]
        assert table1["Q1 understanding (1–4)"][column] == f"{mean(understood):.3f}"
    panel1 = [
        LAY_CHOICES["understanding"].index(v) + 1
        for g in lay.values()
        for (_, p, q), v in g.items()
        if p == "original" and q == "understanding"
    ]
    assert table1["Q1 understanding (1–4)"][columns.index("Original")] == f"{mean(panel1):.3f}"
    assert table1["n ratings"] == ["6", "6", "6"]  # originals, and each system's texts, by two radiologists
    # The error-span section: the one mark, on the uploaded system's or the generated one's text.
    section = page.locator("#error-spans").evaluate("h => h.nextElementSibling.innerText")
    spans_section = page.locator("#error-spans ~ *").first
    expect(spans_section).to_contain_text(f"1 spans marked by 2 raters in {len(spans)} answers on 6 texts")
    per_text = _table(page.locator("table", has=page.locator("th", has_text="spans per text [CI]")))
    marked_system = system[marks["R001"][1]]
    for row_system, cells in per_text.items():
        if row_system == "system":
            continue
        expected = "0.167" if (row_system == "human") == (marked_system == "human") else "0.000"
        assert cells[0] == expected, (row_system, cells)  # 1 span over 6 (rater, text) answers
    assert "could harm" in section
    # The planted controls: each radiologist scored every control, all caught.
    page.goto(f"/dashboard/{SLUG}/progress/")
    reliability = _table(page.locator("#reliability-table"))
    for rater, clicks in rated.items():
        controls, _, planted_mean, _, caught = (reliability[rater][i] for i in (1, 2, 3, 4, 5))
        assert controls == str(len(planted))
        scores = [
            v
            for (_, text, aspect), v in clicks.items()
            if text == "planted" and aspect in RELIABILITY_ASPECTS
        ]
        assert planted_mean == f"{mean(scores):.2f}"
        assert caught == "100%"

    # 8. The archive, downloaded and imported in the browser: the copy gives the same files.
    counts = walk.copy_reproduces_the_files(page, slug=SLUG, copy=COPY, tmp_path=tmp_path)
    assert counts["annotation.plantedcontrol"] == len(planted)
    # Every answer, the planted controls' ones included (`control` set), is an ItemAnswer row: the
    # manifest has no other answer table, and the copy holds the same control answers.
    assert "annotation.plantedcontrolanswer" not in counts
    assert counts["annotation.itemanswer"] == ItemAnswer.objects.filter(participant__study__slug=SLUG).count()
    control_rows = ItemAnswer.objects.filter(participant__study__slug=SLUG, control__isnull=False)
    assert control_rows.count() > 0
    assert ItemAnswer.objects.filter(participant__study__slug=COPY, control__isnull=False).count() == (
        control_rows.count()
    )
    assert len(answers.control_answers(study=Study.objects.get(slug=COPY))) == len(
        answers.control_answers(study=Study.objects.get(slug=SLUG))
    )
    page.goto(f"/console/{COPY}/instruments/")
    expect(page.locator("body")).to_contain_text("clinical_error_spans")
    page.goto(f"/console/{COPY}/flows/")
    expect(page.locator("#controls-table tbody tr")).to_have_count(len(planted))


def _table(table) -> dict[str, list[str]]:
    """A table's rows by their first cell: the other cells' first lines (a value, not its interval)."""
    rows = table.locator("tr")
    got = {}
    for i in range(rows.count()):
        cells = [
            c.split("\n")[0].split(" too few")[0].strip()
            for c in rows.nth(i).locator("th, td").all_inner_texts()
        ]
        if cells:
            got[cells[0]] = cells[1:]
    return got


def _assigned(rows: list[dict], person: str, source: str) -> str:
    """The system whose text a layperson was shown for `source` (the export's Latin-square column)."""
    (system,) = {
        r["assigned_system"]
        for r in rows
        if r["participant"] == person and r["source"] == source and r["phase"] == "assisted"
    }
    return system
