"""The admin of a batch of scheduled work (work.scheduler): a launch page instead of
the add form, the batch's job counts in the list, nothing edited by hand. Generation's batches and
judging's runs are both administered this way; each says what it launches and where it shows it."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.db.models import Count, Model, Q
from django.forms import Form, ModelChoiceField
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.admin_access import StudyScopedAdmin, scope_to_user
from work.launch_forms import form_launch
from work.scheduler import TaskQueueUnreachable


class LaunchedWorkAdmin(StudyScopedAdmin):
    """Set on a subclass: `launch_form` (a form whose `launch_arguments()` are the keyword
    arguments of `launch_service`, which creates the batch and raises ValidationError naming the
    field of a bad request), `launch_title`, `jobs_relation` (the related name of the batch's jobs,
    also the word for them), `batch_noun` ("Batch") and `resume(batch, retry_failed=...)` (the
    app's resume service, for the resume actions). The launch page is the app's admin_launch.html
    (extending work/admin_launch.html); the batch model has get_absolute_url (its progress page).
    A launch or resume whose messages the broker refused (TaskQueueUnreachable: the batch exists)
    is a warning, not a failure."""

    launch_form: type[Form]
    launch_service: Callable[..., Model]
    launch_title: str
    jobs_relation: str
    batch_noun: str
    # The progress page link's words in the list.
    page_link_text: str = "progress"
    # Form fields whose choices are narrowed to the user's own studies (and their objects).
    scoped_fields: tuple[str, ...] = ("study",)

    def get_queryset(self, request):
        jobs = self.jobs_relation
        return (
            super()
            .get_queryset(request)  # scoped to the user's studies by StudyScopedAdmin
            .annotate(
                _total=Count(jobs),
                _succeeded=Count(jobs, filter=Q(**{f"{jobs}__status": "succeeded"})),
                _failed=Count(jobs, filter=Q(**{f"{jobs}__status": "failed"})),
            )
        )

    def _launch_url_name(self) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_launch"

    def get_urls(self):
        launch = path("launch/", self.admin_site.admin_view(self.launch_view), name=self._launch_url_name())
        return [launch, *super().get_urls()]

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse(f"admin:{self._launch_url_name()}"))

    def has_change_permission(self, request, obj=None):
        return False

    def launch_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            return HttpResponse(f"You may not launch {self.opts.verbose_name_plural}.", status=403)
        form = self.launch_form(request.POST or None, initial={"study": request.GET.get("study")})
        # Only the user's own studies (and their objects) can be chosen, so none can be launched
        # for another.
        for name in self.scoped_fields:
            scoped = form.fields[name]
            # ModelMultipleChoiceField is a ModelChoiceField too; a launch form's fields have a queryset.
            assert isinstance(scoped, ModelChoiceField) and scoped.queryset is not None
            scoped.queryset = scope_to_user(scoped.queryset, request.user)
        if request.method == "POST" and form.is_valid():
            launched = form_launch(form, type(self).launch_service, created_by=request.user)
            batch = launched.batch
            if launched.warning:
                self.message_user(request, launched.warning, messages.WARNING)
                return HttpResponseRedirect(batch.get_absolute_url())
            if batch is not None:
                jobs = getattr(batch, self.jobs_relation).count()
                self.message_user(
                    request,
                    f"{self.batch_noun} {batch.pk} launched: {jobs} {self.jobs_relation}.",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(batch.get_absolute_url())
        context = {
            **self.admin_site.each_context(request),
            "title": self.launch_title,
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, f"{self.opts.app_label}/admin_launch.html", context)

    def resume(self, batch, *, retry_failed: bool) -> list[int]:
        raise NotImplementedError

    def resume_selected(self, request: HttpRequest, queryset, *, retry_failed: bool) -> None:
        """Resume each selected batch; a broker outage is reported per batch (it resumes later)."""
        sent = 0
        for batch in queryset:
            try:
                sent += len(self.resume(batch, retry_failed=retry_failed))
            except TaskQueueUnreachable as exc:
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(request, f"{sent} {self.jobs_relation} sent.")

    @admin.display(description="status")
    def status_shown(self, obj):
        return obj.status

    @admin.display(description="progress page")
    def page_link(self, obj):
        return format_html('<a href="{}">{}</a>', obj.get_absolute_url(), self.page_link_text)

    @admin.display(description="jobs")
    def job_counts(self, obj) -> str:
        return f"{obj._succeeded} ok / {obj._failed} failed / {obj._total}"


def study_launch_action(*, name: str, model: type[Model], description: str, noun: str):
    """An admin action on Study (named `name`) that opens the launch page of `model`'s
    LaunchedWorkAdmin for the one selected study; `noun` says what is launched ("to judge")."""

    @admin.action(description=description)
    def action(modeladmin, request, queryset):
        studies = list(queryset[:2])
        if len(studies) != 1:
            modeladmin.message_user(request, f"Select exactly one study {noun}.", messages.WARNING)
            return None
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_launch")
        return HttpResponseRedirect(f"{url}?study={studies[0].pk}")

    action.__name__ = name
    return action
