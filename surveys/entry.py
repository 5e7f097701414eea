"""The participants' front door: `/s/<token>/` (which sends a participant to their role's flow),
and what both survey flows' views share: resolving the token of every survey URL to a participant
and answering the access errors with the same clear 4xx pages."""

from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import participant_services
from annotation.access import SurveyClosed, WrongFlow, access_participant
from annotation.models import Participant
from surveys.compare_two.selectors import pairwise_flow_for
from surveys.errors import study_unavailable, survey_link_invalid
from surveys.rate_each_pair.selectors import pairs_participant
from surveys.survey_language import survey_language_activate, survey_language_guess

__all__ = ["activity_touch", "messages_of", "participant_entry", "study_unavailable", "survey_participant"]

# A flow's error page: (request, message, status) -> response (a fragment for htmx requests).
ErrorPage = Callable[[HttpRequest, str, int], HttpResponse]
# What a view answers: a response, or a callable that makes it once the page's context ended.
Answer = HttpResponse | Callable[[], HttpResponse]
# Activity is recorded at most this often: it only decides, at a granularity of minutes
# (Study.abandon_after_minutes), whether a participant still holds their Latin-square row, so an
# autosave every few seconds need not write the participant row each time.
TOUCH_INTERVAL = timedelta(seconds=30)


def participant_entry(request: HttpRequest, token: str) -> HttpResponse:
    try:
        participant = access_participant(token=token)
    except SurveyClosed as closed:
        return study_unavailable(request, closed.study, closed.participant)
    except Http404:
        return survey_link_invalid(request)
    survey_language_activate(request, study=participant.study, participant=participant)
    if pairs_participant(participant):
        return redirect("surveys:pairs-start", token=token)
    # A pairwise study (surveys/compare_two/) sends the roles its instrument asks to that flow.
    if pairwise_flow_for(participant=participant) is not None:
        return redirect("surveys:pairwise-start", token=token)
    if participant.role == Participant.Role.RADIOLOGIST:
        return redirect("surveys:expert-start", token=token)
    return redirect("surveys:lay-start", token=token)


def messages_of(exc: ValidationError) -> list[str]:
    """Every message of a ValidationError, whether it is keyed by field or not."""
    if hasattr(exc, "error_dict"):
        return [message for messages in exc.message_dict.values() for message in messages]
    return list(exc.messages)


def survey_participant(
    *,
    role: str | None,
    error: ErrorPage,
    require_open: bool = True,
    refused: tuple[type[ValidationError], ...] = (),
    active: Callable[[Participant], bool] | None = None,
    page: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Answer]], Callable[..., HttpResponse]]:
    """A view decorator: resolve `token` to a participant of `role` (None: any role; of an open
    study unless told otherwise) and pass it on instead. A closed study, the other role's token
    and a missing page become 403/404 answers; the flow's own refusals (`refused`) become 409
    with their messages.

    The request is switched to the study's language here (surveys/survey_language.py), from the
    participant's study row just loaded, before the view runs and before any refusal is worded.

    The participant's activity (started_at, last_activity_at) is recorded here and nowhere else in
    the views: after a view answered, when `active(participant)` says the flow counts the
    participant as taking part (e.g. consented); None leaves it to the flow.

    With `page` ((request, token, item_id, require_open) -> a context manager that gives an object
    with its `participant`, e.g. the radiologist's page), the URL's `item_id` is resolved together
    with the token, and the view gets (request, participant, page, **rest), run inside that context
    (where a save's transaction may begin with the look-up itself). Such a view may answer with a
    callable instead of a response: it is called once that context ended (the transaction
    committed, or rolled back by a refusal), for an answer that reads the database again."""

    def decorate(view: Callable[..., Answer]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, token: str, **kwargs) -> HttpResponse:
            located = False  # whether the request already speaks the study's language
            try:
                answer: Answer
                if page is None:
                    participant = access_participant(token=token, role=role, require_open=require_open)
                    survey_language_activate(request, study=participant.study, participant=participant)
                    located = True
                    answer = view(request, participant, **kwargs)
                else:
                    item_id = kwargs.pop("item_id")
                    with page(request, token=token, item_id=item_id, require_open=require_open) as found:
                        participant = found.participant
                        survey_language_activate(request, study=participant.study, participant=participant)
                        located = True
                        answer = view(request, participant, found, **kwargs)
                # A deferred answer: read once the page's context (a save's transaction) ended.
                response = answer() if callable(answer) else answer
                if active is not None and active(participant):
                    activity_touch(participant)
                return response
            except SurveyClosed as closed:
                survey_language_activate(request, study=closed.study)
                if request.htmx:
                    if closed.study.status == closed.study.Status.PAUSED:
                        return error(
                            request,
                            _(
                                "The survey is paused: this answer was not saved. Your earlier answers "
                                "are kept; open your link again once the survey is reopened."
                            ),
                            403,
                        )
                    return error(request, _("This study is not open: answers are no longer accepted."), 403)
                return study_unavailable(request, closed.study, closed.participant)
            except WrongFlow as exc:
                survey_language_activate(request, study=exc.participant.study)
                message = _("%(refusal)s Please open the link you were sent for your own survey.") % {
                    "refusal": exc.message()
                }
                return error(request, message, 403)
            except Http404 as exc:
                if not located:
                    survey_language_guess(request)
                return error(request, str(exc) or _("This page does not exist."), 404)
            except refused as exc:
                return error(request, " ".join(messages_of(exc)), 409)

        return wrapper

    return decorate


def activity_touch(participant: Participant) -> None:
    """Record the participant's activity, at most once per TOUCH_INTERVAL."""
    last = participant.last_activity_at
    if participant.started_at is None or last is None or timezone.now() - last >= TOUCH_INTERVAL:
        participant_services.participant_touch(participant=participant)
