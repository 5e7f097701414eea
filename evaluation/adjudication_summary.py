"""The raw and the adjudicated views of a study side by side (the dashboard's adjudication page and
the report's section): per item and over every item, the final labels by provenance, agreement
before and after adjudication, and the raw and adjudicated means of numeric items."""

from __future__ import annotations

from typing import Any

from annotation.models import Study
from evaluation.adjudication_selectors import Unit, study_units
from measures.stats.disagreement import PROVENANCES, UNRESOLVED, agreement_before_after


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, tuple):  # error spans: how many
        return float(len(value))
    return None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def adjudication_summary(*, study: Study) -> dict[str, Any]:
    """The raw and the adjudicated views side by side, per item (instrument key and item key, its
    versions pooled) and over every item: how many targets were rated and by several raters, the
    final labels by provenance, guideline gaps, agreement before and after adjudication
    (measures/stats/disagreement.agreement_before_after) and, for numeric items (scales, span
    counts), the mean per target in the raw view (each target's raters' mean) and in the
    adjudicated view (each target's final label; a target still unresolved keeps its raters' mean,
    and is counted)."""
    by_item: dict[tuple[str, str], list[Unit]] = {}
    for unit in study_units(study=study):
        by_item.setdefault((unit.instrument.key, unit.item.key), []).append(unit)

    def summary(units: list[Unit]) -> dict[str, Any]:
        provenance = {name: 0 for name in PROVENANCES}
        raw_means: list[float] = []
        final_means: list[float] = []
        for unit in units:
            provenance[unit.final.provenance] += 1
            scores = [n for n in (_number(a.comparable) for a in unit.answers) if n is not None]
            raw = _mean(scores)
            if raw is not None:
                raw_means.append(raw)
                final = _number(unit.final.value) if unit.final.provenance != UNRESOLVED else None
                final_means.append(final if final is not None else raw)
        before_after = agreement_before_after(
            [
                (
                    [(a.participant_id, a.comparable) for a in unit.answers],
                    unit.final.value if unit.adjudicated else None,
                    unit.adjudicated,
                )
                for unit in units
            ]
        )
        return {
            "targets": len(units),
            "several_raters": before_after.units,
            "provenance": provenance,
            "guideline_gaps": sum(
                1 for unit in units if unit.adjudication and unit.adjudication.guideline_gap
            ),
            "agreement": before_after,
            "raw_mean": _mean(raw_means),
            "adjudicated_mean": _mean(final_means),
        }

    items = [
        {"instrument": key, "item": item, "kind": units[0].item.kind.value, **summary(units)}
        for (key, item), units in sorted(by_item.items())
    ]
    every = [unit for units in by_item.values() for unit in units]
    return {"items": items, "overall": summary(every) if every else None}
