"""The whole analysis of a study (`study_analysis`): the protocol's tables and agreement
(protocol.py), the metrics (metric_tables.py), the intervals and comparisons (intervals.py), the
correlations (correlations.py), the instrument items and the error spans, as the one JSON-ready
document that `manage.py analyze`, the API, the dashboard and the report show
(evaluation/analysis/document.py reads it back without these modules' libraries). Pure
computation: no Django; evaluation/analysis/study_frames.py builds its input from the database."""

from __future__ import annotations

from typing import Any

import pandas as pd

from annotation import scales
from evaluation.analysis.correlations import correlations
from evaluation.analysis.error_spans import error_span_sections
from evaluation.analysis.instrument_items import instrument_items_analysis
from evaluation.analysis.intervals import comparisons, confidence_intervals, measure_frames, system_intervals
from evaluation.analysis.metric_tables import metric_tables, metrics_summary, readability_table
from evaluation.analysis.protocol import (
    AnalysisOptions,
    StudyFrames,
    agreement,
    confidence_vs_accuracy,
    distributions,
    expert_original_table,
    expert_table,
    lay_columns,
    lay_table,
    preference_votes,
    preference_wins,
    severity_distribution,
    system_keys,
)
from measures.metrics import registry as metric_registry


def study_analysis(
    frames: StudyFrames,
    *,
    options: AnalysisOptions | None = None,
    store: metric_registry.TextMetricStore | None = None,
) -> dict[str, Any]:
    """Everything `manage.py analyze` writes: JSON-ready, means as plain floats (not rounded),
    accuracies and shares as fractions, None where a figure is undefined. `store` keeps the
    automatic per-text metrics between analyses (metric_tables)."""
    options = options or AnalysisOptions()
    metrics = metric_tables(frames, options, store)
    columns = lay_columns(frames)
    by_system = system_intervals(measure_frames(frames, columns), system_keys(frames), options)
    votes = preference_votes(frames)
    wins, preference_details = preference_wins(frames, votes)
    # What reads the lay columns first, so that they (a copy of the panel-2 answers per system:
    # 100 MB at 20 000 sources × 20 laypeople) are gone before the comparisons and correlations.
    lay = lay_table(frames, columns)
    lay_distributions = distributions(frames, columns, votes)
    intervals = confidence_intervals(frames, metrics, options, columns, by_system)
    del columns
    analysis = {
        "study": frames.study,
        "title": frames.title,
        "systems": [row.system for row in frames.systems.itertuples()],
        "system_details": {
            row.system: {
                "label": row.label,
                "position": int(row.position),
                "is_reference": bool(row.is_reference),
            }
            for row in frames.systems.itertuples()
        },
        "n": {
            "sources": int(len(frames.sources)),
            "simplifications": int(len(frames.simplifications)),
            "distinct_texts": int(frames.simplifications["text_id"].nunique()),
            "radiologists": int(frames.expert_ratings["participant"].nunique())
            if len(frames.expert_ratings)
            else 0,
            "laypeople": int(frames.lay_answers["participant"].nunique()) if len(frames.lay_answers) else 0,
            "lay_answers": {
                phase: int((frames.lay_answers["phase"] == phase).sum()) for phase in ("original", "assisted")
            },
            "lay_preferences": int(len(frames.lay_preferences)),
            "expert_ratings": int(frames.expert_ratings["rating_id"].nunique())
            if len(frames.expert_ratings)
            else 0,
        },
        "readability": readability_table(metrics, frames),
        "expert": expert_table(frames, z=options.expert_z_scores),
        "expert_original": expert_original_table(frames),
        "lay": lay,
        "confidence_vs_accuracy": confidence_vs_accuracy(frames),
        "preferences": wins,
        "preference_details": preference_details,
        "agreement": agreement(frames),
        "severity_distribution": severity_distribution(frames),
        "severity_unrated": int(frames.sources["reference_severity"].isna().sum()),
        "distributions": lay_distributions,
        "metrics": metrics_summary(metrics, frames),
        "correlations": correlations(frames, metrics, options, votes) if options.correlations else [],
        "confidence_intervals": intervals,
        "system_means": by_system["means"],
        "comparisons": comparisons(frames),
        "options": {
            "n_resamples": options.n_resamples,
            "correlation_resamples": options.correlation_resamples,
            "correlation_bootstrap_max_pairs": options.correlation_bootstrap_max_pairs,
            "confidence": options.confidence,
            "seed": options.seed,
            "metric_families": list(metrics["families"]),
            "expert_scores": "z" if options.expert_z_scores else "raw",
        },
        "coding": {
            "severity": {level.name: level.value for level in scales.SEVERITY.levels},
            "understanding": {level.name: level.value for level in scales.UNDERSTANDING.levels},
            "confidence": {level.name: level.value for level in scales.CONFIDENCE.levels},
            "helpfulness": {level.name: level.value for level in scales.HELPFULNESS.levels},
            "expert_aspects": "1 = strongly disagree … 5 = strongly agree",
        },
    }
    answers = frames.instrument_answers
    if frames.instrument_section or (answers is not None and len(answers)):
        analysis["instrument_items"] = instrument_items_analysis(
            answers if answers is not None else pd.DataFrame(),
            frames.instruments,
            systems=system_keys(frames),
            per_text=metrics["per_text"],
            text_metrics=metrics["text_metrics"],
            corpus=metrics["corpus"],
            confidence=options.confidence,
            seed=options.seed,
            correlation_resamples=options.correlation_resamples,
            bootstrap_max_pairs=options.correlation_bootstrap_max_pairs,
            correlations=options.correlations,
        )
    spans = error_span_sections(
        answers if answers is not None else pd.DataFrame(),
        frames.instruments,
        frames.shown_texts,
        systems=system_keys(frames),
        confidence=options.confidence,
    )
    if spans:
        analysis["error_spans"] = spans
    return analysis
