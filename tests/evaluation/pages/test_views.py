"""The research dashboard: access (own studies only), pages, downloads, the report."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from tests.annotation.factories import build_study
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = pytest.mark.usefixtures("fast_analysis")


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create_user("ada", password="pw")


@pytest.fixture
def study(researcher):
    study = build_answered_study(slug="mine")
    study.researchers.add(researcher)
    return study


@pytest.fixture
def client_in(client, researcher):
    client.force_login(researcher)
    return client


def test_anonymous_users_are_sent_to_login(client, study):
    response = client.get(reverse("evaluation:study-detail", args=["mine"]))
    assert response.status_code == 302
    assert response["Location"].startswith("/dashboard/login/")


def test_list_shows_only_own_studies(client_in, study, other_study):
    response = client_in.get(reverse("evaluation:study-list"))
    assert response.status_code == 200
    assert b"/dashboard/mine/" in response.content
    assert b"theirs" not in response.content


@pytest.mark.parametrize(
    "name, args",
    [
        ("evaluation:study-detail", []),
        ("evaluation:study-correlations", []),
        ("evaluation:study-analysis", []),
        ("evaluation:study-report", []),
        ("evaluation:study-export", ["csv"]),
    ],
)
def test_another_researchers_study_is_not_found(client_in, study, other_study, name, args):
    response = client_in.get(reverse(name, args=["theirs", *args]))
    assert response.status_code == 404


def test_superuser_sees_every_study(client, other_study):
    admin = get_user_model().objects.create_superuser("root", password="pw")
    client.force_login(admin)
    assert client.get(reverse("evaluation:study-detail", args=["theirs"])).status_code == 200


@pytest.mark.heavy
def test_study_page_shows_tables_figures_balance_and_audit(client_in, study):
    response = client_in.get(reverse("evaluation:study-detail", args=["mine"]) + "?reported=seed003")
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        "Table 1",
        "Table 2",
        "Table 3",
        "Krippendorff",
        "Reproducibility audit",
        "Wilcoxon",
        "<svg",
        "export.csv",
        "report.html",
    ):
        assert text in html, text
    # progress and balance are read live, so they load after the first paint
    assert 'hx-get="/dashboard/mine/progress-section/"' in html
    progress = client_in.get(
        reverse("evaluation:study-progress-section", args=["mine"]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Latin-square balance" in progress
    # 4 laypeople × 4 sources all done
    assert "16 / 16" in progress
    # the audit of seed 003's file lists its figures
    assert "table1.fkgl.original" in html
    assert 'hx-get="/dashboard/mine/correlations/"' in html


@pytest.mark.heavy
def test_audit_can_be_switched_off(client_in, study):
    html = client_in.get(reverse("evaluation:study-detail", args=["mine"]) + "?reported=").content.decode()
    assert "table1.fkgl.original" not in html


@pytest.mark.heavy
def test_correlations_fragment_for_htmx_and_page_without(client_in, study):
    url = reverse("evaluation:study-correlations", args=["mine"])
    fragment = client_in.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<table" in fragment and "<html" not in fragment and "FKGL" in fragment
    page = client_in.get(url).content.decode()
    assert "<html" in page and "Metric–human correlations" in page


def test_export_downloads_stream(client_in, study):
    response = client_in.get(reverse("evaluation:study-export", args=["mine", "csv"]))
    assert response.status_code == 200
    assert response.streaming
    assert 'filename="mine-answers.csv"' in response["Content-Disposition"]
    frame = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)))
    assert set(frame["study"]) == {"mine"}
    xlsx = client_in.get(reverse("evaluation:study-export", args=["mine", "xlsx"]))
    assert len(pd.read_excel(io.BytesIO(b"".join(xlsx.streaming_content)))) == len(frame)
    assert client_in.get(reverse("evaluation:study-export", args=["mine", "pdf"])).status_code == 404


@pytest.mark.heavy
def test_the_report_and_the_dashboard_carry_the_sections_other_apps_registered(client_in, study):
    # Judging registers its section in JudgingConfig.ready() (evaluation.pages.report_sections);
    # evaluation imports nothing of judging.
    html = client_in.get(reverse("evaluation:study-report", args=["mine"])).content.decode()
    section = html.split("<h2>LLM judges beside the radiologists</h2>", 1)[1].split("<h2>", 1)[0]
    assert '<section class="judges" id="judges">' in section
    assert "No judge run of this study has its agreement computed yet." in section
    # After the audit, before the follow-up plan, as before the registry.
    assert html.index("LLM judges beside the radiologists") < html.index("Sample size for a follow-up study")
    dashboard = client_in.get(reverse("evaluation:study-detail", args=["mine"])).content.decode()
    assert f'<a href="{reverse("judging:study-judges", args=["mine"])}">LLM judges</a>' in dashboard


@pytest.mark.heavy
def test_analysis_download_is_the_analysis_json(client_in, study):
    response = client_in.get(reverse("evaluation:study-analysis", args=["mine"]))
    analysis = json.loads(response.content)
    assert analysis["study"] == "mine"
    assert list(analysis["systems"]) == ["plain_bs", "plain_sc", "cot_bs", "cot_sc"]
    assert analysis["correlations"]


@pytest.mark.heavy
def test_report_is_self_contained(client_in, study):
    response = client_in.get(reverse("evaluation:study-report", args=["mine"]))
    assert response.status_code == 200
    # "Report · HTML" opens in the browser; the download link asks for the file.
    assert response["Content-Disposition"].startswith("inline")
    download = client_in.get(reverse("evaluation:study-report", args=["mine"]) + "?download=1")
    assert download["Content-Disposition"] == 'attachment; filename="mine-report.html"'
    assert "script-src" not in response["Content-Security-Policy"]
    assert "default-src 'none'" in response["Content-Security-Policy"]
    html = response.content.decode()
    for text in (
        "Table 1",
        "Methods",
        "Critical = 1",
        "Krippendorff",
        "textstat",
        "<svg",
        "@media print",
        "Reproducibility audit",
        "<code>fkgl</code>: ",  # each metric's definition in the Methods section
    ):
        assert text in html, text
    # nothing is fetched from elsewhere: no scripts, stylesheets or images by URL
    assert "<script" not in html
    assert "<link" not in html
    assert "src=" not in html


@pytest.mark.heavy
def test_report_command_writes_the_file(study, tmp_path):
    out = tmp_path / "report.html"
    call_command("report", "--study", "mine", "--out", str(out), "--reported", "")
    html = out.read_text()
    assert html.startswith("<!doctype html>")
    assert "Reproducibility audit" not in html


def test_a_non_staff_researcher_signs_in_on_the_dashboard(client, researcher, study):
    assert not researcher.is_staff
    response = client.post(reverse("evaluation:login"), {"username": "ada", "password": "pw"})
    assert response.status_code == 302
    assert client.get(reverse("evaluation:study-list")).status_code == 200
    wrong = client.__class__().post(reverse("evaluation:login"), {"username": "ada", "password": "nope"})
    assert b"did not match" in wrong.content


@pytest.mark.heavy
def test_the_audit_is_shown_by_default_only_for_a_fitting_study(client_in, researcher, study):
    assert (
        "table1.fkgl.original"
        in client_in.get(reverse("evaluation:study-detail", args=["mine"])).content.decode()
    )
    odd = build_study(slug="odd", n_sources=2, systems=("alpha", "beta"))
    odd.researchers.add(researcher)
    assert (
        "table1.fkgl.original"
        not in client_in.get(reverse("evaluation:study-detail", args=["odd"])).content.decode()
    )


@pytest.mark.heavy
def test_researcher_pages_exports_and_the_api_are_never_stored(client_in, study, researcher):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=researcher).key
    responses = {
        "dashboard": client_in.get(reverse("evaluation:study-detail", args=["mine"])),
        "export": client_in.get(reverse("evaluation:study-export", args=["mine", "csv"])),
        "api": client_in.get("/api/studies/mine/", HTTP_AUTHORIZATION=f"Token {token}"),
        "api export": client_in.get("/api/studies/mine/exports/csv/", HTTP_AUTHORIZATION=f"Token {token}"),
        "admin": client_in.get("/admin/", follow=True),
        "API docs": client_in.get("/api/docs/"),
    }
    for name, response in responses.items():
        assert response.status_code == 200, name
        assert "no-store" in response["Cache-Control"], name
    # A view with its own Cache-Control keeps it (the survey's never_cache).
    assert "must-revalidate" in client_in.get("/join/mine/")["Cache-Control"]


@pytest.mark.heavy
def test_the_reports_methods_say_judges_never_see_human_answers(
    client_in, study, django_capture_on_commit_callbacks, settings
):
    from judging import services as judging_services

    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    with django_capture_on_commit_callbacks(execute=True):
        judging_services.judge_run_create(
            study=study, backend="glossary", instruments=["radiologist"], samples=3
        )
    html = client_in.get(reverse("evaluation:study-report", args=["mine"])).content.decode()
    assert "LLM judges (and radlay's glossary heuristic) never see human answers" in html
    assert "reliability-diagram" in html and "Expected calibration error over 10 equal-width bins" in html
