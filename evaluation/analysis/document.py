"""The analysis document (what evaluation.analysis.study.study_analysis returns) as its readers
take it: the column of the original texts, how a column is labelled, and the two parts a snapshot
stores it in. Plain dicts, no pandas: the dashboard, the API and the report read stored snapshots
with this alone, and only the worker that computes an analysis imports evaluation/analysis/study.py
and the computations behind it."""

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
    simplifications (the correlations, the metrics per simplification, the winners per source,
    the instrument items' means per target), and those sections. `join_details(*split_details(a))
    == a`."""
    summary = dict(analysis)
    details: dict[str, Any] = {"correlations": summary.pop("correlations", [])}
    metrics = dict(summary.get("metrics", {}))
    details["per_simplification"] = metrics.pop("per_simplification", [])
    summary["metrics"] = metrics
    preference_details = {side: dict(value) for side, value in summary.get("preference_details", {}).items()}
    details["winners"] = {side: value.pop("winners", {}) for side, value in preference_details.items()}
    summary["preference_details"] = preference_details
    if "instrument_items" in summary:
        summary["instrument_items"], details[ITEM_TARGETS] = _item_targets_split(summary["instrument_items"])
    return summary, details


# details[ITEM_TARGETS][group id][item key]: that item's `by_target` list.
ITEM_TARGETS = "instrument_item_targets"


def _item_targets_split(section: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    targets: dict[str, Any] = {}
    groups = []
    for group in section.get("groups", []):
        items = []
        for item in group["items"]:
            if "by_target" in item:
                item = dict(item)
                targets.setdefault(group["id"], {})[item["key"]] = item.pop("by_target")
            items.append(item)
        groups.append({**group, "items": items})
    return {**section, "groups": groups}, targets


def _item_targets_joined(section: Mapping[str, Any], targets: Mapping[str, Any]) -> dict[str, Any]:
    groups = []
    for group in section.get("groups", []):
        kept = targets.get(group["id"], {})
        items = [
            {**item, "by_target": kept[item["key"]]} if item["key"] in kept else item
            for item in group["items"]
        ]
        groups.append({**group, "items": items})
    return {**section, "groups": groups}


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
    if "instrument_items" in summary:
        analysis["instrument_items"] = _item_targets_joined(
            summary["instrument_items"], details.get(ITEM_TARGETS, {})
        )
    return analysis
