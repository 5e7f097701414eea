"""A study archive moved entirely in the browser: a researcher downloads the archive of a protocol
study with error spans and planted controls from its dashboard, uploads it on the console's import
page, reads the manifest's counts and the tables left out, confirms under a new slug, and finds the
copy's instruments on its Instruments page; a second upload under a taken slug is refused on the
field. Headless Chromium, the live server, PostgreSQL."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import ItemAnswer, Study
from evaluation.exports.study_archive_tables import ARCHIVED, EXCLUDED
from tests.annotation import answers as typed_answers
from tests.evaluation.archive_studies import protocol_study
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS


def _log_in(page, username: str, password: str) -> None:
    page.goto("/dashboard/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


@pytest.mark.django_db(transaction=True)
def test_a_researcher_archives_and_imports_a_study_in_the_browser(page, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    page.set_default_timeout(60_000)  # the dashboard computes the analysis on its first visit
    original = protocol_study("spans-orig")
    user = get_user_model().objects.create_user("ada", password="pw-ada-123", is_staff=True)
    original.researchers.add(user)
    _log_in(page, "ada", "pw-ada-123")

    page.goto(f"/dashboard/{original.slug}/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Study archive · ZIP").click()
    archive = tmp_path / "archive.zip"
    download.value.save_as(archive)

    page.goto("/dashboard/")
    with page.expect_navigation():
        page.get_by_role("link", name="Import a study archive").click()
    page.set_input_files("input[type=file]", str(archive))
    with page.expect_navigation():
        page.get_by_role("button", name="Read the archive").click()
    counts = page.locator("#archive-counts")
    # Every answer is an ItemAnswer row (the planted controls' ones with `control` set): the
    # manifest counts them all in the one table.
    answers = ItemAnswer.objects.filter(participant__study=original).count()
    control_rows = ItemAnswer.objects.filter(participant__study=original, control__isnull=False).count()
    controls = len(typed_answers.control_answers(study=original))
    assert answers > 0 and controls > 0 and control_rows > 0
    assert counts.locator("tr", has_text="annotation.itemanswer").locator("td.num").inner_text() == str(
        answers
    )
    assert not counts.locator("tr", has_text="annotation.plantedcontrolanswer").count()
    # The dashboard's archive is the de-identified one: the tables kept for originals only (the
    # findings, which hold the identifiers) are listed among the excluded ones instead.
    originals_only = [table for table in ARCHIVED if table.originals_only]
    assert counts.locator("tbody tr").count() == len(ARCHIVED) - len(originals_only)
    assert page.locator("#archive-excluded li").count() == len(EXCLUDED) + len(originals_only)
    assert page.locator("#id_slug").input_value() == "spans-orig-copy"

    # A taken slug is refused on the field; nothing is imported.
    page.fill("#id_slug", "spans-orig")
    with page.expect_navigation():
        page.get_by_role("button", name="Import the study").click()
    assert "exists here: choose another" in page.locator("#archive-confirm").inner_text()
    assert Study.objects.count() == 1

    page.fill("#id_slug", "spans-moved")
    with page.expect_navigation():
        page.get_by_role("button", name="Import the study").click()
    assert page.url.endswith("/console/spans-moved/")
    assert "imported from the archive of spans-orig" in page.content()
    moved = Study.objects.get(slug="spans-moved")
    assert ItemAnswer.objects.filter(participant__study=moved).count() == answers
    assert ItemAnswer.objects.filter(participant__study=moved, control__isnull=False).count() == control_rows
    assert len(typed_answers.control_answers(study=moved)) == controls

    page.goto("/console/spans-moved/instruments/")
    html = page.content()
    assert "asks no instrument" not in html
    for key in moved.instruments.values_list("key", flat=True):
        assert key in html
