"""A radiologist rates a three-sentence study in headless Chromium: partly by keyboard, partly by
clicking, reloading in the middle, going back to revise; the database must then hold exactly the
answers given."""

from __future__ import annotations

import re

import pytest

from annotation import participant_services, scales
from annotation.models import ExpertItem, Participant
from tests.annotation import answers
from tests.annotation.factories import build_study
from tests.e2e.polling import wait_for

SEVERITY_BY_KEY = {
    str(level_index + 1): level.name for level_index, level in enumerate(scales.SEVERITY.levels)
}


def rows_on(page) -> list[str]:
    return page.eval_on_selector_all(".rate-row", "rows => rows.map(r => r.dataset.field)")


def answer_value(field: str, key: str) -> object:
    return SEVERITY_BY_KEY[key] if field == "original-severity" else int(key)


def wait_saved(page, field: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(f'[data-field="{field}"] .row-status .saved')).to_be_visible()


def by_keyboard(page, fields: list[str], keys: list[str], given: dict) -> None:
    """Press one digit per row: the page focuses the first unanswered row and moves on by itself."""
    for field, key in zip(fields, keys, strict=True):
        assert page.evaluate("document.activeElement.dataset.field") == field
        page.keyboard.press(key)
        wait_saved(page, field)
        given[field] = answer_value(field, key)


def by_click(page, fields: list[str], keys: list[str], given: dict) -> None:
    for field, key in zip(fields, keys, strict=True):
        page.locator(f'[data-field="{field}"] label:has(input[data-key="{key}"])').click()
        wait_saved(page, field)
        given[field] = answer_value(field, key)


def arrive(page, url) -> None:
    """Wait for a rating page to load and its keyboard script to be ready."""
    from playwright.sync_api import expect

    expect(page).to_have_url(url)
    page.wait_for_selector("#expert-form[data-ready]", state="attached")


def keys_for(fields: list[str], offset: int) -> list[str]:
    return [str((i + offset) % 5 + 1) for i in range(len(fields))]


@pytest.mark.django_db(transaction=True)
def test_a_radiologist_rates_a_study_reloads_goes_back_and_everything_is_stored(
    page, live_server, artifacts_dir
):
    from playwright.sync_api import expect

    study = build_study(slug="browser", n_sources=3, shared=((1, "plain_bs", "cot_bs"),))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    given: dict[int, dict] = {}  # item id -> field -> value, what the rater did

    page.goto(f"/s/{participant.token}/")
    expect(page.locator("h2", has_text="Instructions")).to_be_visible()
    expect(page.get_by_text("Hallucination", exact=True)).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "expert_instructions.png"), full_page=True)
    page.click("#begin")
    items = list(ExpertItem.objects.filter(participant=participant).order_by("position"))
    assert len(items) == 3
    urls = [re.compile(rf"/r/{participant.token}/page/{item.pk}/$") for item in items]

    # Page 1: everything by keyboard, then "n" for the next page.
    arrive(page, urls[0])
    expect(page.locator("#progress")).to_contain_text("0 of 3 sentences done")
    fields = rows_on(page)
    assert fields[:2] == ["original-severity", "original-simplicity"]
    assert len(fields) == 2 + 5 * len(items[0].text_order)
    given[items[0].pk] = {}
    by_keyboard(page, fields, keys_for(fields, 0), given[items[0].pk])
    expect(page.locator("#page-state")).to_contain_text("Page complete")
    expect(page.locator("#progress")).to_contain_text("1 of 3 sentences done")
    page.keyboard.press("n")

    # Page 2: half by clicking, reload, the rest by keyboard.
    arrive(page, urls[1])
    fields = rows_on(page)
    assert len(fields) == 2 + 5 * len(items[1].text_order)
    half = len(fields) // 2
    given[items[1].pk] = {}
    by_click(page, fields[:half], keys_for(fields[:half], 2), given[items[1].pk])
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts_dir / "expert_rating_page_full.png"), full_page=True)
    for name, size in (
        ("tablet_portrait", {"width": 768, "height": 1024}),
        ("desktop", {"width": 1280, "height": 900}),
    ):
        page.set_viewport_size(size)
        page.screenshot(path=str(artifacts_dir / f"expert_rating_page_{name}.png"))
    page.set_viewport_size({"width": 1024, "height": 768})

    page.reload()
    arrive(page, urls[1])
    for field, value in given[items[1].pk].items():
        key = (
            next(k for k, v in SEVERITY_BY_KEY.items() if v == value)
            if field == "original-severity"
            else value
        )
        assert page.locator(f'[data-field="{field}"] input[data-key="{key}"]').is_checked(), field
    assert page.evaluate("document.activeElement.dataset.field") == fields[half]
    page.focus("#next-page")
    page.keyboard.press("n")  # not complete yet: stays, and sends focus to the first missing answer
    assert page.evaluate("document.activeElement.dataset.field") == fields[half]
    arrive(page, urls[1])
    by_keyboard(page, fields[half:], keys_for(fields[half:], 4), given[items[1].pk])
    page.fill('textarea[name="A-comment"]', "Misses the size of the lesion.")
    expect(page.locator('textarea[name="A-comment"] + .row-status .saved')).to_be_visible()
    given[items[1].pk]["A-comment"] = "Misses the size of the lesion."
    page.click("#next-page")

    # Page 3: by clicking; the keys help opens and closes; then "p" goes back to page 2.
    arrive(page, urls[2])
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_hidden()
    fields = rows_on(page)
    given[items[2].pk] = {}
    # The connection drops for the first answer: it stays on screen, is marked, and is saved on return.
    page.context.set_offline(True)
    page.locator(f'[data-field="{fields[0]}"] label:has(input[data-key="2"])').click()
    expect(page.locator(f'[data-field="{fields[0]}"] .row-status .offline')).to_be_visible()
    assert not answers.judgements(participant=participant, source=items[2].source)
    page.context.set_offline(False)
    wait_saved(page, fields[0])
    given[items[2].pk][fields[0]] = answer_value(fields[0], "2")
    by_click(page, fields[1:], keys_for(fields[1:], 1), given[items[2].pk])
    page.keyboard.press("p")

    # Back on page 2: revise one answer, then jump to page 3 through the page index and finish.
    arrive(page, urls[1])
    old = given[items[1].pk]["B-correctness"]
    new = 1 if old != 1 else 2
    by_click(page, ["B-correctness"], [str(new)], given[items[1].pk])
    page.click("#page-index summary")
    page.click(f"#index-{items[2].pk}")
    arrive(page, urls[2])
    page.click("#next-page")
    expect(page.get_by_text("all 3 sentences are rated")).to_be_visible()
    expect(page.locator("#progress")).to_contain_text("3 of 3 sentences done")
    page.screenshot(path=str(artifacts_dir / "expert_done.png"), full_page=True)

    # The database holds exactly what was given, once.
    participant.refresh_from_db()
    assert participant.completed_at is not None
    total_ratings = 0
    for item in items:
        item.refresh_from_db()
        assert item.completed_at is not None and item.time_spent_ms > 0
        expected = given[item.pk]
        judgement = answers.judgement(participant=participant, source=item.source)
        assert judgement.severity == expected["original-severity"]
        assert judgement.simplicity == expected["original-simplicity"]
        for label_index, text_id in enumerate(item.text_order):
            label = "ABCDE"[label_index]
            rating = answers.rating(participant=participant, shown_text=text_id)
            stored = {f"{label}-{aspect}": getattr(rating, aspect) for aspect in scales.EXPERT_ASPECTS}
            assert stored == {
                k: v for k, v in expected.items() if k.startswith(f"{label}-") and k != f"{label}-comment"
            }
            assert rating.comment == expected.get(f"{label}-comment", "")
            total_ratings += 1
    # One sentence's texts are shared by two systems: 4 + 3 + 4 distinct texts to rate.
    assert len(answers.ratings(participant=participant)) == total_ratings == 4 + 3 + 4
    assert len(answers.judgements(participant=participant)) == 3
    assert given[items[1].pk]["B-correctness"] == new != old


# --- typing fast, then closing the tab -------------------------------------------------------------------

FAST_KEYS = "31425" * 4  # one digit per row; a sentence with three texts has 2 + 3 × 5 = 17 rows


def type_fast_and_close(page, url: str) -> dict[str, str]:
    """Answer every row of the page by keyboard, 50 ms apart, then close the tab at once. Returns
    field -> key pressed."""
    page.goto(url)
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    fields = rows_on(page)
    assert len(fields) == 17
    pressed = {}
    for field, key in zip(fields, FAST_KEYS, strict=False):
        page.keyboard.press(key)
        pressed[field] = key
        page.wait_for_timeout(50)
    page.close()
    return pressed


def stored_answers(ratings: list[tuple], judgement: tuple | None, text_order: list[int]) -> dict[str, object]:
    """field -> stored value, from the rating rows (shown_text_id, then the aspects) and the
    judgement (severity, simplicity)."""
    out: dict[str, object] = {}
    for row in ratings:
        label = "ABC"[text_order.index(row[0])]
        for aspect, value in zip(scales.EXPERT_ASPECTS, row[1:], strict=True):
            if value is not None:
                out[f"{label}-{aspect}"] = value
    if judgement:
        if judgement[0]:
            out["original-severity"] = judgement[0]
        if judgement[1] is not None:
            out["original-simplicity"] = judgement[1]
    return out


def stored_answers_of(participant: Participant, text_order: list[int]) -> dict[str, object]:
    """stored_answers of what `participant` has stored, read through the answer selectors."""
    ratings = [
        (r.shown_text_id, *(getattr(r, a) for a in scales.EXPERT_ASPECTS))
        for r in answers.ratings(participant=participant)
    ]
    judgement = next(((j.severity, j.simplicity) for j in answers.judgements(participant=participant)), None)
    return stored_answers(ratings, judgement, text_order)


@pytest.mark.django_db(transaction=True)
def test_seventeen_answers_typed_fast_survive_closing_the_tab_on_postgresql(browser, live_server):
    study = build_study(slug="fast", n_sources=1, systems=("a", "b", "c"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    participant_services.participant_touch(participant=participant)
    from surveys.radiologist import assignment

    item = assignment.expert_items_ensure(participant=participant)[0]
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    pressed = type_fast_and_close(page, f"/r/{participant.token}/page/{item.pk}/")
    expected = {field: answer_value(field, key) for field, key in pressed.items()}

    def read() -> dict:
        return stored_answers_of(participant, item.text_order)

    assert wait_for(read, expected) == expected
    context.close()


def test_seventeen_answers_typed_fast_survive_closing_the_tab_on_sqlite(browser, tmp_path):
    """The embedded default as `make demo` runs it: runserver on a SQLite file."""
    import json
    import os
    import socket
    import sqlite3
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request
    from pathlib import Path

    from annotation.instrument_binding import JUDGEMENT, PROTOCOL_BINDINGS, RADIOLOGIST_PRESET, RATING

    root = Path(__file__).resolve().parents[2]
    database = tmp_path / "radlay.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL"))}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings.local", "DATABASE_URL": f"sqlite:///{database}"}
    manage = [sys.executable, str(root / "manage.py")]
    from tests.sqlite_template import migrated_sqlite

    migrated_sqlite(database)  # a copy of a file migrated once per set of migrations
    setup = (
        "from annotation import participant_services; from surveys.radiologist import assignment; "
        "from annotation.models import Participant; "
        "from tests.annotation.factories import build_study; import json; "
        "s = build_study(slug='fast', n_sources=1, systems=('a', 'b', 'c')); "
        "p = participant_services.participant_create(study=s, role=Participant.Role.RADIOLOGIST); "
        "participant_services.participant_touch(participant=p); "
        "i = assignment.expert_items_ensure(participant=p)[0]; "
        "print(json.dumps({'token': p.token, 'item': i.pk, 'order': i.text_order, 'participant': p.pk}))"
    )
    out = subprocess.run(
        [*manage, "shell", "-c", setup],
        cwd=root,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    made = json.loads(out.stdout.strip().splitlines()[-1])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120  # runserver's start on a busy machine
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(base + "/", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                time.sleep(0.3)
        context = browser.new_context(base_url=base)
        pressed = type_fast_and_close(context.new_page(), f"/r/{made['token']}/page/{made['item']}/")
        expected = {field: answer_value(field, key) for field, key in pressed.items()}

        def read() -> dict:
            # Every answer is an ItemAnswer row: the protocol's rating items on a shown text, its
            # judgement items on the source; each value read as its typed column holds it.
            with sqlite3.connect(database, timeout=30) as db:
                rows = db.execute(
                    "SELECT a.shown_text_id, a.item_key, a.value FROM annotation_itemanswer a"
                    " JOIN annotation_studyinstrument i ON i.id = a.instrument_id"
                    " WHERE a.participant_id = ? AND a.control_id IS NULL AND i.key = ?",
                    (made["participant"], RADIOLOGIST_PRESET),
                ).fetchall()
            by_text: dict[int, dict[str, object]] = {}
            source: dict[str, object] = {}
            for text_id, key, value in rows:
                binding = PROTOCOL_BINDINGS[RADIOLOGIST_PRESET].get(key)
                if binding is None:
                    continue
                column = binding.column_of(json.loads(value))
                if binding.shape == RATING:
                    by_text.setdefault(text_id, {})[binding.column] = column
                elif binding.shape == JUDGEMENT:
                    source[binding.column] = column
            ratings = [(t, *(cols.get(a) for a in scales.EXPERT_ASPECTS)) for t, cols in by_text.items()]
            judgement = (source.get("severity", ""), source.get("simplicity")) if source else None
            return stored_answers(ratings, judgement, made["order"])

        assert wait_for(read, expected) == expected
        context.close()
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert "database is locked" not in errors and "Traceback" not in errors, errors[-3000:]


@pytest.mark.django_db(transaction=True)
def test_rating_page_keyboard_and_layout_tell_the_rater_what_is_going_on(browser, live_server):
    """One Tab stop per row (the definition button is out of the Tab order but opens with "i"), "n"
    on an incomplete page says why it stays, and the sticky sentence bar, compact once scrolled,
    never covers the "Simplification A" heading the keyboard brings into view."""
    from playwright.sync_api import expect

    from surveys.radiologist import assignment

    study = build_study(slug="keys", n_sources=2, systems=("a", "b", "c"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    participant_services.participant_touch(participant=participant)
    item = assignment.expert_items_ensure(participant=participant)[0]
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 740})
    page = context.new_page()
    page.goto(f"/r/{participant.token}/page/{item.pk}/")
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    expect(page.locator("h1")).to_contain_text("Sentence 1 of 2")
    fields = rows_on(page)

    assert page.evaluate("document.activeElement.dataset.field") == fields[0]
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.field") == fields[1]
    page.keyboard.press("i")
    expect(page.locator(f'[data-field="{fields[1]}"] details')).to_have_attribute("open", "")

    # Two answers, then "n": the page stays and says how many rows are left.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("2")
    page.keyboard.press("3")
    page.keyboard.press("n")
    expect(page.locator("#page-notice")).to_contain_text("This sentence still has 15 unanswered rows")
    assert page.url.endswith(f"/page/{item.pk}/")

    # Down to simplification A's first row: its heading is in view, below the (compact) bar.
    first_a = fields.index("A-correctness")
    for _ in range(first_a - 2):
        page.keyboard.press("j")
    assert page.evaluate("document.activeElement.dataset.field") == "A-correctness"
    expect(page.locator(".original-bar")).to_have_class(re.compile(r"\bcompact\b"))
    bar = page.locator(".original-bar").bounding_box()
    heading = page.locator("#simp-A").bounding_box()
    assert heading["y"] >= bar["y"] + bar["height"] - 1, (bar, heading)
    assert bar["height"] <= 0.25 * 740
    context.close()


# --- answering fast, then submitting at once --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_answers_waiting_at_the_submit_go_with_it_after_the_request_in_flight(browser, live_server):
    """The first answer's autosave is held in flight; the other sixteen are given meanwhile and the
    page submitted at once. The submit waits for the request in flight (which could otherwise land
    after it with an older value), sends no autosave of the waiting answers, and carries them
    itself: one autosave and the submit, every answer stored."""
    study = build_study(slug="fast-submit", n_sources=2, systems=("a", "b", "c"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    participant_services.participant_touch(participant=participant)
    from surveys.radiologist import assignment

    first, second = assignment.expert_items_ensure(participant=participant)[:2]
    page = browser.new_context(base_url=live_server.url).new_page()
    posts: list[str] = []
    held: list = []

    def hold_first_autosave(route) -> None:
        request = route.request
        if request.method != "POST":
            route.continue_()
            return
        autosave = request.headers.get("hx-request") == "true"
        posts.append("autosave" if autosave else "submit")
        if autosave and not held:
            held.append(route)  # answered below, once the submit was pressed
        else:
            route.continue_()

    page.route("**/page/*/", hold_first_autosave)
    page.goto(f"/r/{participant.token}/page/{first.pk}/")
    page.wait_for_selector("#expert-form[data-ready]", state="attached")
    fields = rows_on(page)
    pressed = dict(zip(fields, FAST_KEYS, strict=False))
    for key in pressed.values():
        page.keyboard.press(key)
    page.click("#next-page")
    page.wait_for_timeout(400)
    assert posts == ["autosave"], posts  # the submit waits for the request in flight
    held[0].continue_()
    page.wait_for_url(f"**/page/{second.pk}/**")
    assert posts == ["autosave", "submit"], posts

    def read() -> dict:
        return stored_answers_of(participant, first.text_order)

    expected = {field: answer_value(field, key) for field, key in pressed.items()}
    assert wait_for(read, expected) == expected
    assert ExpertItem.objects.get(pk=first.pk).completed_at is not None
