"""Two laypeople take a four-sentence survey in headless Chromium at phone size (390×844): one
from an invite link, one from a Prolific-style recruitment link; they answer by tapping and by
number keys, one reloads in the middle of a panel, both pass an attention check; the database must
then hold exactly the answers given. Screenshots of every panel go to test-artifacts/."""

from __future__ import annotations

import re

import pytest
from django.urls import get_resolver

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    LayItem,
    Participant,
)
from instruments.schema import Item
from tests.annotation import answers as typed_answers
from tests.annotation.factories import WHY_BEST, build_study, instrument_with
from tests.e2e.polling import wait_for

PHONE = {"width": 390, "height": 844}
ORIGINAL_FIELDS = ("understanding", "confidence", "severity_guess")
ASSISTED_FIELDS = (*ORIGINAL_FIELDS, "helpfulness")
CHOICES = {
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


@pytest.fixture
def phone(browser, live_server, transactional_db):
    """A fresh phone-sized touch context per participant (no shared cookies)."""
    # Import every view module now (the dashboard's pull in the statistics libraries): the live
    # server would otherwise do it inside the first page load, which a busy machine can take
    # longer than a page's timeout to finish.
    get_resolver().url_patterns  # noqa: B018
    contexts = []
    errors: list[str] = []

    def open_page():
        context = browser.new_context(
            base_url=live_server.url, viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=1
        )
        contexts.append(context)
        opened = context.new_page()
        opened.set_default_timeout(10_000)
        opened.on("pageerror", lambda error: errors.append(str(error)))
        return opened

    yield open_page
    for context in contexts:
        context.close()
    assert not errors, f"uncaught JavaScript errors: {errors}"


def _choose(page, field: str, value: str) -> None:
    """Tap an option and wait for its autosave to come back."""
    with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url) as answer:
        page.locator(f'#q-{field} label:has(input[value="{value}"])').tap()
    assert answer.value.status == 200


def _no_horizontal_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def _answer_panel(page, fields, offset: int, given: dict, shots: dict | None = None, name: str = "") -> None:
    for n, field in enumerate(fields):
        value = CHOICES[field][(n + offset) % len(CHOICES[field])]
        _choose(page, field, value)
        given[field] = value


def _continue(page) -> None:
    """Press the page's submit button and wait for what follows: the next panel (or the same one
    with what is missing) put in place of this one by the submit's own response, or a page load
    (an attention check, the end)."""
    before = page.url
    page.evaluate("window.radlayStayed = true; document.querySelector('main').dataset.left = 'yes'")
    page.locator(".submitbar button[type=submit]").tap()
    page.wait_for_selector("main:not([data-left])", state="attached")
    page.wait_for_load_state()
    if "/sentence/" in before and "/sentence/" in page.url:
        # One request: the same document shows the next panel (no page load, no GET).
        assert page.evaluate("window.radlayStayed === true"), f"{page.url} was loaded as a page"


def _take_survey(
    page,
    participant_given: dict,
    offset: int,
    *,
    shots_dir=None,
    reload_at: int | None = None,
    try_back: bool = False,
    keyboard_first: bool = False,
) -> None:
    """From the first panel to the completion page. `participant_given`: item position → answers."""
    from playwright.sync_api import expect

    position = 0
    while True:
        url = page.url
        if "/check/" in url:
            expect(page.locator("legend")).to_contain_text("please choose Mild")
            page.locator('label:has(input[value="Mild"])').tap()
            _continue(page)
            continue
        if url.endswith("/done/"):
            return
        match = re.search(r"/sentence/(\d+)/(original|assisted|preference)/$", url)
        assert match, url
        item = LayItem.objects.get(pk=int(match.group(1)))
        panel = match.group(2)
        given = participant_given.setdefault(
            item.position, {"original": {}, "assisted": {}, "preference": {}}
        )
        _no_horizontal_scroll(page)
        expect(page.locator(".progress-label")).to_contain_text(f"Sentence {item.position + 1} of 4")
        if panel == "original":
            expect(page.locator("h1")).to_have_text(
                "Given a radiology sentence, please answer the following questions."
            )
            expect(page.locator(".simp")).to_have_count(0)  # the simplification is not shown yet
            if keyboard_first and item.position in (0, 1):
                # Number keys answer the focused question, and the focus moves on by itself (on a
                # page loaded as such, and on a panel put in place of the last one).
                page.locator("#q-understanding input").first.focus()
                for field, key in zip(ORIGINAL_FIELDS, ("3", "2", "4"), strict=True):
                    with page.expect_response(lambda r: r.request.method == "POST"):
                        page.keyboard.press(key)
                    given["original"][field] = CHOICES[field][int(key) - 1]
            else:
                _answer_panel(page, ORIGINAL_FIELDS, offset + item.position, given["original"])
            if shots_dir and item.position == 0:
                page.screenshot(path=str(shots_dir / "lay_panel1.png"), full_page=True)
            _continue(page)
        elif panel == "assisted":
            expect(page.locator(".simp")).to_have_text(item.shown_text.text)
            expect(page.locator("details.locked")).to_contain_text("locked")
            if try_back and item.position == 0:
                # The browser's Back button cannot reopen panel 1: the panel came in place of it,
                # so going back loads panel 1's address, which sends the participant on to here.
                page.go_back()
                page.wait_for_url(url)
                expect(page.locator(".simp")).to_be_visible()
                # An answer to panel 1 sent now (a stale tab) is refused: panel 1 is locked.
                refused = page.evaluate(
                    """async (target) => (await fetch(target, {method: "POST",
                        headers: {"HX-Request": "true", "X-CSRFToken":
                            document.querySelector("input[name=csrfmiddlewaretoken]").value},
                        body: new URLSearchParams({understanding: "Completely", autosave: "1"})})).status""",
                    url.replace("/assisted/", "/original/"),
                )
                assert refused == 409
            fields = ASSISTED_FIELDS
            if reload_at == item.position:
                _answer_panel(page, fields[:2], offset + 1, given["assisted"])
                page.reload()
                # Resumed on the same panel with the answers given so far.
                assert page.url == url
                for field in fields[:2]:
                    expect(
                        page.locator(f'#q-{field} input[value="{given["assisted"][field]}"]')
                    ).to_be_checked()
                _answer_panel(page, fields[2:], offset + 3, given["assisted"])
            else:
                _answer_panel(page, fields, offset + 1 + item.position, given["assisted"])
            if shots_dir and item.position == 0:
                page.locator("details.locked summary").tap()
                page.screenshot(path=str(shots_dir / "lay_panel2.png"), full_page=True)
            _continue(page)
        else:
            labels = page.locator(".simplifications .badge").all_inner_texts()
            assert labels == ["A", "B", "C", "D"]
            most, least = labels[(offset + item.position) % 4], labels[(offset + item.position + 2) % 4]
            order = item.preference_order
            most_id, least_id = order[labels.index(most)], order[labels.index(least)]
            expect(page.locator(f'#q-most label:has(input[value="{most_id}"])')).to_contain_text(most)
            page.locator(f'#q-most label:has(input[value="{most_id}"])').tap()
            page.locator(f'#q-least label:has(input[value="{least_id}"])').tap()
            page.locator("#most_justification").fill(f"Clearest wording ({item.position}).")
            page.locator("#least_justification").fill("Too many medical words.")
            given["preference"] = {
                "most": {most_id},
                "least": {least_id},
                "most_justification": f"Clearest wording ({item.position}).",
                "least_justification": "Too many medical words.",
            }
            if shots_dir and item.position == 0:
                page.screenshot(path=str(shots_dir / "lay_panel3.png"), full_page=True)
            _continue(page)
        position += 1
        assert position < 30, "the survey did not end"


@pytest.mark.django_db(transaction=True)
def test_two_laypeople_complete_the_survey_on_a_phone(phone, live_server, artifacts_dir):
    from playwright.sync_api import expect

    study = build_study(slug="lay-browser", n_sources=4)
    study.completion_redirect_url = "https://app.prolific.com/submissions/complete?cc=RADLAY1"
    study.save()
    AttentionCheck.objects.create(
        study=study,
        position=2,
        prompt="To show you are reading, please choose Mild.",
        options=["Critical", "Mild", "Healthy"],
        expected_answer="Mild",
    )
    invited = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    given: dict[str, dict] = {"invited": {}, "joined": {}}

    # Participant 1: invite link, number keys on the first panel, screenshots.
    page = phone()
    page.goto(f"/s/{invited.token}/")
    expect(page.get_by_role("button", name="I agree, continue")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "lay_consent.png"), full_page=True)
    _no_horizontal_scroll(page)
    with page.expect_navigation():
        page.get_by_role("button", name="I agree, continue").tap()
    expect(page.locator(".severity-table")).to_contain_text("poses a threat to a person's life")
    page.screenshot(path=str(artifacts_dir / "lay_instructions.png"), full_page=True)
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").tap()
    _take_survey(page, given["invited"], offset=0, shots_dir=artifacts_dir, keyboard_first=True)
    expect(page.locator("#completion-code")).to_have_text(
        Participant.objects.get(pk=invited.pk).completion_code
    )
    expect(page.locator("#completion-link")).to_have_attribute("href", study.completion_redirect_url)
    page.screenshot(path=str(artifacts_dir / "lay_done.png"), full_page=True)

    # Participant 2: recruitment link, reloads in the middle of panel 2 of their second sentence.
    page = phone()
    join = f"/join/{study.slug}/?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=st1&SESSION_ID=se1"
    page.goto(join)
    with page.expect_navigation():
        page.get_by_role("button", name="I agree, continue").tap()
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").tap()
    _take_survey(page, given["joined"], offset=1, reload_at=1, try_back=True)
    expect(page.locator("#completion-code")).to_be_visible()
    # Coming back with the same PID shows the same participant's completion page.
    page.goto(join.replace("se1", "se2"))
    assert page.url.endswith("/done/")

    # The database holds exactly what the two participants answered, and nothing else.
    joined = Participant.objects.get(external_id="5f1a2b3c4d5e6f7a8b9c0d1e")
    assert Participant.objects.filter(study=study).count() == 2
    assert {invited.pk, joined.pk} == set(
        Participant.objects.filter(completed_at__isnull=False).values_list("pk", flat=True)
    )
    assert sorted(Participant.objects.values_list("latin_square_row", flat=True)) == [0, 1]
    for participant, answers in ((invited, given["invited"]), (joined, given["joined"])):
        items = list(LayItem.objects.filter(participant=participant).order_by("position"))
        assert [i.stage for i in items] == ["done"] * 4 and len(answers) == 4
        for item in items:
            expected = answers[item.position]
            for phase in ("original", "assisted"):
                row = typed_answers.lay_answer(item, phase)
                stored = {f: getattr(row, f) for f in ASSISTED_FIELDS if getattr(row, f)}
                assert stored == expected[phase], (participant, item.position, phase)
                assert row.time_spent_ms > 0
            assert item.original_locked_at is not None
            preference = typed_answers.preference(item)
            assert set(preference.most) == expected["preference"]["most"]
            assert set(preference.least) == expected["preference"]["least"]
            assert preference.most_justification == expected["preference"]["most_justification"]
            assert preference.least_justification == expected["preference"]["least_justification"]
            assert preference.order_shown == item.preference_order
    assert len(typed_answers.lay_answers()) == 16 and len(typed_answers.preferences()) == 8
    assert AttentionCheckResponse.objects.filter(passed=True).count() == 2


def test_missing_answers_are_shown_where_they_are_and_go_away_once_answered(phone):
    """Submitting a panel with gaps opens on the first unanswered question (scrolled to and
    focused), not on "Answers saved" next to the button; answering a question removes its
    "Please answer this question." at once."""
    from playwright.sync_api import expect

    study = build_study(slug="lay-gaps", n_sources=1)
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    page = phone()
    page.goto(f"/l/{participant.token}/instructions/")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").tap()
    _choose(page, "understanding", "Completely")
    _continue(page)
    for field in ("confidence", "severity_guess"):
        expect(page.locator(f"#q-{field} p.error")).to_have_text("Please answer this question.")
    expect(page.locator("#q-understanding p.error")).to_have_count(0)
    expect(page.locator("#save-status")).not_to_contain_text("Answers saved")
    expect(page.locator("#save-status a")).to_have_attribute("href", "#q-confidence")
    # The first unanswered question is in view and holds the focus.
    assert page.evaluate("document.activeElement.closest('fieldset').id") == "q-confidence"
    expect(page.locator("#q-confidence")).to_be_in_viewport()
    _choose(page, "confidence", "Not at all")
    expect(page.locator("#q-confidence p.error")).to_have_count(0)
    expect(page.locator("#q-severity_guess p.error")).to_have_text("Please answer this question.")
    _choose(page, "severity_guess", "Mild")
    expect(page.locator(".question p.error")).to_have_count(0)
    _continue(page)
    assert page.url.endswith("/assisted/")
    (answer,) = typed_answers.lay_answers(participant=participant, phase="original")
    assert (answer.understanding, answer.confidence, answer.severity_guess) == (
        "Completely",
        "Not at all",
        "Mild",
    )


# --- answering fast, then closing the tab ----------------------------------------------------------


def _started_lay(slug: str, *added: Item):
    from surveys.lay import assignment

    study = build_study(slug=slug, n_sources=1)
    if added:
        study_instrument_save(
            study=study, instrument=instrument_with("protocol_003_layperson", *added), actor=None
        )
        study.refresh_from_db()
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    assignment.lay_survey_start(participant=participant)
    return participant, LayItem.objects.get(participant=participant)


@pytest.mark.django_db(transaction=True)
def test_panel_1_answers_keyed_fast_survive_closing_the_tab(browser, live_server):
    """Number keys answer the three panel-1 questions 50 ms apart and the tab closes at once: every
    answer is in the database, with the time the panel was open."""
    get_resolver().url_patterns  # noqa: B018  (see the phone fixture)
    participant, item = _started_lay("lay-fast")
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.goto(f"/l/{participant.token}/sentence/{item.pk}/original/")
    page.wait_for_selector("html.js", state="attached")
    page.locator("#q-understanding input").first.focus()
    for key in ("3", "2", "4"):
        page.keyboard.press(key)
        page.wait_for_timeout(50)
    page.close()
    expected = {
        field: CHOICES[field][int(key) - 1]
        for field, key in zip(ORIGINAL_FIELDS, ("3", "2", "4"), strict=True)
    }

    def read() -> dict:
        row = next(iter(typed_answers.lay_answers(item=item, phase="original")), None)
        return {f: getattr(row, f) for f in ORIGINAL_FIELDS if getattr(row, f)} if row else {}

    assert wait_for(read, expected) == expected
    assert typed_answers.lay_answer(item, "original").time_spent_ms > 0
    context.close()


@pytest.mark.django_db(transaction=True)
def test_preference_unticked_box_and_typing_in_its_pause_survive_closing_the_tab(browser, live_server):
    """On panel 3 a box ticked (and saved) then unticked is cleared on the server, and a
    justification closed within its typing pause is still sent; so is the answer to a question the
    study added to panel 3, autosaved like the panel's own."""
    from surveys.lay import panels

    get_resolver().url_patterns  # noqa: B018  (see the phone fixture)
    participant, item = _started_lay("lay-fast-pref", WHY_BEST)
    answers = dict(zip(ASSISTED_FIELDS, ("Most of it", "Not at all", "Mild", "It did not help"), strict=True))
    for panel, fields in (("original", ORIGINAL_FIELDS), ("assisted", ASSISTED_FIELDS)):
        item.refresh_from_db()
        panels.lay_panel_open(item=item, panel=panel)
        data = {f: answers[f] for f in fields}
        panels.lay_panel_save(participant=participant, item_id=item.pk, panel=panel, data=data, submit=True)
    item.refresh_from_db()
    assert item.stage == "preference"
    first, last = item.preference_order[0], item.preference_order[-1]

    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.goto(f"/l/{participant.token}/sentence/{item.pk}/preference/")
    page.wait_for_selector("html.js", state="attached")
    with page.expect_response(lambda r: r.request.method == "POST") as saved:
        page.locator(f'#q-least input[value="{last}"]').check()
    assert saved.value.status == 200
    assert set(typed_answers.preference(item).least) == {last}
    page.locator(f'#q-most input[value="{first}"]').check()
    page.locator(f'#q-least input[value="{last}"]').uncheck()
    page.locator("#f-why_best").type("Plain words", delay=20)
    assert wait_for(
        lambda: list(
            typed_answers.item_answers().filter(participant=participant).values_list("item_key", "value")
        ),
        [("why_best", "Plain words")],
    ) == [("why_best", "Plain words")]
    page.locator("#most_justification").type("Short words.", delay=20)
    page.close()

    def read() -> tuple:
        preference = typed_answers.preference(item)
        return (
            set(preference.most),
            set(preference.least),
            preference.most_justification,
        )

    expected = ({first}, set(), "Short words.")
    assert wait_for(read, expected) == expected
    context.close()
