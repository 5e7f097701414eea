"""Radlay's intervals beside the protocol's means: every mean of Tables 1 and 2 and every
difference between two systems with its crossed-design interval (participants × sources,
measures/stats/crossed.py), readability's bootstrap over texts, and the per-source paired
comparisons of systems (Wilcoxon signed-rank, Holm). Pure computation: no Django."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from annotation import scales
from evaluation.analysis.document import ORIGINAL
from evaluation.analysis.protocol import (
    EXPERT_ASPECTS,
    LAY_MEASURES,
    READABILITY_FAMILY,
    AnalysisOptions,
    StudyFrames,
    _ci,
    _phase,
    _positions,
    credit_systems,
    lay_columns,
    scale_values,
    system_keys,
)
from measures.metrics import registry as metric_registry
from measures.stats.comparisons import paired_system_comparisons
from measures.stats.crossed import (
    crossed_group_intervals,
    crossed_mean_ci,
    difference_records,
    group_components,
    interval_record,
)
from measures.stats.severity import severity_errors_per_answer


def measure_bounds(measure: str) -> tuple[float, float] | None:
    """The range a human measure's mean cannot leave (its interval is kept inside it): the
    answer scale for Likert-type answers, [0, 1] for Q3 accuracy, [0, (levels − 1)²] for Q3's
    MSE, ± the scale's span for the comprehension gain."""

    def span(scale: scales.Scale) -> tuple[float, float]:
        values = scale_values(scale)
        return float(values[0]), float(values[-1])

    if measure.removeprefix("expert_") in EXPERT_ASPECTS:
        return span(scales.LIKERT)
    if measure in scales.LAY_SCALES:
        return span(scales.LAY_SCALES[measure])
    if measure == "understanding_gain":
        low, high = span(scales.UNDERSTANDING)
        return low - high, high - low
    if measure == "severity_mse":
        low, high = span(scales.SEVERITY)
        return 0.0, (high - low) ** 2
    if measure == "severity_accuracy":
        return 0.0, 1.0
    return None


def _crossed_frame(
    frame: pd.DataFrame, column: str, options: AnalysisOptions, measure: str
) -> dict[str, Any]:
    ci = crossed_mean_ci(
        frame[column].to_numpy(np.float64),
        frame["participant"].to_numpy(),
        frame["source"].to_numpy(),
        confidence=options.confidence,
        bounds=measure_bounds(measure),
    )
    return interval_record(ci)


def _severity_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per row of `frame` (an answer), its severity error and hit NaN where it has no
    guess or its source no reference severity: aligned with `frame`'s other questions, so an answer
    given only in part counts for the questions it answered and for those only."""
    squared_errors, hits = severity_errors_per_answer(frame["severity_guess"], frame["reference_severity"])
    return frame[["participant", "source"]].assign(severity_mse=squared_errors, severity_accuracy=hits)


def confidence_intervals(
    frames: StudyFrames,
    metrics: Mapping[str, Any],
    options: AnalysisOptions,
    columns: Mapping[str, pd.DataFrame] | None = None,
    by_system: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An interval for every mean of Tables 1 and 2 and every difference between two systems.

    Human answers are crossed (participants × sources, both samples of larger populations): their
    means get the crossed-design intervals of measures/stats/crossed.py, with the variance
    components of a table's systems (or confidence levels) estimated together. Readability is one
    value per text, so its only random factor is the source: a percentile bootstrap over texts.
    """
    columns = columns or lay_columns(frames)
    by_system = by_system or system_intervals(measure_frames(frames, columns), system_keys(frames), options)
    means = by_system["means"]
    intervals: dict[str, Any] = {"readability": {}, "expert": {}, "lay": {}, "confidence_vs_accuracy": {}}
    names = list(metric_registry.get_family(READABILITY_FAMILY).text_metrics)
    per_original, per_text = metrics["per_original"], metrics["per_text"]
    intervals["readability"][ORIGINAL] = {
        n: _ci(per_original[n], options) for n in names if n in per_original
    }
    for system in system_keys(frames):
        rows = per_text[per_text["system"] == system]
        intervals["readability"][system] = {n: _ci(rows[n], options) for n in names if n in rows}
        intervals["expert"][system] = {aspect: means[f"expert_{aspect}"][system] for aspect in EXPERT_ASPECTS}
        intervals["lay"][system] = {measure: means[measure][system] for measure in LAY_MEASURES}
    intervals["expert_original"] = {
        "simplicity": _crossed_frame(frames.expert_judgements, "simplicity", options, "expert_simplicity")
    }
    original = _severity_frame(columns[ORIGINAL]).assign(
        understanding=columns[ORIGINAL]["understanding"].to_numpy(),
        confidence=columns[ORIGINAL]["confidence"].to_numpy(),
    )
    intervals["lay"][ORIGINAL] = {
        measure: _crossed_frame(original, measure, options, measure)
        for measure in ("understanding", "confidence", "severity_mse", "severity_accuracy")
    }
    answers = frames.lay_answers[frames.lay_answers["confidence"].notna()]
    severity = _severity_frame(answers)
    for name, key in (("severity_mse", "mse"), ("severity_accuracy", "accuracy")):
        level_means, _ = crossed_group_intervals(
            severity[name].to_numpy(np.float64),
            severity["participant"].to_numpy(),
            severity["source"].to_numpy(),
            answers["confidence"].to_numpy(np.float64),
            confidence=options.confidence,
            bounds=measure_bounds(name),
            differences=False,  # only the levels' means are reported
        )
        for level in scales.CONFIDENCE.levels:
            ci = level_means.get(float(level.value))
            record = interval_record(ci or crossed_mean_ci([], [], [], bounds=measure_bounds(name)))
            intervals["confidence_vs_accuracy"].setdefault(level.name, {})[key] = record
    intervals["differences"] = by_system["differences"]
    intervals["variance_components"] = by_system.get("components", {})
    return intervals


def measure_frames(frames: StudyFrames, columns: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Per human measure of Table 1 (lay Q1–Q4, comprehension gain, Q3 MSE and accuracy, each
    radiologist aspect): its answers as (system, participant, source, value), every system's
    together. Comprehension gain is panel 2 − panel 1 understanding of the same item."""
    original = _phase(frames, "original").set_index("item_id")["understanding"]
    parts: dict[str, list[pd.DataFrame]] = {}
    for system in system_keys(frames):
        frame = columns[system]
        severity = _severity_frame(frame)
        base = pd.DataFrame(
            {
                "system": system,
                "participant": frame["participant"].to_numpy(),
                "source": frame["source"].to_numpy(),
            }
        )
        lay = {
            "understanding": frame["understanding"].to_numpy(),
            "understanding_gain": frame["understanding"].to_numpy()
            - original.reindex(frame["item_id"]).to_numpy(),
            "confidence": frame["confidence"].to_numpy(),
            "helpfulness": frame["helpfulness"].to_numpy(),
            "severity_mse": severity["severity_mse"].to_numpy(),
            "severity_accuracy": severity["severity_accuracy"].to_numpy(),
        }
        for name, values in lay.items():
            parts.setdefault(name, []).append(base.assign(value=values))
        ratings = frames.expert_ratings[frames.expert_ratings["system"] == system]
        for aspect in EXPERT_ASPECTS:
            parts.setdefault(f"expert_{aspect}", []).append(
                ratings[["system", "participant", "source", aspect]].rename(columns={aspect: "value"})
            )
    return {name: pd.concat(frames_, ignore_index=True) for name, frames_ in parts.items()}


def system_intervals(
    measures: Mapping[str, pd.DataFrame], systems: Sequence[str], options: AnalysisOptions
) -> dict[str, Any]:
    """Per human measure: every system's mean and every difference between two systems, with
    their crossed-design intervals (measures/stats/crossed.crossed_group_intervals).
    {"means": {measure: {system: record}}, "differences": {measure: [record per pair]},
    "components": {measure: the variance components behind them (crossed.group_components)}}."""
    order = {system: i for i, system in enumerate(systems)}
    means: dict[str, dict[str, Any]] = {}
    differences: dict[str, list[dict[str, Any]]] = {}
    components: dict[str, dict[str, Any]] = {}
    for name, frame in measures.items():
        empty = interval_record(crossed_mean_ci([], [], [], bounds=measure_bounds(name)))
        codes = _positions(frame["system"], list(order))
        group_means, group_differences = crossed_group_intervals(
            frame["value"].to_numpy(np.float64),
            frame["participant"].to_numpy(),
            frame["source"].to_numpy(),
            codes,
            confidence=options.confidence,
            bounds=measure_bounds(name),
        )
        means[name] = {
            system: interval_record(group_means[float(i)]) if float(i) in group_means else dict(empty)
            for system, i in order.items()
        }
        differences[name] = difference_records(systems, group_differences, measure_bounds(name))
        fitted = group_components(
            frame["value"].to_numpy(np.float64),
            frame["participant"].to_numpy(),
            frame["source"].to_numpy(),
            codes,
        )
        components[name] = {
            "systems": {
                systems[int(k)]: {"participant": v.row, "source": v.column, "residual": v.residual}
                for k, v in fitted["systems"].items()
            },
            "pairs": [
                {
                    "system_a": systems[int(a)],
                    "system_b": systems[int(b)],
                    "participant": v.row,
                    "source": v.column,
                    "participant_x_system": v.interaction,
                    "source_x_system": v.column_interaction,
                    "residual": v.residual,
                }
                for (a, b), v in fitted["pairs"].items()
            ],
        }
    return {"means": means, "differences": differences, "components": components}


def _ordered(frame: pd.DataFrame, frames: StudyFrames) -> pd.DataFrame:
    return frame.assign(_order=_positions(frame["system"], system_keys(frames))).sort_values(
        ["_order", "source"], kind="stable"
    )


def comparisons(frames: StudyFrames) -> dict[str, list[dict[str, Any]]]:
    """Per-source paired comparisons of systems (Wilcoxon signed-rank, Holm over the pairs):
    panel-2 understanding, comprehension gain (panel 2 − panel 1 understanding, per item) and
    each radiologist aspect. Values of several raters are averaged per (source, system) first."""
    answers = frames.lay_answers
    assisted = answers[answers["phase"] == "assisted"]
    original = answers[answers["phase"] == "original"].set_index("item_id")["understanding"]
    gain = assisted.assign(
        gain=assisted["understanding"].to_numpy() - original.reindex(assisted["item_id"]).to_numpy()
    )
    credited = credit_systems(gain)
    measures = {
        "understanding": credited[["source", "system", "understanding"]].rename(
            columns={"understanding": "value"}
        ),
        "understanding_gain": credited[["source", "system", "gain"]].rename(columns={"gain": "value"}),
    }
    for aspect in EXPERT_ASPECTS:
        measures[f"expert_{aspect}"] = frames.expert_ratings[["source", "system", aspect]].rename(
            columns={aspect: "value"}
        )
    result = {}
    for name, frame in measures.items():
        frame = _ordered(frame.dropna(subset=["value"]), frames)
        result[name] = paired_system_comparisons(frame) if frame["system"].nunique() >= 2 else []
    return result
