"""The adjudicator's console pages: the queue of disagreements (most first) and one unit: the
source and the text as the radiologists saw them, the raters' answers side by side, blind (Rater 1,
Rater 2, …, never who), with their justifications, and the form that records the consensus, its
reason and a guideline gap. Members whose role allows adjudicating (owner, editor, adjudicator);
a rater of the unit is refused by the service, with the reason."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotation.access import access_study, researcher_login_required
from annotation.models import SimplificationText, Source, Study
from evaluation.adjudication_selectors import Unit, UnknownUnit, adjudication_queue, adjudication_unit
from evaluation.adjudication_services import MAX_TIME_SPENT_MS, REASONS, adjudication_record
from instruments.schema import NOT_APPLICABLE, ItemKind
from privacy.selectors import source_text

TEMPLATE = "console/adjudication.html"
QUEUE_TEMPLATE = "console/adjudication_queue.html"


@researcher_login_required
@require_GET
def adjudication_queue_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="adjudicate")
    queue = adjudication_queue(study=study)
    decided = [unit for unit in adjudication_queue(study=study, include_decided=True) if unit.adjudication]
    sources = dict(Source.objects.filter(study=study).values_list("pk", "key"))
    return render(
        request,
        QUEUE_TEMPLATE,
        {"study": study, "queue": queue, "decided": decided, "sources": sources},
    )


def _label(wording: Any, language: str) -> str:
    if not wording:
        return ""
    return wording.get(language) or next(iter(wording.values()))


def _choices(unit: Unit, language: str) -> list[dict[str, Any]]:
    """The values the form offers: the scale's points, the options, or each span any rater marked."""
    item = unit.item
    if item.kind is ItemKind.ORDINAL and item.scale is not None:
        points = [
            {"value": str(p.code), "label": f"{p.code} · {_label(p.label, language)}"}
            for p in item.scale.points
        ]
        if item.scale.not_applicable:
            points.append({"value": NOT_APPLICABLE, "label": _label(item.scale.not_applicable, language)})
        return points
    if item.kind is ItemKind.ERROR_SPANS:
        seen: dict[str, dict[str, Any]] = {}
        for answer in unit.answers:
            for span in answer.comparable:
                key = json.dumps(span._asdict(), sort_keys=True)
                entry = seen.setdefault(key, {"value": key, "span": span, "raters": []})
                entry["raters"].append(answer.rater)
        return list(seen.values())
    return [{"value": option.key, "label": _label(option.label, language)} for option in item.options]


def _shown(unit: Unit, value: Any, language: str) -> str:
    """A rater's (or the consensus) value as the page words it."""
    item = unit.item
    if value is None:
        return "—"
    if item.kind is ItemKind.ORDINAL and item.scale is not None:
        for point in item.scale.points:
            if point.code == value:
                return f"{point.code} · {_label(point.label, language)}"
        return _label(item.scale.not_applicable, language) or str(value)
    if item.kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE, ItemKind.MULTIPLE_CHOICE):
        names = {option.key: _label(option.label, language) for option in item.options}
        keys = sorted(value) if isinstance(value, frozenset) else [value]
        return "; ".join(names.get(key, str(key)) for key in keys)
    return str(value)


def _context(study: Study, unit: Unit, *, errors: dict[str, list[str]] | None = None, posted=None) -> dict:
    language = study.language
    source = Source.objects.get(pk=unit.key.source_id)
    texts = dict(
        SimplificationText.objects.filter(
            pk__in=[unit.key.shown_text_id, unit.key.reference_text_id]
        ).values_list("pk", "text")
    )
    shown_text = texts.get(unit.key.shown_text_id, "") if unit.key.shown_text_id is not None else ""
    answers = []
    for answer in unit.answers:
        marked = []
        if unit.item.kind is ItemKind.ERROR_SPANS:
            marked = [{"span": span, "text": shown_text[span.start : span.end]} for span in answer.comparable]
        answers.append(
            {"answer": answer, "shown": _shown(unit, answer.comparable, language), "marked": marked}
        )
    choices = _choices(unit, language)
    for choice in choices:
        if "span" in choice:
            span = choice["span"]
            choice["label"] = f"“{shown_text[span.start : span.end]}” · {span.category} · {span.severity}"
    queue = adjudication_queue(study=study)
    later = [u for u in queue if u.token != unit.token]
    posted = posted or {}
    return {
        "study": study,
        "unit": unit,
        "item_wording": _label(unit.item.wording, language),
        "item_title": _label(unit.item.title, language) or unit.item.key,
        "source_text": source_text(source=source, audience="expert"),
        "shown_text": shown_text,
        "reference_text": (
            texts.get(unit.key.reference_text_id, "") if unit.key.reference_text_id is not None else ""
        ),
        "answers": answers,
        "choices": choices,
        "multiple": unit.item.kind in (ItemKind.MULTIPLE_CHOICE, ItemKind.ERROR_SPANS),
        "reasons": REASONS.choices,
        "errors": errors or {},
        "posted": posted,
        "posted_values": posted.getlist("value") if hasattr(posted, "getlist") else [],
        "remaining": len(later),
        "next_unit": later[0] if later else None,
        "consensus": _shown(unit, unit.final.value, language) if unit.adjudication else "",
    }


def _posted_value(unit: Unit, data) -> Any:
    values = data.getlist("value")
    if unit.item.kind is ItemKind.ERROR_SPANS:
        try:
            return [json.loads(value) for value in values]
        except json.JSONDecodeError:
            return values
    if unit.item.kind is ItemKind.MULTIPLE_CHOICE:
        return values
    return values[0] if values else ""


@researcher_login_required
@require_http_methods(["GET", "POST"])
def adjudication_unit_page(request: HttpRequest, slug: str, unit: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="adjudicate")
    try:
        found = adjudication_unit(study=study, token=unit)
    except UnknownUnit as exc:
        raise Http404(str(exc)) from None
    if request.method == "GET":
        return render(request, TEMPLATE, _context(study, found))
    try:
        elapsed = int(request.POST.get("elapsed_ms") or 0)
    except ValueError:
        elapsed = 0
    try:
        adjudication_record(
            study=study,
            unit=found.token,
            value=_posted_value(found, request.POST),
            reason=request.POST.get("reason", ""),
            guideline_gap=bool(request.POST.get("guideline_gap")),
            note=request.POST.get("note", ""),
            time_spent_ms=min(max(elapsed, 0), MAX_TIME_SPENT_MS),
            adjudicator=request.user,
        )
    except ValidationError as exc:
        context = _context(study, found, errors=exc.message_dict, posted=request.POST)
        if request.htmx:  # type: ignore[attr-defined]
            return render(request, f"{TEMPLATE}#unit", context)
        return render(request, TEMPLATE, context, status=400)
    remaining = adjudication_queue(study=study)
    target = (
        reverse("console:adjudication-unit", args=[study.slug, remaining[0].token])
        if remaining
        else reverse("console:adjudication", args=[study.slug])
    )
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(target)
    return redirect(target)
