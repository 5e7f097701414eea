"""The pages a survey participant sees when a survey URL cannot be answered: an unknown link, the
other role's link, a draft or closed study, a refused change. Plain language, what to do next,
and nothing that tells a participant what the study compares (no study or paper title)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation.models import Participant, Study
from config.errors import error_page
from surveys.survey_language import (
    survey_language_activate,
    survey_language_from_url,
    survey_language_guess,
)

HEADINGS = {
    400: gettext_lazy("Something is wrong with this request"),
    403: gettext_lazy("This page is not available for this link"),
    404: gettext_lazy("This page is not part of your survey"),
    409: gettext_lazy("This cannot be changed any more"),
}


def survey_error_page(
    request: HttpRequest, message: str, status: int, *, resume_url: str | None = None
) -> HttpResponse:
    """A full error page for a survey URL. `resume_url` (the participant's own start link) adds a
    button back to where they are in the survey."""
    if resume_url:
        next_step = _("Nothing was changed. Use the button below to continue the survey where you are.")
    else:
        next_step = _(
            "Nothing was changed. Open the link you were sent again from the original message. "
            "If it still does not work, contact the research team that invited you."
        )
    return error_page(
        request,
        status=status,
        heading=str(HEADINGS.get(status, _("This page is not available"))),
        message=message,
        next_step=next_step,
        resume_url=resume_url,
    )


def survey_link_invalid(request: HttpRequest, **kwargs) -> HttpResponse:
    # No study is known from an invalid link: the browser's language decides.
    survey_language_guess(request)
    return survey_error_page(
        request, _("This survey link is not valid: it may be incomplete, mistyped or withdrawn."), 404
    )


def study_unavailable(
    request: HttpRequest, study: Study, participant: Participant | None = None
) -> HttpResponse:
    """A draft, paused or closed study: 403 with a page that says which, without naming the study.
    Only a participant who has begun is told that their answers are kept."""
    survey_language_activate(request, study=study)
    begun = participant is not None and (
        participant.started_at is not None or participant.consented_at is not None
    )
    return render(request, "surveys/study_unavailable.html", {"study": study, "begun": begun}, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW (here, beside the survey pages, because it speaks the study's language):
    usually a page left open for a long time, or cookies switched off."""
    survey_language_from_url(request)  # refused before the survey view: the study's language
    return error_page(
        request,
        status=403,
        heading=_("Your page had expired"),
        message=_(
            "For your security, this page could not be sent: it was open for a long time, or "
            "your browser does not keep cookies for this site. What you sent on this page was not saved."
        ),
        next_step=_(
            "Go back, reload the page and answer again. If it happens again, allow cookies for this site."
        ),
    )
