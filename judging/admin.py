"""Admin for judging: launch a judge run (a form, and an action on Study), follow it, read every
item's outputs and failures. Runs and answers are created only through the services, never edited."""

from __future__ import annotations

from django.contrib import admin

from judging import services
from judging.forms import JudgeRunForm
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from studies.admin import RELATED, ReadOnlyAdmin
from studies.admin_extensions import study_admin_action_add
from work.admin_launch import LaunchedWorkAdmin, study_launch_action


@admin.register(JudgeRun)
class JudgeRunAdmin(LaunchedWorkAdmin):
    list_display = (
        "id",
        "study",
        "label",
        "prompt_version",
        "item_counts",
        "status_shown",
        "page_link",
        "created_at",
    )
    list_filter = ("backend", ("study", RELATED))
    readonly_fields = [f.name for f in JudgeRun._meta.fields]
    actions = ["cancel_runs", "resume_runs", "retry_failed_items", "recompute_agreement"]
    launch_form = JudgeRunForm
    launch_service = staticmethod(lambda **arguments: services.judge_run_create(**arguments))
    launch_title = "Launch a judge run"
    jobs_relation = "items"
    batch_noun = "Judge run"
    page_link_text = "progress and outputs"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("study")

    @admin.display(description="judge")
    def label(self, obj):
        return obj.label

    @admin.display(description="items")
    def item_counts(self, obj):
        return self.job_counts(obj)

    @admin.action(description="Cancel the pending items of the selected runs")
    def cancel_runs(self, request, queryset):
        count = sum(services.judge_run_cancel(run=run) for run in queryset)
        self.message_user(request, f"{count} pending item(s) cancelled; running items finish.")

    def resume(self, batch, *, retry_failed: bool) -> list[int]:
        return services.judge_run_resume(run=batch, retry_failed=retry_failed)

    @admin.action(description="Resume the selected runs (send cancelled and lost items again)")
    def resume_runs(self, request, queryset):
        self.resume_selected(request, queryset, retry_failed=False)

    @admin.action(description="Retry the failed items of the selected runs (fresh samples)")
    def retry_failed_items(self, request, queryset):
        self.resume_selected(request, queryset, retry_failed=True)

    @admin.action(description="Recompute the judge–human agreement of the selected runs")
    def recompute_agreement(self, request, queryset):
        for run in queryset:
            services.judge_run_agreement_recompute(run=run)
        self.message_user(request, f"Agreement recomputation sent for {queryset.count()} run(s).")


@admin.register(JudgeItem)
class JudgeItemAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "run",
        "task",
        "source",
        "status",
        "failure_kind",
        "attempts",
        "calls",
        "cached_calls",
    )
    list_filter = ("status", "task", "failure_kind", ("run", RELATED))
    readonly_fields = [f.name for f in JudgeItem._meta.fields]


@admin.register(JudgeAnswer)
class JudgeAnswerAdmin(ReadOnlyAdmin):
    list_display = ("id", "item", "n_samples", *JudgeAnswer.FIELDS)
    readonly_fields = [f.name for f in JudgeAnswer._meta.fields]


# "Run an LLM judge" as an action on Study: the annotation app owns StudyAdmin, which reads the
# actions other apps register (studies.admin_extensions).
study_admin_action_add(
    study_launch_action(
        name="judge_study",
        model=JudgeRun,
        description="Run an LLM judge on the selected study…",
        noun="to judge",
    )
)
