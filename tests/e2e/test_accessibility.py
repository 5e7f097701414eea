"""axe-core (the copy bundled by axe-playwright-python, injected from disk: no network) on every
participant page of both survey flows, at desktop (1280) and phone (390) width, with and without
JavaScript, and on the research dashboard: no violation of impact "serious" or "critical" (colour
contrast of 4.5:1 included). Each flow is walked through its own forms, page by page."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model

from annotation import participant_services
from annotation.models import AttentionCheck, Participant, Study
from tests.annotation.factories import build_study

axe_playwright = pytest.importorskip("axe_playwright_python.sync_playwright")

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
BLOCKING = {"serious", "critical"}
MAX_STEPS = 16
# The primary way forward on each kind of page, tried in order; the first visible one is used.
FORWARD = (
    'button[name="choice"][value="accept"]',
    'button[name="continue"]',
    "#next-page",
    "#begin",
    'form button[type="submit"]',
)
AXE = axe_playwright.Axe()


def warm_up(live_server) -> None:
    """The server's first request imports the analysis stack, which can take longer than a page
    load may on a busy machine; take that wait here, outside the browser's timeouts."""
    urllib.request.urlopen(live_server.url + "/", timeout=120).close()


SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.DOTALL | re.IGNORECASE)


def blocking_violations(page, checker=None) -> list[str]:
    """axe's serious and critical violations on `page`. axe is JavaScript: for a page rendered with
    JavaScript off, its HTML (scripts removed, so it stays as rendered) is checked in `checker`, a
    same-origin page with JavaScript on."""
    target = page
    if checker is not None:
        html = SCRIPT.sub("", page.content())
        checker.set_content(html, wait_until="load")
        target = checker
    results = AXE.run(target)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") in BLOCKING:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}")
    return found


def no_js_checker(browser, live_server, viewport: dict):
    """A JavaScript-enabled page on the live server's origin (so /static/ URLs resolve)."""
    context = open_context(browser, live_server, viewport, True)
    checker = context.new_page()
    checker.goto("/axe-checker/")  # any HTML page of the server: here its 404 page
    return context, checker


def fill_and_go_on(page) -> None:
    """Answer every question on the page (group n with its option n, so that "most" and "least"
    differ) or with a short text, then press the page's way forward and wait for the next page."""
    names: list[str] = []
    for choice in page.locator("form input[type=radio], form input[type=checkbox]").all():
        name = choice.get_attribute("name")
        if name not in names:
            names.append(name)
    for index, name in enumerate(names):
        options = page.locator(f'form input[name="{name}"]')
        options.nth(index % options.count()).check(force=True)
    for field in page.locator("form textarea:visible, form input[type=text]:visible").all():
        if not field.input_value():
            field.fill("Clear enough.")
    for selector in FORWARD:
        button = page.locator(selector)
        if button.count() and button.first.is_visible():
            with page.expect_navigation():
                button.first.click()
            return
    raise AssertionError(f"no way forward on {page.url}")


def walk(page, start: str, end: re.Pattern) -> Iterator[str]:
    """Open `start` and go forward page by page until the URL matches `end`; yields each URL."""
    page.goto(start)
    for _ in range(MAX_STEPS):
        yield page.url
        if end.search(page.url):
            return
        fill_and_go_on(page)
    raise AssertionError(f"the flow did not reach {end.pattern} in {MAX_STEPS} pages; last {page.url}")


@pytest.fixture
def survey_study(transactional_db) -> Study:
    study = build_study(slug="a11y", n_sources=1, systems=("plain_bs", "plain_sc", "cot_sc"))
    study.background_questions = [
        {"key": "age", "question": "How old are you?", "options": ["18-39", "40-64", "65 or older"]},
        {"key": "language", "question": "Your first language?"},
    ]
    study.save()
    AttentionCheck.objects.create(
        study=study, position=1, prompt="Please choose Blue.", options=["Red", "Blue"], expected_answer="Blue"
    )
    return study


COMBINATIONS = [
    pytest.param(DESKTOP, True, id="desktop-js"),
    pytest.param(DESKTOP, False, id="desktop-nojs"),
    pytest.param(PHONE, True, id="phone-js"),
    pytest.param(PHONE, False, id="phone-nojs"),
]


def open_context(browser, live_server, viewport: dict, javascript: bool):
    warm_up(live_server)
    return browser.new_context(
        base_url=live_server.url,
        viewport=viewport,
        java_script_enabled=javascript,
        is_mobile=viewport is PHONE,
        has_touch=viewport is PHONE,
    )


@pytest.mark.parametrize(("viewport", "javascript"), COMBINATIONS)
@pytest.mark.parametrize("role", [Participant.Role.LAYPERSON, Participant.Role.RADIOLOGIST])
def test_every_participant_page_has_no_serious_violation(
    browser, live_server, survey_study, role, viewport, javascript
):
    participant = participant_services.participant_create(study=survey_study, role=role)
    context = open_context(browser, live_server, viewport, javascript)
    checker_context, checker = (None, None) if javascript else no_js_checker(browser, live_server, viewport)
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems: dict[str, list[str]] = {}
    visited = []
    try:
        for url in walk(page, f"/s/{participant.token}/", re.compile(r"/done/$")):
            visited.append(url)
            found = blocking_violations(page, checker)
            if found:
                problems[url.removeprefix(live_server.url)] = found
        for url in ("/s/not-a-valid-link/", "/no/such/page/"):
            page.goto(url)
            found = blocking_violations(page, checker)
            if found:
                problems[url] = found
    finally:
        context.close()
        if checker_context is not None:
            checker_context.close()
    assert len(visited) >= 3  # at least instructions, one page of questions, the end
    assert not problems, problems


def test_error_and_closed_pages_have_no_serious_violation(browser, live_server, transactional_db):
    closed = build_study(slug="a11y-closed", n_sources=1, status=Study.Status.CLOSED)
    participant = participant_services.participant_create(study=closed, role=Participant.Role.LAYPERSON)
    problems = {}
    for viewport in (DESKTOP, PHONE):
        context = open_context(browser, live_server, viewport, True)
        page = context.new_page()
        for url in (f"/s/{participant.token}/", f"/l/{participant.token}/", "/r/cut-link/"):
            page.goto(url)
            found = blocking_violations(page)
            if found:
                problems[f"{url} at {viewport['width']}"] = found
        context.close()
    assert not problems, problems


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_dashboard_has_no_serious_violation(browser, live_server, survey_study, viewport):
    get_user_model().objects.create_user("a11y-researcher", password="a11y-pw-1")
    survey_study.researchers.add(get_user_model().objects.get(username="a11y-researcher"))
    context = open_context(browser, live_server, viewport, True)
    page = context.new_page()
    page.set_default_timeout(60_000)  # the study page computes the analysis
    problems = {}
    try:
        page.goto("/dashboard/login/")
        problems["login"] = blocking_violations(page)
        page.fill("input[name=username]", "a11y-researcher")
        page.fill("input[name=password]", "a11y-pw-1")
        with page.expect_navigation():
            page.click("form button[type=submit], form input[type=submit]")
        problems["study list"] = blocking_violations(page)
        page.goto(f"/dashboard/{survey_study.slug}/")
        problems["study page"] = blocking_violations(page)
    finally:
        context.close()
    assert not any(problems.values()), problems


def test_axe_reports_what_these_tests_must_catch(browser, live_server, transactional_db):
    """The check itself: low contrast and an unlabelled control are reported as serious/critical."""
    context = open_context(browser, live_server, DESKTOP, True)
    page = context.new_page()
    page.goto("/")
    page.evaluate(
        """() => {
            const p = document.createElement('p');
            p.textContent = 'hard to read'; p.style.color = '#aaaaaa'; p.style.background = '#ffffff';
            document.querySelector('main').append(p);
            const input = document.createElement('input'); input.type = 'text';
            document.querySelector('main').append(input);
        }"""
    )
    found = " ".join(blocking_violations(page))
    context.close()
    assert "color-contrast" in found and "label" in found
