"""The analysis document's `adjudication` section: the raw and the adjudicated views side by side
(evaluation/analysis/adjudication_summary.py), in the JSON the snapshot stores and the API serves. Every
share has its support [0, 1] and a Wilson score interval over the targets it counts; every mean
the support of its item's answers (a scale's lowest to highest code; 0 and up for span counts; the
smallest range holding every item's where items are pooled)."""

from __future__ import annotations

from typing import Any

from annotation.models import Study
from evaluation.analysis.adjudication_summary import adjudication_summary
from evaluation.analysis.error_spans import wilson_interval

SHARE_SUPPORT = [0.0, 1.0]


def _share(share: float | None, n: int, confidence: float) -> dict[str, Any]:
    """A share of `n` targets with its interval (no interval without targets)."""
    low, high = (
        wilson_interval(round(share * n), n, confidence=confidence) if share is not None else (None, None)
    )
    return {"share": share, "n": n, "low": low, "high": high, "support": SHARE_SUPPORT}


def _figures(summary: dict[str, Any], confidence: float) -> dict[str, Any]:
    agreement = summary["agreement"]
    support = list(summary["mean_support"]) if summary["mean_support"] else [None, None]
    return {
        "targets": summary["targets"],
        "several_raters": summary["several_raters"],
        "provenance": dict(summary["provenance"]),
        "guideline_gaps": summary["guideline_gaps"],
        "agreement": {
            "units": agreement.units,
            "adjudicated": agreement.adjudicated,
            # Before adjudication: the targets whose raters all gave the same answer.
            "unanimous": _share(agreement.unanimous_share, agreement.units, confidence),
            # After: the targets with a final label (agreed or adjudicated).
            "resolved": _share(agreement.resolved_share, agreement.units, confidence),
            # The mean share of a rater's answers equal to the final label, before and after.
            "rater_accuracy_before": {"share": agreement.rater_accuracy_before, "support": SHARE_SUPPORT},
            "rater_accuracy_after": {"share": agreement.rater_accuracy_after, "support": SHARE_SUPPORT},
        },
        "raw_mean": {"mean": summary["raw_mean"], "support": support},
        "adjudicated_mean": {"mean": summary["adjudicated_mean"], "support": support},
    }


def adjudication_document(summary: dict[str, Any], *, confidence: float = 0.95) -> dict[str, Any] | None:
    """`adjudication_summary`'s figures as the analysis document holds them; None for a study no
    rater answered an adjudicable item of."""
    if summary["overall"] is None:
        return None
    return {
        "items": [
            {"instrument": item["instrument"], "item": item["item"], "kind": item["kind"]}
            | _figures(item, confidence)
            for item in summary["items"]
        ],
        "overall": _figures(summary["overall"], confidence),
    }


def adjudication_analysis_section(*, study: Study, confidence: float = 0.95) -> dict[str, Any] | None:
    """The study's `adjudication` section, computed from its answers and adjudicated labels now."""
    return adjudication_document(adjudication_summary(study=study), confidence=confidence)
