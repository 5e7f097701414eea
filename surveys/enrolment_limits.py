"""Limits on the open recruitment link and on consent, so that anonymous requests cannot fill a
study with participants or refusals: per-IP and per-study rates (django-ratelimit counters in the
default cache, which production points at Redis so that every worker shares them) and a cap on
the participants of a study who are enrolled and still working. Each is a setting from the
environment (README "Configuration"); a rate of "" switches that limit off.

The join and consent rates count POSTs only: opening the link or the consent page costs nothing
and creates nothing. Refused attempts to resume a participant are counted per address on any
method, since a GET with a known participant ID is what an attacker would probe with.

The counters fail open when the cache is unreachable (config.request_limits)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy
from django_ratelimit import ALL
from django_ratelimit.core import get_usage

from annotation.models import Participant, Study
from config.request_limits import CACHE_ERRORS, limit_unavailable
from surveys.survey_language import survey_language_from_url

TOO_MANY = gettext_lazy("Too many requests from your network. Please wait a few minutes and try again.")
STUDY_BUSY = gettext_lazy("Many people are joining this study right now. Please try again in a few minutes.")
STUDY_FULL = gettext_lazy(
    "This study has as many participants as it can take at the moment. Please try again later; "
    "places free up as participants finish."
)


def _limited(
    request: HttpRequest, *, group: str, key: str | Callable, rate: str, increment: bool = True
) -> int | None:
    """Seconds until the window ends when this request is over `rate`, else None (counted unless
    `increment` is False: then whether the rate is used up). With the cache unreachable the
    limit lets the request through."""
    if not rate or not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    try:
        usage = get_usage(request, group=group, key=key, rate=rate, method=ALL, increment=increment)
    except CACHE_ERRORS as error:
        limit_unavailable(group, error)
        return None
    # A look without counting asks whether the next counted request would be over the rate.
    if usage is None or not (usage["should_limit"] if increment else usage["count"] >= usage["limit"]):
        return None
    return max(1, int(usage["time_left"]))


def _refuse(
    request: HttpRequest, message: str | Promise, status: int, retry_after: int | None = None
) -> HttpResponse:
    # Refused before the survey view switched language: in the language of the link's study.
    survey_language_from_url(request)
    response = HttpResponse(str(message), status=status, content_type="text/plain; charset=utf-8")
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
            wait = _limited(request, group="join-ip", key="ip", rate=settings.RADLAY_RATE_LIMITS.join_ip)
            if wait:
                return _refuse(request, TOO_MANY, 429, wait)
            wait = _limited(
                request,
                group="join-study",
                key=lambda group, r: slug,
                rate=settings.RADLAY_RATE_LIMITS.join_study,
            )
            if wait:
                return _refuse(request, STUDY_BUSY, 429, wait)
            cap = settings.RADLAY_MAX_OPEN_ENROLMENTS
            if cap and request.POST.get("choice") == "accept":
                study = Study.objects.filter(slug=slug).first()
                pid = request.GET.get("PROLIFIC_PID", "")
                known = pid and Participant.objects.filter(study=study, external_id=pid).exists()
                if study is not None and not known and open_enrolments(study) >= cap:
                    return _refuse(request, STUDY_FULL, 503, 300)
        return view(request, slug, *args, **kwargs)

    return wrapped


def consent_limits(view: Callable) -> Callable:
    """For a participant's consent page: a per-IP rate on POSTs."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method == "POST":
            wait = _limited(
                request, group="consent-ip", key="ip", rate=settings.RADLAY_RATE_LIMITS.consent_ip
            )
            if wait:
                return _refuse(request, TOO_MANY, 429, wait)
        return view(request, *args, **kwargs)

    return wrapped


def resume_blocked(request: HttpRequest) -> HttpResponse | None:
    """A 429 when this address has had too many resumptions refused (see `resume_refusal_count`),
    else None; checked before a resumption is tried, so an address that probes participant IDs
    is stopped even when it then guesses right."""
    wait = _limited(
        request,
        group="resume-refused",
        key="ip",
        rate=settings.RADLAY_RATE_LIMITS.resume_refusals_ip,
        increment=False,
    )
    return _refuse(request, TOO_MANY, 429, wait) if wait else None


def resume_refusal_count(request: HttpRequest) -> None:
    _limited(request, group="resume-refused", key="ip", rate=settings.RADLAY_RATE_LIMITS.resume_refusals_ip)
