"""The form an admin launches a generation batch with (the Django admin's "Generate" page)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.apps import apps
from django.conf import settings

from annotation.models import Study
from generation.backends.configured import default_backend
from generation.backends.registry import offered
from generation.models import GENERATED_SYSTEMS, SYSTEM_LABELS, GenerationBatch
from generation.prompts.registry import DEFAULT_VERSION, available_versions
from work.launch_bounds import MAX_CONCURRENCY, MAX_SAMPLE_INDEX, MAX_TOKENS, SEED_MAX, SEED_MIN


def _model_artifacts() -> Any:
    ModelArtifact = apps.get_model("ml", "ModelArtifact")  # noqa: N806 - a model class
    return ModelArtifact.objects.order_by("name")


class GenerationBatchForm(forms.Form):
    study = forms.ModelChoiceField(queryset=Study.objects.order_by("slug"))
    systems = forms.MultipleChoiceField(
        choices=[(key, f"{SYSTEM_LABELS[key]} ({key})") for key in GENERATED_SYSTEMS],
        widget=forms.CheckboxSelectMultiple,
        initial=["plain_bs", "plain_sc", "cot_bs", "cot_sc"],
        help_text="plain_bs/plain_sc share one run of the plain prompt, cot_bs/cot_sc one of the CoT prompt; "
        "asking only for a BS system skips the self-correction loop.",
    )
    backend = forms.ChoiceField(
        choices=lambda: offered(GenerationBatch.Backend.choices),
        # What can run here: the glossary backend unless an OpenAI-compatible server is configured.
        initial=default_backend,
    )
    model_name = forms.CharField(
        required=False,
        max_length=300,
        label="Model",
        help_text="openai: the model name (e.g. gpt-3.5-turbo); transformers: a local model directory "
        "(or choose an artifact below); glossary: leave empty.",
    )
    model_artifact = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Model artifact",
        help_text="A registered local or fine-tuned model (transformers backend).",
    )
    temperature = forms.FloatField(initial=0.8, min_value=0.0, max_value=2.0)
    max_rounds = forms.IntegerField(initial=5, min_value=0, max_value=50, label="Max self-correction rounds")
    seed = forms.IntegerField(
        required=False,
        min_value=SEED_MIN,
        max_value=SEED_MAX,
        help_text="Sent to backends that honour a seed.",
    )
    max_tokens = forms.IntegerField(
        initial=512, min_value=1, max_value=MAX_TOKENS, required=False, label="Max tokens per answer"
    )
    sample_index = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_SAMPLE_INDEX,
        help_text="Identical calls are answered from the cache; raise this to draw fresh samples.",
    )
    prompt_version = forms.ChoiceField(choices=(), initial=DEFAULT_VERSION)
    concurrency = forms.IntegerField(
        min_value=1,
        max_value=MAX_CONCURRENCY,
        required=False,
        help_text="Tasks of this batch queued or running at once (jobs for API backends, chunks of jobs "
        "for local models) "
        f"(default {settings.RADLAY_JOB_CONCURRENCY}).",
    )

    replace_uploaded = forms.BooleanField(
        required=False,
        label="Replace uploaded texts",
        help_text="A chosen system whose texts were uploaded is refused unless this is ticked: "
        "generating writes over the uploaded texts of the same system.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        artifacts, versions = self.fields["model_artifact"], self.fields["prompt_version"]
        assert isinstance(artifacts, forms.ModelChoiceField) and isinstance(versions, forms.ChoiceField)
        artifacts.queryset = _model_artifacts()
        versions.choices = [(v, v) for v in available_versions()]

    def launch_arguments(self) -> dict[str, Any]:
        """The keyword arguments of services.generation_batch_create (call after is_valid())."""
        data = self.cleaned_data
        return {
            "study": data["study"],
            "systems": data["systems"],
            "backend": data["backend"],
            "model_name": data["model_name"],
            "model_artifact": data["model_artifact"],
            "temperature": data["temperature"],
            "max_rounds": data["max_rounds"],
            "seed": data["seed"],
            "max_tokens": data["max_tokens"],
            "sample_index": data["sample_index"],
            "prompt_version": data["prompt_version"],
            "concurrency": data["concurrency"],
            "replace_uploaded": data.get("replace_uploaded", False),
            # Asked before anything is queued: an unreachable server or a refused key is a form error.
            "check_server": True,
        }
