"""The console's data-policy and de-identification page: the policy (owners change it, with a
reason), the findings of each source highlighted in place (accept, change the type, remove a false
positive, mark a missed span) and the owner's approval. Each POST calls one service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import access_study, researcher_login_required
from annotation.models import Study
from privacy import services
from privacy.detection.spans import KINDS
from privacy.models import DataPolicy, DeidFinding
from privacy.selectors import data_policy_of, finding_counts, review_page, unresolved_sources

PAGE = 25


def _back(study: Study, request: HttpRequest) -> HttpResponse:
    offset = request.POST.get("offset", "0")
    return redirect(
        reverse("console:privacy", args=[study.slug]) + f"?offset={offset if offset.isdigit() else 0}"
    )


def _done(
    request: HttpRequest, study: Study, call: Callable[[], Any], *, success: str | Callable[[Any], str] = ""
) -> HttpResponse:
    """Run one service call and go back to the page: its refusal's messages shown, else `success`
    (a sentence, or one made from the call's result)."""
    try:
        result = call()
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        if success:
            messages.success(request, success(result) if callable(success) else success)
    return _back(study, request)


@researcher_login_required
@require_http_methods(["GET"])
def review(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    try:
        offset = max(0, int(request.GET.get("offset", 0)))
    except ValueError:
        offset = 0
    context = {
        "study": study,
        "policy": data_policy_of(study=study),
        "policies": DataPolicy.Policy.choices,
        "counts": finding_counts(study=study),
        "blocked": unresolved_sources(study=study),
        "rows": review_page(study=study, offset=offset, limit=PAGE),
        "kinds": KINDS,
        "offset": offset,
        "next_offset": offset + PAGE if study.sources.count() > offset + PAGE else None,
        "previous_offset": max(0, offset - PAGE) if offset else None,
        "is_owner": study.member_role == "owner",
    }
    return render(request, "privacy/review.html", context)


@researcher_login_required
@require_POST
def policy_change(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="own")
    return _done(
        request,
        study,
        lambda: services.data_policy_change(
            study=study,
            policy=request.POST.get("policy", ""),
            endpoint=request.POST.get("endpoint", ""),
            reason=request.POST.get("reason", ""),
            actor=request.user,
        ),
        success="The data policy is changed (recorded in the activity log).",
    )


@researcher_login_required
@require_POST
def originals_for_radiologists(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="own")
    return _done(
        request,
        study,
        lambda: services.originals_for_radiologists_set(
            study=study,
            show=request.POST.get("show") == "1",
            reason=request.POST.get("reason", ""),
            actor=request.user,
        ),
    )


@researcher_login_required
@require_POST
def finding_review(request: HttpRequest, slug: str, finding_id: int) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    finding = get_object_or_404(DeidFinding, pk=finding_id, source__study=study)
    return _done(
        request,
        study,
        lambda: services.finding_review(
            finding=finding,
            action=request.POST.get("action", ""),
            kind=request.POST.get("kind", ""),
            actor=request.user,
        ),
    )


@researcher_login_required
@require_POST
def finding_add(request: HttpRequest, slug: str, source_id: int) -> HttpResponse:
    """Mark a missed span: the reviewer types the words; their first occurrence not already
    hidden is marked."""
    study = access_study(user=request.user, slug=slug, need="edit")
    source = get_object_or_404(study.sources, pk=source_id)
    words = request.POST.get("words", "").strip()
    start = source.text.find(words) if words else -1
    if start < 0:
        messages.error(request, f"Missed span: {words!r} is not in the text of {source.key}.")
        return _back(study, request)
    return _done(
        request,
        study,
        lambda: services.finding_add(
            source=source,
            start=start,
            end=start + len(words),
            kind=request.POST.get("kind", ""),
            actor=request.user,
        ),
    )


@researcher_login_required
@require_POST
def detect_again(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    services.study_deidentify(study=study, actor=request.user, again=request.POST.get("again") == "1")
    messages.success(request, "De-identification run.")
    return _back(study, request)


@researcher_login_required
@require_POST
def approve(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="own")
    return _done(
        request,
        study,
        lambda: services.deidentification_approve(study=study, actor=request.user),
        success=lambda row: (
            f"De-identification approved: {row.approved_findings} findings, {row.approved_edited} edited."
        ),
    )
