"""The pairwise flow's pages. Views parse, call one service or selector, render; the token goes
through annotation.views.entry.survey_participant (either role: the study's pairwise instrument
says who answers). Works without JavaScript (a plain form POST); pairwise.js adds keys 1–4."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation import services
from annotation.models import Participant, StudyInstrument
from annotation.pairwise import selectors
from annotation.pairwise.services import pairwise_answer_save, pairwise_tasks_prepare
from annotation.views.entry import messages_of, survey_participant
from annotation.views.errors import survey_error_page
from instruments.schema import ItemKind
from instruments.validation import instrument_from_data

TEMPLATES = "annotation/pairwise/"


def _error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return survey_error_page(request, message, status)


# Resolve `token` to a participant of an open study (either role). A comparison page records the
# participant's activity (and their start); the start and end pages only read.
pairwise_flow = survey_participant(role=None, error=_error)
pairwise_page = survey_participant(role=None, error=_error, active=lambda participant: True)


def _instrument(participant: Participant) -> StudyInstrument:
    instrument = selectors.pairwise_flow_for(participant=participant)
    if instrument is None:
        raise Http404("This study has no pairwise comparison for you.")
    return instrument


@require_GET
@never_cache
@pairwise_flow
def pairwise_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The invite link lands here: the pages are drawn once (the only write, on the first visit),
    then the first unanswered one."""
    pairwise_tasks_prepare(participant=participant, instrument=_instrument(participant))
    for task, answer in selectors.pairwise_pages(participant=participant):
        if answer is None:
            return redirect("annotation:pairwise-task", token=participant.token, task_id=task.pk)
    return redirect("annotation:pairwise-done", token=participant.token)


@require_http_methods(["GET", "POST"])
@never_cache
@pairwise_page
def pairwise_task(request: HttpRequest, participant: Participant, task_id: int) -> HttpResponse:
    task = selectors.access_pairwise_task(participant=participant, task_id=task_id)
    errors: list[str] = []
    if request.method == "POST":
        try:
            pairwise_answer_save(
                task=task,
                choice=request.POST.get("choice", ""),
                reason=request.POST.get("reason", ""),
                time_spent_ms=_int(request.POST.get("time_spent_ms")),
            )
        except ValidationError as exc:
            errors = messages_of(exc)
        else:
            return redirect("annotation:pairwise-start", token=participant.token)
    pages = selectors.pairwise_pages(participant=participant)
    number = next(i for i, (other, _) in enumerate(pages, start=1) if other.pk == task.pk)
    saved = next(answer for other, answer in pages if other.pk == task.pk) or {}
    instrument = instrument_from_data(task.instrument.definition)
    language = participant.language or participant.study.language
    language = language if language in instrument.languages else instrument.default_language
    preference = next(item for item in instrument.items if item.kind is ItemKind.PAIRWISE)
    reason = next((item for item in instrument.items if item.kind is ItemKind.FREE_TEXT), None)
    context = {
        "participant": participant,
        "task": task,
        "number": number,
        "total": len(pages),
        "done": sum(1 for _, answer in pages if answer is not None),
        "question": preference.wording[language],
        "options": [(option.key, option.label[language]) for option in preference.options],
        "reason_label": reason.wording[language] if reason is not None else "",
        "reason_max_length": reason.max_length if reason is not None else 0,
        "language": language,
        "chosen": request.POST.get("choice", saved.get("choice", "")),
        "reason": request.POST.get("reason", saved.get("reason", "")),
        "errors": errors,
    }
    return render(request, TEMPLATES + "page.html", context, status=422 if errors else 200)


@require_GET
@never_cache
@pairwise_flow
def pairwise_done(request: HttpRequest, participant: Participant) -> HttpResponse:
    pages = selectors.pairwise_pages(participant=participant)
    if pages and all(answer is not None for _, answer in pages):
        services.participant_complete(participant=participant)
    return render(request, TEMPLATES + "done.html", {"participant": participant, "pages": pages})


def _int(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 0
