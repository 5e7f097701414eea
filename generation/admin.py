"""Admin for generation: launch a batch (a form, and an action on Study), follow it, read every job's
transcript next to the simplifications it produced, cancel or resume it. Batches are created only
through the launch form (generation.services.batches.generation_batch_create), never edited."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from annotation.admin import ADMIN_CSS, RELATED, StudyAdmin, transcript_table
from annotation.admin_access import StudyScopedAdmin, SuperuserOnlyAdmin, scope_to_user
from annotation.models import Study
from generation.forms import GenerationBatchForm
from generation.models import GenerationBatch, GenerationJob, LLMCallCache
from generation.services import batches


@admin.register(GenerationBatch)
class GenerationBatchAdmin(StudyScopedAdmin):
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

    def get_queryset(self, request):
        status = GenerationJob.Status
        return (
            super()
            .get_queryset(request)  # scoped to the user's studies by StudyScopedAdmin
            .select_related("study", "model_artifact")
            .annotate(
                _total=Count("jobs"),
                _succeeded=Count("jobs", filter=Q(jobs__status=status.SUCCEEDED)),
                _failed=Count("jobs", filter=Q(jobs__status=status.FAILED)),
            )
        )

    def get_urls(self):
        launch = path(
            "launch/", self.admin_site.admin_view(self.launch_view), name="generation_generationbatch_launch"
        )
        return [launch, *super().get_urls()]

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:generation_generationbatch_launch"))

    def has_change_permission(self, request, obj=None):
        return False

    def launch_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            return HttpResponse("You may not launch generation batches.", status=403)
        form = GenerationBatchForm(request.POST or None, initial={"study": request.GET.get("study")})
        # Only the user's own studies (and models) can be chosen, so none can be launched for another.
        for name in ("study", "model_artifact"):
            form.fields[name].queryset = scope_to_user(form.fields[name].queryset, request.user)
        if request.method == "POST" and form.is_valid():
            try:
                batch = batches.generation_batch_create(**form.batch_arguments(), created_by=request.user)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            except batches.TaskQueueUnreachable as exc:
                self.message_user(request, str(exc), messages.WARNING)
                return HttpResponseRedirect(reverse("generation:batch_detail", args=[exc.batch.pk]))
            else:
                self.message_user(
                    request, f"Batch {batch.pk} launched: {batch.jobs.count()} jobs.", messages.SUCCESS
                )
                return HttpResponseRedirect(reverse("generation:batch_detail", args=[batch.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Generate simplifications",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "generation/admin_launch.html", context)

    @admin.display(description="model")
    def model_shown(self, obj):
        return obj.model_label

    @admin.display(description="systems")
    def systems_shown(self, obj):
        return ", ".join(obj.systems)

    @admin.display(description="jobs")
    def job_counts(self, obj):
        return f"{obj._succeeded} ok / {obj._failed} failed / {obj._total}"

    @admin.display(description="status")
    def status_shown(self, obj):
        return obj.status

    @admin.display(description="progress page")
    def page_link(self, obj):
        return format_html(
            '<a href="{}">progress and transcripts</a>', reverse("generation:batch_detail", args=[obj.pk])
        )

    @admin.display(description="jobs")
    def jobs_link(self, obj):
        url = reverse("admin:generation_generationjob_changelist") + f"?batch__id__exact={obj.pk}"
        return format_html('<a href="{}">{} jobs</a>', url, obj.jobs.count())

    @admin.action(description="Cancel the pending jobs of the selected batches")
    def cancel_batches(self, request, queryset):
        count = sum(batches.generation_batch_cancel(batch=batch) for batch in queryset)
        self.message_user(request, f"{count} pending job(s) cancelled; running jobs finish.")

    def _resume(self, request, queryset, *, retry_failed: bool) -> None:
        sent = 0
        for batch in queryset:
            try:
                sent += len(batches.generation_batch_resume(batch=batch, retry_failed=retry_failed))
            except batches.TaskQueueUnreachable as exc:
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(request, f"{sent} job(s) sent.")

    @admin.action(description="Resume the selected batches (send cancelled and lost jobs again)")
    def resume_batches(self, request, queryset):
        self._resume(request, queryset, retry_failed=False)

    @admin.action(description="Retry the failed jobs of the selected batches")
    def retry_failed_jobs(self, request, queryset):
        self._resume(request, queryset, retry_failed=True)


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


# "Generate simplifications" as an action on Study. The annotation app owns StudyAdmin; generation
# extends it the way one extends UserAdmin (subclass and register again) rather than editing it.
@admin.action(description="Generate simplifications for the selected study…")
def generate_simplifications(modeladmin, request, queryset):
    studies = list(queryset[:2])
    if len(studies) != 1:
        modeladmin.message_user(request, "Select exactly one study to generate for.", messages.WARNING)
        return None
    return HttpResponseRedirect(
        reverse("admin:generation_generationbatch_launch") + f"?study={studies[0].pk}"
    )


class StudyWithGenerationAdmin(StudyAdmin):
    actions = [*StudyAdmin.actions, generate_simplifications]


if admin.site.is_registered(Study):
    admin.site.unregister(Study)
admin.site.register(Study, StudyWithGenerationAdmin)
