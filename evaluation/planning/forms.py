"""The planning request, validated in one place for the dashboard, the API and `manage.py plan`."""

from __future__ import annotations

from django import forms
from django.conf import settings

from evaluation.planning.outcomes import OUTCOMES

# Bounds keep each number finite; their product is bounded by the server's work budgets
# (RADLAY_JOB_LIMITS' plan_work and plan_mixed_work; PlanForm.clean): the largest of each at once
# (20 × 20 designs of up to 1,000 participants × 2,000 sources, 5,000 simulations) is hours.
MAX_PARTICIPANTS = 1000
MAX_SOURCES = 2000
MAX_SIMULATIONS = 5000


class PlanForm(forms.Form):
    outcome = forms.ChoiceField(choices=[(key, outcome.label) for key, outcome in OUTCOMES.items()])
    effect = forms.FloatField(help_text="Difference to detect between two systems, on the outcome's scale.")
    systems = forms.IntegerField(
        required=False,
        min_value=2,
        max_value=12,
        help_text="Systems in the follow-up (default: the pilot's).",
    )
    alpha = forms.FloatField(initial=0.05, min_value=0.001, max_value=0.2)
    power = forms.FloatField(initial=0.8, min_value=0.5, max_value=0.99, help_text="Target power.")
    max_participants = forms.IntegerField(initial=100, min_value=2, max_value=MAX_PARTICIPANTS)
    max_sources = forms.IntegerField(initial=100, min_value=2, max_value=MAX_SOURCES)
    per_participant = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SOURCES,
        help_text="Sources each layperson sees (default: the pilot's setting; empty there = all).",
    )
    dropout = forms.FloatField(
        required=False, min_value=0.0, max_value=0.9, help_text="Drop-out rate (default: the pilot's)."
    )
    baseline = forms.FloatField(
        required=False, help_text="Mean answer of the baseline system (default: the pilot's)."
    )
    simulations = forms.IntegerField(initial=1000, min_value=10, max_value=MAX_SIMULATIONS)
    mixed_simulations = forms.IntegerField(
        initial=200,
        min_value=0,
        max_value=MAX_SIMULATIONS,
        help_text="Simulations per design also analysed with the mixed model (0: none).",
    )
    points = forms.IntegerField(
        initial=10, min_value=2, max_value=20, help_text="Designs per axis of the grid."
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**32 - 1)

    def clean(self) -> dict:
        data = self.cleaned_data  # what super().clean() returns
        sizes = [data.get(name) for name in ("points", "max_participants", "max_sources")]
        if None in sizes:  # a size with its own error already
            return data
        points, participants, sources = (int(size or 0) for size in sizes)
        answers = points * points * participants * sources
        for field, key in (("simulations", "plan_work"), ("mixed_simulations", "plan_mixed_work")):
            budget = getattr(settings.RADLAY_JOB_LIMITS, key)
            setting = f"RADLAY_JOB_LIMITS.{key}"
            if data.get(field) is not None and data[field] * answers > budget:
                self.add_error(
                    field,
                    f"This plan is too large for this server: {field} × points² × max_participants × "
                    f"max_sources = {data[field] * answers:,} is over its budget of {budget:,} ({setting}). "
                    f"Lower {field}, points, max_participants or max_sources.",
                )
        return data

    def clean_effect(self) -> float:
        effect = self.cleaned_data["effect"]
        if effect == 0:
            raise forms.ValidationError(
                "An effect of 0 cannot be detected; give the smallest difference that matters."
            )
        return effect

    @classmethod
    def with_defaults(cls, data) -> PlanForm:
        """A bound form where missing optional numbers take the fields' initial values (the API and
        the command line send only what they set)."""
        merged = {name: field.initial for name, field in cls.base_fields.items() if field.initial is not None}
        merged.update({key: value for key, value in data.items() if value is not None and value != ""})
        return cls(merged)
