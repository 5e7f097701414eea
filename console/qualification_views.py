"""The console's Qualification page: per flow and rater group, the practice items the flow's
instrument carries and the team's pass rule (share correct, retries, time floor) and what a
participant who fails sees (retry, screen-out with the return link, or on, flagged). The POST calls
qualification.rule_services, as `manage.py qualification` does; a rule that cannot be met is refused
on its field with the reason. Editors and owners."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import access_study, researcher_login_required
from annotation.models import Study
from qualification.models import QualificationRule
from qualification.rule_services import qualification_rule_remove, qualification_rule_save
from qualification.selectors import qualification_results, round_settings


class RuleForm(forms.Form):
    target = forms.CharField(widget=forms.HiddenInput)
    # Bounds are the service's (pass_rule_errors): the reason a rule cannot be met comes from there.
    share_percent = forms.IntegerField(
        label="Share correct (%)", initial=80, help_text="Of the practice items, within tolerance, to pass."
    )
    retries = forms.IntegerField(label="Retries", initial=1, help_text="Further attempts after a failed one.")
    min_seconds = forms.IntegerField(
        label="Time floor (seconds)", initial=0, help_text="An attempt answered faster than this fails."
    )
    on_fail = forms.ChoiceField(
        label="When the last allowed attempt fails",
        choices=QualificationRule.OnFail.choices,
        help_text="Retry: no limit on attempts. Screen out: the study ends for the participant, who is "
        "sent back with the screen-out URL. Continue: the study goes on, the rater flagged.",
    )
    screen_out_redirect_url = forms.URLField(
        label="Screen-out URL",
        required=False,
        assume_scheme="https",
        help_text="Where a screened-out participant is sent (e.g. Prolific's URL with the screen-out "
        "code); empty: the study's screen-out redirect URL.",
    )


def _forms(study: Study, failed: RuleForm | None) -> list[tuple[Any, RuleForm]]:
    out = []
    for setting in round_settings(study=study):
        if failed is not None and failed.prefix == setting.value.replace(":", "-"):
            out.append((setting, failed))
            continue
        rule = setting.rule
        initial: dict[str, Any] = {"target": setting.value}
        if rule is not None:
            initial |= {
                name: getattr(rule, name)
                for name in ("share_percent", "retries", "min_seconds", "on_fail", "screen_out_redirect_url")
            }
        out.append((setting, RuleForm(initial=initial, prefix=setting.value.replace(":", "-"))))
    return out


def _render(
    request: HttpRequest, study: Study, *, failed: RuleForm | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "study": study,
        "settings": _forms(study, failed),
        "results": qualification_results(study=study),
    }
    return render(request, "console/qualification.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def qualification(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    if request.method == "GET":
        return _render(request, study)
    prefix = request.POST.get("prefix", "")
    form = RuleForm(request.POST, prefix=prefix or None)
    if not form.is_valid():
        return _render(request, study, failed=form, status=400)
    flow, _, group = form.cleaned_data["target"].partition(":")
    if request.POST.get("action") == "remove":
        removed = qualification_rule_remove(study=study, flow=flow, group=group, actor=request.user)
        messages.success(
            request, f"No round for {group} in the {flow} flow." if removed else "There was no rule."
        )
        return redirect("console:qualification", slug=study.slug)
    data = form.cleaned_data
    try:
        rule = qualification_rule_save(
            study=study,
            flow=flow,
            group=group,
            share_percent=data["share_percent"],
            retries=data["retries"],
            min_seconds=data["min_seconds"],
            on_fail=data["on_fail"],
            screen_out_redirect_url=data["screen_out_redirect_url"] or "",
            actor=request.user,
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return _render(request, study, failed=form, status=400)
    messages.success(
        request,
        f"Qualification round for {group} in the {flow} flow: {rule.share_percent} % correct to pass.",
    )
    return redirect("console:qualification", slug=study.slug)
