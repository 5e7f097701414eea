"""The judge pages: a study's judges (leaderboard, agreement tables, runs) and one run's page with
its live progress (htmx polls the same URL and gets only the progress fragment; a plain link
reloads without JavaScript). Reading is for the study's researchers; cancel, resume and recompute
are for staff, as launching is. Views parse, call one service or selector, render."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import access_study, researcher_login_required
from annotation.activity_services import activity_record
from evaluation.exports import csv as csv_exporter
from judging import selectors, services
from judging.access import access_judge_run
from judging.report import judge_report_context
from work.scheduler import TaskQueueUnreachable
from work.selectors import worker_silence
from work.views import batch_page

POLL_SECONDS = 2
ITEMS_PER_PAGE = 50


@researcher_login_required
@require_GET
def study_judges(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    run = None
    if request.GET.get("run", "").isdigit():
        _, run = access_judge_run(user=request.user, slug=slug, run_id=int(request.GET["run"]))
    judges = judge_report_context(study=study, run=run)
    rows = [(r, selectors.run_progress(run=r)) for r in judges["runs"]]
    return render(request, "judging/study_judges.html", {"study": study, "rows": rows, "judges": judges})


@researcher_login_required
@require_GET
def run_detail(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    study, run = access_judge_run(user=request.user, slug=slug, run_id=run_id)
    progress = selectors.run_progress(run=run)
    return batch_page(
        request,
        template="judging/run_detail.html",
        context={
            "study": study,
            "run": run,
            "progress": progress,
            "poll_seconds": POLL_SECONDS,
            # Pending items wait for a worker: say so when none has answered for a while.
            "worker_silence": None if progress.finished else worker_silence(),
        },
        jobs=lambda status: selectors.run_items(run=run, status=status),
        per_page=ITEMS_PER_PAGE,
        name="items",
        page_context=lambda: {
            "failures": selectors.failure_counts(run=run),
            "parameters": json.dumps(run.parameters, sort_keys=True),
        },
    )


@researcher_login_required
@require_POST
def run_cancel(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    # The launch's rule (console/launch_views.py): an owner or editor of the study.
    _, run = access_judge_run(user=request.user, slug=slug, run_id=run_id, need="edit")
    count = services.judge_run_cancel(run=run)
    messages.info(request, f"Judge run {run.pk} cancelled: {count} pending item(s) will not run.")
    return redirect("judging:run-detail", slug=slug, run_id=run.pk)


@researcher_login_required
@require_POST
def run_resume(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    # The launch's rule (console/launch_views.py): an owner or editor of the study.
    _, run = access_judge_run(user=request.user, slug=slug, run_id=run_id, need="edit")
    try:
        sent = services.judge_run_resume(
            run=run,
            retry_failed=bool(request.POST.get("retry_failed")),
            force=bool(request.POST.get("force")),
        )
    except TaskQueueUnreachable as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, f"Judge run {run.pk} resumed: {len(sent)} item(s) sent.")
    return redirect("judging:run-detail", slug=slug, run_id=run.pk)


@researcher_login_required
@require_POST
def run_agreement(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    # The launch's rule (console/launch_views.py): an owner or editor of the study.
    _, run = access_judge_run(user=request.user, slug=slug, run_id=run_id, need="edit")
    services.judge_run_agreement_recompute(run=run)
    messages.info(request, f"The agreement of judge run {run.pk} is being recomputed.")
    return redirect("judging:run-detail", slug=slug, run_id=run.pk)


def judge_answers_response(*, slug: str, study, user) -> StreamingHttpResponse:
    """Every judge item of the study as CSV (apart from the human exports: its own file)."""
    activity_record(study=study, actor=user, verb="export.downloaded", details={"file": "judge-answers.csv"})
    columns = selectors.ANSWER_COLUMNS
    rows = (
        [
            json.dumps(row[c])
            if c in ("spread", "raw_outputs", "item_values", "item_scores") and row[c] not in (None, "")
            else row[c]
            for c in columns
        ]
        for row in selectors.judge_answer_rows(study=study)
    )
    response = StreamingHttpResponse(
        csv_exporter.stream(rows, columns), content_type=csv_exporter.CONTENT_TYPE
    )
    response["Content-Disposition"] = f'attachment; filename="{slug}-judge-answers.csv"'
    return response


@researcher_login_required
@require_GET
def judge_answers_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    study = access_study(user=request.user, slug=slug)
    return judge_answers_response(slug=slug, study=study, user=request.user)
