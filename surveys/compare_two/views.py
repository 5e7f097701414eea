"""The compare-two flow's pages. Views parse, call one service or selector, render; the token goes
through surveys.entry.survey_participant (either role: the study's pairwise instrument
says who answers). Consent comes first, as in the other flows. Works without JavaScript (a plain
form POST); compare_two.js adds keys 1–4. Every participant-facing word is in the study's language
(the decorator switches it; the instrument's wording is picked per language)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation import participant_services
from annotation.models import Participant, StudyInstrument
from annotation.qualification_gate import practice_first, practice_on_entry
from instruments.schema import Instrument, ItemKind
from instruments.validation import instrument_from_data
from surveys.compare_two import selectors
from surveys.compare_two.services import (
    pairwise_answer_save,
    pairwise_consent_accept,
    pairwise_tasks_prepare,
)
from surveys.entry import messages_of, survey_participant
from surveys.errors import survey_error_page

TEMPLATES = "surveys/compare_two/"

# radlay's own wording (no paper publishes one; the protocol's defaults describe other tasks),
# shown when the study has no consent text of its own for the participant's role.
PAIRWISE_CONSENT_DEFAULT = gettext_lazy(
    "You are invited to take part in a research study on making medical texts easier to "
    "understand.\n\n"
    "What you will do: on each page you will see a text and two simpler versions of it, side by "
    "side, and say which version would serve a patient better (or that both are equally good, or "
    "that neither is acceptable). Giving a reason is optional.\n\n"
    "Your answers: they are stored under a random code, not your name, and are reported as group "
    "results or under that code.\n\n"
    "Taking part is voluntary. You may stop at any time without giving a reason. If you have "
    "questions about the study, please contact the research team that invited you.\n\n"
    'By choosing "I agree" you confirm that you have read this information and agree to take part.'
)


def _error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return survey_error_page(request, message, status)


# Resolve `token` to a participant of an open study (either role). A comparison page records the
# participant's activity (and their start); the start and end pages only read.
pairwise_flow = survey_participant(role=None, error=_error)
pairwise_page = survey_participant(
    role=None, error=_error, active=lambda participant: participant.consented_at is not None
)


def _instrument(participant: Participant) -> StudyInstrument:
    instrument = selectors.pairwise_flow_for(participant=participant)
    if instrument is None:
        raise Http404(_("This study has no pairwise comparison for you."))
    return instrument


def _consented(participant: Participant) -> bool:
    return participant.consented_at is not None and participant.declined_at is None


def _language(participant: Participant, instrument: Instrument) -> str:
    """The instrument's wording in the participant's language, else in its default language."""
    language = participant.language or participant.study.language
    return language if language in instrument.languages else instrument.default_language


@require_GET
@never_cache
@pairwise_flow
def pairwise_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The invite link lands here: consent first; then the pages are drawn once (the only write, on
    the first visit after consenting), then the first unanswered one."""
    if not _consented(participant):
        return redirect("surveys:pairwise-consent", token=participant.token)
    if practising := practice_first(participant, flow="pairwise"):
        return practising
    pairwise_tasks_prepare(participant=participant, instrument=_instrument(participant))
    for task, answer in selectors.pairwise_pages(participant=participant):
        if answer is None:
            return redirect("surveys:pairwise-task", token=participant.token, task_id=task.pk)
    return redirect("surveys:pairwise-done", token=participant.token)


@require_http_methods(["GET", "POST"])
@never_cache
@pairwise_flow
def pairwise_consent(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The study's information and consent (the study's own text for the participant's role, else
    radlay's default); agreeing leads to the first comparison, declining is recorded."""
    stored = _instrument(participant)
    study = participant.study
    if request.method == "POST":
        if request.POST.get("choice") == "decline":
            participant_services.participant_consent(participant=participant, accepted=False)
            return render(request, TEMPLATES + "declined.html", {"participant": participant, "study": study})
        pairwise_consent_accept(participant=participant)
        if practising := practice_on_entry(participant, flow="pairwise"):
            return practising
        return redirect("surveys:pairwise-start", token=participant.token)
    instrument = instrument_from_data(stored.definition)
    own = study.expert_consent_text if participant.is_radiologist else study.lay_consent_text
    description = instrument.description.get(_language(participant, instrument), "")
    context = {
        "participant": participant,
        "study": study,
        "consent_text": own.strip() or str(PAIRWISE_CONSENT_DEFAULT),
        "instructions": (
            study.expert_instructions if participant.is_radiologist else study.lay_instructions
        ).strip(),
        "descriptions": [description] if description else [],
    }
    return render(request, TEMPLATES + "consent.html", context)


@require_http_methods(["GET", "POST"])
@never_cache
@pairwise_page
def pairwise_task(request: HttpRequest, participant: Participant, task_id: int) -> HttpResponse:
    if not _consented(participant):
        if request.method == "POST":
            return _error(request, _("Please read and agree to the study information first."), 409)
        return redirect("surveys:pairwise-consent", token=participant.token)
    if practising := practice_first(participant, flow="pairwise"):
        return practising
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
            return redirect("surveys:pairwise-start", token=participant.token)
    pages = selectors.pairwise_pages(participant=participant)
    number = next(i for i, (other, _) in enumerate(pages, start=1) if other.pk == task.pk)
    saved = next(answer for other, answer in pages if other.pk == task.pk) or {}
    instrument = instrument_from_data(task.instrument.definition)
    language = _language(participant, instrument)
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
    if not _consented(participant):
        return redirect("surveys:pairwise-consent", token=participant.token)
    pages = selectors.pairwise_pages(participant=participant)
    if pages and all(answer is not None for _, answer in pages):
        participant_services.participant_complete(participant=participant)
    return render(request, TEMPLATES + "done.html", {"participant": participant, "pages": pages})


def _int(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 0
