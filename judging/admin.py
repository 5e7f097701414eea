"""Admin for judging: launch a judge run (a form, and an action on Study), follow it, read every
item's outputs and failures. Runs and answers are created only through the services, never edited."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.admin import RELATED, ReadOnlyAdmin
from annotation.admin_access import StudyScopedAdmin, scope_to_user
from annotation.models import Study
from judging import services
from judging.forms import JudgeRunForm
from judging.models import JudgeAnswer, JudgeItem, JudgeRun


@admin.register(JudgeRun)
class JudgeRunAdmin(StudyScopedAdmin):
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

    def get_queryset(self, request):
        status = JudgeItem.Status
        return (
            super()
            .get_queryset(request)
            .select_related("study")
            .annotate(
                _total=Count("items"),
                _succeeded=Count("items", filter=Q(items__status=status.SUCCEEDED)),
                _failed=Count("items", filter=Q(items__status=status.FAILED)),
            )
        )

    def get_urls(self):
        launch = path("launch/", self.admin_site.admin_view(self.launch_view), name="judging_judgerun_launch")
        return [launch, *super().get_urls()]

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:judging_judgerun_launch"))

    def has_change_permission(self, request, obj=None):
        return False

    def launch_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            return HttpResponse("You may not launch judge runs.", status=403)
        form = JudgeRunForm(request.POST or None, initial={"study": request.GET.get("study")})
        # Only the user's own studies can be chosen, so no run can be launched for another.
        form.fields["study"].queryset = scope_to_user(form.fields["study"].queryset, request.user)
        if request.method == "POST" and form.is_valid():
            try:
                run = services.judge_run_create(**form.run_arguments(), created_by=request.user)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                self.message_user(
                    request, f"Judge run {run.pk} launched: {run.items.count()} items.", messages.SUCCESS
                )
                return HttpResponseRedirect(reverse("judging:run-detail", args=[run.study.slug, run.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Launch a judge run",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "judging/admin_launch.html", context)

    @admin.display(description="judge")
    def label(self, obj):
        return obj.label

    @admin.display(description="items")
    def item_counts(self, obj):
        return f"{obj._succeeded} ok / {obj._failed} failed / {obj._total}"

    @admin.display(description="status")
    def status_shown(self, obj):
        return obj.status

    @admin.display(description="progress page")
    def page_link(self, obj):
        return format_html(
            '<a href="{}">progress and outputs</a>',
            reverse("judging:run-detail", args=[obj.study.slug, obj.pk]),
        )

    @admin.action(description="Cancel the pending items of the selected runs")
    def cancel_runs(self, request, queryset):
        count = sum(services.judge_run_cancel(run=run) for run in queryset)
        self.message_user(request, f"{count} pending item(s) cancelled; running items finish.")

    @admin.action(description="Resume the selected runs (send cancelled and lost items again)")
    def resume_runs(self, request, queryset):
        sent = sum(len(services.judge_run_resume(run=run)) for run in queryset)
        self.message_user(request, f"{sent} item(s) sent.")

    @admin.action(description="Retry the failed items of the selected runs (fresh samples)")
    def retry_failed_items(self, request, queryset):
        sent = sum(len(services.judge_run_resume(run=run, retry_failed=True)) for run in queryset)
        self.message_user(request, f"{sent} item(s) sent.")

    @admin.action(description="Recompute the judge–human agreement of the selected runs")
    def recompute_agreement(self, request, queryset):
        from judging import tasks

        for run in queryset:
            tasks.judge_run_agreement.delay(run.pk)
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


# "Run an LLM judge" as an action on Study: extend whichever StudyAdmin is registered (annotation's,
# or generation's subclass) the way generation does, rather than editing it.
@admin.action(description="Run an LLM judge on the selected study…")
def judge_study(modeladmin, request, queryset):
    studies = list(queryset[:2])
    if len(studies) != 1:
        modeladmin.message_user(request, "Select exactly one study to judge.", messages.WARNING)
        return None
    return HttpResponseRedirect(reverse("admin:judging_judgerun_launch") + f"?study={studies[0].pk}")


_StudyAdmin = type(admin.site.get_model_admin(Study)) if admin.site.is_registered(Study) else admin.ModelAdmin


class StudyWithJudgesAdmin(_StudyAdmin):
    actions = [*(_StudyAdmin.actions or []), judge_study]


if admin.site.is_registered(Study):
    admin.site.unregister(Study)
admin.site.register(Study, StudyWithJudgesAdmin)
