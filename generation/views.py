"""Researcher pages of generation: the batch list and a batch's page, with its live progress bar
(htmx polls the same URL every 2 s and gets only the progress fragment; without JavaScript a plain
link reloads the page) and every job's transcript. A researcher sees and acts on the batches of
their own studies only (superusers on all); staff status is not needed. Views parse, call one
service or selector, render."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import researcher_login_required
from generation import selectors
from generation.models import GenerationBatch
from generation.services import batches
from work.scheduler import TaskQueueUnreachable
from work.selectors import worker_silence
from work.views import batch_page

JOBS_PER_PAGE = 50
POLL_SECONDS = 2


def access_batch(*, user, batch_id: int, need: str = "view") -> GenerationBatch:
    """The batch if `user` is in its study's team (or a superuser), else 404: a batch of another
    study is not disclosed. A member whose role does not allow `need` is refused (403)."""
    try:
        return selectors.batch_get(batch_id=batch_id, user=user, need=need)
    except GenerationBatch.DoesNotExist:
        if need != "view" and selectors.batch_list(user=user).filter(pk=batch_id).exists():
            raise PermissionDenied(f"Your role in this batch's study does not allow '{need}'.") from None
        raise Http404("No such generation batch among your studies.") from None


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
    progress = selectors.batch_progress(batch=batch)
    return batch_page(
        request,
        template="generation/batch_detail.html",
        context={
            "batch": batch,
            "progress": progress,
            "poll_seconds": POLL_SECONDS,
            # Pending jobs wait for a worker: say so when none has answered for a while.
            "worker_silence": None if progress.finished else worker_silence(),
        },
        jobs=lambda status: selectors.batch_jobs(batch=batch, status=status),
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
    except TaskQueueUnreachable as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, f"Batch {batch.pk} resumed: {len(sent)} job(s) sent.")
    return redirect("generation:batch_detail", batch_id=batch.pk)
