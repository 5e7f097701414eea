"""The form an admin launches a judge run with (the admin's "Launch a judge run" page)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import Study, StudyInstrument
from generation.backends.configured import default_backend
from generation.backends.registry import offered
from judging.instrument import INSTRUMENT_TASKS
from judging.models import JudgeRun
from judging.prompts.registry import DEFAULT_VERSION, available_versions
from work.launch_bounds import MAX_CONCURRENCY, MAX_TOKENS, SEED_MAX, SEED_MIN


class JudgeRunForm(forms.Form):
    study = forms.ModelChoiceField(queryset=Study.objects.order_by("slug"))
    backend = forms.ChoiceField(
        choices=lambda: offered(JudgeRun.Backend.choices),
        # What can run here: the glossary backend unless an OpenAI-compatible server is configured.
        initial=default_backend,
    )
    model_name = forms.CharField(
        required=False,
        max_length=300,
        label="Model",
        help_text="openai: the model name (e.g. gpt-4o-mini); transformers: a local model directory; "
        "glossary: leave empty (the offline heuristic, not an LLM).",
    )
    # The protocol's judges and every instrument key any study asks (the service refuses a key the
    # chosen study does not have, naming the field).
    instruments = forms.MultipleChoiceField(
        choices=[(name, name) for name in INSTRUMENT_TASKS],
        initial=list(INSTRUMENT_TASKS),
        widget=forms.CheckboxSelectMultiple,
        help_text="radiologist: the rubric on every simplification text and the questions on every original; "
        "lay: the Patient persona's answers to the lay questions, before and with each simplification.",
    )
    samples = forms.IntegerField(
        initial=1, min_value=1, max_value=20, help_text="K samples per item (median kept)."
    )
    temperature = forms.FloatField(
        required=False, min_value=0.0, max_value=2.0, help_text="Empty: the prompt's."
    )
    max_tokens = forms.IntegerField(initial=256, min_value=1, max_value=MAX_TOKENS, required=False)
    seed = forms.IntegerField(required=False, min_value=SEED_MIN, max_value=SEED_MAX)
    prompt_version = forms.ChoiceField(choices=(), initial=DEFAULT_VERSION)
    concurrency = forms.IntegerField(
        min_value=1, max_value=MAX_CONCURRENCY, required=False, help_text="Empty: the server's default."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        versions = self.fields["prompt_version"]
        assert isinstance(versions, forms.ChoiceField)
        versions.choices = [(v, v) for v in available_versions()]
        keys = StudyInstrument.objects.filter(is_current=True).values_list("key", flat=True).distinct()
        instruments = self.fields["instruments"]
        assert isinstance(instruments, forms.MultipleChoiceField)
        instruments.choices = [
            *((name, name) for name in INSTRUMENT_TASKS),
            *((key, f"{key} (instrument items)") for key in sorted(set(keys))),
        ]

    def launch_arguments(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        return {
            "study": data["study"],
            "backend": data["backend"],
            "model_name": data["model_name"],
            "instruments": data["instruments"],
            "samples": data["samples"],
            "temperature": data["temperature"],
            "max_tokens": data["max_tokens"],
            "seed": data["seed"],
            "prompt_version": data["prompt_version"],
            "concurrency": data["concurrency"],
            # Asked before anything is queued: an unreachable server or a refused key is a form error.
            "check_server": True,
        }
