"""Sample-size plans through the command line, the API, the dashboard and the report: validation,
access (the study's researchers only), background computation and failures."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from evaluation.models import PowerPlan
from evaluation.pages.context import study_report_html
from evaluation.planning.forms import PlanForm
from tests.annotation.factories import build_study
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = pytest.mark.usefixtures("fast_analysis")

FORM_DEFAULTS = {"alpha": 0.05, "power": 0.8, "seed": 0}
SMALL = {
    "outcome": "understanding",
    "effect": 0.3,
    "simulations": 40,
    "mixed_simulations": 10,
    "points": 2,
    "max_participants": 16,
    "max_sources": 16,
}


@pytest.fixture
def pilot(researcher):
    study = build_answered_study(slug="pilot", n_sources=8, n_lay=8, n_radiologists=2)
    study.researchers.add(researcher)
    return study


def test_command_plans_from_the_pilot_and_stores_the_plan(pilot):
    out = io.StringIO()
    args = ["--pilot", "pilot", "--outcome", "understanding", "--effect", "0.3", "--simulations", "40"]
    args += ["--mixed-simulations", "10", "--points", "2", "--max-participants", "16", "--max-sources", "16"]
    call_command("plan", *args, stdout=out)
    text = out.getvalue()
    assert "Variance components" in text and "Power of the paired per-source Wilcoxon test" in text
    plan = PowerPlan.objects.get(study=pilot)
    assert plan.status == PowerPlan.Status.DONE
    grid = plan.result["grid"]
    assert grid["participants"] == [4, 16] and grid["sources"] == [4, 16]  # whole cycles of 4 systems
    assert len(grid["cells"]) == 4 and all(0 <= c["power"] <= 1 for c in grid["cells"])
    assert plan.result["pilot"]["components"]["n_participants"] == 8
    assert plan.result["figure_svg"].startswith("<svg")


def test_command_plans_a_radiologist_outcome(pilot):
    out = io.StringIO()
    args = ["--pilot", "pilot", "--outcome", "expert_correctness", "--effect", "0.5", "--simulations", "20"]
    call_command(
        "plan", *args, "--mixed-simulations", "0", "--points", "2", "--max-participants", "4", stdout=out
    )
    grid = PowerPlan.objects.get(study=pilot).result["grid"]
    assert grid["settings"]["design"] == "expert" and grid["participants"] == [2, 4]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--effect", "0"], "--effect"),
        (["--effect", "0.3", "--max-participants", "100000"], "--max-participants"),
        (["--effect", "0.3", "--power", "1.5"], "--power"),
    ],
)
def test_command_refuses_bad_input_by_option(pilot, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("plan", "--pilot", "pilot", "--outcome", "understanding", *args, stdout=io.StringIO())
    assert not PowerPlan.objects.exists()


def test_a_plan_that_cannot_be_computed_fails_with_its_reason(researcher):
    build_study(slug="empty").researchers.add(researcher)
    with pytest.raises(CommandError, match="no answers"):
        call_command(
            "plan", "--pilot", "empty", "--outcome", "understanding", "--effect", "0.3", stdout=io.StringIO()
        )
    plan = PowerPlan.objects.get()
    assert plan.status == PowerPlan.Status.FAILED and "no answers" in plan.error


def test_api_queues_a_plan_and_serves_it(pilot, api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/studies/pilot/plans/", SMALL, format="json")
    assert response.status_code == 202
    detail = api.get(response.json()["url"]).json()
    assert detail["status"] == "done" and detail["result"]["grid"]["cells"]
    assert "figure_svg" not in detail["result"]
    listing = api.get("/api/studies/pilot/plans/").json()
    assert [p["id"] for p in listing] == [detail["id"]] and listing[0]["result"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"outcome": "understanding", "effect": "abc"},
        {"outcome": "nonsense", "effect": 0.2},
        {"outcome": "understanding", "effect": 0.2, "simulations": 10**9},
        {"outcome": "understanding", "effect": 0.2, "max_sources": -3},
        {},
    ],
)
def test_api_refuses_bad_requests_with_400(pilot, api, body):
    response = api.post("/api/studies/pilot/plans/", body, format="json")
    assert response.status_code == 400 and response.json()["errors"]
    assert not PowerPlan.objects.exists()


@pytest.mark.parametrize("body", ["[null, null]", "1", '"x"', "true", "null", "[]"])
def test_api_answers_a_body_that_is_not_a_json_object_with_400(pilot, api, body):
    response = api.post("/api/studies/pilot/plans/", body, content_type="application/json")
    assert response.status_code == 400
    assert "must be a JSON object" in response.json()["errors"]["__all__"][0]["message"]
    assert not PowerPlan.objects.exists()


def test_api_and_pages_hide_another_researchers_plans(pilot, client, django_capture_on_commit_callbacks):
    plan = PowerPlan.objects.create(study=pilot, outcome="understanding", parameters=SMALL)
    other = get_user_model().objects.create_user("bob", password="pw-bob-123")
    api = APIClient()
    api.force_authenticate(other)
    assert api.get("/api/studies/pilot/plans/").status_code == 404
    assert api.get(f"/api/studies/pilot/plans/{plan.pk}/").status_code == 404
    assert api.post("/api/studies/pilot/plans/", SMALL, format="json").status_code == 404
    client.force_login(other)
    assert client.get(reverse("evaluation:study-plan", args=["pilot"])).status_code == 404
    assert client.get(reverse("evaluation:study-plan-detail", args=["pilot", plan.pk])).status_code == 404


def test_dashboard_form_queues_a_plan_then_shows_it(
    pilot, client, researcher, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    page = client.get(reverse("evaluation:study-plan", args=["pilot"]))
    assert page.status_code == 200 and b"Sample size for a follow-up study" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("evaluation:study-plan", args=["pilot"]), {**FORM_DEFAULTS, **SMALL})
    assert response.status_code == 302
    result = client.get(response["Location"])
    assert b"Assumptions" in result.content and b"<svg" in result.content
    assert b"Variance components" in result.content


def test_dashboard_form_says_which_field_is_wrong(pilot, client, researcher):
    client.force_login(researcher)
    response = client.post(
        reverse("evaluation:study-plan", args=["pilot"]), {**FORM_DEFAULTS, **SMALL, "effect": "0"}
    )
    assert response.status_code == 400
    assert b"An effect of 0 cannot be detected" in response.content
    assert not PowerPlan.objects.exists()


def test_pending_plan_polls_until_done(pilot, client, researcher):
    form = PlanForm.with_defaults(SMALL)
    assert form.is_valid()
    plan = PowerPlan.objects.create(study=pilot, outcome="understanding", parameters=form.cleaned_data)
    client.force_login(researcher)
    fragment = client.get(
        reverse("evaluation:study-plan-detail", args=["pilot", plan.pk]), HTTP_HX_REQUEST="true"
    )
    assert b'hx-trigger="every 2s"' in fragment.content and b"<html" not in fragment.content
    from evaluation.planning.plans import plan_run

    plan_run(plan_id=plan.pk)
    assert plan_run(plan_id=plan.pk).status == PowerPlan.Status.DONE  # a second run does nothing
    done = client.get(
        reverse("evaluation:study-plan-detail", args=["pilot", plan.pk]), HTTP_HX_REQUEST="true"
    )
    assert b"hx-trigger" not in done.content and b"Assumptions" in done.content


@pytest.mark.heavy
def test_report_has_the_sample_size_section(pilot):
    assert "No plan computed yet" in study_report_html(study=pilot, reported=None)
    call_command(
        "plan", "--pilot", "pilot", "--outcome", "understanding", "--effect", "0.3", "--simulations", "20",
        "--mixed-simulations", "0", "--points", "2", "--max-participants", "16", "--max-sources", "16",
        stdout=io.StringIO(),
    )  # fmt: skip
    html = study_report_html(study=pilot, reported=None)
    assert "Sample size for a follow-up study" in html and "Variance components" in html


def test_pilot_dropout_rate_counts_abandoned_and_returned_laypeople(pilot):
    from django.utils import timezone

    from annotation.models import Participant
    from evaluation.planning.pilot import pilot_dropout_rate

    assert pilot_dropout_rate(study=pilot) == 0.0  # all 8 laypeople completed
    lay = list(Participant.objects.filter(study=pilot, role=Participant.Role.LAYPERSON).order_by("pk"))
    Participant.objects.filter(pk=lay[0].pk).update(completed_at=None, returned_at=timezone.now())
    assert pilot_dropout_rate(study=pilot) == pytest.approx(1 / 8)
