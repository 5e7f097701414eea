"""A researcher sets a study up in the browser (issue 29, items 1, 5 and 6): creates it from the
dashboard's "New study" form, adds a background question and an attention check as form rows (an
invalid row first: the message names the field), previews both surveys (the previews count
nowhere) and opens the study."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import get_resolver

from annotation import services
from annotation.models import ActivityEvent, AttentionCheck, Participant, Study
from annotation.selectors import study_counts
from evaluation.progress import participants_progress


def _log_in(page, username: str, password: str) -> None:
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit], input[type=submit]")


def _sources_for(study: Study) -> None:
    # Uploading sources is the console's upload page (another part of issue 29): here they are
    # written as an upload would, through the same services.
    systems = [services.system_upsert(study=study, key=key) for key in ("plain_bs", "cot_sc")]
    for i in range(2):
        source = services.source_upsert(
            study=study, key=f"s{i}", text=f"Sentence {i}: a 1 cm cyst in the liver."
        )
        for system in systems:
            services.simplification_upsert(
                source=source, system=system, text=f"Plain text {i} by {system.key}."
            )


def test_a_researcher_creates_configures_previews_and_opens_a_study(page, live_server):
    from playwright.sync_api import expect

    get_resolver().url_patterns  # noqa: B018  (imports every view before the first page)
    get_user_model().objects.create_user("ada", password="ada-pw-123", is_staff=True)
    _log_in(page, "ada", "ada-pw-123")

    # Create the study from the dashboard.
    page.click("#new-study")
    page.fill("#id_title", "Liver lesions")
    page.fill("#id_slug", "liver")
    with page.expect_navigation():
        page.click("#create-study")
    expect(page.locator("h1")).to_have_text("Set up Liver lesions")
    expect(page.locator("#study-status")).to_have_text("Draft")
    study = Study.objects.get(slug="liver")
    # The texts come prefilled with the protocol's defaults.
    expect(page.locator("#id_lay_consent_text")).to_contain_text("You are invited to take part")

    # A background question with an invalid key and an attention check, as form rows.
    page.fill("#id_background-0-key", "1age")
    page.fill("#id_background-0-question", "Your age group?")
    page.fill("#id_background-0-options", "18-39\n40-64\n65+")
    page.fill("#id_checks-0-position", "1")
    page.fill("#id_checks-0-prompt", "To show you read this, please choose Mild.")
    page.fill("#id_checks-0-options", "Critical\nMild\nHealthy")
    page.fill("#id_checks-0-expected_answer", "Mild")
    with page.expect_navigation():
        page.click("#save-setup")
    row = page.locator("#background-row-1")
    expect(row.locator("[role=alert]")).to_contain_text('"key" may hold only letters, digits and _')
    study.refresh_from_db()
    assert study.background_questions == [] and not AttentionCheck.objects.filter(study=study).exists()
    # What was typed is still there: only the key is corrected.
    expect(page.locator("#id_checks-0-prompt")).to_have_value("To show you read this, please choose Mild.")
    page.fill("#id_background-0-key", "age_group")
    with page.expect_navigation():
        page.click("#save-setup")
    expect(page.locator(".messages")).to_contain_text("Saved: background questions, attention checks.")
    study.refresh_from_db()
    assert study.background_questions == [
        {"key": "age_group", "question": "Your age group?", "options": ["18-39", "40-64", "65+"]}
    ]
    assert list(AttentionCheck.objects.filter(study=study).values_list("position", "expected_answer")) == [
        (1, "Mild")
    ]

    # Opening without sources says why it cannot.
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator(".messages")).to_contain_text("no sources yet")
    expect(page.locator("#study-status")).to_have_text("Draft")
    _sources_for(study)

    # Preview the lay survey: the real consent page, then the background question just added.
    with page.expect_navigation():
        page.click("#preview-layperson")
    expect(page.locator("h2.panel-intro")).to_have_text("Information and consent")
    with page.expect_navigation():
        page.click("button[value=accept]")
    expect(page.locator("body")).to_contain_text("Your age group?")

    # Preview the radiologist survey.
    page.goto("/console/liver/")
    with page.expect_navigation():
        page.click("#preview-radiologist")
    with page.expect_navigation():
        page.click("#begin")
    expect(page.locator("body")).to_contain_text(": a 1 cm cyst in the liver.")  # either sentence first

    # The previews count nowhere.
    previews = Participant.objects.filter(study=study)
    assert sorted(previews.values_list("role", "is_preview")) == [("layperson", True), ("radiologist", True)]
    assert participants_progress(study=study) == []
    assert study_counts(study=study)["participants"] == {"radiologist": 0, "layperson": 0}

    # Open the study.
    page.goto("/console/liver/")
    with page.expect_navigation():
        page.click("#status-open")
    expect(page.locator("#study-status")).to_have_text("Open")
    verbs = set(ActivityEvent.objects.filter(study=study).values_list("verb", flat=True))
    assert {"study.created", "study.changed", "study.previewed", "study.opened"} <= verbs
    # The dashboard's study list counts no participant.
    page.goto("/dashboard/")
    expect(page.locator("tbody tr").first).to_contain_text("0/0 completed")
