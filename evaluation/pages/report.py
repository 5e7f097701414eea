"""The display rows of the study report (one self-contained HTML document: tables with intervals,
agreement, correlations, the figures inline, the audit and a methods section) that the dashboard
and the planning page share with it.

The pure formatter of the pages that show an analysis: `report_tables` turns the analysis dict into
rows of formatted cells, `methods` the Methods section's figures, `plan_table` a power plan's grid
(no Django, no database; evaluation.pages.context gathers the data and renders the pages).
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from annotation import scales
from evaluation.analysis.document import ORIGINAL, system_label
from measures.stats import interval_methods as interval_names

READABILITY_LABELS = {
    "fkgl": "FKGL ↓",
    "gunning_fog": "Gunning Fog (GFI) ↓",
    "ari": "ARI ↓",
    "smog": "SMOG ↓",
    "coleman_liau": "Coleman–Liau ↓",
    "dale_chall": "Dale–Chall ↓",
    "flesch_reading_ease": "Flesch Reading Ease ↑",
}
EXPERT_LABELS = {a: a.capitalize() for a in scales.EXPERT_ASPECTS}
LAY_LABELS = {
    "understanding": "Q1 understanding (1–4)",
    "confidence": "Q2 confidence (1–3)",
    "severity_mse": "Q3 MSE ↓",
    "severity_accuracy": "Q3 accuracy",
    "helpfulness": "Q4 helpfulness (−1..2)",
}
MEASURE_LABELS = {
    **EXPERT_LABELS,
    "understanding": "Q1 understanding",
    "confidence": "Q2 confidence",
    "helpfulness": "Q4 helpfulness",
    "severity_accuracy": "Q3 accuracy",
    "preference_share": "most-preferred share",
    "least_preference_share": "least-preferred share",
}
DIFFERENCE_LABELS = {
    "understanding": "Q1 understanding",
    "understanding_gain": "comprehension gain",
    "confidence": "Q2 confidence",
    "helpfulness": "Q4 helpfulness",
    "severity_mse": "Q3 MSE",
    "severity_accuracy": "Q3 accuracy",
    **{f"expert_{a}": f"radiologists: {a}" for a in scales.EXPERT_ASPECTS},
}
PACKAGES = (
    "Django",
    "djangorestframework",
    "drf-spectacular",
    "pandas",
    "numpy",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "krippendorff",
    "nltk",
    "textstat",
    "matplotlib",
    "openpyxl",
    "sentence-transformers",
)


def fmt(value: float | None, *, percent: bool = False, digits: int = 3) -> str:
    """A figure as papers print it: rounded half up (8.8125 → "8.813", as in seed 003's Table 1),
    percentages with one decimal."""
    if value is None:
        return "—"
    if percent:
        value, digits = 100 * value, 1
    rounded = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{rounded}%" if percent else str(rounded)


def pfmt(p: float | None) -> str:
    """A p-value: four decimals, or two significant digits below 0.001 (never "0.0000")."""
    if p is None:
        return "—"
    return f"{p:.2g}" if p < 0.001 else fmt(p, digits=4)


def audit_display(result: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The audit with display strings for radlay's value, the difference and the tolerance."""
    if result is None:
        return None
    rows = []
    for row in result["rows"]:
        rows.append(
            {
                **row,
                "value_text": "—" if row["value"] is None else f"{row['value']:.6g}",
                "difference_text": "—" if row["difference"] is None else f"{row['difference']:+.4g}",
                "tolerance_text": "—" if row["tolerance"] is None else f"{row['tolerance']:g}",
            }
        )
    return {**result, "rows": rows}


def cell(value: float | None, interval: Mapping[str, Any] | None = None, *, percent: bool = False) -> dict:
    """A table cell: the figure and, when known, its interval (``method``: how it was computed,
    the cell's tooltip); where the design is too small for one, the reason instead."""
    text = fmt(value, percent=percent)
    ci = ""
    interval = interval or {}
    if interval.get("low") is not None and interval.get("high") is not None:
        ci = f"[{fmt(interval['low'], percent=percent)}, {fmt(interval['high'], percent=percent)}]"
    elif value is not None and interval.get("reason"):
        ci = interval["reason"]
    return {"value": text, "ci": ci, "missing": value is None, "method": interval.get("method") or ""}


def interval_methods(analysis: Mapping[str, Any]) -> dict[str, Any]:
    """What each interval of the tables is, worded from the constants of the code that computes
    it (measures/stats/crossed.py, measures/stats/intervals.py), so caption and computation
    cannot drift apart."""
    options = analysis.get("options", {})
    confidence = options.get("confidence") or 0.95
    level = f"{confidence:.0%}"
    readability = f"percentile bootstrap over texts ({options.get('n_resamples')} resamples)"
    human = (
        "crossed-design intervals (participants and sources random; each system's mean from its own "
        "answers, a difference from the two systems' answers with the participant × system interaction; "
        "t with Satterthwaite's degrees of freedom; proportions, Likert means and MSE kept inside their "
        "range by Wilson-type intervals, Korn–Graubard for rare proportions, MOVER for their differences)"
    )
    return {
        "level": level,
        "readability": readability,
        "human": human,
        "mean": interval_names.METHOD_T,
        "bounded_mean": interval_names.METHOD_WILSON,
        "bounded_difference": interval_names.METHOD_MOVER,
        "too_few": interval_names.TOO_FEW,
        "min_participants": interval_names.MIN_PARTICIPANTS,
        "min_sources": interval_names.MIN_SOURCES,
        "rare_events": interval_names.RARE_EVENTS,
        "pooling_p": interval_names.POOLING_P,
        "table1": (
            f"Means ({level} intervals in brackets: readability, {readability}; radiologists' and "
            f"laypeople's answers, {human}; “{interval_names.TOO_FEW}” where a column has fewer). "
            "Hover an interval for its method."
        ),
        "differences": (
            f"Difference of two systems' means over all their answers, with its {level} crossed-design "
            "interval: the two systems' answers only, participants, sources and the participant × "
            "system interaction random (source × system too where its F test gives "
            f"p < {interval_names.POOLING_P}), t with Satterthwaite's degrees of freedom; for bounded "
            "measures the MOVER combination of the two means' intervals, kept within ± the scale's span."
        ),
    }


def table1(analysis: Mapping[str, Any]) -> dict[str, Any]:
    """Table 1 as header + sections of rows; each row: label and one cell per column."""
    systems = list(analysis["systems"])
    columns = [ORIGINAL, *systems]
    intervals = analysis.get("confidence_intervals", {})
    readability = []
    for metric, label in READABILITY_LABELS.items():
        if not any(analysis["readability"].get(c, {}).get(metric) is not None for c in columns):
            continue
        readability.append(
            {
                "label": label,
                "cells": [
                    cell(
                        analysis["readability"].get(c, {}).get(metric),
                        intervals.get("readability", {}).get(c, {}).get(metric),
                    )
                    for c in columns
                ],
            }
        )
    expert = []
    for aspect, label in EXPERT_LABELS.items():
        original = analysis.get("expert_original", {}).get(aspect) if aspect == "simplicity" else None
        original_ci = intervals.get("expert_original", {}).get(aspect) if aspect == "simplicity" else None
        expert.append(
            {
                "label": label,
                "cells": [cell(original, original_ci)]
                + [
                    cell(analysis["expert"][s][aspect], intervals.get("expert", {}).get(s, {}).get(aspect))
                    for s in systems
                ],
            }
        )
    expert.append(
        {
            "label": "n ratings",
            "cells": [
                {"value": str(analysis.get("expert_original", {}).get("n", 0)), "ci": "", "missing": False}
            ]
            + [{"value": str(analysis["expert"][s]["n"]), "ci": "", "missing": False} for s in systems],
        }
    )
    lay = []
    for measure, label in LAY_LABELS.items():
        percent = measure == "severity_accuracy"
        lay.append(
            {
                "label": label,
                "cells": [
                    cell(
                        analysis["lay"][c][measure],
                        intervals.get("lay", {}).get(c, {}).get(measure),
                        percent=percent,
                    )
                    for c in columns
                ],
            }
        )
    lay.append(
        {
            "label": "n answers",
            "cells": [{"value": str(analysis["lay"][c]["n"]), "ci": "", "missing": False} for c in columns],
        }
    )
    return {
        "columns": [system_label(analysis, c) for c in columns],
        "sections": [
            {"title": "Readability (mean per text)", "rows": readability},
            {"title": "Radiologists (1–5)", "rows": expert},
            {"title": "Laypeople (original = panel 1; systems = panel 2)", "rows": lay},
        ],
    }


def table2(analysis: Mapping[str, Any]) -> dict[str, Any]:
    levels = list(analysis["confidence_vs_accuracy"])
    intervals = analysis.get("confidence_intervals", {}).get("confidence_vs_accuracy", {})
    rows = [
        {
            "label": "Q3 MSE ↓",
            "cells": [
                cell(analysis["confidence_vs_accuracy"][lv]["mse"], intervals.get(lv, {}).get("mse"))
                for lv in levels
            ],
        },
        {
            "label": "Q3 accuracy",
            "cells": [
                cell(
                    analysis["confidence_vs_accuracy"][lv]["accuracy"],
                    intervals.get(lv, {}).get("accuracy"),
                    percent=True,
                )
                for lv in levels
            ],
        },
        {
            "label": "n answers",
            "cells": [
                {"value": str(analysis["confidence_vs_accuracy"][lv]["n"]), "ci": "", "missing": False}
                for lv in levels
            ],
        },
    ]
    return {"columns": levels, "rows": rows}


def table3(analysis: Mapping[str, Any]) -> dict[str, Any]:
    systems = list(analysis["systems"])
    details = analysis.get("preference_details", {})
    rows = []
    for side, label in (
        ("most", "Most preferred ↑ (sources won)"),
        ("least", "Least preferred ↓ (sources won)"),
    ):
        rows.append({"label": label, "cells": [str(analysis["preferences"][side][s]) for s in systems]})
        votes = details.get(side, {}).get("votes", {})
        rows.append({"label": f"{side} votes in total", "cells": [str(votes.get(s, 0)) for s in systems]})
    return {"columns": [system_label(analysis, s) for s in systems], "rows": rows}


def agreement_rows(analysis: Mapping[str, Any]) -> list[dict[str, str]]:
    agreement = analysis["agreement"]
    rows = [
        {
            "label": "Krippendorff's α (MASI), most preferred sets",
            "value": fmt(agreement["preference_alpha_masi"]["most"]),
            "note": f"{agreement['preference_alpha_masi'].get('n_coders', 0)} lay coders × sources",
        },
        {
            "label": "Krippendorff's α (MASI), least preferred sets",
            "value": fmt(agreement["preference_alpha_masi"]["least"]),
            "note": "",
        },
    ]
    lay = agreement.get("lay", {})
    for question in ("severity_guess", "understanding", "confidence"):
        rows.append(
            {
                "label": f"Laypeople, panel 1 {question.replace('_', ' ')}: α (ordinal)",
                "value": fmt(lay.get(f"{question}_alpha_ordinal")),
                "note": f"{lay.get('n_raters', 0)} raters",
            }
        )
    expert = agreement.get("expert", {})
    if "note" in expert:
        rows.append({"label": "Radiologists", "value": "—", "note": expert["note"]})
    for aspect in scales.EXPERT_ASPECTS:
        if aspect in expert:
            figures = expert[aspect]
            icc = figures.get("icc", {})
            rows.append(
                {
                    "label": f"Radiologists, {aspect}",
                    "value": " · ".join(
                        [
                            f"α ord {fmt(figures['alpha_ordinal'])}",
                            f"α int {fmt(figures['alpha_interval'])}",
                            f"κ_w {fmt(figures['kappa_quadratic_mean'])}",
                            f"ICC(2,1) {fmt(icc.get('icc2_1'))}",
                        ]
                    ),
                    "note": f"{expert.get('n_raters')} raters",
                }
            )
    if "severity_alpha_ordinal" in expert:
        rows.append(
            {
                "label": "Radiologists, severity: α (ordinal)",
                "value": fmt(expert["severity_alpha_ordinal"]),
                "note": "",
            }
        )
    return rows


def comparison_rows(analysis: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for measure, records in analysis.get("comparisons", {}).items():
        for record in records:
            rows.append(
                {
                    "measure": measure.replace("_", " "),
                    "pair": " vs ".join(system_label(analysis, record[k]) for k in ("system_a", "system_b")),
                    "n": record["n"],
                    "mean_diff": fmt(record["mean_diff"]),
                    "effect": fmt(record["effect_size"]),
                    "p": pfmt(record["p_value"]),
                    "p_holm": pfmt(record["p_holm"]),
                    "significant": record["p_holm"] is not None and record["p_holm"] < 0.05,
                }
            )
    return rows


def correlation_rows(analysis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (level, metric, measure) with the three coefficients and their intervals."""
    grouped: dict[tuple, dict[str, Any]] = {}
    for record in analysis.get("correlations", []):
        key = (record["level"], record["metric"], record["measure"])
        row = grouped.setdefault(
            key,
            {
                "level": record["level"],
                "metric": READABILITY_LABELS.get(record["metric"], record["metric"]),
                "measure": MEASURE_LABELS.get(record["measure"], record["measure"]),
                "n": record["n"],
                "interval": "Fisher z" if record.get("interval") == "fisher_z" else "bootstrap",
            },
        )
        row[record["method"]] = cell(record["r"], {"low": record["ci_low"], "high": record["ci_high"]})
        row[f"{record['method']}_p"] = pfmt(record["p_value"])
    return list(grouped.values())


def metric_table(analysis: Mapping[str, Any]) -> dict[str, Any]:
    """Every automatic metric per system (and for the original where it applies), grouped by family,
    with the reason a metric could not be computed instead of a number."""
    metrics = analysis.get("metrics", {})
    systems = list(analysis["systems"])
    per_system = metrics.get("per_system", {})
    original = metrics.get("original", {})
    unavailable = metrics.get("unavailable", {})
    rows = []
    for family, spec in metrics.get("families", {}).items():
        names = [*spec.get("text_metrics", []), *spec.get("corpus_metrics", [])]
        for name in names:
            values = [per_system.get(s, {}).get(name) for s in systems]
            if name in unavailable and all(v is None for v in values):
                rows.append({"family": family, "metric": name, "reason": unavailable[name]})
                continue
            rows.append(
                {
                    "family": family,
                    "metric": name,
                    "original": fmt(original.get(name)) if name in original else "",
                    "cells": [fmt(v) for v in values],
                }
            )
    per_text = [
        {
            "source": record.get("source"),
            "system": record.get("system"),
            "cells": [fmt(record.get(name)) for name in metrics.get("text_metrics", [])],
        }
        for record in metrics.get("per_simplification", [])
    ]
    return {
        "columns": [system_label(analysis, s) for s in systems],
        "rows": rows,
        "text_metrics": metrics.get("text_metrics", []),
        "per_text": per_text,
    }


def difference_rows(analysis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every difference between two systems' means of Table 1's human measures, with its
    crossed-design interval; an interval that excludes 0 is marked."""
    rows = []
    differences = analysis.get("confidence_intervals", {}).get("differences", {})
    for measure, records in differences.items():
        percent = measure == "severity_accuracy"
        for record in records:
            low, high = record.get("low"), record.get("high")
            rows.append(
                {
                    "measure": DIFFERENCE_LABELS.get(measure, measure.replace("_", " ")),
                    "pair": " − ".join(system_label(analysis, record[k]) for k in ("system_a", "system_b")),
                    "n": record["n"],
                    "difference": cell(record["difference"], record, percent=percent),
                    "excludes_zero": low is not None and high is not None and (low > 0 or high < 0),
                }
            )
    return rows


HEAT_STEPS = 5


def _heat(value: float | None) -> str:
    """The cell's class: heat-p1 … heat-p5 (positive, stronger), heat-n1 … heat-n5 (negative),
    heat-0 below 0.1 in size, heat-na when missing (colours in static/radlay/dashboard.css:
    classes, not inline styles, which the Content-Security-Policy forbids)."""
    if value is None:
        return "heat-na"
    step = min(HEAT_STEPS, int(abs(value) * HEAT_STEPS + 0.5))
    if step == 0:
        return "heat-0"
    return f"heat-{'p' if value > 0 else 'n'}{step}"


def correlation_heatmap(
    analysis: Mapping[str, Any], *, level: str = "item", method: str = "spearman"
) -> dict[str, Any]:
    """The compact view of the correlations: metrics × human measures, one coloured cell per
    coefficient (`method` at `level`), with its interval as the cell's title."""
    records = [r for r in analysis.get("correlations", []) if r["level"] == level and r["method"] == method]
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    measures = list(dict.fromkeys(r["measure"] for r in records))
    by_key = {(r["metric"], r["measure"]): r for r in records}
    rows = []
    for metric in metrics:
        cells = []
        for measure in measures:
            record = by_key.get((metric, measure))
            value = record["r"] if record else None
            interval = cell(value, {"low": record["ci_low"], "high": record["ci_high"]} if record else None)
            cells.append(
                {
                    "text": fmt(value, digits=2),
                    "css": _heat(value),
                    "title": f"{metric} × {measure}: {interval['value']} {interval['ci']} (n = {record['n']})"
                    if record
                    else "",
                }
            )
        rows.append({"metric": READABILITY_LABELS.get(metric, metric), "cells": cells})
    return {
        "level": level,
        "method": method,
        "measures": [MEASURE_LABELS.get(m, m) for m in measures],
        "rows": rows,
    }


# Agreement figures an item's kind has, in the order shown (evaluation/analysis/instrument_items.py).
ITEM_AGREEMENT_LABELS = {
    "alpha_ordinal": "α ordinal",
    "alpha_interval": "α interval",
    "alpha_ratio": "α ratio",
    "alpha_nominal": "α nominal",
    "alpha_masi": "α MASI",
    "kappa_quadratic_mean": "κ quadratic",
    "cohen_kappa": "Cohen's κ",
    "sentence_cohen_kappa": "Cohen's κ (sentences)",
}


def _agreement_text(agreement: Mapping[str, Any]) -> str:
    parts = [
        f"{label} {fmt(agreement[key])}" for key, label in ITEM_AGREEMENT_LABELS.items() if key in agreement
    ]
    icc_record = agreement.get("icc") or {}
    if icc_record.get("icc2_1") is not None:
        parts.append(f"ICC(2,1) {fmt(icc_record['icc2_1'])}")
    return "; ".join(parts) or agreement.get("note", "—")


def instrument_item_tables(analysis: Mapping[str, Any]) -> dict[str, Any] | None:
    """The "Instrument items" section (None when the study has none): per pooling group, one row
    per item with its mean and interval, each system's mean, each rater's mean ± SD (seed 002's
    Table 4), the agreement its kind has, the judges' agreement with the humans; choices' counts;
    free texts listed; then the item–metric correlations."""
    section = analysis.get("instrument_items")
    if section is None:
        return None
    systems = [ORIGINAL, *analysis.get("systems", [])]
    groups = []
    for group in section["groups"]:
        used = [s for s in systems if any(s in item.get("by_system", {}) for item in group["items"])]
        rows = []
        for item in group["items"]:
            mean = item.get("mean")
            rows.append(
                {
                    "key": item["key"],
                    "title": item["title"],
                    "kind": item["kind"].replace("_", " "),
                    "n": item["n_answers"],
                    "participants": item["n_participants"],
                    "mean": cell(mean["mean"], mean) if mean else None,
                    "systems": [
                        cell((item["by_system"].get(s) or {}).get("mean"), item["by_system"].get(s))
                        for s in used
                    ]
                    if "by_system" in item
                    else [],
                    "raters": ", ".join(
                        f"{r['participant']} {fmt(r['mean'], digits=2)}±{fmt(r['sd'], digits=2)}"
                        for r in item.get("by_participant", [])
                    ),
                    "agreement": _agreement_text(item.get("agreement", {})),
                    "judges": "; ".join(
                        f"run {j['judge']}: {_agreement_text(j['with_humans'])}"
                        for j in item.get("judges", [])
                    ),
                    "counts": ", ".join(f"{k} {n}" for k, n in item.get("counts", {}).items()),
                    "texts": item.get("texts", []),
                }
            )
        groups.append(
            {
                "label": group["label"],
                "title": group["title"],
                "note": group["note"],
                "citation": group["citation"],
                "systems": [system_label(analysis, s) for s in used],
                "rows": rows,
            }
        )
    correlations = [
        {
            "level": c["level"],
            "metric": c["metric"],
            "item": c["item"],
            "method": c["method"],
            "r": fmt(c.get("r")),
            "interval": f"[{fmt(c.get('ci_low'))}, {fmt(c.get('ci_high'))}]"
            if c.get("ci_low") is not None
            else "",
            "p": pfmt(c.get("p_value")),
            "n": c.get("n"),
        }
        for c in section.get("correlations", [])
    ]
    return {"groups": groups, "correlations": correlations, "n": section["n"]}


def _label(key: str) -> str:
    return key.replace("_", " ")


def error_span_tables(analysis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The "Clinical safety: error spans" section, per error-span item (evaluation/analysis/error_spans.py):
    the headline — per system the share of texts with any error of the harm severity (any rater;
    rater-averaged beside it), with its interval and definition — then spans per text and per 100
    words by category and severity, then the raters' agreement. Empty without span answers."""
    sections = []
    for section in analysis.get("error_spans", []):
        result = section["analysis"]
        systems = [s for s in analysis.get("systems", []) if s in result["harm"]] or list(result["harm"])
        harm = []
        for system in systems:
            share = result["harm"][system]["any_rater"]
            averaged = result["harm"][system]["rater_averaged"] or {}
            harm.append(
                {
                    "system": system_label(analysis, system),
                    "any": cell(share["share"], {**share, "method": share["method"]}, percent=True),
                    "texts": f"{share['texts_harmed']} of {share['texts']}",
                    "averaged": cell(averaged.get("mean"), averaged, percent=True),
                }
            )
        categories, severities = result["categories"], result["severities"]
        rates = []
        for system in systems:
            rate = result["rates"][system]

            def rec(record: Mapping[str, Any] | None) -> dict:
                return cell((record or {}).get("mean"), record)

            rates.append(
                {
                    "system": system_label(analysis, system),
                    "per_text": rec(rate["per_text"]),
                    "per_100_words": rec(rate["per_100_words"]),
                    "categories": [rec(rate["by_category"][c]["per_text"]) for c in categories],
                    "severities": [rec(rate["by_severity"][v]["per_text"]) for v in severities],
                }
            )
        agreement = result["agreement"]
        sections.append(
            {
                "title": section["title"],
                "instrument": section["instrument"],
                "item": section["item"],
                "n": result["n"],
                "harm_severity": _label(result["harm_severity"]),
                "definitions": result["definitions"],
                "harm": harm,
                "categories": [_label(c) for c in categories],
                "severities": [_label(v) for v in severities],
                "rates": rates,
                "agreement": {
                    "raters": agreement["raters"],
                    "pairs": len(agreement["pairs"]),
                    "columns": [_label(c) for c in (*categories, "all")],
                    "f1": [fmt(agreement["mean_f1"].get(c)) for c in (*categories, "all")],
                    "alpha": [fmt(agreement["count_alpha"].get(c)) for c in (*categories, "all")],
                },
            }
        )
    return sections


SECTIONS = {
    "error_spans": error_span_tables,
    "table1": table1,
    "table2": table2,
    "table3": table3,
    "metrics": metric_table,
    "agreement": agreement_rows,
    "comparisons": comparison_rows,
    "differences": difference_rows,
    "correlations": correlation_rows,
    "correlation_heatmap": correlation_heatmap,
    "instrument_items": instrument_item_tables,
}


def report_tables(analysis: Mapping[str, Any], sections: Sequence[str] | None = None) -> dict[str, Any]:
    """Everything the dashboard and the report display, as formatted rows (`sections`: only
    those, by name of SECTIONS)."""
    tables = {name: SECTIONS[name](analysis) for name in (sections or SECTIONS)}
    tables["severity_distribution"] = analysis["severity_distribution"]
    tables["severity_unrated"] = analysis.get("severity_unrated", 0)
    tables["intervals"] = interval_methods(analysis)
    return tables


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    # Read from the installed distributions' metadata once per process (slow: a directory scan).
    versions = {"Python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


def methods(analysis: Mapping[str, Any]) -> dict[str, Any]:
    """The facts the methods section states (the template words them)."""
    options = analysis.get("options", {})
    return {
        "coding": analysis.get("coding", {}),
        "n_resamples": options.get("n_resamples"),
        "correlation_resamples": options.get("correlation_resamples"),
        "correlation_bootstrap_max_pairs": options.get("correlation_bootstrap_max_pairs"),
        "confidence": options.get("confidence"),
        "seed": options.get("seed"),
        "expert_scores": options.get("expert_scores", "raw"),
        "metric_families": analysis.get("metrics", {}).get("families", {}),
        "unavailable": analysis.get("metrics", {}).get("unavailable", {}),
        "versions": package_versions(),
        "likert": [level.name for level in scales.LIKERT.levels],
        "intervals": interval_methods(analysis),
        "components": component_rows(analysis),
    }


def component_rows(analysis: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per human measure, the variance components its intervals rest on, as text: each system's
    residual variance (from its own answers) and the participant × system interaction over the
    pairs of systems (range when it differs between pairs); "—" where too few answers."""
    rows = []
    components = analysis.get("confidence_intervals", {}).get("variance_components", {})
    for measure, record in components.items():
        residual = ", ".join(
            f"{system_label(analysis, system)} {fmt(values['residual'])}"
            for system, values in record.get("systems", {}).items()
        )
        interactions = [
            p["participant_x_system"]
            for p in record.get("pairs", [])
            if p["participant_x_system"] is not None
        ]
        if not interactions:
            interaction = "—"
        elif min(interactions) == max(interactions):
            interaction = fmt(interactions[0])
        else:
            interaction = f"{fmt(min(interactions))}–{fmt(max(interactions))}"
        rows.append(
            {
                "measure": DIFFERENCE_LABELS.get(measure, measure.replace("_", " ")),
                "residual": residual or "—",
                "interaction": interaction,
            }
        )
    return rows


def plan_table(result: dict) -> dict:
    """The grid as rows of cells for the template (participants down, sources across)."""
    grid = result["grid"]
    target = grid["settings"]["target"]
    cells = {(c["participants"], c["sources"]): c for c in grid["cells"]}
    smallest = grid.get("smallest") or {}
    best = (smallest.get("participants"), smallest.get("sources"))
    rows = []
    for participants in grid["participants"]:
        row = []
        for sources in grid["sources"]:
            cell = cells[(participants, sources)]
            row.append(
                {
                    **cell,
                    "meets": cell["power"] >= target,
                    "smallest": (participants, sources) == best,
                }
            )
        rows.append({"participants": participants, "cells": row})
    return {"sources": grid["sources"], "rows": rows}
