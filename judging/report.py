"""The judge section of the dashboard, the judge page and the study report: display rows built from
the stored agreement of each run (no statistic is computed here).

`judge_report_context(study=...)` returns the context that templates/judging/_report_section.html
renders as `judges`; the study report gets the section through evaluation.pages.report_sections
(`judge_report_section`, registered in judging.apps.JudgingConfig.ready()): evaluation does not
import judging.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.models import Study
from judging import selectors
from judging.agreement_terms import STATISTICS
from judging.models import JudgeRun

STATISTIC_LABELS = {
    "alpha_ordinal": "α ordinal",
    "alpha_interval": "α interval",
    "kappa_quadratic": "κ quadratic",
    "icc": "ICC(2,1)",
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ",
}


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def with_interval(cell: Mapping[str, Any] | None) -> str:
    if not cell or cell.get("estimate") is None:
        return "—"
    text = fmt(cell["estimate"])
    if cell.get("low") is not None and cell.get("high") is not None:
        text += f" [{fmt(cell['low'])}, {fmt(cell['high'])}]"
    return text


def run_display(run: JudgeRun) -> dict[str, Any]:
    """One run's agreement as table rows of formatted strings."""
    result = run.agreement or {}
    per_field = [
        {
            "field": row["field"],
            "comparison": row["comparison"],
            "n": row["n"],
            "n_sources": row["n_sources"],
            "cells": [with_interval(row.get(name)) for name in STATISTICS],
        }
        for row in result.get("per_field", [])
    ]
    ceiling = [
        {
            **row,
            "cells": [
                fmt(row.get(name)) for name in ("alpha_ordinal", "alpha_interval", "kappa_quadratic", "icc")
            ],
        }
        for row in result.get("human_ceiling", [])
    ]
    ranking = [
        {
            "field": row["field"],
            "tau": fmt(row["kendall_tau"]),
            "pairs": f"{row['pairs_same']} / {row['pairs_total']}",
            "systems": [
                {"system": s["system"], "judge": fmt(s["judge_mean"], 2), "human": fmt(s["human_mean"], 2)}
                for s in row["systems"]
            ],
        }
        for row in result.get("system_ranking", [])
    ]
    lay_rows = []
    lay = result.get("lay_severity") or {}
    for who in ("judge", "laypeople"):
        block = lay.get(who) or {}
        if not block:
            continue
        lay_rows.append(
            {
                "who": run.label if who == "judge" else "laypeople",
                "before_mse": fmt((block.get("original") or {}).get("mse")),
                "before_accuracy": fmt((block.get("original") or {}).get("accuracy")),
                "before_n": (block.get("original") or {}).get("n", 0),
                "after_mse": fmt((block.get("assisted") or {}).get("mse")),
                "after_accuracy": fmt((block.get("assisted") or {}).get("accuracy")),
                "after_n": (block.get("assisted") or {}).get("n", 0),
            }
        )
    return {
        "run": run,
        "calibration": calibration_display(result.get("calibration")),
        "position_bias": [position_bias_display(row) for row in result.get("position_bias") or []],
        "computed_at": run.agreement_computed_at,
        "lay_systems": _lay_by_system(lay),
        "n_resamples": result.get("n_resamples"),
        "n_radiologists": result.get("n_radiologists", 0),
        "per_field": per_field,
        "ceiling": ceiling,
        "ranking": ranking,
        "lay": lay_rows,
    }


DIAGRAM = 160  # the reliability diagram's side, in SVG units
_MARGIN = 20


def _diagram_point(confidence: float, accuracy: float) -> tuple[float, float]:
    side = DIAGRAM - 2 * _MARGIN
    return _MARGIN + confidence * side, DIAGRAM - _MARGIN - accuracy * side


def reliability_diagram(bins: list[dict[str, Any]]) -> dict[str, Any]:
    """SVG coordinates of a reliability diagram: one point per bin at (mean confidence, accuracy),
    a vertical bar for the accuracy's interval, its radius growing with the bin's count."""
    largest = max((b["n"] for b in bins), default=1)
    points = []
    for b in bins:
        x, y = _diagram_point(b["confidence"], b["accuracy"])
        _, y_low = _diagram_point(b["confidence"], b["accuracy_low"])
        _, y_high = _diagram_point(b["confidence"], b["accuracy_high"])
        points.append(
            {
                "x": round(x, 1),
                "y": round(y, 1),
                "y_low": round(y_low, 1),
                "y_high": round(y_high, 1),
                "r": round(2 + 4 * (b["n"] / largest) ** 0.5, 1),
                "title": f"confidence {b['confidence']:.2f}, accuracy {b['accuracy']:.2f} "
                f"[{b['accuracy_low']:.2f}, {b['accuracy_high']:.2f}], n = {b['n']}",
            }
        )
    low, high = _diagram_point(0, 0), _diagram_point(1, 1)
    return {
        "size": DIAGRAM,
        "side": DIAGRAM - 2 * _MARGIN,
        "points": points,
        "x0": low[0],
        "y0": low[1],
        "x1": high[0],
        "y1": high[1],
    }


def position_bias_display(row: Mapping[str, Any]) -> dict[str, Any]:
    """One pairwise item's position bias (judging.position_bias) as formatted cells."""
    rate = row["first_position_win_rate"]
    return {
        "item": f"{row['instrument']} · {row['item']}",
        "pairs": row["n_pairs_both_orders"],
        "flips": row["flips"],
        "flip_share": with_interval(row["flip_share"]),
        "decisive": row["n_decisive"],
        "first_rate": with_interval(rate),
        "p_value": fmt(rate.get("p_value")),
        "interval": row["interval"],
        "ranking": [
            {
                "system": s["system"],
                "strength": fmt(s["strength"]),
                "low": fmt(s["low"]),
                "high": fmt(s["high"]),
            }
            for s in (row.get("ranking") or {}).get("systems", [])
        ],
    }


def calibration_display(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The run's calibration (judging.calibration) as rows of formatted cells and diagrams."""
    if not section:
        return None
    rows = [
        {
            "field": row["field"],
            "n": row["n"],
            "n_sources": row["n_sources"],
            "ece": with_interval(row["ece"]),
            "brier": with_interval(row["brier"]),
            "accuracy": with_interval(row["accuracy"]),
            "confidence": with_interval(row["mean_confidence"]),
            "diagram": reliability_diagram(row["reliability"]),
        }
        for row in section.get("per_field", [])
    ]
    first: Mapping[str, Any] = next(iter(section.get("per_field", [])), {})
    return {
        "available": section.get("available", False),
        "reason": section.get("reason"),
        "methods": section.get("methods", ""),
        "against": section.get("against", ""),
        "binning": first.get("binning", ""),
        "interval": first.get("interval", ""),
        "rows": rows,
    }


def _lay_by_system(lay: dict[str, Any]) -> list[dict[str, Any]]:
    """Panel 2 per system, the judge beside the laypeople: the laypeople's figures are Table 1's (an
    answer on a text several systems produced counts for each of them)."""
    after = {
        who: ((lay.get(who) or {}).get("assisted") or {}).get("by_system") or {}
        for who in ("judge", "laypeople")
    }
    rows = []
    for system in dict.fromkeys([*after["judge"], *after["laypeople"]]):
        cells = {}
        for who, by_system in after.items():
            figures = by_system.get(system) or {}
            cells[who] = {
                "mse": fmt(figures.get("mse")),
                "accuracy": fmt(figures.get("accuracy")),
                "n": figures.get("n", 0),
            }
        rows.append({"system": system, **cells})
    return rows


def judge_report_context(*, study: Study, run: JudgeRun | None = None) -> dict[str, Any]:
    """The leaderboard of the study's judges and the agreement tables of `run` (default: the latest
    run whose agreement has been computed)."""
    runs = list(selectors.runs_of_study(study=study))
    if run is None:
        run = next((r for r in runs if r.agreement_computed_at is not None), None)
    leaderboard = [
        {
            **row,
            "cells": [fmt(row.get(name)) for name in STATISTICS],
            "tau": fmt(row.get("ranking_tau")),
            "lay_after": fmt(row.get("lay_accuracy_after")),
            "ece": fmt(row.get("ece")),
            "brier": fmt(row.get("brier")),
        }
        for row in selectors.leaderboard(study=study)
    ]
    return {
        "study": study,
        "runs": runs,
        "statistic_labels": [STATISTIC_LABELS[name] for name in STATISTICS],
        "leaderboard": leaderboard,
        "selected": run_display(run) if run is not None and run.agreement_computed_at else None,
    }


def judge_report_section(*, study: Study) -> dict[str, Any]:
    """The context of templates/judging/_report_section.html in the study report (the latest run
    whose agreement has been computed)."""
    return {"judges": judge_report_context(study=study)}


def judges_analysis_section(*, study: Study) -> list[dict[str, Any]] | None:
    """The study analysis's "judges": per run whose agreement is stored, its calibration (ECE,
    Brier, reliability diagram per field or item) and its position bias, as stored (nothing is
    computed here). None when no run has an agreement."""
    runs = [r for r in selectors.runs_of_study(study=study) if r.agreement_computed_at is not None]
    if not runs:
        return None
    return [
        {
            "run": run.pk,
            "label": run.label,
            "samples": run.samples,
            "calibration": (run.agreement or {}).get("calibration"),
            "position_bias": (run.agreement or {}).get("position_bias", []),
        }
        for run in runs
    ]
