"""The console's instrument pages: each flow's current instrument and its versions, an
editor per instrument (add an item, edit an item's texts, remove or move an added item, the whole
document as YAML or JSON) and a live preview drawn with the survey's own item partials.

Every change is a draft document (console/instrument_forms.py) validated by instruments.validation
and the flow's rules (annotation.instrument_services.instrument_flow_errors), then saved by the one
service, study_instrument_save, under the version rule: before any answer in place, once answers
exist as a new version with a change note. The page carries the revision it showed; a save over a
newer one is refused. Editors and owners (access_study(need="edit")); the preview saves nothing."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import access_study, researcher_login_required
from annotation.instrument_binding import PROTOCOL_BINDINGS
from annotation.instrument_selectors import study_instrument_row, study_instrument_versions
from annotation.instrument_services import (
    PAGE_KINDS,
    instrument_flow_errors,
    instrument_has_answers,
    instrument_revision,
    study_instrument_save,
)
from annotation.item_questions import item_question, shown
from annotation.models import Participant, Study, StudyInstrument
from console.instrument_forms import DefinitionForm, ItemAddForm, ItemMoveForm, ItemTextsForm
from instruments.document_limits import DocumentRefused, document_load
from instruments.schema import AppliesTo, Instrument, ItemKind
from instruments.validation import (
    InstrumentError,
    instrument_from_data,
    instrument_to_json,
    instrument_to_yaml,
)
from studies.error_span_services import study_error_spans_add

TEMPLATES = "console/"
MOVE_ACTIONS = (("up", "↑ Up"), ("down", "↓ Down"), ("remove", "Remove"))
_ANY_INDEX = re.compile(r"\[\d+\]")
_ITEM_PATH = re.compile(r"^items\[(\d+)\]\.?(.*?): (.*)$", re.S)
# The role each protocol flow asks (an added item's default).
_FLOW_ROLE: dict[str, str] = {
    StudyInstrument.Flow.EXPERT: Participant.Role.RADIOLOGIST.value,
    StudyInstrument.Flow.LAY: Participant.Role.LAYPERSON.value,
}


@dataclass
class Editing:
    """One instrument of a study as the editor sees it."""

    study: Study
    row: StudyInstrument
    instrument: Instrument
    has_answers: bool
    bound: frozenset[str]

    @property
    def revision(self) -> str:
        return instrument_revision(self.row)

    @property
    def languages(self) -> tuple[str, ...]:
        return self.instrument.languages

    def language(self, wanted: str) -> str:
        return wanted if wanted in self.instrument.languages else self.instrument.default_language

    def save_fields(self) -> dict[str, Any]:
        return {"needs_note": self.has_answers, "initial": {"based_on": self.revision}}


def _editing(study: Study, key: str) -> Editing:
    row = study_instrument_row(study=study, key=key)
    if row is None:
        raise Http404(f"The study asks no instrument {key!r}.")
    return Editing(
        study=study,
        row=row,
        instrument=instrument_from_data(row.definition),
        has_answers=instrument_has_answers(row=row),
        bound=frozenset(PROTOCOL_BINDINGS.get(key, {})),
    )


@dataclass
class Draft:
    """A checked draft: the instrument when it is valid, else the problems by path."""

    instrument: Instrument | None = None
    errors: list[str] = field(default_factory=list)


def _draft_checked(editing: Editing, document: object) -> Draft:
    """Validate a draft document as the save would: the version the rule gives it (the current one
    before any answer, the next once answers exist), the instrument rules, the flow's rules."""
    document = copy.deepcopy(document) if isinstance(document, dict) else document
    if isinstance(document, dict):
        current = editing.row.version
        given = document.get("version")
        if not editing.has_answers:
            document["version"] = current
        elif not isinstance(given, int) or isinstance(given, bool) or given <= current:
            document["version"] = current + 1
    try:
        instrument = instrument_from_data(document)
    except InstrumentError as exc:
        return Draft(errors=list(exc.errors))
    errors = instrument_flow_errors(instrument, editing.row.flow)
    return Draft(errors=errors) if errors else Draft(instrument=instrument)


def _document_of(form: DefinitionForm) -> object:
    """The uploaded or pasted document as data, or the Draft naming why it cannot be read."""
    text, file_format = form.cleaned_data["text"], form.cleaned_data["format"]
    try:
        # Size and nesting bounded before parsing: a refusal costs milliseconds.
        return document_load(
            text, file_format=file_format, max_bytes=settings.RADLAY_FILE_LIMITS.instrument_bytes
        )
    except DocumentRefused as exc:
        return Draft(errors=[str(exc)])


def _put_draft_errors(form, errors: list[str], *, item_index: int | None) -> list[str]:
    """Put each path-named error on the field holding its path (for the edited item); return
    those no field holds, to list above the form."""
    rest: list[str] = []
    for error in errors:
        match = _ITEM_PATH.match(error)
        target = None
        if match and item_index is not None and int(match.group(1)) == item_index:
            target = form.field_of(match.group(2))
        if match and target is not None:
            # One line for a rule every point or option breaks alike ("points[*].label.es: missing").
            line = f"{_ANY_INDEX.sub('[*]', match.group(2)) or 'item'}: {match.group(3)}"
            if line not in form.errors.get(target, []):
                form.add_error(target, line)
        else:
            rest.append(error)
    return rest


# --- Pages ------------------------------------------------------------------------------------------


@researcher_login_required
@require_GET
def instrument_list(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    rows = list(study_instrument_versions(study=study))
    current: list[dict[str, Any]] = []
    for row in rows:
        if not row.is_current:
            continue
        instrument = instrument_from_data(row.definition)
        versions = [r for r in rows if r.key == row.key]
        current.append(
            {
                "row": row,
                "instrument": instrument,
                "title": shown(instrument.title, instrument.default_language),
                "n_items": len(instrument.items),
                "n_added": len(
                    [i for i in instrument.items if i.key not in PROTOCOL_BINDINGS.get(row.key, {})]
                ),
                "item_answers": sum(r.n_answers for r in versions),  # type: ignore[attr-defined]  # annotated by the selector
                "has_answers": instrument_has_answers(row=row),
            }
        )
    expert = next((c for c in current if c["row"].flow == StudyInstrument.Flow.EXPERT), None)
    context = {
        "study": study,
        "current": current,
        "history": rows,
        # The typology can be added where the radiologist instrument has no error-span item yet.
        "spans_addable": expert is not None
        and not any(i.kind is ItemKind.ERROR_SPANS for i in expert["instrument"].items),
        "spans_need_note": expert is not None and expert["has_answers"],
    }
    return render(request, TEMPLATES + "instruments.html", context)


@researcher_login_required
@require_POST
def instrument_error_spans_add(request: HttpRequest, slug: str) -> HttpResponse:
    """The clinical error-span typology into the radiologist instrument, by the service
    the command and the admin use: in place before answers, else a new version with the note."""
    study = access_study(user=request.user, slug=slug, need="edit")
    note = request.POST.get("change_note", "").strip()[:500]
    try:
        row = study_error_spans_add(study=study, actor=request.user, note=note)
    except ValidationError as refused:
        messages.error(request, " ".join(refused.messages))
    else:
        messages.success(
            request, f"Error spans added to the radiologist instrument (now version {row.version})."
        )
    return redirect("console:instruments", slug=study.slug)


def _editor_context(editing: Editing, request: HttpRequest, **forms: Any) -> dict[str, Any]:
    language = editing.language(request.POST.get("preview_language") or editing.study.language)
    study, row = editing.study, editing.row
    add = forms.get("add") or ItemAddForm(
        languages=editing.languages,
        phases=tuple(p.key for p in editing.instrument.phases),
        initial={
            "based_on": editing.revision,
            "roles": _FLOW_ROLE.get(
                row.flow, ",".join(sorted({r for i in editing.instrument.items for r in i.roles}))
            ),
            "applies_to": AppliesTo.SIMPLIFICATION.value,
        },
        needs_note=editing.has_answers,
    )
    definition = forms.get("definition") or DefinitionForm(
        initial={"based_on": editing.revision, "document": instrument_to_yaml(editing.instrument)},
        needs_note=editing.has_answers,
    )
    draft = forms.get("draft") or Draft(instrument=editing.instrument)
    return {
        "study": study,
        "row": row,
        "instrument": editing.instrument,
        "title": shown(editing.instrument.title, editing.instrument.default_language),
        "has_answers": editing.has_answers,
        "revision": editing.revision,
        "items": [
            {
                "item": item,
                "wording": shown(item.wording, editing.instrument.default_language),
                "bound": item.key in editing.bound,
                "first": i == 0,
                "last": i == len(editing.instrument.items) - 1,
            }
            for i, item in enumerate(editing.instrument.items)
        ],
        "add": add,
        "definition": definition,
        "move_actions": MOVE_ACTIONS,
        "errors": forms.get("errors", []),
        "preview": _preview(editing, draft, language, focus=forms.get("focus", "")),
        "history": study_instrument_versions(study=study, key=row.key),
    }


def _save(request: HttpRequest, editing: Editing, form, draft: Draft, *, item_index: int | None) -> bool:
    """Save a checked draft; on refusal put the reasons on the form. True when saved."""
    if draft.instrument is None:
        for error in _put_draft_errors(form, draft.errors, item_index=item_index):
            form.add_error(None, error)
        return False
    try:
        saved = study_instrument_save(
            study=editing.study,
            instrument=draft.instrument,
            actor=request.user,
            note=form.cleaned_data.get("note", ""),
            based_on=form.cleaned_data.get("based_on") or "",
        )
    except ValidationError as exc:
        # Every refusal of the service is about the whole draft (the stale revision included).
        form.add_error(None, exc.messages)
        return False
    if saved.pk != editing.row.pk:
        messages.success(
            request,
            f"Saved as version {saved.version}: answers before it keep version {editing.row.version}.",
        )
    elif saved.fingerprint == editing.row.fingerprint:
        messages.info(request, "Nothing was changed.")
    else:
        messages.success(request, f"Saved (version {saved.version}, edited in place: no answers yet).")
    return True


def _form_of_post(request: HttpRequest, editing: Editing):
    """The editor form the POST's `op` names, bound, and the index of the item it is about."""
    op = request.POST.get("op", "")
    kwargs = {"needs_note": editing.has_answers}
    if op == "add":
        form = ItemAddForm(
            request.POST,
            languages=editing.languages,
            phases=tuple(p.key for p in editing.instrument.phases),
            **kwargs,
        )
        return op, form, len(editing.instrument.items)
    if op == "move":
        return op, ItemMoveForm(request.POST, **kwargs), None
    if op == "definition":
        return op, DefinitionForm(request.POST, request.FILES, **kwargs), None
    if op == "texts":
        key = request.POST.get("item", "")
        keys = [item.key for item in editing.instrument.items]
        if key not in keys:
            raise Http404(f"No item {key!r}.")
        item = editing.row.definition["items"][keys.index(key)]
        return (
            op,
            ItemTextsForm(request.POST, item=item, languages=editing.languages, **kwargs),
            keys.index(key),
        )
    raise Http404(f"Unknown editor action {op!r}.")


def _draft_of(editing: Editing, op: str, form) -> Draft:
    """The checked draft a valid form makes (a Draft with errors when it cannot be built)."""
    if op == "move":
        key = form.cleaned_data["item"]
        if form.cleaned_data["action"] == "remove" and key in editing.bound:
            return Draft(errors=[f"{key!r} is one of the protocol's items: it cannot be removed"])
    if op == "definition":
        document = _document_of(form)
        if isinstance(document, Draft):
            return document
        return _draft_checked(editing, document)
    try:
        return _draft_checked(editing, form.draft(editing.row.definition))
    except ValidationError as exc:  # the move form's unknown item
        return Draft(errors=list(exc.messages))


@researcher_login_required
@require_http_methods(["GET", "POST"])
def instrument_edit(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    editing = _editing(study, key)
    if request.method == "GET":
        return render(request, TEMPLATES + "instrument_edit.html", _editor_context(editing, request))
    op, form, index = _form_of_post(request, editing)
    if op == "texts":
        raise Http404("An item's texts are edited on the item's own page.")
    preview_only = "preview" in request.POST
    draft = Draft()
    if form.is_valid():
        draft = _draft_of(editing, op, form)
        if not preview_only and _save(request, editing, form, draft, item_index=index):
            if op == "definition":
                how = "uploaded" if form.cleaned_data.get("file") else "edited as YAML"
                messages.info(request, f"The whole instrument was {how}.")
            return redirect("console:instrument-edit", slug=study.slug, key=key)
        if preview_only and draft.instrument is None:
            for error in _put_draft_errors(form, draft.errors, item_index=index):
                form.add_error(None, error)
    forms_: dict[str, Any] = {
        "draft": draft,
        "focus": form.cleaned_data.get("key", "") if op == "add" else "",
    }
    if op == "add":
        forms_["add"] = form
    elif op == "definition":
        forms_["definition"] = form
    else:
        forms_["errors"] = [e for errors in form.errors.values() for e in errors]
    status = 200 if preview_only and form.is_valid() else 400
    return render(
        request,
        TEMPLATES + "instrument_edit.html",
        _editor_context(editing, request, **forms_),
        status=status,
    )


@researcher_login_required
@require_http_methods(["GET", "POST"])
def instrument_item(request: HttpRequest, slug: str, key: str, item_key: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    editing = _editing(study, key)
    keys = [item.key for item in editing.instrument.items]
    if item_key not in keys:
        raise Http404(f"{key} has no item {item_key!r}.")
    index = keys.index(item_key)
    item_data = editing.row.definition["items"][index]
    data = request.POST if request.method == "POST" else None
    form = ItemTextsForm(data, item=item_data, languages=editing.languages, **editing.save_fields())
    draft = Draft(instrument=editing.instrument)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            draft = _draft_checked(editing, form.draft(editing.row.definition))
            if "preview" in request.POST:
                status = 200 if draft.instrument is not None else 400
                if draft.instrument is None:
                    for error in _put_draft_errors(form, draft.errors, item_index=index):
                        form.add_error(None, error)
            elif _save(request, editing, form, draft, item_index=index):
                return redirect("console:instrument-edit", slug=study.slug, key=key)
    language = editing.language(request.POST.get("preview_language") or study.language)
    context = {
        "study": study,
        "row": editing.row,
        "item": editing.instrument.items[index],
        "bound": item_key in editing.bound,
        "has_answers": editing.has_answers,
        "form": form,
        "preview": _preview(editing, draft, language, focus=item_key),
    }
    return render(request, TEMPLATES + "instrument_item.html", context, status=status)


@researcher_login_required
@require_POST
def instrument_preview(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """The live preview (htmx): the draft the editor's form holds, validated and drawn as
    participants would see it, or its errors. Saves nothing."""
    study = access_study(user=request.user, slug=slug, need="edit")
    editing = _editing(study, key)
    op, form, index = _form_of_post(request, editing)
    if not form.is_valid():
        errors = [f"{name}: {e}" if name != "__all__" else e for name, es in form.errors.items() for e in es]
        # A missing change note is the save's concern, not the preview's.
        errors = [e for e in errors if not e.startswith("note:")]
        draft = Draft(errors=errors) if errors else _draft_of(editing, op, form)
    else:
        draft = _draft_of(editing, op, form)
    focus = request.POST.get("item", "") if op == "texts" else request.POST.get("key", "")
    language = editing.language(request.POST.get("preview_language", "") or study.language)
    context = {"preview": _preview(editing, draft, language, focus=focus)}
    return render(request, TEMPLATES + "_instrument_preview.html", context)


@researcher_login_required
@require_GET
def instrument_download(request: HttpRequest, slug: str, key: str, file_format: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    editing = _editing(study, key)
    if file_format not in ("yaml", "json"):
        raise Http404("An instrument downloads as yaml or json.")
    if file_format == "yaml":
        body, content_type = instrument_to_yaml(editing.instrument), "application/yaml; charset=utf-8"
    else:
        body, content_type = instrument_to_json(editing.instrument), "application/json; charset=utf-8"
    response = HttpResponse(body, content_type=content_type)
    name = f"{study.slug}-{key}-v{editing.row.version}.{file_format}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# --- The preview ------------------------------------------------------------------------------------


def _preview(editing: Editing, draft: Draft, language: str, *, focus: str) -> dict[str, Any]:
    """What the preview partial shows: the draft's items as the survey asks them, grouped by what
    they are about, each with its kind's participant partial (or a line saying which flow asks a
    kind the page cannot show); or the draft's errors."""
    context: dict[str, Any] = {
        "study": editing.study,
        "row": editing.row,
        "languages": editing.languages,
        "language": language,
        "errors": draft.errors,
        "focus": focus,
        "groups": [],
    }
    instrument = draft.instrument
    if instrument is None:
        return context
    for applies_to, heading in (
        (AppliesTo.SOURCE, "About the original"),
        (AppliesTo.SIMPLIFICATION, "About each simplification"),
        (AppliesTo.PAIR, "About each (simplification, reference) pair"),
    ):
        entries = []
        for item in instrument.items:
            if item.applies_to is not applies_to:
                continue
            question = item_question(item, field=f"preview-{item.key}", language=language)
            entries.append(
                {
                    "key": item.key,
                    "question": question if item.kind in PAGE_KINDS else None,
                    "kind": item.kind.value,
                    "wording": question.wording,
                    "bound": item.key in editing.bound,
                    "phases": ", ".join(item.phases),
                }
            )
        if entries:
            context["groups"].append({"heading": heading, "entries": entries})
    context["version"] = instrument.version
    return context
