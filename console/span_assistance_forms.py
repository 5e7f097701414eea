"""The Flows page's AI-assisted span marking: the form that turns it on or changes it (the judge run
whose error spans are suggested, the planted-suggestion rate, the share of assisted pages, the
seed) and what the page shows of the study's option. The POST calls judging.span_assistance's
service, as `manage.py span_assistance` does; the rate is checked there, so that the page and the
command refuse the same rates with the same reason."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from annotation.models import Study
from judging.models import JudgeRun
from judging.span_assistance import span_assistance_of


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: JudgeRun) -> str:
        return f"run {obj.pk} · {obj.label}"


class SpanAssistanceForm(forms.Form):
    run = RunChoiceField(
        queryset=JudgeRun.objects.none(),
        label="Judge run",
        help_text="Its error spans are suggested on the radiologists' pages.",
    )
    planted_rate = forms.FloatField(
        label="Planted-suggestion rate",
        initial=0.2,
        help_text="Share of the suggestions a rater sees that are planted wrong: above 0, at most 0.5.",
    )
    assisted_share = forms.FloatField(
        label="Assisted share of pages",
        initial=1.0,
        help_text="Share of each rater's pages with suggestions (seeded per page), 0 to 1; "
        "below 1 compares assisted with unassisted pages.",
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1)

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["run"]).queryset = (
            JudgeRun.objects.filter(study=study).select_related("study").order_by("-pk")
        )


def span_assistance_context(*, study: Study, form: SpanAssistanceForm | None = None) -> dict[str, Any]:
    """The Flows page's section: the study's option (on or off) and the form, filled with it."""
    option = span_assistance_of(study=study)
    if form is None:
        initial = (
            {
                "run": option.run_id,
                "planted_rate": option.planted_rate,
                "assisted_share": option.assisted_share,
                "seed": option.seed,
            }
            if option is not None
            else {}
        )
        form = SpanAssistanceForm(study=study, initial=initial)
    return {"span_assistance": option, "span_form": form}
