"""Limits on sample-size plans: the size of one plan (a work budget, a form error naming the field)
and how many may be queued or running per study and per researcher (429 in the API, a message on
the dashboard); plans run on their own Celery queue."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import PowerPlan
from evaluation.planning.forms import MAX_PARTICIPANTS, MAX_SIMULATIONS, MAX_SOURCES, PlanForm
from tests.annotation.factories import build_study

SMALL = {"outcome": "understanding", "effect": 0.3, "simulations": 40, "points": 2}
LARGEST = {
    "outcome": "understanding",
    "effect": 0.3,
    "simulations": MAX_SIMULATIONS,
    "mixed_simulations": 0,
    "points": 20,
    "max_participants": MAX_PARTICIPANTS,
    "max_sources": MAX_SOURCES,
}


@pytest.fixture
def limits(settings):
    settings.RADLAY_JOB_LIMITS = replace(settings.RADLAY_JOB_LIMITS, per_study=2, per_user=3)
    return settings


@pytest.fixture
def studies(researcher):
    made = [build_study(slug=slug, n_sources=2) for slug in ("one", "two")]
    for study in made:
        study.researchers.add(researcher)
    return made


def test_the_form_defaults_fit_the_default_budgets():
    assert PlanForm.with_defaults({"outcome": "understanding", "effect": 0.25}).is_valid()


def test_the_largest_plan_is_refused_with_the_field_and_the_budget_named(settings):
    settings.RADLAY_JOB_LIMITS = replace(settings.RADLAY_JOB_LIMITS, plan_work=10_000_000_000)
    form = PlanForm.with_defaults(LARGEST)
    assert not form.is_valid()
    # 5,000 × 20² × 1,000 × 2,000 = 4e12 simulated answers.
    (message,) = form.errors["simulations"]
    assert "4,000,000,000,000 is over its budget of 10,000,000,000 (RADLAY_JOB_LIMITS.plan_work)" in message
    assert "Lower simulations, points, max_participants or max_sources" in message
    assert set(form.errors) == {"simulations"}


def test_the_mixed_model_budget_is_its_own(settings):
    settings.RADLAY_JOB_LIMITS = replace(settings.RADLAY_JOB_LIMITS, plan_mixed_work=1_000_000)
    form = PlanForm.with_defaults(
        {**SMALL, "mixed_simulations": 100, "max_participants": 50, "max_sources": 50}
    )
    # 100 × 2² × 50 × 50 = 1,000,000: at the budget, allowed; one more simulation is over it.
    assert form.is_valid(), form.errors
    over = PlanForm.with_defaults(
        {**SMALL, "mixed_simulations": 101, "max_participants": 50, "max_sources": 50}
    )
    assert not over.is_valid() and "RADLAY_JOB_LIMITS.plan_mixed_work" in over.errors["mixed_simulations"][0]


def test_the_api_refuses_a_plan_over_the_budget_with_400(studies, api):
    response = api.post("/api/studies/one/plans/", LARGEST, format="json")
    assert response.status_code == 400
    assert "RADLAY_JOB_LIMITS.plan_work" in response.json()["errors"]["simulations"][0]["message"]
    assert not PowerPlan.objects.exists()


def test_queued_plans_are_limited_per_study_and_per_researcher(studies, api, limits):
    assert [api.post("/api/studies/one/plans/", SMALL, format="json").status_code for _ in range(2)] == [
        202,
        202,
    ]
    third = api.post("/api/studies/one/plans/", SMALL, format="json")
    assert third.status_code == 429
    message = third.json()["errors"]["__all__"][0]["message"]
    assert "This study has 2 plans queued or running" in message and "RADLAY_JOB_LIMITS.per_study" in message
    # Another study of the same researcher: one more, then the researcher's own limit.
    assert api.post("/api/studies/two/plans/", SMALL, format="json").status_code == 202
    fourth = api.post("/api/studies/two/plans/", SMALL, format="json")
    assert fourth.status_code == 429
    assert "You have 3 plans" in fourth.json()["errors"]["__all__"][0]["message"]
    assert PowerPlan.objects.count() == 3


def test_finished_and_dead_plans_free_their_place(studies, api, limits, settings):
    one = studies[0]
    now = timezone.now()
    PowerPlan.objects.create(study=one, outcome="understanding", parameters=SMALL, status="done")
    PowerPlan.objects.create(study=one, outcome="understanding", parameters=SMALL, status="failed")
    # Running past the task's hard time limit: its worker died (the limit kills the task).
    PowerPlan.objects.create(
        study=one,
        outcome="understanding",
        parameters=SMALL,
        status="running",
        started_at=now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 120),
    )
    assert [api.post("/api/studies/one/plans/", SMALL, format="json").status_code for _ in range(3)] == [
        202,
        202,
        429,
    ]


def test_the_dashboard_form_shows_the_limit(studies, client, researcher, limits):
    client.force_login(researcher)
    url = reverse("evaluation:study-plan", args=["one"])
    body = {**PlanForm.with_defaults(SMALL).data, "max_participants": 16, "max_sources": 16}
    assert [client.post(url, body).status_code for _ in range(2)] == [302, 302]
    refused = client.post(url, body)
    assert refused.status_code == 429
    assert "This study has 2 plans queued or running already" in refused.content.decode()
    assert PowerPlan.objects.count() == 2


def test_the_command_line_runs_its_plan_itself_whatever_is_queued(studies, limits):
    from evaluation.planning import plans

    one = studies[0]
    for _ in range(2):
        plans.plan_create(study=one, parameters=PlanForm.with_defaults(SMALL).data, dispatch=True)
    with pytest.raises(plans.PlanLimitReached):
        plans.plan_create(study=one, parameters=PlanForm.with_defaults(SMALL).data, dispatch=True)
    assert plans.plan_create(study=one, parameters=PlanForm.with_defaults(SMALL).data, dispatch=False).pk
