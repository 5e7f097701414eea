"""Admin for generation: launch a batch (a form, and an action on Study), follow it, read every job's
transcript next to the simplifications it produced, cancel or resume it. Batches are created only
through the launch form (generation.services.batches.generation_batch_create), never edited."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from annotation.access import access_study
from annotation.admin_access import StudyScopedAdmin, SuperuserOnlyAdmin
from generation.forms import GenerationBatchForm
from generation.models import GenerationBatch, GenerationJob, LLMCallCache
from generation.services import batches
from generation.services.controls import MAX_RATE, study_controls_plant
from studies.admin import ADMIN_CSS, RELATED, transcript_table
from studies.admin_extensions import study_admin_action_add
from work.admin_launch import LaunchedWorkAdmin, study_launch_action


@admin.register(GenerationBatch)
class GenerationBatchAdmin(LaunchedWorkAdmin):
    list_display = (
        "id",
        "study",
        "backend",
        "model_shown",
        "systems_shown",
        "job_counts",
        "status_shown",
        "created_at",
        "page_link",
    )
    list_filter = ("backend", ("study", RELATED))
    actions = ["cancel_batches", "resume_batches", "retry_failed_jobs"]
    readonly_fields = (
        "study",
        "systems",
        "backend",
        "model_name",
        "model_artifact",
        "prompt_version",
        "parameters",
        "concurrency",
        "created_by",
        "created_at",
        "finished_at",
        "cancelled_at",
        "page_link",
        "jobs_link",
    )
    launch_form = GenerationBatchForm
    launch_service = staticmethod(lambda **arguments: batches.generation_batch_create(**arguments))
    launch_title = "Generate simplifications"
    jobs_relation = "jobs"
    batch_noun = "Batch"
    page_link_text = "progress and transcripts"
    scoped_fields = ("study", "model_artifact")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("study", "model_artifact")

    @admin.display(description="model")
    def model_shown(self, obj):
        return obj.model_label

    @admin.display(description="systems")
    def systems_shown(self, obj):
        return ", ".join(obj.systems)

    @admin.display(description="jobs")
    def jobs_link(self, obj):
        url = reverse("admin:generation_generationjob_changelist") + f"?batch__id__exact={obj.pk}"
        return format_html('<a href="{}">{} jobs</a>', url, obj.jobs.count())

    @admin.action(description="Cancel the pending jobs of the selected batches")
    def cancel_batches(self, request, queryset):
        count = sum(batches.generation_batch_cancel(batch=batch) for batch in queryset)
        self.message_user(request, f"{count} pending job(s) cancelled; running jobs finish.")

    def resume(self, batch, *, retry_failed: bool) -> list[int]:
        return batches.generation_batch_resume(batch=batch, retry_failed=retry_failed)

    @admin.action(description="Resume the selected batches (send cancelled and lost jobs again)")
    def resume_batches(self, request, queryset):
        self.resume_selected(request, queryset, retry_failed=False)

    @admin.action(description="Retry the failed jobs of the selected batches")
    def retry_failed_jobs(self, request, queryset):
        self.resume_selected(request, queryset, retry_failed=True)


@admin.register(GenerationJob)
class GenerationJobAdmin(StudyScopedAdmin):
    list_display = (
        "id",
        "batch",
        "source",
        "family",
        "status",
        "attempts",
        "calls",
        "cached_calls",
        "tokens",
        "cost_usd",
        "short_error",
        "produced",
    )
    list_filter = ("status", "family", ("batch", RELATED))
    search_fields = ("source__key", "error")
    exclude = ("transcript", "simplifications")

    class Media:
        css = ADMIN_CSS

    readonly_fields = (
        "batch",
        "source",
        "family",
        "systems",
        "status",
        "attempts",
        "error",
        "dispatched_at",
        "not_before",
        "started_at",
        "heartbeat_at",
        "finished_at",
        "task_id",
        "calls",
        "cached_calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "produced",
        "transcript_view",
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)  # scoped to the user's studies by StudyScopedAdmin
            .select_related("batch__study", "source")
            .prefetch_related("simplifications__system")
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="tokens")
    def tokens(self, obj):
        return obj.prompt_tokens + obj.completion_tokens

    @admin.display(description="error")
    def short_error(self, obj):
        return obj.error[:120]

    @admin.display(description="simplifications")
    def produced(self, obj):
        return (
            format_html_join(
                ", ",
                '<a href="{}">{}</a>{}',
                (
                    (
                        reverse("admin:annotation_simplification_change", args=[s.pk]),
                        s.system.key,
                        " ⚑" if s.flagged else "",
                    )
                    for s in obj.simplifications.all()
                ),
            )
            or "—"
        )

    @admin.display(description="transcript")
    def transcript_view(self, obj):
        return transcript_table(obj.transcript)


@admin.register(LLMCallCache)
class LLMCallCacheAdmin(SuperuserOnlyAdmin):
    list_display = ("key", "backend", "model_name", "created_at")
    list_filter = ("backend", "model_name")
    search_fields = ("key",)
    readonly_fields = ("key", "backend", "model_name", "completion", "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# "Generate simplifications" as an action on Study: the annotation app owns StudyAdmin, which reads
# the actions other apps register (studies.admin_extensions).
study_admin_action_add(
    study_launch_action(
        name="generate_simplifications",
        model=GenerationBatch,
        description="Generate simplifications for the selected study…",
        noun="to generate for",
    )
)


class PlantControlsForm(forms.Form):
    rate = forms.FloatField(
        min_value=0,
        max_value=MAX_RATE,
        initial=0.2,
        help_text="Share of the rows on radiologists' pages that are planted (0 removes the controls).",
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=2**31 - 1,  # PlantedControl.seed is an IntegerField
        help_text="The same rate and seed always plant the same controls.",
    )


@admin.action(description="Plant controls into radiologists' pages…")
def plant_controls(modeladmin, request, queryset):
    """Planted controls: an intermediate page asks the rate and seed, then
    generation.services.controls plants them in the one selected study."""
    studies = list(queryset[:2])
    if len(studies) != 1:
        modeladmin.message_user(request, "Select exactly one study to plant controls in.", messages.WARNING)
        return None
    study = access_study(user=request.user, slug=studies[0].slug, need="edit")
    form = PlantControlsForm(request.POST if "rate" in request.POST else None)
    if form.is_valid():
        try:
            result = study_controls_plant(
                study=study,
                rate=form.cleaned_data["rate"],
                seed=form.cleaned_data["seed"],
                actor=request.user,
            )
        except ValidationError as exc:
            modeladmin.message_user(request, " ".join(exc.messages), messages.ERROR)
            return None
        modeladmin.message_user(
            request,
            f"{study.slug}: {result.planted} controls among {result.texts} texts "
            f"({result.share:.1%} of rows planted){'' if result.changed else ', unchanged'}.",
            messages.SUCCESS,
        )
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Plant controls in {study.title}",
        "form": form,
        "study": study,
        "opts": modeladmin.model._meta,
        "action": "plant_controls",
        "selected": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "generation/admin_plant_controls.html", context)


study_admin_action_add(plant_controls)
