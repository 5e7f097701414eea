"""Branded error pages in plain language, for the URLs no view answers itself: unknown pages (404),
server errors (500), refused requests (400/403) and failed CSRF checks. Each says what happened and
what to do next; none names the study or the paper (participants must not learn the design).

`error_page` is the one renderer of that page: the survey's own error pages (surveys.errors)
use it too. The arrow points from the apps to config: config imports no app (its URLconf includes
them by dotted name)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.templatetags.static import static
from django.utils.translation import gettext as _


def error_page(
    request: HttpRequest,
    *,
    status: int,
    heading: str,
    message: str,
    next_step: str,
    resume_url: str | None = None,
) -> HttpResponse:
    context = {
        "status": status,
        "heading": heading,
        "message": message,
        "next_step": next_step,
        "resume_url": resume_url,
    }
    return render(request, "errors/page.html", context, status=status)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(
        request,
        status=404,
        heading=_("Page not found"),
        message=_("There is no page at this address. A link may have been copied incompletely."),
        next_step=_(
            "If you were sent a survey link, open it again from the original message, "
            "or copy the whole link into the address bar."
        ),
    )


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(
        request,
        status=403,
        heading=_("This page is not available to you"),
        message=_("You do not have access to this page."),
        next_step=_(
            "If you were sent a survey link, open that link. Researchers: sign in with the "
            "account that belongs to this study."
        ),
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(
        request,
        status=400,
        heading=_("Something is wrong with this request"),
        message=_("The page could not understand what your browser sent. Nothing was changed."),
        next_step=_("Go back, reload the page and try again."),
    )


def server_error(request: HttpRequest) -> HttpResponse:
    # Rendered without a request context: the database or a context processor may be what failed.
    return HttpResponseServerError(loader.get_template("500.html").render())


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on pages that link no icon (the admin's, the API's)."""
    return HttpResponsePermanentRedirect(static("radlay/favicon.svg"))
