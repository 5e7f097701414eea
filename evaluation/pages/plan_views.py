"""The dashboard's planning pages (/dashboard/<slug>/plan/): a form that queues a power plan and a
page that shows it, polling with htmx until the task has stored the result. Researchers of the
study only (annotation.access); the simulation never runs inside the request."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation.access import access_study, researcher_login_required
from evaluation.pages.report import plan_table
from evaluation.planning import plans
from evaluation.planning.forms import PlanForm


@researcher_login_required
def study_plan(request: HttpRequest, slug: str) -> HttpResponse:
    need = "edit" if request.method == "POST" else "view"
    study = access_study(user=request.user, slug=slug, need=need)
    if request.method == "POST":
        form = PlanForm(request.POST)
        status = 400
        if form.is_valid():
            try:
                plan = plans.plan_create(study=study, parameters=form.cleaned_data, user=request.user)
            except plans.PlanLimitReached as limit:
                form.add_error(None, limit.message)
                status = 429
            else:
                return redirect("evaluation:study-plan-detail", slug=study.slug, plan_id=plan.pk)
    else:
        form = PlanForm(initial={"outcome": "understanding", "effect": 0.25})
        status = 200
    context = {"study": study, "form": form, "plans": plans.plans_for_study(study=study)[:20]}
    return render(request, "evaluation/plan.html", context, status=status)


@researcher_login_required
def study_plan_detail(request: HttpRequest, slug: str, plan_id: int) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    plan = plans.access_plan(study=study, plan_id=plan_id)
    context = {
        "study": study,
        "plan": plan,
        "progress": plans.plan_progress(plan=plan),
        "table": plan_table(plan.result) if plan.result else None,
    }
    template = "evaluation/plan_detail.html#result" if request.htmx else "evaluation/plan_detail.html"
    return render(request, template, context)
