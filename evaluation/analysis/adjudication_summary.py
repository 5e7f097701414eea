"""The raw and the adjudicated views of a study side by side (the dashboard's adjudication page and
the report's section): per item and over every item, the final labels by provenance, agreement
before and after adjudication, and the raw and adjudicated means of numeric items."""

from __future__ import annotations

from typing import Any

from annotation.models import Study
from evaluation.adjudication_selectors import Unit, study_units
from instruments.schema import ItemKind
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


def _support(unit: Unit) -> tuple[float | None, float | None] | None:
    """The range a numeric unit's values lie in (None: an end without bound); None for a unit
    whose values are not numbers."""
    if unit.item.kind is ItemKind.ORDINAL and unit.item.scale is not None:
        codes = [float(code) for code in unit.item.scale.codes]
        return min(codes), max(codes)
    if unit.item.kind is ItemKind.ERROR_SPANS:
        return 0.0, None
    return None


def _pooled_support(
    supports: list[tuple[float | None, float | None]],
) -> tuple[float | None, float | None] | None:
    """The smallest range holding each of `supports` (None: no numeric unit)."""
    if not supports:
        return None
    lows, highs = [low for low, _ in supports], [high for _, high in supports]
    return (
        None if None in lows else min(low for low in lows if low is not None),
        None if None in highs else max(high for high in highs if high is not None),
    )


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
        supports = []
        for unit in units:
            provenance[unit.final.provenance] += 1
            scores = [n for n in (_number(a.comparable) for a in unit.answers) if n is not None]
            raw = _mean(scores)
            if raw is not None:
                raw_means.append(raw)
                if (support := _support(unit)) is not None:
                    supports.append(support)
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
            # The range both means lie in (a scale's codes; 0 and up for span counts).
            "mean_support": _pooled_support(supports),
        }

    items = [
        {"instrument": key, "item": item, "kind": units[0].item.kind.value, **summary(units)}
        for (key, item), units in sorted(by_item.items())
    ]
    every = [unit for units in by_item.values() for unit in units]
    return {"items": items, "overall": summary(every) if every else None}
