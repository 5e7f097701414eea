"""A study's team page (owners only: list the members, add one, change a role, remove one; each
POST calls one service of studies/team_services.py) and its activity log (editors and owners:
the page, filterable by verb, and its CSV)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render

from annotation.access import access_study
from annotation.activity_services import activity_record
from annotation.models import StudyMembership
from annotation.selectors import (
    activity_events,
    activity_verbs,
    answer_revisions,
    answer_revisions_described,
    study_members,
)
from evaluation.exports import csv as csv_exporter
from evaluation.pages.dashboard_views import researcher_login_required
from studies.team_services import (
    study_member_add,
    study_member_remove,
    study_member_role_set,
    user_by_username,
)


@researcher_login_required
def study_team(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="own")
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            user = user_by_username(username=request.POST.get("username", "").strip())
            role = request.POST.get("role", "")
            if action == "add":
                study_member_add(study=study, user=user, role=role, actor=request.user)
                messages.success(request, f"{user} is now {role} of {study.slug}.")
            elif action == "role":
                study_member_role_set(study=study, user=user, role=role, actor=request.user)
                messages.success(request, f"{user} is now {role} of {study.slug}.")
            elif action == "remove":
                study_member_remove(study=study, user=user, actor=request.user)
                messages.success(request, f"{user} is no longer a member of {study.slug}.")
            else:
                raise ValidationError({"action": f"Unknown action {action!r}."})
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
            status = 400
        else:
            return redirect("evaluation:study-team", slug=study.slug)
    context = {"study": study, "members": study_members(study=study), "roles": StudyMembership.Role.choices}
    return render(request, "evaluation/study_team.html", context, status=status)


EVENTS_PER_PAGE = 50
ACTIVITY_COLUMNS = ("time", "actor", "verb", "object_type", "object_id", "object", "details")


@researcher_login_required
def study_activity(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    verb = request.GET.get("verb", "")
    page = Paginator(activity_events(study=study, verb=verb), EVENTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    pseudonym = request.GET.get("participant", "").strip()
    revisions = Paginator(answer_revisions(study=study, pseudonym=pseudonym), EVENTS_PER_PAGE).get_page(
        request.GET.get("revisions_page")
    )
    revisions.object_list = answer_revisions_described(revisions.object_list)
    context = {
        "study": study,
        "page": page,
        "verb": verb,
        "verbs": activity_verbs(study=study),
        "revisions": revisions,
        "participant": pseudonym,
    }
    return render(request, "evaluation/study_activity.html", context)


@researcher_login_required
def study_activity_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    verb = request.GET.get("verb", "")
    # Read before this download is itself recorded: the file holds what was there when asked.
    events = list(activity_events(study=study, verb=verb))
    activity_record(
        study=study, actor=request.user, verb="export.downloaded", details={"file": "activity.csv"}
    )
    rows = (
        [
            event.created_at.isoformat(),
            event.actor_label,
            event.verb,
            event.object_type,
            event.object_id,
            event.object_label,
            json.dumps(event.details, ensure_ascii=False, sort_keys=True),
        ]
        for event in events
    )
    response = StreamingHttpResponse(
        csv_exporter.stream(rows, ACTIVITY_COLUMNS), content_type=csv_exporter.CONTENT_TYPE
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-activity.csv"'
    return response
