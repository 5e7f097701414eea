"""The analysis document (what evaluation.analysis.study_analysis returns) as its readers take it:
the column of the original texts, how a column is labelled, and the two parts a snapshot stores it
in. Plain dicts, no pandas: the dashboard, the API and the report read stored snapshots with this
alone, and only the worker that computes an analysis imports evaluation.analysis."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ORIGINAL = "original"


def system_label(analysis: Mapping[str, Any], key: str) -> str:
    """How a column of the analysis is shown: "Original", or the system's label (its key when it
    has none)."""
    if key == ORIGINAL:
        return "Original"
    return analysis.get("system_details", {}).get(key, {}).get("label") or key


def split_details(analysis: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(summary, details): the analysis without its sections that grow with the number of
    simplifications (the correlations, the metrics per simplification, the winners per source),
    and those sections. `join_details(*split_details(a)) == a`."""
    summary = dict(analysis)
    details: dict[str, Any] = {"correlations": summary.pop("correlations", [])}
    metrics = dict(summary.get("metrics", {}))
    details["per_simplification"] = metrics.pop("per_simplification", [])
    summary["metrics"] = metrics
    preference_details = {side: dict(value) for side, value in summary.get("preference_details", {}).items()}
    details["winners"] = {side: value.pop("winners", {}) for side, value in preference_details.items()}
    summary["preference_details"] = preference_details
    return summary, details


def join_details(summary: Mapping[str, Any], details: Mapping[str, Any]) -> dict[str, Any]:
    """The whole analysis document from `split_details`' two parts."""
    analysis = dict(summary)
    analysis["correlations"] = details.get("correlations", [])
    analysis["metrics"] = {
        **summary.get("metrics", {}),
        "per_simplification": details.get("per_simplification", []),
    }
    winners = details.get("winners", {})
    analysis["preference_details"] = {
        side: {**value, "winners": winners.get(side, {})}
        for side, value in summary.get("preference_details", {}).items()
    }
    return analysis
