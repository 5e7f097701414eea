"""Admin for local models and training jobs: register a model directory, launch a fine-tuning
job (study pairs or a corpus file), watch its progress bar fill while it trains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.admin_access import StudyScopedAdmin, SuperuserOnlyAdmin, scope_to_user
from annotation.models import Study
from ml import selectors, services
from ml.models import EmbeddingCacheEntry, ModelArtifact, TrainingJob
from ml.paths import model_dir_path
from studies.admin import ADMIN_CSS, RELATED


def _format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def progress_bar_html(job: TrainingJob) -> str:
    progress = job.progress or {}
    step, total = progress.get("step", 0), progress.get("total_steps") or 0
    loss = progress.get("loss")
    detail = (
        f"step {step}/{total or '?'} · epoch {progress.get('epoch', 0):.2f} · "
        f"loss {loss:.4f} · ETA {_format_eta(progress.get('eta_s'))} · {progress.get('phase', job.status)}"
        if loss is not None
        else job.get_status_display()
    )
    return format_html(
        '<span class="ml-progress" data-url="{}" data-status="{}">'
        '<progress value="{}" max="{}"></progress> '
        '<span class="ml-progress-text">{}</span></span>',
        reverse("admin:ml_trainingjob_progress", args=[job.pk]),
        job.status,
        step,
        max(total, 1),
        detail,
    )


class ModelArtifactAddForm(forms.ModelForm):
    """Register a model directory; the architecture is read from its config.json unless chosen."""

    class Meta:
        model = ModelArtifact
        fields = ("name", "path")

    architecture = forms.ChoiceField(
        choices=[("", "read it from config.json"), *ModelArtifact.Architecture.choices], required=False
    )

    def clean_path(self):
        value = model_dir_path(self.cleaned_data["path"])
        if not (Path(value).expanduser() / "config.json").is_file():
            raise ValidationError("Not a local model directory on this machine (no config.json).")
        return value


@admin.register(ModelArtifact)
class ModelArtifactAdmin(StudyScopedAdmin):
    list_display = ("name", "kind", "architecture", "base_model", "metrics", "created_at")
    list_filter = ("kind", "architecture")
    list_select_related = ("base_model",)
    search_fields = ("name", "path")
    readonly_fields = (
        "path",
        "kind",
        "architecture",
        "base_model",
        "training_job",
        "training_data",
        "training_filter",
        "hyperparameters",
        "validation_metrics",
        "created_at",
    )

    @admin.display(description="validation")
    def metrics(self, obj: ModelArtifact) -> str:
        shown = {k: obj.validation_metrics.get(k) for k in ("bleu", "corpus_sari", "fkgl")}
        return " · ".join(f"{k} {v:.2f}" for k, v in shown.items() if isinstance(v, int | float)) or "–"

    def get_form(
        self, request: HttpRequest, obj: ModelArtifact | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[ModelArtifact]]:
        if obj is None:
            kwargs["form"] = ModelArtifactAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        return ("name", "path", "architecture") if obj is None else ("name", *self.readonly_fields)

    def get_readonly_fields(self, request, obj=None):
        # Only the name of a registered model changes: its files are what its history refers to.
        return () if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        created = services.model_artifact_register(
            name=form.cleaned_data["name"],
            path=form.cleaned_data["path"],
            architecture=form.cleaned_data["architecture"] or None,
        )
        obj.pk, obj.path, obj.architecture = created.pk, created.path, created.architecture


class TrainingJobForm(forms.ModelForm):
    """The launch form: the service does the validation, so the admin and the command agree."""

    class Meta:
        model = TrainingJob
        fields = ("study", "corpus_path", "base_artifact", "base_model_path", "output_dir")

    study = forms.ModelChoiceField(Study.objects.all(), required=False)
    pair_filter = forms.CharField(
        initial="expert_min:4", help_text="all | expert_min:K | lay_preferred (study only)"
    )
    # Bounded so that a slip of the keyboard is a form error, not a week of GPU time.
    epochs = forms.IntegerField(initial=3, min_value=1, max_value=1000)
    learning_rate = forms.FloatField(initial=3e-4, min_value=0)
    batch_size = forms.IntegerField(initial=8, min_value=1, max_value=4096)
    more_hyperparameters = forms.CharField(
        required=False,
        initial="{}",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Other TrainingConfig fields as JSON, e.g. {"source_prefix": "simplify: "}',
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        try:
            extra = json.loads(data.get("more_hyperparameters") or "{}")
        except json.JSONDecodeError as exc:
            raise ValidationError({"more_hyperparameters": f"not JSON: {exc}"}) from None
        if not isinstance(extra, dict):
            raise ValidationError({"more_hyperparameters": "a JSON object, please"})
        for field in ("corpus_path", "base_model_path", "output_dir"):
            if data.get(field):
                try:
                    data[field] = model_dir_path(data[field])
                except ValidationError as exc:
                    self.add_error(field, exc)
                    return data
        hyperparameters = {k: data.get(k) for k in ("epochs", "learning_rate", "batch_size")}
        data["launch"] = {
            "study": data.get("study"),
            "corpus_path": data.get("corpus_path") or "",
            "pair_filter": data.get("pair_filter") if data.get("study") else None,
            "base_artifact": data.get("base_artifact"),
            "base_model_path": data.get("base_model_path") or "",
            "hyperparameters": {**extra, **hyperparameters},
            "output_dir": data.get("output_dir") or "",
        }
        # The service's own checks, so the admin and the command refuse the same things.
        try:
            services.training_job_prepare(**data["launch"])
        except ValidationError as exc:
            if not hasattr(exc, "error_dict"):
                raise
            for field, errors in exc.error_dict.items():
                field = "more_hyperparameters" if field == "hyperparameters" else field
                self.add_error(field if field in self.fields else None, errors)
        return data

    def _post_clean(self):
        # The instance is built by the service in save_model, not from the form.
        pass


@admin.register(TrainingJob)
class TrainingJobAdmin(StudyScopedAdmin):
    list_display = ("id", "data", "base", "status", "progress_bar", "output_artifact", "created_at")
    list_filter = ("status", ("study", RELATED))
    list_select_related = ("study", "base_artifact", "output_artifact")
    actions = ["cancel_jobs", "retry_jobs"]
    readonly_fields = (
        "progress_bar",
        "status",
        "pair_filter",
        "hyperparameters",
        "error",
        "output_artifact",
        "celery_task_id",
        "cancel_requested",
        "created_at",
        "started_at",
        "finished_at",
    )

    class Media:
        js = ("ml/training_progress.js",)
        css = ADMIN_CSS

    def get_form(
        self, request: HttpRequest, obj: TrainingJob | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[TrainingJob]]:
        if obj is None:
            kwargs["form"] = TrainingJobForm
        form = super().get_form(request, obj, change, **kwargs)
        if obj is None:
            # The launch form declares its own study field (shared by every form class made from it):
            # replace it with one that offers only the user's studies.
            form.base_fields["study"] = forms.ModelChoiceField(
                scope_to_user(Study.objects.all(), request.user), required=False
            )
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return (
                "study",
                "pair_filter",
                "corpus_path",
                "base_artifact",
                "base_model_path",
                "epochs",
                "learning_rate",
                "batch_size",
                "more_hyperparameters",
                "output_dir",
            )
        return (
            "progress_bar",
            "status",
            "study",
            "pair_filter",
            "corpus_path",
            "base_artifact",
            "base_model_path",
            "hyperparameters",
            "output_dir",
            "output_artifact",
            "error",
            "celery_task_id",
            "cancel_requested",
            "created_at",
            "started_at",
            "finished_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return self.get_fields(request, obj)  # a job is a record: nothing is edited after launch

    @admin.display(description="data")
    def data(self, obj: TrainingJob) -> str:
        if obj.study is not None:
            return f"{obj.study.slug} ({selectors.PairFilter.parse(obj.pair_filter)})"
        return obj.corpus_path

    @admin.display(description="base model")
    def base(self, obj: TrainingJob) -> str:
        return str(obj.base_artifact) if obj.base_artifact_id else obj.base_model_path

    @admin.display(description="progress")
    def progress_bar(self, obj: TrainingJob) -> str:
        return progress_bar_html(obj) if obj.pk else "–"

    def save_model(self, request, obj, form, change):
        if change:
            return  # a job is a record; it is changed only by its run, cancel and retry
        job = services.training_job_create(**form.cleaned_data["launch"])
        obj.pk, obj.status = job.pk, job.status
        self.message_user(request, f"Training job {job.pk} queued on the gpu queue.")

    def get_urls(self):
        return [
            path(
                "<int:job_id>/progress/",
                self.admin_site.admin_view(self.progress_view),
                name="ml_trainingjob_progress",
            ),
            *super().get_urls(),
        ]

    def progress_view(self, request, job_id: int):
        get_object_or_404(self.get_queryset(request), pk=job_id)
        if not self.has_view_permission(request):
            return JsonResponse({"error": "forbidden"}, status=403)
        data = selectors.training_job_progress(job_id=job_id)
        job = TrainingJob(pk=job_id, status=data["status"], progress=data["progress"])
        return JsonResponse({**data, "html": progress_bar_html(job)})

    @admin.action(description="Cancel selected jobs (a running job stops at its next checkpoint)")
    def cancel_jobs(self, request, queryset):
        for job in queryset:
            services.training_job_cancel(job=job)
        self.message_user(request, f"Cancellation requested for {queryset.count()} job(s).")

    @admin.action(description="Retry selected failed/cancelled jobs (resumes from the last checkpoint)")
    def retry_jobs(self, request, queryset):
        retried = 0
        for job in queryset:
            try:
                services.training_job_retry(job=job)
                retried += 1
            except ValidationError as exc:
                self.message_user(request, f"Job {job.pk}: {'; '.join(exc.messages)}", level=messages.WARNING)
        self.message_user(request, f"{retried} job(s) queued again.")


@admin.register(EmbeddingCacheEntry)
class EmbeddingCacheEntryAdmin(SuperuserOnlyAdmin):
    list_display = ("key", "model_id", "dimension", "created_at")
    list_filter = ("model_id",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
