"""Limits on the open recruitment link and on consent, so that anonymous requests cannot fill a
study with participants or refusals: per-IP and per-study rates (django-ratelimit counters in the
default cache, which production points at Redis so that every worker shares them) and a cap on
the participants of a study who are enrolled and still working. Each is a setting from the
environment (README "Configuration"); a rate of "" switches that limit off.

Only POSTs count: opening the link or the consent page costs nothing and creates nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django_ratelimit.core import get_usage

from annotation.models import Participant, Study

TOO_MANY = "Too many requests from your network. Please wait a few minutes and try again."
STUDY_BUSY = "Many people are joining this study right now. Please try again in a few minutes."
STUDY_FULL = (
    "This study has as many participants as it can take at the moment. Please try again later; "
    "places free up as participants finish."
)


def _limited(request: HttpRequest, *, group: str, key: str | Callable, rate: str) -> int | None:
    """Seconds until the window ends when this request is over `rate`, else None (counted)."""
    if not rate or not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    usage = get_usage(request, group=group, key=key, rate=rate, method="POST", increment=True)
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, int(usage["time_left"]))


def _refuse(message: str, status: int, retry_after: int | None = None) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def open_enrolments(study: Study) -> int:
    """Laypeople of `study` who consented and are still working: not completed, not returned,
    active within `Study.abandon_after_minutes` (the lay flow's rule for a live participant)."""
    cutoff = timezone.now() - timedelta(minutes=study.abandon_after_minutes)
    return (
        Participant.objects.filter(
            study=study,
            role=Participant.Role.LAYPERSON,
            consented_at__isnull=False,
            completed_at__isnull=True,
            returned_at__isnull=True,
        )
        .annotate(last_seen=Coalesce("last_activity_at", "started_at", "created_at"))
        .filter(Q(last_seen__gte=cutoff))
        .count()
    )


def join_limits(view: Callable) -> Callable:
    """For `/join/<slug>/`: per-IP and per-study rates on POSTs, and the cap on open enrolments
    for someone new who agrees (a participant ID the study knows always gets back in)."""

    @wraps(view)
    def wrapped(request: HttpRequest, slug: str, *args, **kwargs) -> HttpResponse:
        if request.method == "POST":
            wait = _limited(request, group="join-ip", key="ip", rate=settings.RADLAY_JOIN_RATE_PER_IP)
            if wait:
                return _refuse(TOO_MANY, 429, wait)
            wait = _limited(
                request,
                group="join-study",
                key=lambda group, r: slug,
                rate=settings.RADLAY_JOIN_RATE_PER_STUDY,
            )
            if wait:
                return _refuse(STUDY_BUSY, 429, wait)
            cap = settings.RADLAY_MAX_OPEN_ENROLMENTS
            if cap and request.POST.get("choice") == "accept":
                study = Study.objects.filter(slug=slug).first()
                pid = request.GET.get("PROLIFIC_PID", "")
                known = pid and Participant.objects.filter(study=study, external_id=pid).exists()
                if study is not None and not known and open_enrolments(study) >= cap:
                    return _refuse(STUDY_FULL, 503, 300)
        return view(request, slug, *args, **kwargs)

    return wrapped


def consent_limits(view: Callable) -> Callable:
    """For a participant's consent page: a per-IP rate on POSTs."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "POST":
            wait = _limited(request, group="consent-ip", key="ip", rate=settings.RADLAY_CONSENT_RATE_PER_IP)
            if wait:
                return _refuse(TOO_MANY, 429, wait)
        return view(request, *args, **kwargs)

    return wrapped
