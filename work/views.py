"""The page of a batch of scheduled work, shared by generation's batch page and judging's run page:
a thin renderer the app's view calls after its access check. Reading a page never writes: lost jobs
are re-sent by the healing check, or at once by the page's Resume (a POST)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from work.models import ScheduledJob


def batch_page(
    request: HttpRequest,
    *,
    template: str,
    context: dict[str, Any],
    jobs: Callable[[str | None], QuerySet],
    per_page: int,
    name: str,
    page_context: Callable[[], dict[str, Any]] = dict,
) -> HttpResponse:
    """For htmx's poll only the template's `progress` partial; else the whole page with a page of
    the batch's jobs (`name` in the context) filtered by the `?status=` one of the job statuses (an
    unknown one shows all), and `page_context()`."""
    if request.htmx:
        return render(request, f"{template}#progress", context)
    statuses = ScheduledJob.Status
    status = request.GET.get("status") or ""
    if status not in statuses.values:
        status = ""
    page = Paginator(jobs(status or None), per_page).get_page(request.GET.get("page"))
    context = {**context, name: page, "status_filter": status, "statuses": statuses.choices, **page_context()}
    return render(request, template, context)
