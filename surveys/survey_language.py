"""The language of participant-facing pages: a study's participants see every survey page, error
page and message in the study's language (Study.language); researchers' pages stay in English.

Django's LocaleMiddleware picks a language per browser; here the study decides, so the survey views
switch language themselves, from the study row they have already loaded (no query of its own), in
one place: `survey_participant` (surveys/entry.py) for every token URL, and the few views
that know a study without a participant token (the recruitment link, a closed study's page).
`SurveyLanguageMiddleware` starts every request in settings.LANGUAGE_CODE and goes back to it after
the response, so that a thread that served a Spanish survey page serves the next researcher page in
English; an error page rendered after the view raised (500) is still in the study's language."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils import translation

from annotation import participant_services
from annotation.models import Participant, Study


def language_codes() -> tuple[str, ...]:
    """The languages a study may be run in (settings.LANGUAGES)."""
    return tuple(code for code, _ in settings.LANGUAGES)


def participant_language(*, study: Study, participant: Participant | None = None) -> str:
    """What a participant is shown: the language recorded on them when they first came (so that a
    study's language changed during fieldwork leaves a started participant as they were), else the
    study's."""
    if participant is not None and participant.language:
        return participant.language
    return study.language or settings.LANGUAGE_CODE


def survey_language_activate(
    request: HttpRequest, *, study: Study, participant: Participant | None = None
) -> str:
    """Switch this request to the study's participant-facing language (and record it on the
    participant at their first POST: consent, or a first answer); returns it. A GET writes nothing
    (tests/test_get_requests_do_not_write.py): every flow's first POST comes from a page shown in
    this same language, so the record is the language the participant saw."""
    language = participant_language(study=study, participant=participant)
    translation.activate(language)
    request.LANGUAGE_CODE = language  # type: ignore[attr-defined]
    if participant is not None and not participant.language and request.method == "POST":
        participant_services.participant_language_record(participant=participant, language=language)
    return language


def survey_language_guess(request: HttpRequest) -> str:
    """For a survey URL that names no study we know (an unknown or mistyped link): the browser's
    preferred language among settings.LANGUAGES (Accept-Language), else English."""
    language = translation.get_language_from_request(request)
    translation.activate(language)
    request.LANGUAGE_CODE = language  # type: ignore[attr-defined]
    return language


def survey_language_from_url(request: HttpRequest) -> str | None:
    """For a refusal answered before a survey view ran (a failed CSRF check, a rate limit): the
    language of the study the URL's participant token or recruitment slug names (one query, on
    these refusals only); None, leaving the language as it is, for any other URL."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.namespace != "surveys":
        return None
    study: Study | None = None
    participant: Participant | None = None
    if "token" in match.kwargs:
        participant = (
            Participant.objects.select_related("study").filter(token=str(match.kwargs["token"])).first()
        )
        study = participant.study if participant else None
    elif "slug" in match.kwargs:
        study = Study.objects.filter(slug=str(match.kwargs["slug"])).first()
    if study is None:
        return None
    language = participant_language(study=study, participant=participant)
    translation.activate(language)
    return language


class SurveyLanguageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        translation.activate(settings.LANGUAGE_CODE)
        try:
            response = self.get_response(request)
            if "Content-Language" not in response and translation.get_language() != settings.LANGUAGE_CODE:
                response["Content-Language"] = translation.get_language()
            return response
        finally:
            translation.activate(settings.LANGUAGE_CODE)
