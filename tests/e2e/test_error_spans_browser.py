"""Error spans end to end, in headless Chromium: a radiologist on a study with the clinical error-span
typology marks two spans on one simplification, one with the mouse (a real drag) and one with the
keyboard only, with different categories and severities; after a reload both marks are shown, and
the stored offsets (code points of the shown text, which holds a character that takes two UTF-16
units) cover exactly the phrases marked. Then at 390 px: nothing scrolls sideways, and a mark is
removed. The marks are checked for text alternatives through the browser's accessibility tree, and
the page with axe-core where it is installed."""

from __future__ import annotations

import json
import re

import pytest

from annotation import participant_services
from annotation.models import AnswerRevision, ExpertItem, ItemAnswer, Participant
from tests.annotation import answers
from tests.e2e.polling import wait_for
from tests.studies.test_error_spans import TEXT, label_of, span_study

PHONE = {"width": 390, "height": 844}
BLOCKING = {"serious", "critical"}
# The marked phrases (the mouse's comes after the emoji, so a UTF-16 offset would be one too far).
MOUSE = "small nodule"
KEYBOARD = "normal 🫀"

FIND = """([selector, phrase]) => {
  // The phrase's place on screen, found in the text the widget shows (its labels for screen
  // readers, [data-nontext], left out), and that text itself.
  const box = document.querySelector(selector + " [data-span-text]");
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT, { acceptNode: (n) =>
    n.parentElement.closest("[data-nontext]") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT });
  const nodes = [];
  let all = "";
  while (walker.nextNode()) { nodes.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
  const at = all.indexOf(phrase);
  const point = (i, opening) => {
    for (const [node, start] of nodes) {
      const end = start + node.data.length;
      if (opening ? i < end : i <= end) return [node, i - start];
    }
  };
  const range = document.createRange();
  range.setStart(...point(at, true));
  range.setEnd(...point(at + phrase.length, false));
  const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
  const first = rects[0], last = rects[rects.length - 1];
  return { shown: all, x0: first.left + 2, y0: first.top + first.height / 2,
           x1: last.right - 2, y1: last.top + last.height / 2 };
}"""


def axe_blocking(page) -> list[str]:
    """axe-core's serious and critical violations on the page (as tests/e2e/test_accessibility.py
    checks every survey page), where axe-playwright-python is installed; the roles and names are
    also checked directly below, whether it is or not."""
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        return []
    violations = Axe().run(page).response["violations"]
    return [f"{v['id']}: {v['help']}" for v in violations if v.get("impact") in BLOCKING]


def stored(participant) -> list[dict] | None:
    answer = answers.item_answers().filter(participant=participant, item_key="error_spans").first()
    return None if answer is None else sorted(answer.value, key=lambda m: (m["start"], m["end"]))


def expected(phrase: str, category: str, severity: str) -> dict:
    start = TEXT.index(phrase)
    return {"start": start, "end": start + len(phrase), "category": category, "severity": severity}


def arrive(page, selector: str) -> None:
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    page.wait_for_selector(f"{selector}[data-ready]", state="attached")


@pytest.mark.django_db(transaction=True)
def test_a_radiologist_marks_two_spans_one_by_keyboard_and_sees_them_after_reload(
    page, live_server, artifacts_dir
):
    from playwright.sync_api import expect

    study = span_study("spans-browser")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    item = ExpertItem.objects.filter(participant=participant).order_by("position").first()
    field = f"{label_of(item, TEXT)}-error_spans"
    widget = f'[data-span-item][data-field="{field}"]'
    arrive(page, widget)
    status = page.locator(f"{widget} [data-span-status]")
    box = page.locator(f"{widget} [data-span-text]")

    expect(page.locator(f"{widget} .span-nojs")).to_be_hidden()  # the page says it for no-JS only
    # The widget shows exactly the stored text, emoji and all.
    assert page.evaluate(FIND, [widget, MOUSE])["shown"] == TEXT

    # 1. With the mouse: drag over "small nodule", pick a category and a severity, "Add mark".
    box.scroll_into_view_if_needed()
    where = page.evaluate(FIND, [widget, MOUSE])
    page.mouse.move(where["x0"], where["y0"])
    page.mouse.down()
    page.mouse.move((where["x0"] + where["x1"]) / 2, where["y0"], steps=4)
    page.mouse.move(where["x1"], where["y1"], steps=4)
    page.mouse.up()
    expect(status).to_contain_text(f"Selected: “{MOUSE}”")
    page.locator(widget).get_by_label("Wrong finding or location").check()
    page.locator(widget).get_by_label("Could mislead").check()
    page.locator(f"{widget} [data-span-add]").click()
    expect(status).to_contain_text(f"Mark 1 added: “{MOUSE}”, Wrong finding or location, Could mislead.")
    first = expected(MOUSE, "wrong_finding_or_location", "could_mislead")
    assert wait_for(lambda: stored(participant), [first]) == [first]
    expect(page.locator(f"{widget} .row-status .saved")).to_be_visible()  # the item says it is saved

    # 2. By keyboard only: the widget gave the focus back to the text.
    assert page.evaluate("document.activeElement.matches('[data-span-text]')")
    keyboard = page.keyboard
    keyboard.press("Home")
    keyboard.press("Control+ArrowRight")  # after "Cœur"
    keyboard.press("ArrowRight")  # before "normal"
    expect(status).to_contain_text("Before “normal”.")
    keyboard.press("Control+Shift+ArrowRight")  # "normal"
    keyboard.press("Shift+ArrowRight")  # the space
    keyboard.press("Shift+ArrowRight")  # the emoji: one character, two UTF-16 units
    expect(status).to_contain_text(f"Selected: “{KEYBOARD}”")
    # The page's own keys (digits answer a row, "n" goes to the next page) do nothing here.
    keyboard.press("n")
    keyboard.press("3")
    keyboard.press("Tab")  # the categories: the one chosen before has the focus
    assert page.evaluate("document.activeElement.value") == "wrong_finding_or_location"
    for _ in range(3):
        keyboard.press("ArrowDown")  # … down to "Unexplained jargon"
    keyboard.press("Tab")  # the severities
    keyboard.press("ArrowUp")  # "Could mislead" → "Minor"
    keyboard.press("Tab")  # "Add mark"
    assert page.evaluate("document.activeElement.matches('[data-span-add]')")
    keyboard.press("Enter")
    expect(status).to_contain_text(f"Mark 1 added: “{KEYBOARD}”, Unexplained jargon, Minor.")
    second = expected(KEYBOARD, "unexplained_jargon", "minor")
    assert wait_for(lambda: stored(participant), [second, first]) == [second, first]
    assert page.url.endswith(f"/page/{item.pk}/")  # "n" did not leave the page
    assert not answers.ratings(participant=participant)  # nor did "3" answer a row
    page.screenshot(path=str(artifacts_dir / "error_spans_marked.png"), full_page=True)

    # A list the server refuses (here forged: a span past the end of the text) is refused by name
    # where the item is, like any answer's refusal, and changes nothing.
    page.eval_on_selector(
        f'{widget} input[name="{field}"]',
        """input => {
            const forged = { start: 0, end: 999, category: "omitted_finding", severity: "minor" };
            input.value = JSON.stringify([forged]);
            input.dispatchEvent(new Event("change", { bubbles: true }));
        }""",
    )
    expect(page.locator(f"{widget} .row-status")).to_contain_text(
        f"ends at 999, after the text's {len(TEXT)}"
    )
    assert stored(participant) == [second, first]

    # 3. After a reload both marks are shown, in the text and in the list.
    page.reload()
    arrive(page, widget)
    marks = page.locator(f"{widget} mark.span-mark")
    expect(marks).to_have_count(2)
    assert marks.all_inner_texts() == [KEYBOARD, MOUSE]
    items = page.locator(f"{widget} [data-span-list] li")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_contain_text(f"“{KEYBOARD}” Unexplained jargon · Minor")
    expect(items.nth(1)).to_contain_text(f"“{MOUSE}” Wrong finding or location · Could mislead")
    answer_field = page.locator(f'{widget} input[name="{field}"]')
    assert sorted(json.loads(answer_field.input_value()), key=lambda m: m["start"]) == [second, first]
    assert page.evaluate(FIND, [widget, MOUSE])["shown"] == TEXT
    page.locator(widget).screenshot(path=str(artifacts_dir / "error_spans_item.png"))

    # Text alternatives: every mark is announced with its category and severity, the text is a
    # named read-only textbox whose keys are described, and the controls are named.
    labels = page.eval_on_selector_all(
        f"{widget} mark.span-mark",
        """marks => marks.map(m => {
            let node = m.previousSibling;
            while (node && !(node.classList && node.classList.contains('span-start'))) {
                node = node.previousSibling;
            }
            return node ? node.querySelector('.sr-only').textContent : null;
        })""",
    )
    assert labels == [
        "Mark 1, Unexplained jargon, Minor:",
        "Mark 2, Wrong finding or location, Could mislead:",
    ]
    textbox = page.get_by_role("textbox", name=f"Text of simplification {field[0]} to mark")
    expect(textbox).to_have_attribute("aria-readonly", "true")
    keys = page.locator(f"#{textbox.get_attribute('aria-describedby')}")
    expect(keys).to_contain_text("Shift")
    expect(page.locator(widget).get_by_role("group", name="Category")).to_be_visible()
    expect(page.locator(widget).get_by_role("group", name="Severity")).to_be_visible()
    expect(page.locator(widget).get_by_role("radio", name="Could harm")).to_be_visible()
    expect(page.get_by_role("button", name=f"Remove mark 2: “{MOUSE}”")).to_be_visible()
    expect(page.locator(f"{widget} [role=status]")).to_have_count(1)
    # The marks' numbers are drawn for the eye only; the words above say it to a screen reader.
    assert page.locator(f"{widget} .span-start sup[aria-hidden=true]").count() == 2
    assert axe_blocking(page) == []

    # 4. At 390 px: no sideways scrolling, the widget inside the screen; a mark removed there.
    page.set_viewport_size(PHONE)
    page.reload()
    arrive(page, widget)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    right = page.eval_on_selector_all(
        f"{widget}, {widget} *", "els => Math.max(...els.map(e => e.getBoundingClientRect().right))"
    )
    assert right <= PHONE["width"]
    assert axe_blocking(page) == []
    page.locator(widget).scroll_into_view_if_needed()
    page.locator(widget).screenshot(path=str(artifacts_dir / "error_spans_item_phone.png"))
    page.get_by_role("button", name=f"Remove mark 2: “{MOUSE}”").click()
    expect(status).to_contain_text(f"Mark removed: “{MOUSE}”.")
    assert wait_for(lambda: stored(participant), [second]) == [second]
    answer = answers.item_answers().get(participant=participant, item_key="error_spans")
    # Each change kept the list before it: [first] when the second mark came, both at the removal.
    revisions = AnswerRevision.objects.filter(answer_type="annotation.ItemAnswer", answer_id=answer.pk)
    assert [len(r.previous["value"]) for r in revisions] == [2, 1]  # newest first
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # 5. The whole form, sent the plain way, carries the marks and none of the widget's controls.
    label = field[0]
    page.locator(f'[data-field="{label}-correctness"] label:has(input[data-key="4"])').click()
    page.click("#next-page")
    expect(page).to_have_url(re.compile(r"\?missing=1$"))
    expect(page.get_by_text("Nothing on this page was saved")).to_have_count(0)
    assert stored(participant) == [second]
    assert answers.rating(participant=participant).correctness == 4


@pytest.mark.django_db(transaction=True)
def test_without_javascript_the_page_says_marks_need_it_and_keeps_them(browser, live_server):
    from playwright.sync_api import expect

    study = span_study("spans-nojs-browser")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False, viewport=PHONE)
    page = context.new_page()
    try:
        page.goto(f"/s/{participant.token}/")
        page.click("#begin")
        item = ExpertItem.objects.filter(participant=participant).order_by("position").first()
        field = f"{label_of(item, TEXT)}-error_spans"
        mark = expected("left lung", "wrong_finding_or_location", "could_harm")
        ItemAnswer.objects.create(
            participant=participant,
            instrument=study.instruments.get(flow="expert", is_current=True),
            item_key="error_spans",
            source=item.source,
            shown_text_id=item.text_order["ABCDEFGH".index(field[0])],
            value=[mark],
            score=1.0,
        )
        page.reload()
        widget = page.locator(f'[data-span-item][data-field="{field}"]')
        expect(widget.get_by_text("Marking errors needs JavaScript")).to_be_visible()
        expect(widget.locator("[data-span-list] li")).to_have_text(
            "“left lung” Wrong finding or location · Could harm"
        )
        expect(widget.locator("[data-span-text]")).to_be_hidden()  # the widget is for JavaScript
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.locator(f'[data-field="{field[0]}-correctness"] label:has(input[data-key="2"])').click()
        page.click("#next-page")
        expect(page).to_have_url(re.compile(r"\?missing=1$"))
        assert answers.rating(participant=participant).correctness == 2
        assert answers.item_answers().get(item_key="error_spans").value == [mark]
        assert not AnswerRevision.objects.exists()  # sent back as it was: no change
    finally:
        context.close()
