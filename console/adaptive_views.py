"""The console's adaptive-allocation page (/console/<slug>/adaptive/): the study's option, the
form that turns it on or changes it, and where the primary comparison stands. The POST calls
evaluation/planning/adaptive.py's service, as `manage.py adaptive_allocation` does, so that the page and
the command refuse the same targets with the same reason. Editors and owners."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import access_study, researcher_login_required
from annotation.models import Study, System
from evaluation.planning.adaptive import (
    LAY_OUTCOMES,
    adaptive_allocation_of,
    adaptive_allocation_off,
    adaptive_allocation_set,
    adaptive_progress,
)


class AdaptiveAllocationForm(forms.Form):
    outcome = forms.ChoiceField(choices=[(key, o.label) for key, o in LAY_OUTCOMES.items()])
    system_a = forms.ModelChoiceField(
        queryset=System.objects.none(), to_field_name="key", label="System", help_text="The compared system."
    )
    system_b = forms.ModelChoiceField(
        queryset=System.objects.none(), to_field_name="key", label="Against", help_text="Its baseline."
    )
    target_width = forms.FloatField(
        help_text="Full width of the 95 % interval of the difference at which the study can close, "
        "on the outcome's scale."
    )
    max_participants = forms.IntegerField(
        min_value=2, initial=100, help_text="The most laypeople the study can recruit."
    )
    close_recruitment = forms.BooleanField(
        required=False, help_text="Stop handing out rows to newcomers once the target is reached."
    )
    pilot = forms.CharField(
        required=False,
        max_length=100,
        help_text="Slug of the study whose answers give the planner's variances (default: this one).",
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        systems = System.objects.filter(study=study).order_by("position", "key")
        for name in ("system_a", "system_b"):
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = systems

    def clean_pilot(self) -> Study | None:
        slug = self.cleaned_data["pilot"].strip()
        if not slug:
            return None
        pilot = Study.objects.filter(slug=slug).first()
        if pilot is None:
            raise ValidationError(f"No study {slug!r}.")
        return pilot


def _render(request: HttpRequest, study: Study, form: AdaptiveAllocationForm | None, status: int = 200):
    option = adaptive_allocation_of(study=study)
    if form is None:
        initial = {}
        if option is not None:
            initial = {
                "outcome": option.outcome,
                "system_a": option.system_a.key,
                "system_b": option.system_b.key,
                "target_width": option.target_width,
                "max_participants": option.max_participants,
                "close_recruitment": option.close_recruitment,
                "pilot": (option.components or {}).get("pilot", ""),
            }
        form = AdaptiveAllocationForm(study=study, initial=initial)
    context = {"study": study, "option": option, "form": form, "adaptive": adaptive_progress(study=study)}
    return render(request, "console/adaptive.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def adaptive_allocation(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    if request.method == "GET":
        return _render(request, study, None)
    if request.POST.get("action") == "off":
        changed = adaptive_allocation_off(study=study, actor=request.user)
        messages.success(request, "Adaptive allocation is off." if changed else "It was not on.")
        return redirect("console:adaptive", slug=study.slug)
    form = AdaptiveAllocationForm(request.POST, study=study)
    if not form.is_valid():
        return _render(request, study, form, status=400)
    data = form.cleaned_data
    try:
        adaptive_allocation_set(
            study=study,
            outcome=data["outcome"],
            system_a=data["system_a"],
            system_b=data["system_b"],
            target_width=data["target_width"],
            max_participants=data["max_participants"],
            close_recruitment=data["close_recruitment"],
            pilot=data["pilot"],
            actor=request.user,
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return _render(request, study, form, status=400)
    messages.success(request, "Adaptive allocation is on: newcomers get the rows worth most.")
    return redirect("console:adaptive", slug=study.slug)
