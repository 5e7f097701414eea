"""The one context builder of the pages that show an analysis: the dashboard and the report read
the study's snapshot (evaluation.services) and format it with evaluation.pages.report (pure).

The page layer points one way: views (dashboard_views.py, plan_views.py) → this module →
evaluation.pages.report; sections other apps add to the report come through
evaluation.pages.report_sections, never by importing those apps."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string

from annotation.models import Study
from evaluation.analysis.audit import audit_shipped, default_reported_for, reported_files
from evaluation.pages.report import audit_display, methods, plan_table, report_tables
from evaluation.pages.report_sections import report_sections, report_sections_render
from evaluation.planning.plans import plan_latest_done
from evaluation.progress import latin_square_balance, progress_by_role
from evaluation.selectors import analysis_snapshot_get, snapshot_analysis
from evaluation.services import SnapshotState, analysis_snapshot_refresh

RETRY_AFTER_SECONDS = 15


def analysis_context(
    *, study: Study, analysis: Mapping[str, Any] | None, figures: Mapping[str, str], reported: str | None
) -> dict[str, Any]:
    """What both pages show of an analysis: formatted tables, figures and the audit against a
    reported-figures file ("auto": the one that fits the study's systems; None/"": none). Empty
    tables when there is no analysis yet."""
    if analysis is None:
        return {"study": study, "analysis": None, "tables": None, "plots": {}, "audit": None, "reported": ""}
    if reported == "auto":
        reported = default_reported_for(list(analysis["systems"])) or ""
    return {
        "study": study,
        "analysis": analysis,
        "tables": report_tables(analysis),
        "plots": dict(figures),
        "audit": audit_display(audit_shipped(analysis, reported or None)),
        "reported": reported or "",
        "pairwise_rankings": pairwise_rankings(analysis.get("pairwise")),
        "style_rankings": style_rankings(analysis.get("pairwise")),
    }


def style_rankings(summary: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The style-controlled rankings (evaluation.analysis.style_control), labelled, in the order shown."""
    styled = (summary or {}).get("style_controlled") or {}
    return [
        (label, styled[key])
        for key, label in (
            ("asked", "From the pairwise answers"),
            ("derived", "Derived from the lay most/least preferences"),
        )
        if styled.get(key)
    ]


def pairwise_rankings(summary: Mapping[str, Any] | None) -> list[tuple[str, Any, str]]:
    """The pairwise section's tables (label, ranking, kind), in the order shown; the lay
    preferences' ranking is labelled derived (measures.stats.pairwise.pairwise_summary)."""
    if not summary:
        return []
    return [
        ("From the pairwise answers", summary.get("asked"), "asked"),
        (
            "From the pairwise answers, length-controlled",
            summary.get("length_controlled"),
            "length_controlled",
        ),
        ("Derived from the lay most/least preferences", summary.get("derived"), "derived"),
    ]


def dashboard_context(*, study: Study, state: SnapshotState, reported: str | None) -> dict[str, Any]:
    """The dashboard's first paint: the snapshot's summary (its long sections load as fragments)
    and its freshness."""
    snapshot = state.snapshot
    analysis = snapshot_analysis(snapshot, details=False) if snapshot is not None else None
    figures: dict[str, Any] = {}
    if snapshot is not None and analysis is not None:
        figures = (
            type(snapshot).objects.filter(pk=snapshot.pk).values_list("figures", flat=True).first() or {}
        )
    context = analysis_context(
        study=study, analysis=analysis, figures=figures, reported="auto" if reported is None else reported
    )
    context.update(
        {"state": state, "reported_files": list(reported_files()), "contributed_sections": report_sections()}
    )
    return context


SECTION_TABLES = {"metrics": ("metrics",), "correlations": ("correlations", "correlation_heatmap")}
# The dashboard's table of metrics per simplification shows this many rows (4 systems × 20 000
# sources would be an 80 000-row page); all of them are in the metrics CSV download.
PER_TEXT_SHOWN = 500


def section_context(*, study: Study, section: str) -> dict[str, Any]:
    """A lazily loaded dashboard section (a key of SECTION_TABLES) from the snapshot's details
    (a page of its own too, so it checks freshness as the dashboard does)."""
    analysis_snapshot_refresh(study=study)
    snapshot = analysis_snapshot_get(study=study, details=True)
    analysis = snapshot_analysis(snapshot) if snapshot is not None else None
    if analysis is None:
        return {"study": study, "tables": None, "analysis": None}
    tables = report_tables(analysis, SECTION_TABLES[section])
    metrics = tables.get("metrics")
    if metrics is not None and len(metrics["per_text"]) > PER_TEXT_SHOWN:
        tables["metrics"] = {
            **metrics,
            "per_text": metrics["per_text"][:PER_TEXT_SHOWN],
            "per_text_total": len(metrics["per_text"]),
        }
    return {"study": study, "tables": tables, "analysis": analysis}


def analysis_document(*, study: Study) -> dict[str, Any] | None:
    """The whole analysis of the study's latest snapshot (asking for a newer one when the data
    changed), or None before the first one is computed."""
    analysis_snapshot_refresh(study=study)
    return snapshot_analysis(analysis_snapshot_get(study=study, details=True))


def not_ready_response() -> HttpResponse:
    """503 with Retry-After: the study's first analysis is still being computed."""
    response = HttpResponse(
        "The analysis of this study is being computed; try again shortly.",
        status=503,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def study_report_html(*, study: Study, reported: str | None = "auto") -> str | None:
    """Render the self-contained report of `study` from its latest analysis snapshot (None before
    the first one is computed). `reported` names a shipped reported-figures file to audit
    against; "auto" picks the one that fits the study's systems; None or "" audits nothing."""
    analysis = analysis_document(study=study)
    if analysis is None:
        return None
    snapshot = analysis_snapshot_get(study=study, details=True)
    plan = plan_latest_done(study=study)
    context = analysis_context(
        study=study,
        analysis=analysis,
        figures=(snapshot.figures if snapshot is not None else None) or {},
        reported=reported,
    )
    context.update(
        {
            "progress": progress_by_role(study=study),
            "balance": latin_square_balance(study=study).by_system(),
            "methods": methods(analysis),
            "plan": plan,
            "plan_table": plan_table(plan.result) if plan and plan.result else None,
            # Sections other apps registered (judging's judges beside the radiologists).
            "contributed_sections": report_sections_render(study=study),
            # The report is one self-contained file: the dashboard's and the planning page's
            # stylesheets go inline.
            "dashboard_css": (settings.BASE_DIR / "static" / "radlay" / "dashboard.css").read_text("utf-8"),
            "planning_css": (settings.BASE_DIR / "static" / "radlay" / "planning.css").read_text("utf-8"),
            "generated_at": datetime.now(UTC),
            "snapshot": snapshot,
            "full_table": True,
        }
    )
    return render_to_string("evaluation/report.html", context)
