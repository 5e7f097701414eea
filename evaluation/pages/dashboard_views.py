"""The research dashboard (/dashboard/): thin views that check access, read the study's analysis
snapshot (evaluation.services; the analysis is never computed in a request) and render.
Researchers only: a user sees the studies they are a researcher of (superusers all); another
study answers 404."""

from __future__ import annotations

import json
import tempfile

from django.db.models import Count
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRefresh

from annotation.access import access_study, may_create_study, may_see_identifying, researcher_login_required
from annotation.activity_services import activity_record
from annotation.selectors import studies_for_user, study_language_summary
from evaluation.analysis.planted_control_scores import RELIABILITY_ASPECTS, study_rater_reliability
from evaluation.exports import FORMATS
from evaluation.exports.items import LayoutError
from evaluation.exports.metrics_table import metrics_csv
from evaluation.exports.request_options import include_external_ids_asked, originals_asked
from evaluation.exports.response import export_response, item_export_response
from evaluation.exports.study_answers import (
    answer_counts,
    study_answers_summary,
    study_sections_asked,
    units_by_flow_and_group,
)
from evaluation.exports.study_archive import study_archive_write
from evaluation.pages.context import (
    analysis_document,
    dashboard_context,
    not_ready_response,
    section_context,
    study_report_html,
)
from evaluation.planning.adaptive import adaptive_progress
from evaluation.progress import latin_square_balance, participants_progress, progress_by_role, study_progress
from evaluation.services import analysis_snapshot_refresh
from measures.stats.rater_reliability import DEFAULT_ALPHA, DEFAULT_MIN_PLANTED
from qualification.selectors import qualification_results

MATRIX_MAX_SOURCES = 200  # above this the Latin-square matrix is summarised, not drawn
# Researchers sign in on the dashboard's own page: the admin's login admits staff only.


@researcher_login_required
def study_list(request: HttpRequest) -> HttpResponse:
    studies = (
        studies_for_user(user=request.user)
        .annotate(n_sources=Count("sources", distinct=True), n_systems=Count("systems", distinct=True))
        .order_by("-created_at")
    )
    rows = [{"study": study, "progress": progress_by_role(study=study)} for study in studies]
    editable = set(studies_for_user(user=request.user, need="edit").values_list("pk", flat=True))
    context = {"rows": rows, "editable": editable, "may_create": may_create_study(user=request.user)}
    # An adjudicator's studies: the queue is all their role reaches.
    context["adjudicating"] = studies_for_user(user=request.user, need="adjudicate").order_by("-created_at")
    return render(request, "evaluation/study_list.html", context)


def _progress_context(study) -> dict:
    progress = participants_progress(study=study)
    balance = latin_square_balance(study=study)
    matrix = None
    if len(balance.sources) <= MATRIX_MAX_SOURCES:
        matrix = {
            "systems": [system.key for system in balance.systems],
            "rows": [
                {"source": row["source"].key, "cells": [(c.assigned, c.credited) for c in row["cells"]]}
                for row in balance.table()
            ],
        }
    return {
        "study": study,
        "progress_by_role": progress_by_role(study=study, records=progress),
        "participants": progress,
        "balance": balance.by_system(),
        "matrix": matrix,
        "reliability": study_rater_reliability(study=study),
        **study_answers_summary(study=study),
    }


def _section_response(request: HttpRequest, context: dict, *, section: str, title: str) -> HttpResponse:
    """A dashboard section: only the section for the dashboard's htmx request, a page of its own
    without JavaScript (templates/evaluation/_<section>.html inside study_section.html)."""
    template = "evaluation/study_section.html"
    context = {**context, "section": f"evaluation/_{section}.html", "title": title}
    return render(request, f"{template}#section" if request.htmx else template, context)


@researcher_login_required
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The dashboard: the latest analysis snapshot (never computed here), with its freshness;
    progress, the per-simplification metrics and the correlations load as fragments."""
    study = access_study(user=request.user, slug=slug)
    force = request.method == "POST"
    state = analysis_snapshot_refresh(study=study, force=force)
    if force:
        return redirect("evaluation:study-detail", slug=study.slug)
    context = dashboard_context(study=study, state=state, reported=request.GET.get("reported"))
    context["formats"] = sorted(FORMATS)
    context["participant_language"] = study_language_summary(study=study)
    # Owners and editors get the "with Prolific/external IDs" checkbox (off by default).
    context["may_see_identifying"] = may_see_identifying(study=study)
    context.update(study_sections_asked(study=study, analysis=context.get("analysis")))
    return render(request, "evaluation/study_detail.html", context)


@researcher_login_required
def study_counts_section(request: HttpRequest, slug: str) -> HttpResponse:
    """The dashboard header's participants and answers of every flow, counted live (loaded after
    the page's first paint, so the dashboard itself never counts answer tables)."""
    study = access_study(user=request.user, slug=slug)
    context = {"study": study, "answer_counts": answer_counts(study=study)}
    return _section_response(request, context, section="counts", title="Participants and answers")


@researcher_login_required
def study_snapshot_status(request: HttpRequest, slug: str) -> HttpResponse:
    """The freshness line the dashboard polls: once a snapshot newer than the one on the page
    (`?shown=` its computed_at) has landed, the page reloads itself."""
    study = access_study(user=request.user, slug=slug)
    state = analysis_snapshot_refresh(study=study)
    shown = request.GET.get("shown", "")
    computed = state.snapshot.computed_at.isoformat() if state.snapshot and state.snapshot.computed_at else ""
    if request.htmx and computed and computed != shown:
        return HttpResponseClientRefresh()
    return render(request, "evaluation/study_detail.html#freshness", {"study": study, "state": state})


@researcher_login_required
def study_progress_section(request: HttpRequest, slug: str) -> HttpResponse:
    """Progress and Latin-square balance (read live, so loaded after the page's first paint)."""
    study = access_study(user=request.user, slug=slug)
    return _section_response(request, _progress_context(study), section="progress", title="Progress")


@researcher_login_required
def study_progress_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Participants by status, the lay survey's Latin-square balance, what the safety gate
    withholds and attention-check failures (evaluation/progress.py)."""
    study = access_study(user=request.user, slug=slug)
    context = {
        "study": study,
        "progress": study_progress(study=study),
        "adaptive": adaptive_progress(study=study),
        "units": units_by_flow_and_group(study=study),
        "reliability": study_rater_reliability(study=study),
        "reliability_aspects": RELIABILITY_ASPECTS,
        "reliability_min_planted": DEFAULT_MIN_PLANTED,
        "reliability_alpha": DEFAULT_ALPHA,
        "qualification_results": qualification_results(study=study),
        **study_answers_summary(study=study),
    }
    return render(request, "evaluation/study_progress.html", context)


@researcher_login_required
def study_metrics(request: HttpRequest, slug: str) -> HttpResponse:
    """The automatic metrics with their per-simplification values (from the snapshot's details)."""
    study = access_study(user=request.user, slug=slug)
    context = section_context(study=study, section="metrics")
    return _section_response(request, context, section="metrics", title="Automatic metrics")


@researcher_login_required
def study_correlations(request: HttpRequest, slug: str) -> HttpResponse:
    """The metric–human correlations, heatmap and full table: an htmx fragment on the dashboard,
    a page of their own without htmx."""
    study = access_study(user=request.user, slug=slug)
    context = {**section_context(study=study, section="correlations"), "full_table": not request.htmx}
    return _section_response(request, context, section="correlations", title="Metric–human correlations")


@researcher_login_required
def study_export(request: HttpRequest, slug: str, file_format: str) -> HttpResponse | StreamingHttpResponse:
    study = access_study(user=request.user, slug=slug)
    if file_format not in FORMATS:
        raise Http404("Unknown export format.")
    asked = include_external_ids_asked(request.GET)
    layout = request.GET.get("layout", "long")
    if layout not in ("long", "wide"):
        return HttpResponseBadRequest(
            f"layout: {layout!r} is not one of long, wide", content_type="text/plain; charset=utf-8"
        )
    return export_response(
        study=study, file_format=file_format, include_external_ids=asked, user=request.user, layout=layout
    )


@researcher_login_required
def study_item_export(
    request: HttpRequest, slug: str, file_format: str
) -> HttpResponse | StreamingHttpResponse:
    """The instrument-item answers, ?layout=long (one row per answer, the default) or wide (one
    column per item), as CSV, XLSX or JSON."""
    study = access_study(user=request.user, slug=slug)
    if file_format not in FORMATS:
        raise Http404("Unknown export format.")
    asked = include_external_ids_asked(request.GET)
    try:
        return item_export_response(
            study=study,
            file_format=file_format,
            layout=request.GET.get("layout", "long"),
            include_external_ids=asked,
            user=request.user,
        )
    except LayoutError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")


@researcher_login_required
def study_archive(request: HttpRequest, slug: str) -> FileResponse:
    """The whole study with every answer as one archive (evaluation/exports/study_archive.py), for moving
    it to another radlay server with import_study_archive. It holds the participants' external ids,
    so it is for owners and editors, and recorded in the study's activity. Its sources are
    de-identified unless an owner asks for the originals (?originals=1, recorded; anyone else is
    refused)."""
    study = access_study(user=request.user, slug=slug, need="edit")
    originals = originals_asked(request.GET)
    if originals:
        from privacy.services import originals_release_record

        originals_release_record(study=study, actor=request.user, purpose="study archive")
    activity_record(
        study=study,
        actor=request.user,
        verb="export.downloaded",
        details={"file": "archive.zip", "originals": originals},
    )
    # Spooled: a large study's archive goes to a temporary file, not the worker's memory.
    out = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)  # noqa: SIM115 - FileResponse closes it
    study_archive_write(study=study, out=out, originals=originals)
    out.seek(0)
    return FileResponse(
        out, as_attachment=True, filename=f"{study.slug}-archive.zip", content_type="application/zip"
    )


@researcher_login_required
def study_analysis_json(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    analysis = analysis_document(study=study)
    if analysis is None:
        return not_ready_response()
    response = HttpResponse(
        json.dumps(analysis, indent=2, ensure_ascii=False, default=str), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-analysis.json"'
    return response


@researcher_login_required
def study_metrics_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    analysis = analysis_document(study=study)
    if analysis is None:
        return not_ready_response()
    response = HttpResponse(metrics_csv(analysis), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-metrics.csv"'
    return response


@researcher_login_required
def study_report(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug)
    reported = request.GET.get("reported", "auto")
    html = study_report_html(study=study, reported=reported or None)
    if html is None:
        return not_ready_response()
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    # Opens in the browser; the dashboard's separate download link asks for the file.
    disposition = "attachment" if request.GET.get("download") == "1" else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{study.slug}-report.html"'
    # A self-contained document (its styles inline, no scripts): a policy of its own that allows
    # exactly that, instead of the site's, which forbids inline styles.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return response
