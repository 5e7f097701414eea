"""The layperson survey (seed 003 Figure 1) in the browser. Views parse the request, ask
`lay_next_step` where the participant is, call one function of surveys/lay/, and render; every
object they touch comes through annotation/access.py, and the participant's activity is recorded
by the token decorator.

Every answer is saved the moment it is given (htmx posts the panel form on each change; the
services make that idempotent) and the same form works without JavaScript (a plain POST saves the
whole panel and moves on). The other role's token, someone else's item, a closed study, a returned
participant and bad values get a 4xx page or fragment, never a 500; a change to a panel the
participant has left is a 409 and changes nothing."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotation import participant_services, protocol_texts, scales
from annotation.access import (
    access_attention_check,
    access_lay_item,
    access_participant,
    access_study_for_join,
)
from annotation.models import LayItem, Participant, Study
from annotation.qualification_gate import practice_on_entry
from annotation.wording import protocol_wording
from surveys.enrolment_limits import (
    consent_limits,
    join_limits,
    resume_blocked,
    resume_refusal_count,
)
from surveys.entry import messages_of, study_unavailable, survey_participant
from surveys.errors import survey_error_page
from surveys.lay import assignment, entry, panels, steps
from surveys.lay.errors import LayFlowError, PreferenceConflict
from surveys.lay.selectors import ASSISTED, PANELS, lay_background_questions, panel_number
from surveys.lay.steps import LayPanelSave, LayStep, lay_next_step, lay_progress, lay_standing
from surveys.survey_fragments import fragment_response
from surveys.survey_language import survey_language_activate, survey_language_guess

logger = logging.getLogger(__name__)

TEMPLATES = "surveys/lay/"
JOIN_COOKIE_SALT = "radlay.lay-join"
JOIN_COOKIE_AGE = 90 * 24 * 3600  # a study's fieldwork rarely outlasts three months
RESUME_REFUSED = gettext_lazy(
    "This participant ID has already started this study in another browser, so it cannot be "
    "continued from here. Please open the study again from your Prolific account (or the link you "
    "started with), in the browser you started in, or contact the researcher."
)
LAY = Participant.Role.LAYPERSON
SEVERITY_MARKER = "Severity levels:"
RETURNED_MESSAGE = gettext_lazy(
    "This survey session was returned or withdrawn, so it cannot be continued. Thank you for your interest."
)
SCREENED_MESSAGE = gettext_lazy(
    "This survey has ended for you, so answers are no longer accepted. Thank you for your time."
)


def _error(
    request: HttpRequest, message: str | Promise, status: int, *, participant: Participant | None = None
) -> HttpResponse:
    # An htmx autosave swaps the answer into the panel's save status, so it gets a fragment.
    message = str(message)  # a lazy translation, worded in the language now active
    if not request.htmx:  # type: ignore[attr-defined]
        resume = _start_url(participant) if participant else None
        return survey_error_page(request, message, status, resume_url=resume)
    return render(request, "surveys/_error_fragment.html", {"message": message}, status=status)


def _taking_part(participant: Participant) -> bool:
    return participant.consented_at is not None and participant.declined_at is None


def lay_participant(*, require_open: bool = True) -> Callable:
    """Resolve `token` to a lay participant (of an open study unless told otherwise) and pass it on;
    a request the flow refuses for where the participant is (LayFlowError) is a 409."""
    return survey_participant(
        role=LAY, error=_error, require_open=require_open, refused=(LayFlowError,), active=_taking_part
    )


@contextmanager
def _panel_of(
    request: HttpRequest, *, token: str, item_id: int, require_open: bool
) -> Iterator[LayPanelSave]:
    """A panel URL's participant. A save's (a POST: an autosave or the submit) is its first
    statement: the save's transaction begins here, and the token is resolved by the query that
    locks the item (steps.lay_panel_for_save); the view saves in that transaction and answers once
    it ended (a deferred answer, surveys/entry.py)."""
    if request.method != "POST":
        yield LayPanelSave(access_participant(token=token, role=LAY, require_open=require_open), int(item_id))
        return
    with transaction.atomic():
        yield steps.lay_panel_for_save(token=token, item_id=item_id, role=LAY, require_open=require_open)


# A panel URL: a save resolves the token and locks the item in one statement (_panel_of).
lay_panel_participant = survey_participant(
    role=LAY, error=_error, refused=(LayFlowError,), active=_taking_part, page=_panel_of
)


_STEP_PAGES = {
    steps.CONSENT: "surveys:lay-consent",
    steps.BACKGROUND: "surveys:lay-background",
    steps.INSTRUCTIONS: "surveys:lay-instructions",
    steps.COMPLETE: "surveys:lay-done",
    steps.COMPLETED: "surveys:lay-done",
}


def _step_url(participant: Participant, step: LayStep) -> str:
    """The page of a step; the steps that refuse (closed, returned, declined) are answered by the
    start page."""
    token = participant.token
    if step.kind == steps.ITEM:
        assert step.item is not None  # an item's step names it
        return reverse(
            "surveys:lay-panel", kwargs={"token": token, "item_id": step.item.pk, "panel": step.panel}
        )
    if step.kind == steps.CHECK:
        assert step.check is not None  # a check's step names it
        return reverse("surveys:lay-check", kwargs={"token": token, "check_id": step.check.pk})
    if step.kind == steps.PRACTICE:
        return reverse("qualification:practice", kwargs={"token": token, "flow": "lay"})
    return reverse(_STEP_PAGES.get(step.kind, "surveys:lay-start"), kwargs={"token": token})


def _go(url: str, *, htmx: bool) -> HttpResponse:
    return HttpResponseClientRedirect(url) if htmx else redirect(url)


def _start_url(participant: Participant) -> str:
    return reverse("surveys:lay-start", kwargs={"token": participant.token})


def _to_start(participant: Participant, *, htmx: bool = False) -> HttpResponse:
    return _go(_start_url(participant), htmx=htmx)


# A panel submitted by static/radlay/survey.js (`navigate`) asks for the next page in the response
# itself: one request instead of a submit, its redirect and the next page's GET. A rendered panel
# answers with its address in PAGE_HEADER (the script swaps the page in and puts that address in
# the browser's history); any other next page is a 204 whose LOCATION_HEADER the script loads.
NAVIGATE_HEADER = "X-Radlay-Navigate"
PAGE_HEADER = "X-Radlay-Page"
LOCATION_HEADER = "X-Radlay-Location"


def _navigating(request: HttpRequest) -> bool:
    return request.headers.get(NAVIGATE_HEADER) == "1"


def _to_next(request: HttpRequest, participant: Participant) -> HttpResponse:
    """After a panel or check is answered: straight to the participant's next page, as the start page
    would send them, without that round trip (whoever may not go on goes to the start page). A
    navigating submit gets the next panel itself."""
    step = lay_next_step(participant=participant)
    url = _step_url(participant, step) if step.in_survey else None
    if _navigating(request):
        if step.kind == steps.ITEM:
            if (shown := _shown_panel(request, participant, step)) is not None:
                return shown
            url = None  # the safety gate ended this source: the start page knows what follows
        response = HttpResponse(status=204)
        response[LOCATION_HEADER] = url or _start_url(participant)
        return response
    if url is None:
        return _to_start(participant, htmx=bool(request.htmx))
    return _go(url, htmx=bool(request.htmx))


def _refusal(request: HttpRequest, participant: Participant, step: LayStep) -> HttpResponse | None:
    """The answer to a participant who may not answer any more (study closed, returned, declined);
    None for everyone else."""
    if step.kind == steps.CLOSED:
        if request.htmx:
            return _error(request, _("This study is not open: answers are no longer accepted."), 403)
        return study_unavailable(request, participant.study, participant)
    if step.kind == steps.RETURNED:
        return _error(request, RETURNED_MESSAGE, 403, participant=participant)
    if step.kind == steps.SCREENED:
        if request.htmx:
            return _error(request, SCREENED_MESSAGE, 403)
        return render(request, TEMPLATES + "screened.html", _base_context(participant))
    if step.kind == steps.DECLINED:
        return render(request, TEMPLATES + "declined.html", _base_context(participant))
    return None


def _base_context(participant: Participant, **extra) -> dict:
    return {"participant": participant, "study": participant.study, "texts": protocol_texts, **extra}


# --- Entry, consent, background, instructions -----------------------------------------------------


@require_GET
@never_cache
@lay_participant(require_open=False)
def lay_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """Where an invite or recruitment link lands and where every step returns: sends the participant
    to exactly where they are (resume)."""
    step = lay_next_step(participant=participant)
    return _refusal(request, participant, step) or redirect(_step_url(participant, step))


def _consent_text(study: Study) -> str:
    # The default in the language this request was switched to (the study's).
    return study.lay_consent_text.strip() or protocol_wording("lay_consent", translation.get_language())


def _consent_choice(request: HttpRequest) -> str | None:
    choice = request.POST.get("choice")
    return choice if choice in ("accept", "decline") else None


CHOICE_MESSAGE = gettext_lazy("Please choose “I agree” or “I do not want to take part”.")


@require_http_methods(["GET", "POST"])
@never_cache
@consent_limits
@lay_participant()
def lay_consent(request: HttpRequest, participant: Participant) -> HttpResponse:
    if lay_next_step(participant=participant).kind not in (steps.CONSENT, steps.DECLINED):
        return redirect("surveys:lay-start", token=participant.token)
    if request.method == "POST":
        if (choice := _consent_choice(request)) is None:
            return _error(request, CHOICE_MESSAGE, 400)
        participant_services.participant_consent(participant=participant, accepted=choice == "accept")
        if choice == "decline":
            return render(request, TEMPLATES + "declined.html", _base_context(participant))
        return redirect("surveys:lay-start", token=participant.token)
    context = _base_context(participant, consent_text=_consent_text(participant.study), action=request.path)
    return render(request, TEMPLATES + "consent.html", context)


def _join_cookie(participant: Participant) -> tuple[str, str]:
    """The join cookie's name and path: one per study, sent back only to its recruitment link."""
    slug = participant.study.slug
    return f"radlay_join_{slug}", reverse("surveys:lay-join", kwargs={"slug": slug})


def _started_in_this_browser(request: HttpRequest, participant: Participant) -> bool:
    name, _ = _join_cookie(participant)
    value = request.get_signed_cookie(name, default=None, salt=JOIN_COOKIE_SALT, max_age=JOIN_COOKIE_AGE)
    return value == str(participant.pk)


def _remember_browser(response: HttpResponse, participant: Participant) -> HttpResponse:
    """Mark this browser as the one that joined as `participant`, so that the same link resumes
    here and nowhere else without Prolific's SESSION_ID. A signed cookie of its own rather than the
    session: no session row is written for every participant who joins."""
    name, path = _join_cookie(participant)
    response.set_signed_cookie(
        name,
        str(participant.pk),
        salt=JOIN_COOKIE_SALT,
        max_age=JOIN_COOKIE_AGE,
        path=path,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


@require_http_methods(["GET", "POST"])
@never_cache
@join_limits
def lay_join(request: HttpRequest, slug: str) -> HttpResponse:
    """The open recruitment link of a study (Prolific style: ?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…).
    The participant is created only once they consent; a PID the study knows resumes that
    participant only from the browser that started or with the same SESSION_ID (never a second
    participant for the PID). Declining records a ConsentRefusal and nothing else."""
    try:
        study = access_study_for_join(slug=slug)
    except Http404 as exc:
        survey_language_guess(request)
        return _error(request, str(exc), 404)
    survey_language_activate(request, study=study)
    if not study.is_open:
        return study_unavailable(request, study)
    try:
        recruitment = entry.recruitment_clean(request.GET)
    except ValidationError as exc:
        return _error(
            request,
            " ".join([*messages_of(exc), _("Please use the link exactly as you were given it.")]),
            400,
        )
    existing = entry.lay_join_existing(study=study, recruitment=recruitment)
    if existing is not None:
        if (blocked := resume_blocked(request)) is not None:
            return blocked
        if not entry.lay_resume_allowed(
            participant=existing,
            recruitment=recruitment,
            started_in_this_browser=_started_in_this_browser(request, existing),
            agreeing=request.method == "POST" and request.POST.get("choice") == "accept",
        ):
            resume_refusal_count(request)
            logger.warning(
                "Resumption refused on study %s for participant ID sha256:%s: not the browser that "
                "started, and no matching SESSION_ID",
                study.slug,
                hashlib.sha256(existing.external_id.encode()).hexdigest()[:12],
            )
            return _error(request, RESUME_REFUSED, 403)
    if existing is not None and existing.role != LAY:
        return _error(
            request, _("This link is for laypeople; your participant ID belongs to another role."), 403
        )
    if existing is not None and (request.method == "GET" or existing.consented_at is not None):
        return _remember_browser(redirect("surveys:lay-start", token=existing.token), existing)
    if request.method == "POST":
        if (choice := _consent_choice(request)) is None:
            return _error(request, CHOICE_MESSAGE, 400)
        if choice == "decline":
            if existing is not None:
                participant_services.participant_consent(participant=existing, accepted=False)
            else:
                participant_services.consent_refusal_record(study=study, role=LAY)
            return render(request, TEMPLATES + "declined.html", {"study": study, "joined": True})
        try:
            participant = entry.lay_participant_join(study=study, recruitment=recruitment)
        except LayFlowError as exc:
            return _error(request, " ".join(messages_of(exc)), 403)
        return _remember_browser(redirect("surveys:lay-start", token=participant.token), participant)
    context = {
        "study": study,
        "texts": protocol_texts,
        "consent_text": _consent_text(study),
        "action": request.get_full_path(),
        "joined": True,
    }
    return render(request, TEMPLATES + "consent.html", context)


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_background(request: HttpRequest, participant: Participant) -> HttpResponse:
    questions = lay_background_questions(study=participant.study)
    step = lay_next_step(participant=participant)
    if not questions or step.kind not in (steps.BACKGROUND, steps.INSTRUCTIONS):
        return redirect("surveys:lay-start", token=participant.token)
    errors: dict[str, list[str]] = {}
    values = dict(participant.background)
    if request.method == "POST":
        try:
            entry.lay_background_save(participant=participant, data=request.POST)
            return redirect("surveys:lay-instructions", token=participant.token)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
            values = {q.key: request.POST.get(q.key, "").replace("\x00", "") for q in questions}
    rows = [{"q": q, "value": values.get(q.key, ""), "errors": errors.get(q.key, [])} for q in questions]
    status = 400 if errors else 200
    return render(
        request, TEMPLATES + "background.html", _base_context(participant, rows=rows), status=status
    )


def _instructions_parts(study: Study) -> tuple[str, bool]:
    """The instruction text and whether it already lists the severity levels in prose; the page
    always shows them as a table (appendix A.2), so the default's prose list is cut."""
    language = translation.get_language()
    text = study.lay_instructions.strip() or protocol_wording("lay_instructions", language)
    marker_text = protocol_wording("severity_levels_heading", language)
    head, marker, _rest = text.partition(marker_text)
    if not marker and marker_text != SEVERITY_MARKER:  # a study's own English text in another language
        head, marker, _rest = text.partition(SEVERITY_MARKER)
    return (head.rstrip() if marker else text), bool(marker)


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_instructions(request: HttpRequest, participant: Participant) -> HttpResponse:
    step = lay_next_step(participant=participant)
    if not step.in_survey:
        return redirect("surveys:lay-start", token=participant.token)
    started = step.kind not in (steps.BACKGROUND, steps.INSTRUCTIONS)
    if request.method == "POST":
        if not started:
            assignment.lay_survey_start(participant=participant)
            if practising := practice_on_entry(participant, flow="lay"):
                return practising
        return redirect("surveys:lay-start", token=participant.token)
    text, _ = _instructions_parts(participant.study)
    context = _base_context(
        participant,
        instructions=text,
        severity_levels=scales.SEVERITY.levels,
        started=started,
        progress=lay_progress(participant=participant, step=step) if started else None,
    )
    return render(request, TEMPLATES + "instructions.html", context)


# --- Panels ------------------------------------------------------------------------------------------


def _render_panel(
    request: HttpRequest,
    participant: Participant,
    item: LayItem,
    panel: str,
    *,
    errors: dict[str, list[str]] | None = None,
    conflicts: dict[str, dict[int, str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    state = panels.lay_panel_state(item=item, panel=panel)
    step = LayStep(steps.ITEM, item=item, panel=panel)
    errors = errors or {}
    questions = panels.panel_questions(state, errors, conflicts)
    context = _base_context(
        participant,
        item=item,
        panel=panel,
        state=state,
        panel_number=panel_number(panel),
        intro=protocol_wording(f"intro:{panel}", translation.get_language()),
        questions=questions,
        first_error=next((q.name for q in questions if q.errors), None),
        locked=panels.locked_answers(state) if panel == ASSISTED else [],
        justification_question=protocol_wording("question:justification", translation.get_language()),
        progress=lay_progress(participant=participant, step=step),
        stamp=panels.panel_stamp(item=item, panel=panel),
        panel_url=reverse(
            "surveys:lay-panel", kwargs={"token": participant.token, "item_id": item.pk, "panel": panel}
        ),
        general_errors=errors.get("", []) + errors.get("__all__", []),
    )
    response = render(request, TEMPLATES + "panel.html", context, status=status)
    if _navigating(request):
        response[PAGE_HEADER] = context["panel_url"]
    return response


def _shown_panel(request: HttpRequest, participant: Participant, step: LayStep) -> HttpResponse | None:
    """The participant's current panel, opened (panels.lay_panel_open) and rendered; None when
    opening it ended the source (the safety gate withheld every text)."""
    assert step.item is not None and step.panel is not None  # an item's step names both
    item = panels.lay_panel_open(item=step.item, panel=step.panel)
    if item.stage != step.panel:
        return None
    return _render_panel(request, participant, item, step.panel)


@require_http_methods(["GET", "POST"])
@never_cache
@lay_panel_participant
def lay_panel(
    request: HttpRequest, participant: Participant, found: LayPanelSave, panel: str
) -> HttpResponse | Callable[[], HttpResponse]:
    """One panel of one source. GET shows it (only the participant's current panel; anything else
    goes to where they are); an htmx POST autosaves the panel form; a plain POST saves it and moves
    on, or shows what is missing."""
    item_id = found.item_id
    if panel not in PANELS:
        raise Http404(_("This page does not exist."))
    if request.method == "POST":
        return _panel_save(request, participant, found, panel)
    step = lay_next_step(participant=participant)
    if not step.in_survey:
        return _refusal(request, participant, step) or _to_start(participant, htmx=bool(request.htmx))
    if not step.is_panel(item_id=item_id, panel=panel):
        access_lay_item(participant=participant, item_id=item_id)  # someone else's item is a 404
        return redirect(_step_url(participant, step))
    return _shown_panel(request, participant, step) or _to_start(participant)


def _panel_save(
    request: HttpRequest, participant: Participant, found: LayPanelSave, panel: str
) -> Callable[[], HttpResponse]:
    """Save the panel in the transaction that locked its item (_panel_of); the answer (a refusal,
    the panel with what is missing, where to go next) once that transaction ended: committed, or
    rolled back by a refusal raised inside the save."""
    item_id = found.item_id
    # A save asks where the participant is itself, under the item's row lock (panels.py).
    step = lay_standing(participant=participant)
    if step is not None and not step.in_survey:
        htmx = bool(request.htmx)  # type: ignore[attr-defined]
        return lambda: _refusal(request, participant, step) or _to_start(participant, htmx=htmx)
    autosave = bool(request.htmx) and request.POST.get("autosave") == "1"  # type: ignore[attr-defined]
    try:
        panels.lay_panel_save(
            participant=participant,
            item_id=item_id,
            panel=panel,
            data=request.POST,
            time_spent_ms=panels.panel_elapsed_ms(item_id=item_id, panel=panel, data=request.POST),
            submit=not autosave,
            locked=found.locked,
        )
    except LayFlowError as exc:
        message = " ".join(messages_of(exc))
        return lambda: _error(request, message, 409, participant=participant)
    except ValidationError as exc:
        # A refused overlapping tick (panel 3) names its box; the rest of that save is stored.
        conflicts = exc.conflicts if isinstance(exc, PreferenceConflict) else {}
        if autosave:
            context = {"messages": messages_of(exc), "conflicts": conflicts}
            template = TEMPLATES + "_conflict.html" if conflicts else "surveys/_error_fragment.html"
            return lambda: render(request, template, context, status=400)
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
        return lambda: _render_panel(
            request,
            participant,
            access_lay_item(participant=participant, item_id=item_id),
            panel,
            errors=errors,
            conflicts=conflicts,
            status=400,
        )
    if autosave:
        return lambda: fragment_response(TEMPLATES + "_saved.html", {}, key=())
    return lambda: _to_next(request, participant)


# --- Attention checks, completion ----------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@never_cache
@lay_participant()
def lay_check(request: HttpRequest, participant: Participant, check_id: int) -> HttpResponse:
    check = access_attention_check(participant=participant, check_id=check_id)
    step = lay_next_step(participant=participant)
    if not step.in_survey:
        return _refusal(request, participant, step) or redirect("surveys:lay-start", token=participant.token)
    if step.kind != steps.CHECK or step.check is None or step.check.pk != check.pk:
        if request.method == "POST":
            return _error(
                request, _("This question has already been answered."), 409, participant=participant
            )
        return redirect(_step_url(participant, step))
    errors: list[str] = []
    if request.method == "POST":
        try:
            entry.attention_check_answer(
                participant=participant, check=check, answer=request.POST.get("answer", "")
            )
            return _to_next(request, participant)
        except ValidationError as exc:
            errors = messages_of(exc)
    context = _base_context(
        participant,
        check=check,
        errors=errors,
        options=[str(o) for o in check.options],
        progress=lay_progress(participant=participant, step=step),
    )
    return render(request, TEMPLATES + "check.html", context, status=400 if errors else 200)


@require_GET
@never_cache
@lay_participant(require_open=False)
def lay_done(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The completion code (and the recruiter's return link); still shown after the study closed."""
    step = lay_next_step(participant=participant)
    if step.kind == steps.COMPLETE:
        entry.lay_survey_complete(participant=participant)
    elif step.kind != steps.COMPLETED:
        if step.kind == steps.CLOSED:
            return study_unavailable(request, participant.study, participant)
        return redirect(_step_url(participant, step))
    context = _base_context(participant, completion_url=entry.lay_completion_url(participant=participant))
    return render(request, TEMPLATES + "done.html", context)
