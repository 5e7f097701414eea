"""The dashboard's adjudication page (anyone who may view the study): the final labels by
provenance and the raw and adjudicated views side by side (evaluation/adjudication_selectors.
adjudication_summary). The same section is in the study report; the queue itself is the
adjudicator's console page."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import access_study, researcher_login_required
from annotation.models import Study, StudyMembership
from evaluation.analysis.adjudication_summary import adjudication_summary


def adjudication_report_section(*, study: Study) -> dict[str, Any]:
    """The report section's context (evaluation/pages/report_sections.py)."""
    return {"study": study, "summary": adjudication_summary(study=study)}


@researcher_login_required
@require_GET
def study_adjudication(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    context = adjudication_report_section(study=study)
    context["may_adjudicate"] = StudyMembership.Role(study.member_role).allows("adjudicate")
    return render(request, "evaluation/study_adjudication.html", context)
