"""Whole reports as sources, in headless Chromium at desktop size and at 390 px: a 300-word report
imported from a FHIR Bundle, with a 300-word simplification, on the radiologist page (the report
in its scrolling bar, paragraphs kept, all of it reachable), in the error-span widget (a mark
dragged across a paragraph break, stored as exactly that stretch of the text) and on the lay
panels (the report and the simplification with their paragraphs, nothing scrolling sideways)."""

from __future__ import annotations

import base64
import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation import participant_services
from annotation.models import ExpertItem, Participant, Study
from studies import source_services
from studies.error_span_services import study_error_spans_add
from tests.annotation import answers
from tests.e2e.polling import wait_for
from tests.e2e.test_error_spans_browser import FIND, arrive
from tests.studies.test_error_spans import label_of

FIXTURES = Path(__file__).resolve().parents[1] / "studies" / "clinical_reports"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
PARAGRAPHS = [
    "This scan looked at your chest, belly and pelvis. A dye was given through a vein so that the "
    "organs and blood vessels show up more clearly. The doctors compared it with your chest scan from "
    "last year to see what has changed.",
    "In the right lung there is a small spot, called a nodule. Last year it was 6 millimetres across; "
    "now it is 9 millimetres, and its edges are spiky. A spot that grows and has spiky edges can be an "
    "early lung cancer, so it needs to be checked further. There are no new spots in the lungs.",
    "The airways are open. There is some mild damage to the air sacs at the top of both lungs, called "
    "emphysema, which is often caused by smoking. There is no fluid around the lungs and no collapsed "
    "lung. The heart is a normal size and there is no fluid around it. The lymph nodes in the middle of "
    "the chest are not enlarged.",
    "The liver is a normal size. A small dark area in the liver, about 12 millimetres, is too small to "
    "say exactly what it is, but it has not changed since last year, which is reassuring. The "
    "gallbladder has a few small stones, but it is not inflamed. The pancreas, spleen and adrenal glands "
    "look normal. The left kidney has a 2 centimetre fluid-filled sac, called a simple cyst, which is "
    "harmless.",
    "What this means: the growing lung spot is the main concern. Your doctor will likely suggest a PET "
    "scan or a small sample of the spot (a biopsy) to find out what it is. There is no sign that "
    "anything has spread to the lymph nodes or other organs. The gallstones, emphysema, liver spot and "
    "kidney cyst do not need any treatment now. Please talk to your doctor about the next steps.",
]
LAY = "\n\n".join(PARAGRAPHS)
# A mark across the break between the second and third paragraphs.
ACROSS = "There are no new spots in the lungs.\n\nThe airways are open."


def long_report() -> str:
    bundle = json.loads((FIXTURES / "bundle.json").read_text())
    return base64.b64decode(bundle["entry"][1]["resource"]["presentedForm"][0]["data"]).decode().strip()


def long_study(slug: str, tmp_path: Path) -> Study:
    """The 300-word report (with its Patient, as a hospital exports it) imported by import_study,
    then two systems' simplifications and the error-span item."""
    bundle = json.loads((FIXTURES / "bundle.json").read_text())
    bundle["entry"] = bundle["entry"][:2]
    path = tmp_path / "one_report.json"
    path.write_text(json.dumps(bundle))
    call_command("import_study", str(path), "--study", slug, stdout=StringIO())
    study = Study.objects.get(slug=slug)
    study.status = Study.Status.OPEN
    study.save()
    source = study.sources.get()
    for key, text in (("a", LAY), ("b", PARAGRAPHS[1])):
        system = source_services.system_upsert(study=study, key=key)
        source_services.simplification_upsert(source=source, system=system, text=text)
    study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    return study


def no_sideways_scroll(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def whole_text_reachable(page, selector: str) -> None:
    """The element's last line can be brought into view and is not covered by anything (a sticky
    bar): its own box scrolled to the end, then the page scrolled to the line."""
    seen = page.eval_on_selector(
        selector,
        """el => {
            el.scrollTop = el.scrollHeight;
            const lastLine = () => {
                const range = document.createRange();
                range.selectNodeContents(el);
                const rects = Array.from(range.getClientRects()).filter(r => r.height > 0);
                return rects[rects.length - 1];
            };
            window.scrollBy(0, lastLine().top - window.innerHeight / 2);
            const line = lastLine();
            const hit = document.elementFromPoint(line.left + 2, line.top + line.height / 2);
            return { top: line.top, bottom: line.bottom, view: window.innerHeight,
                     box: el.getBoundingClientRect().bottom, inside: !!hit && el.contains(hit) };
        }""",
    )
    assert seen["inside"] and seen["top"] >= 0 and seen["bottom"] <= min(seen["box"], seen["view"]) + 2, seen


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_300_word_report_on_the_radiologist_page_and_a_mark_across_paragraphs(
    page, live_server, tmp_path, artifacts_dir, viewport
):
    from playwright.sync_api import expect

    report = long_report()
    assert len(report.split()) >= 300 and len(LAY.split()) >= 300
    page.set_viewport_size(viewport)
    study = long_study(f"long-{viewport['width']}", tmp_path)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    item = ExpertItem.objects.get(participant=participant)
    field = f"{label_of(item, LAY)}-error_spans"
    widget = f'[data-span-item][data-field="{field}"]'
    arrive(page, widget)
    no_sideways_scroll(page, viewport["width"])

    # The report, paragraphs and all, in its bar; the bar scrolls and can be scrolled by keyboard.
    original = page.locator(".original-bar .original")
    assert original.inner_text().strip() == report
    bar = page.locator(".original-bar")
    assert bar.evaluate("el => el.scrollHeight > el.clientHeight")
    expect(bar).to_have_attribute("tabindex", "0")
    whole_text_reachable(page, ".original-bar")
    # The simplification with its paragraphs.
    simplification = page.locator(f'.simplification[data-label="{field[0]}"] .simp-text')
    assert simplification.inner_text().strip() == LAY

    # A mark dragged from the end of one paragraph over the break into the next.
    assert page.evaluate(FIND, [widget, ACROSS])["shown"] == LAY
    page.eval_on_selector(
        f"{widget} [data-span-text]",
        """(box, phrase) => {
            const at = box.textContent.indexOf(phrase.split("\\n")[0]);
            window.scrollBy(0, box.getBoundingClientRect().top + box.offsetHeight * at
                / box.textContent.length - window.innerHeight / 2);
        }""",
        ACROSS,
    )
    where = page.evaluate(FIND, [widget, ACROSS])
    page.mouse.move(where["x0"], where["y0"])
    page.mouse.down()
    page.mouse.move(where["x1"], where["y1"], steps=6)
    page.mouse.up()
    status = page.locator(f"{widget} [data-span-status]")
    expect(status).to_contain_text("Selected: “There are no new spots in the lungs.")
    page.locator(widget).get_by_label("Wrong finding or location").check()
    page.locator(widget).get_by_label("Minor").check()
    page.locator(f"{widget} [data-span-add]").click()
    start = LAY.index(ACROSS)
    mark = {
        "start": start,
        "end": start + len(ACROSS),
        "category": "wrong_finding_or_location",
        "severity": "minor",
    }

    def stored():
        answer = answers.item_answers().filter(participant=participant, item_key="error_spans").first()
        return None if answer is None else answer.value

    assert wait_for(stored, [mark]) == [mark]
    page.reload()
    arrive(page, widget)
    marks = page.locator(f"{widget} mark.span-mark")
    # Shown again after the reload over exactly those words, on both sides of the break.
    assert " ".join(marks.all_text_contents()).split() == ACROSS.split()
    no_sideways_scroll(page, viewport["width"])
    right = page.eval_on_selector_all(
        f"{widget}, {widget} *", "els => Math.max(...els.map(e => e.getBoundingClientRect().right))"
    )
    assert right <= viewport["width"]
    page.screenshot(
        path=str(artifacts_dir / f"whole_report_radiologist_{viewport['width']}.png"), full_page=True
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_300_word_report_on_the_lay_panels(page, live_server, tmp_path, artifacts_dir, viewport):
    from playwright.sync_api import expect

    report = long_report()
    page.set_viewport_size(viewport)
    study = long_study(f"long-lay-{viewport['width']}", tmp_path)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    page.goto(f"/l/{participant.token}/instructions/")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").click()
    assert page.url.endswith("/original/")
    assert page.locator(".sentence .original").inner_text().strip() == report
    no_sideways_scroll(page, viewport["width"])
    whole_text_reachable(page, ".sentence .original")
    for field, value in (
        ("understanding", "Most of it"),
        ("confidence", "With low confidence"),
        ("severity_guess", "Serious"),
    ):
        with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url):
            page.locator(f'#q-{field} label:has(input[value="{value}"])').click()
    page.locator(".submitbar button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/assisted/$"))
    expect(page.locator(".sentence .simp")).to_be_visible()
    shown = page.locator(".sentence .simp").inner_text().strip()
    assert shown in (LAY, PARAGRAPHS[1])
    if shown == LAY:
        assert "\n\n" in shown
    assert page.locator(".sentence .original").inner_text().strip() == report
    no_sideways_scroll(page, viewport["width"])
    whole_text_reachable(page, ".sentence .simp")
    page.screenshot(path=str(artifacts_dir / f"whole_report_lay_{viewport['width']}.png"), full_page=True)
