"""The layperson survey (seed 003 Figure 1) in the browser, and the researcher's balance page. Views
parse the request, call one function of annotation/lay_flow.py, and render; access goes through
annotation/access.py.

Every answer is saved the moment it is given (htmx posts the panel form on each change; the
services make that idempotent) and the same form works without JavaScript (a plain POST saves the
whole panel and moves on). The other role's token, someone else's item, a closed study and bad
values get a 4xx page or fragment, never a 500; a change to a panel the participant has left is a
409 and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotation import lay_flow, protocol_texts, scales, services
from annotation.access import access_lay_item, access_study_for_user
from annotation.enrolment_limits import consent_limits, join_limits
from annotation.models import AttentionCheck, LayItem, Participant, Study
from annotation.views.entry import messages_of, study_unavailable, survey_participant

TEMPLATES = "annotation/lay/"
LAY = Participant.Role.LAYPERSON
SEVERITY_MARKER = "Severity levels:"


def _error(
    request: HttpRequest, message: str, status: int, *, participant: Participant | None = None
) -> HttpResponse:
    # An htmx autosave swaps the answer into the panel's save status, so it gets a fragment.
    template = "annotation/_error_fragment.html" if request.htmx else TEMPLATES + "error.html"
    return render(
        request,
        template,
        {"message": message, "status": status, "participant": participant},
        status=status,
    )


def lay_participant(*, require_open: bool = True) -> Callable:
    """Resolve `token` to a lay participant (of an open study unless told otherwise) and pass it on;
    a request the flow refuses for where the participant is (LayFlowError) is a 409."""
    return survey_participant(
        role=LAY, error=_error, require_open=require_open, refused=(lay_flow.LayFlowError,)
    )


def _to_step(participant: Participant, *, htmx: bool = False) -> HttpResponse:
    url = reverse("annotation:lay-start", kwargs={"token": participant.token})
    return HttpResponseClientRedirect(url) if htmx else redirect(url)


def _step_url(participant: Participant, step: lay_flow.LayStep) -> str:
    if step.kind == "item":
        return reverse(
            "annotation:lay-panel",
            kwargs={"token": participant.token, "item_id": step.item.pk, "panel": step.panel},
        )
    if step.kind == "check":
        return reverse("annotation:lay-check", kwargs={"token": participant.token, "check_id": step.check.pk})
    return reverse("annotation:lay-done", kwargs={"token": participant.token})


def _base_context(participant: Participant, **extra) -> dict:
    return {"participant": participant, "study": participant.study, "texts": protocol_texts, **extra}


# --- Entry, consent, background, instructions -----------------------------------------------------


@require_GET
@never_cache
@lay_participant(require_open=False)
def lay_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """Where an invite or recruitment link lands and where every step returns: sends the participant
    to exactly where they are (resume)."""
    if participant.completed_at is not None:
        return redirect("annotation:lay-done", token=participant.token)
    if not participant.study.is_open:
        return study_unavailable(request, participant.study)
    if participant.returned_at is not None:
        return _error(
            request,
            "This survey session was returned or withdrawn, so it cannot be continued. "
            "Thank you for your interest.",
            403,
            participant=participant,
        )
    if participant.declined_at is not None:
        return render(request, TEMPLATES + "declined.html", _base_context(participant))
    if participant.consented_at is None:
        return redirect("annotation:lay-consent", token=participant.token)
    if not LayItem.objects.filter(participant=participant).exists():
        if lay_flow.lay_background_pending(participant=participant):
            return redirect("annotation:lay-background", token=participant.token)
        return redirect("annotation:lay-instructions", token=participant.token)
    return redirect(_step_url(participant, lay_flow.lay_current_step(participant=participant)))


def _consent_text(study: Study) -> str:
    return study.lay_consent_text.strip() or protocol_texts.LAY_CONSENT_DEFAULT


@require_http_methods(["GET", "POST"])
@never_cache
@consent_limits
@lay_participant()
def lay_consent(request: HttpRequest, participant: Participant) -> HttpResponse:
    if participant.consented_at is not None or participant.completed_at is not None:
        return redirect("annotation:lay-start", token=participant.token)
    if request.method == "POST":
        choice = request.POST.get("choice")
        if choice not in ("accept", "decline"):
            return _error(request, "Please choose “I agree” or “I do not want to take part”.", 400)
        services.participant_consent(participant=participant, accepted=choice == "accept")
        if choice == "decline":
            return render(request, TEMPLATES + "declined.html", _base_context(participant))
        services.participant_touch(participant=participant)
        return redirect("annotation:lay-start", token=participant.token)
    context = _base_context(participant, consent_text=_consent_text(participant.study), action=request.path)
    return render(request, TEMPLATES + "consent.html", context)


@require_http_methods(["GET", "POST"])
@never_cache
@join_limits
def lay_join(request: HttpRequest, slug: str) -> HttpResponse:
    """The open recruitment link of a study (Prolific style: ?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…).
    The participant is created only once they consent; the same PID always resumes the same
    participant. Declining records a ConsentRefusal and nothing else."""
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        return _error(request, "There is no study at this link. Please check the link you were given.", 404)
    if not study.is_open:
        return study_unavailable(request, study)
    try:
        recruitment = lay_flow.recruitment_clean(request.GET)
    except ValidationError as exc:
        return _error(
            request, " ".join(messages_of(exc)) + " Please use the link exactly as you were given it.", 400
        )
    existing = lay_flow.lay_join_existing(study=study, recruitment=recruitment)
    if existing is not None and existing.role != LAY:
        return _error(
            request, "This link is for laypeople; your participant ID belongs to another role.", 403
        )
    if existing is not None and (request.method == "GET" or existing.consented_at is not None):
        return redirect("annotation:lay-start", token=existing.token)
    if request.method == "POST":
        choice = request.POST.get("choice")
        if choice not in ("accept", "decline"):
            return _error(request, "Please choose “I agree” or “I do not want to take part”.", 400)
        if choice == "decline":
            if existing is not None:
                services.participant_consent(participant=existing, accepted=False)
            else:
                services.consent_refusal_record(study=study, role=LAY)
            return render(request, TEMPLATES + "declined.html", {"study": study, "joined": True})
        try:
            participant = lay_flow.lay_participant_join(study=study, recruitment=recruitment)
        except lay_flow.LayFlowError as exc:
            return _error(request, " ".join(messages_of(exc)), 409)
        if participant.role != LAY:
            return _error(
                request, "This link is for laypeople; your participant ID belongs to another role.", 403
            )
        services.participant_consent(participant=participant, accepted=True)
        services.participant_touch(participant=participant)
        return redirect("annotation:lay-start", token=participant.token)
    context = {
        "study": study,
        "texts": protocol_texts,
        "consent_text": _consent_text(study),
        "action": request.get_full_path(),
        "joined": True,
    }
    return render(request, TEMPLATES + "consent.html", context)


def _require_consent(participant: Participant) -> HttpResponse | None:
    if participant.consented_at is None or participant.declined_at is not None:
        return redirect("annotation:lay-start", token=participant.token)
    return None


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_background(request: HttpRequest, participant: Participant) -> HttpResponse:
    if (early := _require_consent(participant)) is not None:
        return early
    questions = lay_flow.lay_background_questions(study=participant.study)
    if not questions or LayItem.objects.filter(participant=participant).exists():
        return redirect("annotation:lay-start", token=participant.token)
    services.participant_touch(participant=participant)
    errors: dict[str, list[str]] = {}
    values = dict(participant.background)
    if request.method == "POST":
        try:
            lay_flow.lay_background_save(participant=participant, data=request.POST)
            return redirect("annotation:lay-instructions", token=participant.token)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
            values = {q.key: request.POST.get(q.key, "") for q in questions}
    rows = [{"q": q, "value": values.get(q.key, ""), "errors": errors.get(q.key, [])} for q in questions]
    status = 400 if errors else 200
    return render(
        request, TEMPLATES + "background.html", _base_context(participant, rows=rows), status=status
    )


def _instructions_parts(study: Study) -> tuple[str, bool]:
    """The instruction text and whether it already lists the severity levels in prose; the page
    always shows them as a table (appendix A.2), so the default's prose list is cut."""
    text = study.lay_instructions.strip() or protocol_texts.LAY_INSTRUCTIONS_DEFAULT
    head, marker, _ = text.partition(SEVERITY_MARKER)
    return (head.rstrip() if marker else text), bool(marker)


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_instructions(request: HttpRequest, participant: Participant) -> HttpResponse:
    if (early := _require_consent(participant)) is not None:
        return early
    started = LayItem.objects.filter(participant=participant).exists()
    if request.method == "POST":
        if not started:
            lay_flow.lay_survey_start(participant=participant)
        return redirect("annotation:lay-start", token=participant.token)
    services.participant_touch(participant=participant)
    text, _ = _instructions_parts(participant.study)
    context = _base_context(
        participant,
        instructions=text,
        severity_levels=scales.SEVERITY.levels,
        started=started,
        progress=lay_flow.lay_progress(participant=participant) if started else None,
    )
    return render(request, TEMPLATES + "instructions.html", context)


# --- Panels ------------------------------------------------------------------------------------------


@dataclass
class Option:
    value: str
    label: str
    definition: str = ""
    checked: bool = False


@dataclass
class Question:
    name: str
    number: str
    text: str
    options: list[Option]
    multiple: bool = False
    errors: list[str] = field(default_factory=list)
    justification: str | None = None  # panel 3: the justification field's name
    justification_value: str = ""


QUESTION_NUMBERS = {
    "understanding": "Q1",
    "confidence": "Q2",
    "urgency_confidence": "Q2b",
    "severity_guess": "Q3",
    "helpfulness": "Q4",
}


def _questions(state: lay_flow.PanelState, errors: dict[str, list[str]]) -> list[Question]:
    study = state.item.participant.study
    if state.panel in (lay_flow.ORIGINAL, lay_flow.ASSISTED):
        questions = []
        for name in lay_flow.lay_panel_questions(study=study, panel=state.panel):
            scale = scales.LAY_SCALES[name]
            options = [
                Option(level.name, level.name, level.definition, state.answers.get(name) == level.name)
                for level in scale.levels
            ]
            questions.append(
                Question(name, QUESTION_NUMBERS[name], scale.question, options, errors=errors.get(name, []))
            )
        return questions
    questions = []
    for name, number, text, chosen in (
        ("most", "Q5", scales.PREFERENCE_MOST_QUESTION, state.most),
        ("least", "Q6", scales.PREFERENCE_LEAST_QUESTION, state.least),
    ):
        options = [Option(str(t.pk), label, "", t.pk in chosen) for label, t in state.texts]
        questions.append(
            Question(
                name,
                number,
                text,
                options,
                multiple=True,
                errors=errors.get(name, []),
                justification=f"{name}_justification",
                justification_value=getattr(state, f"{name}_justification"),
            )
        )
    return questions


def _locked_answers(state: lay_flow.PanelState) -> list[tuple[str, str, str]]:
    study = state.item.participant.study
    return [
        (QUESTION_NUMBERS[name], scales.LAY_SCALES[name].question, state.original_answers.get(name, "—"))
        for name in lay_flow.lay_panel_questions(study=study, panel=lay_flow.ORIGINAL)
    ]


def _render_panel(
    request: HttpRequest,
    participant: Participant,
    item: LayItem,
    panel: str,
    *,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    state = lay_flow.lay_panel_state(item=item, panel=panel)
    step = lay_flow.LayStep("item", item=item, panel=panel)
    context = _base_context(
        participant,
        item=item,
        panel=panel,
        state=state,
        panel_number=lay_flow.panel_number(panel),
        intro=protocol_texts.LAY_PANEL_INTROS[panel],
        questions=_questions(state, errors or {}),
        locked=_locked_answers(state) if panel == lay_flow.ASSISTED else [],
        justification_question=scales.JUSTIFICATION_QUESTION,
        progress=lay_flow.lay_progress(participant=participant, step=step),
        stamp=lay_flow.panel_stamp(item=item, panel=panel),
        general_errors=(errors or {}).get("", []) + (errors or {}).get("__all__", []),
    )
    return render(request, TEMPLATES + "panel.html", context, status=status)


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_panel(request: HttpRequest, participant: Participant, item_id: int, panel: str) -> HttpResponse:
    """One panel of one source. GET shows it (only the participant's current panel; anything else
    goes to where they are); an htmx POST autosaves the panel form; a plain POST saves it and moves
    on, or shows what is missing."""
    if panel not in lay_flow.PANELS:
        raise Http404("This page does not exist.")
    if (early := _require_consent(participant)) is not None:
        return early
    item = access_lay_item(participant=participant, item_id=item_id)
    services.participant_touch(participant=participant)
    step = lay_flow.lay_current_step(participant=participant)
    is_current = step.kind == "item" and step.item.pk == item.pk and step.panel == panel
    if request.method == "GET":
        if not is_current:
            return redirect(_step_url(participant, step))
        item = lay_flow.lay_panel_open(item=item, panel=panel)
        if lay_flow.lay_item_panel(item=item) != panel:  # the safety gate ended this source
            return _to_step(participant)
        return _render_panel(request, participant, item, panel)
    autosave = bool(request.htmx) and request.POST.get("autosave") == "1"
    if not is_current and lay_flow.lay_item_panel(item=item) == panel:
        # A later source (or one behind an attention check) answered ahead of time.
        return _error(request, "Please answer the current question first.", 409, participant=participant)
    if request.POST.get("elapsed_ms"):
        elapsed = lay_flow.elapsed_ms_clean(request.POST["elapsed_ms"])
    else:
        elapsed = lay_flow.panel_stamp_elapsed_ms(
            item=item, panel=panel, stamp=request.POST.get("rendered_at", "")
        )
    try:
        state = lay_flow.lay_panel_save(
            item=item, panel=panel, data=request.POST, time_spent_ms=elapsed, submit=not autosave
        )
    except (services.AnswerLocked, lay_flow.PanelClosed) as exc:
        message = (
            lay_flow.LOCKED_MESSAGE if isinstance(exc, services.AnswerLocked) else " ".join(messages_of(exc))
        )
        return _error(request, message, 409, participant=participant)
    except ValidationError as exc:
        if autosave:
            return render(
                request, "annotation/_error_fragment.html", {"messages": messages_of(exc)}, status=400
            )
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
        return _render_panel(request, participant, item, panel, errors=errors, status=400)
    if autosave:
        return render(request, TEMPLATES + "_saved.html", {"state": state})
    return _to_step(participant, htmx=bool(request.htmx))


# --- Attention checks, completion ----------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_check(request: HttpRequest, participant: Participant, check_id: int) -> HttpResponse:
    if (early := _require_consent(participant)) is not None:
        return early
    check = AttentionCheck.objects.filter(pk=check_id, study_id=participant.study_id).first()
    if check is None:
        raise Http404("This question is not part of your survey.")
    services.participant_touch(participant=participant)
    step = lay_flow.lay_current_step(participant=participant)
    if step.kind != "check" or step.check.pk != check.pk:
        if request.method == "POST":
            return _error(request, "This question has already been answered.", 409, participant=participant)
        return redirect(_step_url(participant, step))
    errors: list[str] = []
    if request.method == "POST":
        try:
            lay_flow.attention_check_answer(
                participant=participant, check=check, answer=request.POST.get("answer", "")
            )
            return _to_step(participant)
        except ValidationError as exc:
            errors = messages_of(exc)
    context = _base_context(
        participant,
        check=check,
        errors=errors,
        options=[str(o) for o in check.options],
        progress=lay_flow.lay_progress(participant=participant, step=step),
    )
    return render(request, TEMPLATES + "check.html", context, status=400 if errors else 200)


@require_GET
@never_cache
@lay_participant(require_open=False)
def lay_done(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The completion code (and the recruiter's return link); still shown after the study closed."""
    if participant.completed_at is None:
        if not participant.study.is_open:
            return study_unavailable(request, participant.study)
        if (early := _require_consent(participant)) is not None:
            return early
        if not LayItem.objects.filter(participant=participant).exists():
            return _to_step(participant)
        step = lay_flow.lay_current_step(participant=participant)
        if step.kind != "complete":
            return redirect(_step_url(participant, step))
        lay_flow.lay_survey_complete(participant=participant)
    context = _base_context(participant, completion_url=lay_flow.lay_completion_url(participant=participant))
    return render(request, TEMPLATES + "done.html", context)


# --- Researcher -------------------------------------------------------------------------------------


@require_GET
@never_cache
@staff_member_required
def lay_balance(request: HttpRequest, slug: str) -> HttpResponse:
    """Live Latin-square balance (panel-2 answers per source × system), what the safety gate
    withholds and why, and attention-check failures."""
    study = access_study_for_user(user=request.user, slug=slug)
    balance = lay_flow.lay_balance(study=study)
    table = [
        {"source": source, "cells": [balance.cells[(source.pk, system.pk)] for system in balance.systems]}
        for source in balance.sources
    ]
    totals = [sum(balance.cells[(so.pk, sy.pk)].answered for so in balance.sources) for sy in balance.systems]
    return render(
        request,
        TEMPLATES + "balance.html",
        {"balance": balance, "table": table, "totals": totals, "study": study},
    )
