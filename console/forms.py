"""The study set-up forms: a study's settings, its background questions and attention checks as
ordinary form rows (Django formsets: add, remove, reorder). The rules are the model's and
annotation/json_shapes.py's; these forms only turn rows into the shapes those rules check and put
each message beside the field it names."""

from __future__ import annotations

import re
from typing import Any, cast

from django import forms
from django.conf import settings
from django.db import models
from django.forms import BaseFormSet, formset_factory

from annotation import json_shapes, protocol_texts
from annotation.models import COMPLETION_CODE_PLACEHOLDER, REDIRECT_URL_FIELDS, Study
from annotation.redirect_urls import RedirectURLField
from studies.study_services import SETTINGS_FIELDS

# The participant-facing texts and the default each shows when the study leaves it empty.
TEXT_DEFAULTS = {
    "lay_consent_text": protocol_texts.LAY_CONSENT_DEFAULT,
    "lay_instructions": protocol_texts.LAY_INSTRUCTIONS_DEFAULT,
    "expert_consent_text": protocol_texts.EXPERT_CONSENT_DEFAULT,
    "expert_instructions": protocol_texts.EXPERT_INSTRUCTIONS_DEFAULT,
}

COMPLETION_HELP = (
    "Where a layperson who finished is sent, e.g. Prolific's "
    "https://app.prolific.com/submissions/complete?cc=ABC123. Write "
    f"{COMPLETION_CODE_PLACEHOLDER} where the participant's own completion code belongs: "
    f"https://example.org/done?code={COMPLETION_CODE_PLACEHOLDER} sends the participant whose code is "
    "7F3A91C2 to https://example.org/done?code=7F3A91C2. No other placeholder is allowed. "
    "Empty: the end page shows the code."
)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def options_from_lines(text: str) -> list[str]:
    """One answer option per line; blank lines dropped."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _formfield(field: models.Field, **kwargs: Any) -> forms.Field | None:
    # Redirect URLs: the one rule of annotation/redirect_urls.py, no scheme guessed.
    if field.name in REDIRECT_URL_FIELDS:
        placeholder = field.name == "completion_redirect_url"
        kwargs |= {"label_for_errors": REDIRECT_URL_FIELDS[field.name], "placeholder": placeholder}
        return field.formfield(form_class=RedirectURLField, **kwargs)
    return field.formfield(**kwargs)


class StudyCreateForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = ["title", "slug", "unit", "language"]
        help_texts = {
            "slug": "The study's short name in links and exports: letters, digits, - and _ "
            "(e.g. liver-2025).",
        }

    language = forms.ChoiceField(choices=settings.LANGUAGES, initial="en", help_text="What participants see.")


class StudyDuplicateForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = ["title", "slug"]


class StudySettingsForm(forms.ModelForm):
    """Every setting of Study but its slug, status and background questions (rows of their own)."""

    class Meta:
        model = Study
        formfield_callback = _formfield
        # Background questions are rows of their own (BackgroundFormSet).
        fields = [name for name in SETTINGS_FIELDS if name != "background_questions"]
        labels = {
            "lay_sources_per_participant": "Sources per layperson",
            "expert_sources_per_participant": "Sources per radiologist",
            "lay_consent_text": "Consent text for laypeople",
            "lay_instructions": "Instructions for laypeople",
            "expert_consent_text": "Consent text for radiologists",
            "expert_instructions": "Instructions for radiologists",
            "safety_gate_enabled": "Safety gate",
            "safety_gate_threshold": "Safety gate threshold (1-5)",
            "ask_urgency": "Ask the urgency question",
            "abandon_after_minutes": "Abandoned after (minutes idle)",
            "completion_redirect_url": "Completion redirect URL",
            "decline_redirect_url": "Decline redirect URL",
            "screen_out_after_failed_checks": "Screen out after this many failed attention checks",
            "screened_out_redirect_url": "Screen-out redirect URL",
        }
        help_texts = {
            "completion_redirect_url": COMPLETION_HELP,
            "safety_gate_enabled": "Withhold from laypeople a text any radiologist rated at or below the "
            "threshold on Hallucination or Correctness.",
            "expert_instructions": "Shown above the protocol's rating scales; left as the protocol's "
            "default, the scales themselves are the instructions.",
        }
        widgets = {name: forms.Textarea(attrs={"rows": 8}) for name in TEXT_DEFAULTS} | {
            "description": forms.Textarea(attrs={"rows": 2}),
            "consent_contact": forms.Textarea(attrs={"rows": 2}),
            "safety_gate_threshold": forms.NumberInput(attrs={"min": 1, "max": 5}),
        }

    language = forms.ChoiceField(choices=settings.LANGUAGES, help_text="What participants see.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # An empty text means "the protocol's default": the researcher edits the default itself.
        for name, default in TEXT_DEFAULTS.items():
            if not (getattr(self.instance, name) or "").strip():
                self.initial[name] = default

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        # Left as the default, a text stays empty in the study (so it keeps following the protocol).
        for name, default in TEXT_DEFAULTS.items():
            if _same_text(cleaned.get(name) or "", default):
                cleaned[name] = ""
        return cleaned


# --- Rows ------------------------------------------------------------------------------------------

_ROW = re.compile(r"^(?:Background question|Attention check) (\d+)")


def _kept(formset: BaseFormSet, form: forms.Form) -> bool:
    """A row to save: not removed, and either an existing row or a new one with something in it
    (the blank row offered for adding is not a row)."""
    if form in formset.deleted_forms:
        return False
    return formset.forms.index(form) < formset.initial_form_count() or form.has_changed()


def _field_named(message: str, fields: dict[str, str]) -> str | None:
    for needle, field in fields.items():
        if needle in message:
            return field
    return None


class BackgroundQuestionForm(forms.Form):
    key = forms.CharField(
        max_length=60, help_text="Its column in the exports: letters, digits and _ (e.g. age_group)."
    )
    question = forms.CharField(max_length=500)
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One answer per line; none: the answer is typed freely.",
    )


# Which field a json_shapes message is about (the message names it).
BACKGROUND_FIELDS = {'"key"': "key", "key ": "key", '"question"': "question", "option": "options"}
CHECK_FIELDS = {'"prompt"': "prompt", "expected answer": "expected_answer", "option": "options"}


class BaseBackgroundFormSet(BaseFormSet):
    def questions(self) -> list[dict[str, Any]]:
        """The rows as Study.background_questions, in the order the researcher gave (removed and
        empty rows left out)."""
        rows = []
        for form in self.ordered_forms if self.can_order else self.forms:
            if not _kept(self, form):
                continue
            data = form.cleaned_data
            entry = {"key": data["key"].strip(), "question": data["question"].strip()}
            if options := options_from_lines(data.get("options", "")):
                entry["options"] = options
            rows.append((form, entry))
        self._row_forms = [form for form, _ in rows]
        return [entry for _, entry in rows]

    def clean(self) -> None:
        if any(self.errors) or self.non_form_errors():  # e.g. a tampered row count
            return
        questions = self.questions()
        for message in json_shapes.background_questions_errors(questions):
            match = _ROW.match(message)
            if not match:
                raise forms.ValidationError(message)
            form = self._row_forms[int(match.group(1)) - 1]
            form.add_error(_field_named(message, BACKGROUND_FIELDS), message)

    @classmethod
    def initial_of(cls, study: Study) -> list[dict[str, Any]]:
        return [
            {
                "key": q.get("key", ""),
                "question": q.get("question", ""),
                "options": "\n".join(map(str, q.get("options", []))),
                "ORDER": index,
            }
            for index, q in enumerate(study.background_questions or [], start=1)
        ]


BackgroundFormSet = cast(
    type[BaseBackgroundFormSet],
    formset_factory(
        BackgroundQuestionForm, formset=BaseBackgroundFormSet, extra=1, can_delete=True, can_order=True
    ),
)


class AttentionCheckForm(forms.Form):
    id = forms.IntegerField(widget=forms.HiddenInput, required=False)
    position = forms.IntegerField(
        min_value=0, help_text="Shown after this many sentences (0: before the first)."
    )
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One answer per line; none: the answer is typed.",
    )
    expected_answer = forms.CharField(max_length=200, required=False, label="Expected answer")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:
            return cleaned
        options = options_from_lines(cleaned.get("options", ""))
        for message in json_shapes.attention_check_errors(
            prompt=cleaned.get("prompt", ""),
            options=options,
            expected_answer=cleaned.get("expected_answer", ""),
        ):
            self.add_error(_field_named(message, CHECK_FIELDS), message)
        cleaned["options"] = options
        return cleaned


class BaseAttentionCheckFormSet(BaseFormSet):
    def checks(self) -> list[dict[str, Any]]:
        """The rows as `study_configure` takes them (removed and empty rows left out)."""
        return [
            {
                "id": form.cleaned_data.get("id"),
                "position": form.cleaned_data["position"],
                "prompt": form.cleaned_data["prompt"].strip(),
                "options": form.cleaned_data["options"],
                "expected_answer": form.cleaned_data["expected_answer"].strip(),
            }
            for form in self.forms
            if _kept(self, form)
        ]

    def clean(self) -> None:
        if any(self.errors) or self.non_form_errors():  # e.g. a tampered row count
            return
        seen: dict[int, int] = {}
        for index, form in enumerate(self.forms, start=1):
            if not _kept(self, form):
                continue
            position = form.cleaned_data["position"]
            if position in seen:
                form.add_error(
                    "position",
                    f"Attention check {index}: position {position} is already used by check "
                    f"{seen[position]}.",
                )
            seen.setdefault(position, index)

    @classmethod
    def initial_of(cls, study: Study) -> list[dict[str, Any]]:
        return [
            {
                "id": c.pk,
                "position": c.position,
                "prompt": c.prompt,
                "options": "\n".join(map(str, c.options or [])),
                "expected_answer": c.expected_answer,
            }
            for c in study.attention_checks.order_by("position")
        ]


AttentionCheckFormSet = cast(
    type[BaseAttentionCheckFormSet],
    formset_factory(AttentionCheckForm, formset=BaseAttentionCheckFormSet, extra=1, can_delete=True),
)
