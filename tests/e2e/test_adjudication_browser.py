"""Adjudication end to end: two radiologists disagree (their answers written through the services
the radiologist page calls), an adjudicator resolves the queue in headless Chromium on a phone's
screen (390 px), with the keyboard where the page offers it, and the dashboard and the exports then
show the raw and the adjudicated figures with the provenance of every final label."""

from __future__ import annotations

import csv
import io

import pytest

from annotation.models import ActivityEvent, ItemAnswer
from evaluation.models import AdjudicatedLabel
from tests.e2e.dashboard import download, researcher_page
from tests.evaluation.adjudication_studies import disagreeing_study

PHONE = {"width": 390, "height": 844}


def _violations(page) -> list[str]:
    """axe-core's serious and critical violations (tests/e2e/test_accessibility.py), where the
    bundled axe is installed."""
    try:
        from tests.e2e.test_accessibility import blocking_violations
    except pytest.skip.Exception:
        return []
    return blocking_violations(page)


def test_an_adjudicator_resolves_the_queue_and_the_dashboard_shows_both_views(
    browser, live_server, transactional_db
):
    setup = disagreeing_study(slug="adj-browser")
    study, adjudicator = setup["study"], setup["adjudicator"]
    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", adjudicator.username)
    page.fill("input[name=password]", "pw")
    with page.expect_navigation():
        page.click("form button[type=submit]")
    # The study list leads the adjudicator to the queue; the dashboard itself is not theirs.
    page.click("#adjudication-studies a")
    assert page.locator("#adjudication-queue tbody tr").count() == 2
    assert not _violations(page)
    page.click("#adjudication-start")

    # Most disagreement first: the error spans (no span in common), raters blind.
    page.wait_for_selector("#unit-title")
    assert "clinical_error_spans" not in page.inner_text("#unit-title")  # the protocol's version
    assert page.locator(".marked li").count() == 2
    assert not _violations(page)
    raters = page.locator(".rater h3").all_inner_texts()
    assert raters == ["Rater 1", "Rater 2"]
    assert "R1" not in page.inner_text(".raters").replace("R1 thinks", "")
    # No reason given: refused on its field, the page stays.
    page.locator(".consensus-form input[name=value]").first.check()
    page.click("#adjudication-record")
    page.wait_for_selector("#error-reason")
    assert "is not one of" in page.inner_text("#error-reason")
    assert not AdjudicatedLabel.objects.exists()
    page.locator(".consensus-form input[name=value]").first.check()
    page.check("input[name=reason][value=genuine_ambiguity]")
    with page.expect_navigation():
        page.click("#adjudication-record")

    # Then correctness, 2 against 5, with the raters' comments beside their answers.
    page.wait_for_selector("#unit-title")
    assert "Rater 1" in page.inner_text(".raters") and "thinks 2" in page.inner_text(".raters")
    page.locator(".consensus-form input[name=value]").first.focus()
    page.keyboard.press("4")
    assert page.locator(".consensus-form input[name=value][value='4']").is_checked()
    page.check("input[name=reason][value=misread]")
    page.check("input[name=guideline_gap]")
    # The page fits the phone: nothing wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    with page.expect_navigation():
        page.click("#adjudication-record")
    page.wait_for_selector("#adjudication-empty")
    assert not errors, errors
    context.close()

    labels = {label.item_key: label for label in AdjudicatedLabel.objects.filter(study=study)}
    assert labels["correctness"].value == 4 and labels["correctness"].guideline_gap
    assert labels["correctness"].time_spent_ms > 0
    assert len(labels["error_spans"].value) == 1
    # Stored beside the raw answers, never over them.
    assert sorted(
        ItemAnswer.objects.filter(shown_text=setup["text"], item_key="correctness").values_list(
            "value", flat=True
        )
    ) == [
        2,
        5,
    ]
    assert ActivityEvent.objects.filter(study=study, verb="adjudication.recorded").count() == 2

    # The team's dashboard: the adjudication page sets raw and adjudicated side by side.
    context, page = researcher_page(browser, live_server, study)
    page.click("nav >> text=Adjudication")
    page.wait_for_selector("#adjudication-items")
    assert page.inner_text("#agreement-before") == "0.92"  # 23 of 25 targets agreed
    assert page.inner_text("#agreement-after") == "1.00"
    row = page.locator("#adjudication-items tr", has_text="correctness").inner_text()
    # Raw: the four texts' raters' means (3.5, 4, 4, 4); adjudicated: the final labels (4, 4, 4, 4).
    assert "3.88" in row and "4.00" in row
    body = download(page, page.locator("#final-labels-csv")).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body)))
    provenance = {(row["item"], row["text_id"]): row["provenance"] for row in rows}
    text = str(setup["text"].pk)
    assert provenance[("correctness", text)] == "adjudicated"
    assert provenance[("error_spans", text)] == "adjudicated"
    assert provenance[("completeness", text)] == "agreement"
    context.close()
