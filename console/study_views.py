"""The console's set-up pages of a study: create, configure (settings,
texts with their preview, background questions and attention checks as rows), duplicate, open /
pilot / pause / close, preview the surveys and the pilot's participants. Each POST parses a form
and calls one service of studies/study_services.py; editors and owners only
(access_study(need="edit"))."""

from __future__ import annotations

import contextlib

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation import protocol_texts
from annotation.access import access_study, access_study_create, researcher_login_required
from annotation.models import Participant, Study
from annotation.selectors import counted_participants
from console.forms import (
    AttentionCheckFormSet,
    BackgroundFormSet,
    StudyDuplicateForm,
    StudySettingsForm,
)
from console.study_kind_forms import StudyKindCreateForm
from evaluation.exports.study_answers import answer_counts
from studies.study_kind_services import study_create_as
from studies.study_kinds import study_kinds
from studies.study_services import (
    pilot_participants,
    pilot_participants_discard,
    preview_participant_create,
    study_close,
    study_configure,
    study_duplicate,
    study_open,
    study_pause,
    study_pilot_start,
)

TEMPLATES = "console/"
BACKGROUND_PREFIX, CHECKS_PREFIX = "background", "checks"


def _messages_of(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [message for messages_ in exc.message_dict.values() for message in messages_]
    return list(exc.messages)


def _put_errors(form, exc: ValidationError) -> None:
    """A service's refusal shown beside the field it names (or above the form)."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    access_study_create(user=request.user)
    form = StudyKindCreateForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = study_create_as(
                slug=data["slug"],
                title=data["title"],
                actor=request.user,
                settings={"unit": data["unit"], "language": data["language"]},
                kind=data["kind"],
                instrument=data.get("instrument"),
            )
        except ValidationError as exc:
            _put_errors(form, exc)
        else:
            messages.success(
                request, f"Study {study.slug} created. Configure it below, then upload its sources."
            )
            return redirect("console:study-setup", slug=study.slug)
    status = 400 if form.is_bound else 200
    context = {"form": form, "kinds": study_kinds()}
    return render(request, TEMPLATES + "study_new.html", context, status=status)


def _setup_forms(data, study: Study):
    # The form validates onto a copy of its own: the page's previews show the saved study.
    return (
        StudySettingsForm(data, instance=Study.objects.get(pk=study.pk)),
        BackgroundFormSet(data, prefix=BACKGROUND_PREFIX, initial=BackgroundFormSet.initial_of(study)),
        AttentionCheckFormSet(data, prefix=CHECKS_PREFIX, initial=AttentionCheckFormSet.initial_of(study)),
    )


def _with_row_added(request: HttpRequest, prefix: str):
    """The POST with one more blank row of `prefix` (the "Add a row" buttons: no JavaScript)."""
    data = request.POST.copy()
    key = f"{prefix}-TOTAL_FORMS"
    # A tampered count: the formset reports its management form as invalid.
    with contextlib.suppress(ValueError):
        data[key] = str(int(data.get(key, "0")) + 1)
    return data


@researcher_login_required
@require_http_methods(["GET", "POST"])
def study_setup(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    if request.method == "GET":
        forms = _setup_forms(None, study)
        return render(request, TEMPLATES + "study_setup.html", _setup_context(study, *forms, unsaved=False))
    add = request.POST.get("add_row", "")
    if add in (BACKGROUND_PREFIX, CHECKS_PREFIX):
        # Nothing is saved yet: the page comes back with what was typed and one more blank row.
        forms = _setup_forms(_with_row_added(request, add), study)
        return render(request, TEMPLATES + "study_setup.html", _setup_context(study, *forms, unsaved=True))
    settings_form, background, checks = _setup_forms(request.POST, study)
    if all([settings_form.is_valid(), background.is_valid(), checks.is_valid()]):
        changes = {**settings_form.cleaned_data, "background_questions": background.questions()}
        try:
            changed = study_configure(
                study=study, actor=request.user, settings=changes, attention_checks=checks.checks()
            )
        except ValidationError as exc:
            _put_errors(settings_form, exc)
        else:
            if changed:
                messages.success(request, "Saved: " + ", ".join(n.replace("_", " ") for n in changed) + ".")
            else:
                messages.info(request, "Nothing was changed.")
            return redirect("console:study-setup", slug=study.slug)
    context = _setup_context(study, settings_form, background, checks, unsaved=True)
    return render(request, TEMPLATES + "study_setup.html", context, status=400)


# The settings form's fields, grouped as the page shows them.
SETTINGS_GROUPS = (
    ("The study", ("title", "description", "unit", "language")),
    ("How much each participant sees", ("lay_sources_per_participant", "expert_sources_per_participant")),
    (
        "What participants read",
        ("lay_consent_text", "lay_instructions", "expert_consent_text", "expert_instructions"),
    ),
    ("Shown with the consent text", ("expected_duration_minutes", "ethics_approval", "consent_contact")),
    (
        "The lay survey",
        ("safety_gate_enabled", "safety_gate_threshold", "ask_urgency", "abandon_after_minutes"),
    ),
    (
        "Recruitment (e.g. Prolific)",
        (
            "completion_redirect_url",
            "decline_redirect_url",
            "screen_out_after_failed_checks",
            "screened_out_redirect_url",
        ),
    ),
)
TEXT_FIELDS = {
    "lay_consent_text",
    "lay_instructions",
    "expert_consent_text",
    "expert_instructions",
    "description",
}


def _setup_context(study: Study, settings_form, background, checks, *, unsaved: bool) -> dict:
    counts = {
        "sources": study.sources.count(),
        "systems": study.systems.count(),
        "pilot": pilot_participants(study=study).count(),
        "started": Participant.objects.filter(counted_participants(), study=study)
        .filter(Q(started_at__isnull=False) | Q(consented_at__isnull=False))
        .count(),
    }
    # The saved texts as participants see them (the protocol's default where the study has none).
    shown = {
        "lay_consent": study.lay_consent_text.strip() or protocol_texts.LAY_CONSENT_DEFAULT,
        "lay_instructions": study.lay_instructions.strip() or protocol_texts.LAY_INSTRUCTIONS_DEFAULT,
        "expert_consent": study.expert_consent_text.strip() or protocol_texts.EXPERT_CONSENT_DEFAULT,
        "expert_instructions": study.expert_instructions.strip(),
    }
    return {
        "study": study,
        "form": settings_form,
        "groups": [
            (title, [(settings_form[name], name in TEXT_FIELDS) for name in names])
            for title, names in SETTINGS_GROUPS
        ],
        "status_buttons": STATUS_BUTTONS[study.status],
        "background": background,
        "checks": checks,
        "counts": counts,
        "shown": shown,
        "texts": protocol_texts,
        "unsaved": unsaved,
        "roles": Participant.Role.choices,
    }


# What the status card offers in each status (pilot participants are discarded on the pilot page).
STATUS_BUTTONS: dict[str, list[tuple[str, str]]] = {
    Study.Status.DRAFT: [("pilot", "Start a pilot"), ("open", "Open")],
    Study.Status.PILOT: [("open", "Open")],
    Study.Status.OPEN: [("pause", "Pause"), ("close", "Close")],
    Study.Status.PAUSED: [("open", "Resume (reopen)"), ("close", "Close")],
    Study.Status.CLOSED: [("open", "Reopen")],
}
STATUS_ACTIONS = {
    "open": (study_open, "opened"),
    "pilot": (study_pilot_start, "in pilot"),
    "pause": (study_pause, "paused"),
    "close": (study_close, "closed"),
}


@researcher_login_required
@require_POST
def study_status(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    action = request.POST.get("action", "")
    if action not in STATUS_ACTIONS:
        messages.error(request, f"Unknown action {action!r}: one of {', '.join(STATUS_ACTIONS)}.")
        return redirect("console:study-setup", slug=study.slug)
    if action == "close" and request.POST.get("confirmed") != "yes":
        # Closing refuses every further answer: the page asks once more, with what it stops.
        context = {"study": study, "counts": answer_counts(study=study)}
        return render(request, TEMPLATES + "study_close_confirm.html", context)
    service, said = STATUS_ACTIONS[action]
    try:
        changed = service(study=study, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(_messages_of(exc)))
    else:
        messages.success(request, f"The study is {said}." if changed else f"The study was {said} already.")
    return redirect("console:study-setup", slug=study.slug)


@researcher_login_required
@require_POST
def study_preview(request: HttpRequest, slug: str, role: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    try:
        participant = preview_participant_create(study=study, role=role, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(_messages_of(exc)))
        return redirect("console:study-setup", slug=study.slug)
    return redirect("surveys:entry", token=participant.token)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def study_pilot(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    status = 200
    if request.method == "POST":
        try:
            expected = int(request.POST.get("expected", ""))
        except ValueError:
            messages.error(request, "Confirm how many pilot participants to discard.")
            status = 400
        else:
            try:
                n = pilot_participants_discard(study=study, actor=request.user, expected=expected)
            except ValidationError as exc:
                messages.error(request, " ".join(_messages_of(exc)))
                status = 400
            else:
                messages.success(request, f"{n} pilot participant(s) and their answers were deleted.")
                return redirect("console:study-pilot", slug=study.slug)
    context = {"study": study, "pilots": pilot_participants(study=study).select_related(None)}
    return render(request, TEMPLATES + "study_pilot.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def study_copy(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    access_study_create(user=request.user)
    initial = {"title": f"{study.title} (copy)", "slug": f"{study.slug}-copy"[:80]}
    form = StudyDuplicateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            copy = study_duplicate(
                study=study,
                slug=form.cleaned_data["slug"],
                title=form.cleaned_data["title"],
                actor=request.user,
            )
        except ValidationError as exc:
            _put_errors(form, exc)
        else:
            messages.success(
                request, f"{copy.slug} is a copy of {study.slug}, without participants or answers."
            )
            return redirect("console:study-setup", slug=copy.slug)
    status = 400 if form.is_bound else 200
    return render(request, TEMPLATES + "study_duplicate.html", {"study": study, "form": form}, status=status)
