"""Researcher pages of generation: the batch list and a batch's page, with its live progress bar
(htmx polls the same URL every 2 s and gets only the progress fragment; without JavaScript a plain
link reloads the page) and every job's transcript. A researcher sees and acts on the batches of
their own studies only (superusers on all); staff status is not needed. Views parse, call one
service or selector, render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet, TextChoices
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from generation import selectors
from generation.models import GenerationBatch, GenerationJob
from generation.services import batches

JOBS_PER_PAGE = 50
POLL_SECONDS = 2

researcher_login_required = login_required(login_url="evaluation:login")


def access_batch(*, user, batch_id: int, need: str = "view") -> GenerationBatch:
    """The batch if `user` is in its study's team (or a superuser), else 404: a batch of another
    study is not disclosed. A member whose role does not allow `need` is refused (403)."""
    try:
        return selectors.batch_get(batch_id=batch_id, user=user, need=need)
    except GenerationBatch.DoesNotExist:
        if need != "view" and selectors.batch_list(user=user).filter(pk=batch_id).exists():
            raise PermissionDenied(f"Your role in this batch's study does not allow '{need}'.") from None
        raise Http404("No such generation batch among your studies.") from None


def batch_page(
    request: HttpRequest,
    *,
    template: str,
    context: dict[str, Any],
    jobs: Callable[[str | None], QuerySet],
    statuses: type[TextChoices],
    per_page: int,
    name: str,
    page_context: Callable[[], dict[str, Any]] = dict,
) -> HttpResponse:
    """The page of a batch of scheduled work: for htmx's poll only its `progress` partial; else
    the whole page with a page of its jobs (`name` in the context) filtered by the `?status=` one
    of `statuses` (an unknown one shows all), and `page_context()`."""
    if request.htmx:
        return render(request, f"{template}#progress", context)
    status = request.GET.get("status") or ""
    if status not in statuses.values:
        status = ""
    page = Paginator(jobs(status or None), per_page).get_page(request.GET.get("page"))
    context = {**context, name: page, "status_filter": status, "statuses": statuses.choices, **page_context()}
    return render(request, template, context)


@researcher_login_required
@require_GET
def batch_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.batch_list(user=request.user), 25).get_page(request.GET.get("page"))
    rows = [(batch, selectors.batch_progress(batch=batch)) for batch in page]
    return render(request, "generation/batch_list.html", {"page": page, "rows": rows})


@researcher_login_required
@require_GET
def batch_detail(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = access_batch(user=request.user, batch_id=batch_id)
    if batches.embedded_mode() and batch.finished_at is None:
        # No worker and no beat in the embedded mode: reading the batch is when lost jobs are resumed.
        batches.generation_batches_heal(batch=batch)
        batch.refresh_from_db()
    progress = selectors.batch_progress(batch=batch)
    return batch_page(
        request,
        template="generation/batch_detail.html",
        context={"batch": batch, "progress": progress, "poll_seconds": POLL_SECONDS},
        jobs=lambda status: selectors.batch_jobs(batch=batch, status=status),
        statuses=GenerationJob.Status,
        per_page=JOBS_PER_PAGE,
        name="jobs",
    )


@researcher_login_required
@require_POST
def batch_cancel(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = access_batch(user=request.user, batch_id=batch_id, need="edit")
    count = batches.generation_batch_cancel(batch=batch)
    messages.info(
        request, f"Batch {batch.pk} cancelled: {count} pending job(s) will not run; running ones finish."
    )
    return redirect("generation:batch_detail", batch_id=batch.pk)


@researcher_login_required
@require_POST
def batch_resume(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = access_batch(user=request.user, batch_id=batch_id, need="edit")
    try:
        sent = batches.generation_batch_resume(
            batch=batch, retry_failed=bool(request.POST.get("retry_failed"))
        )
    except batches.TaskQueueUnreachable as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, f"Batch {batch.pk} resumed: {len(sent)} job(s) sent.")
    return redirect("generation:batch_detail", batch_id=batch.pk)
