"""Metric–human correlations: every per-text metric against every human measure of the
simplification's text (radiologists' aspects, lay panel-2 means, the panel-3 preference shares),
per simplification and per system, with paired-bootstrap intervals. Pure computation: no Django."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evaluation.analysis.instrument_items import correlation_rows
from evaluation.analysis.protocol import (
    EXPERT_ASPECTS,
    HUMAN_MEASURES,
    AnalysisOptions,
    StudyFrames,
    _phase,
    credit_systems,
    preference_votes,
)
from measures.stats.correlation import correlate_columns


def human_measures_per_simplification(
    frames: StudyFrames, votes: Mapping[str, pd.DataFrame] | None = None
) -> pd.DataFrame:
    """One row per (source, system) simplification with the human judgements of its text:
    radiologists' mean aspects, lay panel-2 means (understanding, confidence, helpfulness,
    severity accuracy) and the share of panel-3 voters who chose it as most / least preferred."""
    base = frames.simplifications[["source", "system", "text_id"]].copy()
    ratings = frames.expert_ratings
    if len(ratings):
        base = base.merge(
            ratings.groupby(["source", "system"])[list(EXPERT_ASPECTS)].mean().reset_index(),
            on=["source", "system"],
            how="left",
        )
    else:
        base = base.assign(**{aspect: np.nan for aspect in EXPERT_ASPECTS})
    assisted = credit_systems(_phase(frames, "assisted"))
    assisted = assisted.assign(
        severity_accuracy=np.where(
            assisted["severity_guess"].notna() & assisted["reference_severity"].notna(),
            (assisted["severity_guess"] == assisted["reference_severity"]).astype(np.float64),
            np.nan,
        )
    )
    lay = (
        assisted.groupby(["source", "system"])[
            ["understanding", "confidence", "helpfulness", "severity_accuracy"]
        ]
        .mean()
        .reset_index()
    )
    base = base.merge(lay, on=["source", "system"], how="left")
    votes = votes or preference_votes(frames)
    prefs = frames.lay_preferences
    voters = prefs.groupby("source")["participant"].nunique() if len(prefs) else pd.Series(dtype=np.float64)
    for side, column in (("most", "preference_share"), ("least", "least_preference_share")):
        counts = votes[side].stack().rename("votes").reset_index()
        counts = counts.rename(columns={counts.columns[1]: "system"})
        share = counts.assign(**{column: counts["votes"] / counts["source"].map(voters)})
        base = base.merge(share[["source", "system", column]], on=["source", "system"], how="left")
    for measure in HUMAN_MEASURES:
        base[measure] = base[measure].astype(np.float64)
    return base


def correlations(
    frames: StudyFrames,
    metrics: Mapping[str, Any],
    options: AnalysisOptions,
    votes: Mapping[str, pd.DataFrame] | None = None,
) -> list[dict[str, Any]]:
    """Pearson, Spearman and Kendall (with paired-bootstrap intervals) between every per-text
    metric of the registry and every human measure, per simplification ("item") and per system
    (means over the system's simplifications)."""
    human = human_measures_per_simplification(frames, votes)
    per_text = metrics["per_text"]
    names = [
        n
        for n in metrics["text_metrics"]
        if options.correlation_metrics is None or n in options.correlation_metrics
    ]
    items = human.merge(per_text[["source", "system", *names]], on=["source", "system"], how="left")
    systems = items.groupby("system", sort=False)[[*HUMAN_MEASURES, *names]].mean()
    records: list[dict[str, Any]] = []
    for level, table in (("item", items), ("system", systems)):
        metric_columns = {metric: table[metric].to_numpy(np.float64) for metric in names}
        human_columns = {measure: table[measure].to_numpy(np.float64) for measure in HUMAN_MEASURES}
        metric_columns = {k: v for k, v in metric_columns.items() if not np.isnan(v).all()}
        human_columns = {k: v for k, v in human_columns.items() if not np.isnan(v).all()}
        if not metric_columns or not human_columns:
            continue
        table_records = correlate_columns(
            metric_columns,
            human_columns,
            n_resamples=options.correlation_resamples,
            seed=options.seed,
            confidence=options.confidence,
            bootstrap_max_pairs=options.correlation_bootstrap_max_pairs,
        )
        records += correlation_rows(table_records, level=level, measure_key="measure")
    return records
