"""A study's team page (owners only): list the members, add one, change a role, remove one. Thin:
each POST calls one service of annotation/team_services.py and comes back here."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation.access import access_study
from annotation.models import StudyMembership
from annotation.selectors import study_members
from annotation.team_services import (
    study_member_add,
    study_member_remove,
    study_member_role_set,
    user_by_username,
)
from evaluation.views import researcher_login_required


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
                study_member_add(study=study, user=user, role=role)
                messages.success(request, f"{user} is now {role} of {study.slug}.")
            elif action == "role":
                study_member_role_set(study=study, user=user, role=role)
                messages.success(request, f"{user} is now {role} of {study.slug}.")
            elif action == "remove":
                study_member_remove(study=study, user=user)
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
