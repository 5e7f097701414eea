"""The research dashboard (/dashboard/): thin views that check access, read (cached) analysis
and render. Researchers only: a user sees the studies they are a researcher of (superusers all);
another study answers 404."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from evaluation.access import access_study_for_user, studies_for_researcher
from evaluation.audit import audit_shipped, default_reported_for, reported_files
from evaluation.exporters import FORMATS
from evaluation.exporters.metrics_table import metrics_csv
from evaluation.exporters.response import export_response
from evaluation.progress import latin_square_balance, participants_progress, progress_by_role, study_progress
from evaluation.report import audit_display, report_tables, study_report_html
from evaluation.selectors import (
    analysis_figures_cached,
    analysis_options_from_settings,
    study_analysis_cached,
)

MATRIX_MAX_SOURCES = 200  # above this the Latin-square matrix is summarised, not drawn
# Researchers sign in on the dashboard's own page: the admin's login admits staff only.
researcher_login_required = login_required(login_url="evaluation:login")


@researcher_login_required
def study_list(request: HttpRequest) -> HttpResponse:
    studies = (
        studies_for_researcher(user=request.user)
        .annotate(n_sources=Count("sources", distinct=True), n_systems=Count("systems", distinct=True))
        .order_by("-created_at")
    )
    rows = [{"study": study, "progress": progress_by_role(study=study)} for study in studies]
    return render(request, "evaluation/study_list.html", {"rows": rows})


@researcher_login_required
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study_for_user(user=request.user, slug=slug)
    # The correlations (the slow part) load separately: see study_correlations.
    analysis = study_analysis_cached(study=study, options=analysis_options_from_settings(correlations=False))
    files = reported_files()
    reported = request.GET.get("reported", default_reported_for(list(analysis["systems"])) or "")
    audit_result = audit_shipped(analysis, reported)
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
    context = {
        "study": study,
        "analysis": analysis,
        "tables": report_tables(analysis),
        "plots": analysis_figures_cached(analysis=analysis),
        "audit": audit_display(audit_result),
        "reported": reported,
        "reported_files": list(files),
        "progress_by_role": progress_by_role(study=study, records=progress),
        "participants": progress,
        "balance": balance.by_system(),
        "matrix": matrix,
        "formats": sorted(FORMATS),
    }
    return render(request, "evaluation/study_detail.html", context)


@researcher_login_required
def study_progress_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Participants by status, the lay survey's Latin-square balance, what the safety gate
    withholds and attention-check failures (evaluation/progress.py)."""
    study = access_study_for_user(user=request.user, slug=slug)
    return render(
        request, "evaluation/study_progress.html", {"study": study, "progress": study_progress(study=study)}
    )


@researcher_login_required
def study_correlations(request: HttpRequest, slug: str) -> HttpResponse:
    """The metric–human correlations: an htmx fragment on the dashboard, a page without htmx."""
    study = access_study_for_user(user=request.user, slug=slug)
    analysis = study_analysis_cached(study=study, options=analysis_options_from_settings())
    context = {"study": study, "tables": {"correlations": report_tables(analysis)["correlations"]}}
    template = "evaluation/_correlations.html" if request.htmx else "evaluation/study_correlations.html"
    return render(request, template, context)


@researcher_login_required
def study_export(request: HttpRequest, slug: str, file_format: str) -> StreamingHttpResponse:
    study = access_study_for_user(user=request.user, slug=slug)
    if file_format not in FORMATS:
        raise Http404("Unknown export format.")
    include = request.GET.get("include_external_ids") in {"1", "true", "yes"}
    return export_response(study=study, file_format=file_format, include_external_ids=include)


@researcher_login_required
def study_analysis_json(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study_for_user(user=request.user, slug=slug)
    analysis = study_analysis_cached(study=study, options=analysis_options_from_settings())
    response = HttpResponse(
        json.dumps(analysis, indent=2, ensure_ascii=False, default=str), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-analysis.json"'
    return response


@researcher_login_required
def study_metrics_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study_for_user(user=request.user, slug=slug)
    analysis = study_analysis_cached(study=study, options=analysis_options_from_settings())
    response = HttpResponse(metrics_csv(analysis), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-metrics.csv"'
    return response


@researcher_login_required
def study_report(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study_for_user(user=request.user, slug=slug)
    reported = request.GET.get("reported", "auto")
    response = HttpResponse(
        study_report_html(study=study, reported=reported or None), content_type="text/html; charset=utf-8"
    )
    # Opens in the browser; the dashboard's separate download link asks for the file.
    disposition = "attachment" if request.GET.get("download") == "1" else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{study.slug}-report.html"'
    # A self-contained document (its styles inline, no scripts): a policy of its own that allows
    # exactly that, instead of the site's, which forbids inline styles.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return response
