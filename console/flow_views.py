"""The console's Flows page of a study: what it asks (and adding a flow), the reference system,
the pairwise comparison's plan and launch, planted controls (plant, preview, remove) and AI-assisted
span marking (on, changed, off). Each POST parses a form and calls one service
(studies/study_kind_services.py, generation/services/controls.py, judging/span_assistance.py:
the commands `study_kind`, `plant_controls` and `span_assistance` call the same).
Editors and owners."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import access_study, researcher_login_required
from console.flow_selectors import flows_page
from console.span_assistance_forms import SpanAssistanceForm, span_assistance_context
from generation.services.controls import MAX_RATE, study_controls_plan, study_controls_plant
from judging.span_assistance import span_assistance_off, span_assistance_set
from studies.study_kind_services import study_flows_launch, study_kind_attach, study_reference_set


class ReferenceForm(forms.Form):
    reference_system = forms.CharField(required=False, max_length=60)


class ControlsForm(forms.Form):
    rate = forms.FloatField(
        min_value=0,
        max_value=MAX_RATE,
        initial=0.2,
        help_text=f"Share of the rows on radiologists' pages that are planted (0 to {MAX_RATE}).",
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=2**31 - 1,
        help_text="The same rate and seed plant the same controls.",
    )


def _errors(exc: ValidationError) -> dict[str, list[str]]:
    return exc.message_dict if hasattr(exc, "error_dict") else {"__all__": list(exc.messages)}


def _render(request: HttpRequest, study, *, status: int = 200, **extra) -> HttpResponse:
    context = {
        "study": study,
        **flows_page(study=study),
        "reference_form": extra.pop("reference_form", None) or ReferenceForm(),
        "controls_form": extra.pop("controls_form", None) or ControlsForm(),
        **span_assistance_context(study=study, form=extra.pop("span_form", None)),
        **extra,
    }
    return render(request, "console/flows.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET"])
def flows(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    return _render(request, study)


@researcher_login_required
@require_POST
def flow_add(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    try:
        row = study_kind_attach(study=study, kind=request.POST.get("kind", ""), actor=request.user)
    except ValidationError as exc:
        return _render(request, study, status=400, flow_errors=_errors(exc))
    if row is not None:
        messages.success(request, f"{row.key} version {row.version} is asked in the {row.flow} flow.")
    return redirect("console:flows", slug=study.slug)


@researcher_login_required
@require_POST
def reference_set(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    form = ReferenceForm(request.POST)
    if form.is_valid():
        try:
            chosen = study_reference_set(
                study=study, key=form.cleaned_data["reference_system"], actor=request.user
            )
        except ValidationError as exc:
            for field, errors in _errors(exc).items():
                form.add_error("reference_system" if field == "reference_system" else None, errors)
        else:
            messages.success(
                request,
                f"The reference system is {chosen.key}." if chosen else "The study has no reference system.",
            )
            return redirect("console:flows", slug=study.slug)
    return _render(request, study, status=400, reference_form=form)


@researcher_login_required
@require_POST
def flows_launch(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    try:
        opened = study_flows_launch(study=study, actor=request.user)
    except ValidationError as exc:
        return _render(request, study, status=400, launch_errors=_errors(exc))
    messages.success(request, "The study is open: participants' links work." if opened else "It was open.")
    return redirect("console:flows", slug=study.slug)


@researcher_login_required
@require_POST
def controls(request: HttpRequest, slug: str) -> HttpResponse:
    """`action=preview`: what the rate and seed would plant (nothing written); `plant`: plant them;
    `remove`: rate 0, every control removed."""
    study = access_study(user=request.user, slug=slug, need="edit")
    data = request.POST.copy()
    action = data.get("action", "plant")
    if action == "remove":
        data["rate"], data["seed"] = "0", data.get("seed") or "0"
    form = ControlsForm(data)
    if not form.is_valid():
        return _render(request, study, status=400, controls_form=form)
    rate, seed = form.cleaned_data["rate"], form.cleaned_data["seed"]
    if action == "preview":
        texts, plan = study_controls_plan(study=study, rate=rate, seed=seed)
        preview = [(text_id, control) for text_id, control in sorted(plan.items())]
        return _render(request, study, controls_form=form, preview=preview, preview_texts=texts)
    try:
        result = study_controls_plant(study=study, rate=rate, seed=seed, actor=request.user)
    except ValidationError as exc:
        form.add_error(None, list(exc.messages))
        return _render(request, study, status=400, controls_form=form)
    if result.planted:
        messages.success(
            request,
            f"{result.planted} controls among {result.texts} texts ({result.share:.1%} of rows planted)"
            f"{'' if result.changed else ', unchanged'}.",
        )
    else:
        messages.success(request, "The study has no planted controls.")
    return redirect("console:flows", slug=study.slug)


@researcher_login_required
@require_POST
def span_assistance(request: HttpRequest, slug: str) -> HttpResponse:
    """`action=off`: the suggestions turned off; else the form's option set (a rate outside
    (0, 0.5] is refused on its field with the service's reason)."""
    study = access_study(user=request.user, slug=slug, need="edit")
    if request.POST.get("action") == "off":
        was_on = span_assistance_off(study=study, actor=request.user)
        messages.success(request, "Span suggestions are off." if was_on else "Span suggestions were not on.")
        return redirect("console:flows", slug=study.slug)
    form = SpanAssistanceForm(request.POST, study=study)
    if form.is_valid():
        data = form.cleaned_data
        try:
            option = span_assistance_set(
                study=study,
                run=data["run"],
                planted_rate=data["planted_rate"],
                assisted_share=data["assisted_share"],
                seed=data["seed"],
                actor=request.user,
            )
        except ValidationError as exc:
            for field, errors in _errors(exc).items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(
                request,
                f"Span suggestions from {option.run.label}: planted rate {option.planted_rate:g}, "
                f"assisted share {option.assisted_share:g}.",
            )
            return redirect("console:flows", slug=study.slug)
    return _render(request, study, status=400, span_form=form)
