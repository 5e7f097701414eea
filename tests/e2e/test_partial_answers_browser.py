"""A layperson answers half of a lay panel 1 and leaves; the researcher's dashboard then shows the
next snapshot with its figures, computed with that half answer (not "failed"). Before the fix of
evaluation/analysis/protocol.py's severity frame, every snapshot after such an answer failed with
`ValueError: Length of values … does not match length of index …`."""

from __future__ import annotations

import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from annotation.models import Participant
from evaluation.models import AnalysisSnapshot
from tests.annotation import answers
from tests.e2e.polling import wait_for
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS


def _log_in(page, username: str, password: str) -> None:
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit], input[type=submit]")


@pytest.mark.django_db(transaction=True)
def test_a_layperson_who_answers_half_a_panel_and_leaves_does_not_break_the_next_snapshot(
    browser, live_server, settings
):
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    get_resolver().url_patterns  # noqa: B018  (imports the dashboard's views before the first page)
    urllib.request.urlopen(live_server.url + "/", timeout=120).close()
    study = build_answered_study(slug="halfway", n_sources=4, n_lay=4)
    get_user_model().objects.create_user("ada", password="ada-pw-123")
    study.researchers.add(get_user_model().objects.get(username="ada"))

    researcher = browser.new_context(base_url=live_server.url)
    dashboard = researcher.new_page()
    dashboard.set_default_timeout(60_000)
    _log_in(dashboard, "ada", "ada-pw-123")
    dashboard.goto(f"/dashboard/{study.slug}/")
    ready = AnalysisSnapshot.objects.filter(study=study, error="").exclude(result=None)
    assert wait_for(ready.count, 1, seconds=60) == 1

    # The layperson: recruitment link, consent, instructions, Q1 of panel 1 (autosaved), gone.
    lay = browser.new_context(base_url=live_server.url)
    page = lay.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"/join/{study.slug}/?PROLIFIC_PID=halfway01&STUDY_ID=st1&SESSION_ID=se1")
    with page.expect_navigation():
        page.get_by_role("button", name="I agree, continue").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Start the survey").click()
    page.wait_for_url("**/original/")
    with page.expect_response(lambda r: r.request.method == "POST" and "/sentence/" in r.url) as saved:
        page.locator('#q-understanding label:has(input[value="Most of it"])').click()
    assert saved.value.status == 200
    lay.close()
    (half,) = answers.lay_answers(participant=Participant.objects.get(external_id="halfway01"))
    assert (half.understanding, half.confidence, half.severity_guess) == ("Most of it", "", "")

    # The researcher's next visit: the snapshot is recomputed with the half answer and shown.
    def shown() -> bool:
        dashboard.goto(f"/dashboard/{study.slug}/")
        snapshot = AnalysisSnapshot.objects.get(study=study)
        return snapshot.result is not None and snapshot.result["lay"]["original"]["n"] == 17

    assert wait_for(shown, True, seconds=120)
    dashboard.reload()
    html = dashboard.content()
    assert "recomputation failed" not in html
    assert dashboard.locator("#figures ~ .figure svg").count() >= 3
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.error == "" and snapshot.result["n"]["laypeople"] == 5
    assert "Table 1" in html
    assert Participant.objects.filter(study=study, external_id="halfway01", completed_at=None).exists()
    researcher.close()
