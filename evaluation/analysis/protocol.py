"""The protocol's analysis (seed 003 Tables 1–3, Figures 3–4, agreement) from pandas frames: the
study's data as frames (`StudyFrames`), the analysis options, the helpers every table shares, the
human columns of Table 1, Tables 2 and 3 and the agreement. Radlay's additions are beside it
(metric_tables.py, intervals.py, correlations.py) and study.py puts them all together.

Pure computation: no Django. `evaluation/analysis/study_frames.py::study_frames` builds a
`StudyFrames` from the database; a notebook can build one from anything else.

Codings (annotation/scales.py): severity Critical = 1 … Healthy = 5; Q1 understanding 1–4; Q2
confidence 1–3; Q4 helpfulness −1..2; radiologist aspects 1–5. Shared texts: an answer on a text
that several systems produced counts for each of them (frames carry the tuple `systems`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotation import scales
from evaluation.analysis.document import ORIGINAL
from instruments.schema import Instrument
from measures.metrics import registry as metric_registry
from measures.stats.agreement import (
    cohen_kappa_pairwise_grid,
    icc,
    krippendorff_alpha,
    krippendorff_alpha_set_cells,
)
from measures.stats.correlation import BOOTSTRAP_MAX_PAIRS
from measures.stats.intervals import bootstrap_mean_ci
from measures.stats.rater_reliability import ControlScore, z_scores
from measures.stats.severity import mse_and_accuracy
from measures.stats.support import REAL

EXPERT_ASPECTS: tuple[str, ...] = tuple(scales.EXPERT_ASPECTS)
LAY_MEASURES: tuple[str, ...] = (
    "understanding",
    "confidence",
    "severity_mse",
    "severity_accuracy",
    "helpfulness",
)
# Human measures a metric is correlated with (per simplification and per system).
HUMAN_MEASURES: tuple[str, ...] = (
    *EXPERT_ASPECTS,
    "understanding",
    "confidence",
    "helpfulness",
    "severity_accuracy",
    "preference_share",
    "least_preference_share",
)
READABILITY_FAMILY = "readability"


@dataclass(frozen=True)
class StudyFrames:
    """The study's data as frames (column contracts in evaluation/analysis/study_frames.py)."""

    study: str
    systems: pd.DataFrame
    sources: pd.DataFrame
    simplifications: pd.DataFrame
    expert_ratings: pd.DataFrame
    expert_judgements: pd.DataFrame
    lay_answers: pd.DataFrame
    lay_preferences: pd.DataFrame
    title: str = ""
    # Instrument items beyond the protocol's typed tables (evaluation/analysis/instrument_items.py): their
    # answers, the instrument versions by (key, version), and whether the "Instrument items"
    # section is shown even before any answer (a non-protocol instrument is set up).
    instrument_answers: pd.DataFrame | None = None
    instruments: Mapping[tuple[str, int], Instrument] = field(default_factory=dict)
    instrument_section: bool = False
    # The texts raters saw (SimplificationText id -> text) where an error-span item was answered:
    # the span analysis reads the marked words and counts the words (evaluation/analysis/error_spans.py).
    shown_texts: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis. The defaults are the ones the report's methods section states."""

    n_resamples: int = 2000  # bootstrap resamples per mean
    correlation_resamples: int = 1000  # bootstrap resamples per correlation coefficient
    confidence: float = 0.95
    seed: int = 0
    metric_families: tuple[str, ...] | None = None  # None: every registered family
    embedder: metric_registry.Embedder | None = None
    metric_options: Mapping[str, Any] = field(default_factory=dict)
    correlations: bool = True
    correlation_metrics: tuple[str, ...] | None = None  # None: every per-text metric computed
    # Above this many pairs a correlation's interval is Fisher-z, not bootstrap (stats.correlation).
    correlation_bootstrap_max_pairs: int = BOOTSTRAP_MAX_PAIRS
    # Table 1's radiologist columns as each radiologist's z-scores (WMT's z-normalisation,
    # expert_ratings_z) instead of raw 1-5 means.
    expert_z_scores: bool = False


# --- small helpers ----------------------------------------------------------------------------


def _float(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: pd.Series | np.ndarray) -> float | None:
    array = np.asarray(values, dtype=np.float64)
    array = array[~np.isnan(array)]
    return float(array.mean()) if array.size else None


def scale_values(scale: scales.Scale) -> list[int]:
    """The numbers a scale's answers are coded as, in order (the value domain of its alpha)."""
    return sorted(level.value for level in scale.levels)


def system_keys(frames: StudyFrames) -> list[str]:
    return list(frames.systems["system"])


def credit_systems(frame: pd.DataFrame, column: str = "systems") -> pd.DataFrame:
    """One row per (row, credited system): the answer on a shared text counts for each system.

    The rows, their order, their index and the object column `system` are those of
    ``frame.assign(system=frame[column].map(list)).explode("system", ignore_index=True)`` without
    the rows of empty collections; built from the few distinct collections of the column (rows
    share one tuple per text), not row by row."""
    codes, distinct = pd.factorize(frame[column].to_numpy(dtype=object), use_na_sentinel=False)
    sizes = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    flat = np.empty(int(sizes.sum()), dtype=object)
    flat[:] = [system for systems in distinct for system in systems]
    lengths = sizes[codes]
    rows = np.repeat(np.arange(len(frame)), lengths)
    within = np.arange(rows.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    system = flat[np.repeat((np.cumsum(sizes) - sizes)[codes], lengths) + within]
    # explode numbers its rows 0.. counting one row for each empty collection.
    index = (np.cumsum(np.maximum(lengths, 1)) - np.maximum(lengths, 1))[rows] + within
    credited = frame.iloc[rows].set_axis(pd.RangeIndex(0, 0) if not rows.size else index, axis=0)
    return credited.assign(system=pd.Series(system, index=credited.index))


def _positions(values: pd.Series, keys: Sequence[Any]) -> np.ndarray:
    """The position of each value in `keys` as float64, NaN for a value not in it (what
    ``values.map({key: i})`` gives, by a hash lookup instead of a Python call per row)."""
    found = pd.Index(list(keys), dtype=object).get_indexer(values.to_numpy(dtype=object))
    return np.where(found >= 0, found, np.nan)


def _phase(frames: StudyFrames, phase: str) -> pd.DataFrame:
    answers = frames.lay_answers
    return answers[answers["phase"] == phase]


def lay_columns(frames: StudyFrames) -> dict[str, pd.DataFrame]:
    """Table 1's lay columns: "original" = panel-1 answers; each system = the panel-2 answers of
    the items that showed that system's text (a text shared by two systems counts for both)."""
    assisted = credit_systems(_phase(frames, "assisted"))
    columns = {ORIGINAL: _phase(frames, "original")}
    for system in system_keys(frames):
        columns[system] = assisted[assisted["system"] == system]
    return columns


def _ci(values: Sequence[float] | np.ndarray, options: AnalysisOptions, salt: int = 0) -> dict[str, Any]:
    array = np.asarray(values, dtype=np.float64)
    array = array[~np.isnan(array)]
    mean, low, high = bootstrap_mean_ci(
        array, n_resamples=options.n_resamples, confidence=options.confidence, seed=options.seed + salt
    )
    # A readability index is any real number (a grade level can be negative); the percentile
    # interval of its mean is kept around the mean.
    low, high = REAL.bound(_float(mean), _float(low), _float(high))
    return {
        "mean": _float(mean),
        "low": low,
        "high": high,
        "n": int(array.size),
        "method": f"percentile bootstrap over texts ({options.n_resamples} resamples)",
        "support": REAL.record(),
    }


# --- Table 1, the human columns (its readability rows: metric_tables.py) ---------------------


def expert_ratings_z(ratings: pd.DataFrame) -> pd.DataFrame:
    """`ratings` (expert_ratings_frame) with each aspect replaced by the radiologist's z-score: their
    score minus their mean over their own ratings of that aspect, over their (population) standard
    deviation (measures.stats.rater_reliability.z_scores, WMT's z-normalisation), so a lenient and
    a severe radiologist weigh alike. A rating credited to several systems counts once in the
    radiologist's mean; a radiologist whose scores of an aspect never vary gets NaN there. Only
    ratings of real texts are here: answers about planted controls never enter."""
    out = ratings.copy()
    once = ratings.drop_duplicates("rating_id")
    for aspect in EXPERT_ASPECTS:
        scored = once[once[aspect].notna()]
        z = z_scores(
            ControlScore(rater=rater, pair=rating, planted=False, score=float(value))
            for rater, rating, value in zip(
                scored["participant"], scored["rating_id"], scored[aspect], strict=True
            )
        )
        out[aspect] = [
            np.nan if (value := z.get((rater, rating))) is None else value
            for rater, rating in zip(out["participant"], out["rating_id"], strict=True)
        ]
    return out


def expert_table(frames: StudyFrames, *, z: bool = False) -> dict[str, dict[str, float | None]]:
    """Table 1 (middle): the radiologists' mean score per aspect and system (credited ratings);
    with `z`, the mean of their z-scores (expert_ratings_z)."""
    ratings = expert_ratings_z(frames.expert_ratings) if z else frames.expert_ratings
    table = {}
    for system in system_keys(frames):
        rows = ratings[ratings["system"] == system]
        table[system] = {aspect: _mean(rows[aspect]) for aspect in EXPERT_ASPECTS}
        table[system]["n"] = int(rows[list(EXPERT_ASPECTS)].notna().any(axis=1).sum())
    return table


def expert_original_table(frames: StudyFrames) -> dict[str, float | None]:
    """The original's column where the protocol rates it: the simplicity of the original
    ("Do you think laypeople can understand the sentence?"). The paper's 5.000 factuality of the
    original is a convention, not a rating, so radlay reports none."""
    judgements = frames.expert_judgements
    values = judgements["simplicity"].dropna() if len(judgements) else pd.Series(dtype="float64")
    return {"simplicity": _mean(values), "n": int(values.size)}


def lay_column(frame: pd.DataFrame, *, original: bool) -> dict[str, float | None]:
    mse, accuracy, n_severity = mse_and_accuracy(frame["severity_guess"], frame["reference_severity"])
    return {
        "understanding": _mean(frame["understanding"]),
        "confidence": _mean(frame["confidence"]),
        "severity_mse": _float(mse),
        "severity_accuracy": _float(accuracy),
        "helpfulness": None if original else _mean(frame["helpfulness"]),
        "urgency_confidence": _mean(frame["urgency_confidence"]),
        "n": int(len(frame)),
        "n_severity": int(n_severity),
    }


def lay_table(
    frames: StudyFrames, columns: Mapping[str, pd.DataFrame] | None = None
) -> dict[str, dict[str, float | None]]:
    """Table 1 (bottom): lay Q1, Q2, Q3 (MSE, accuracy vs the reference severity), Q4."""
    return {
        column: lay_column(frame, original=column == ORIGINAL)
        for column, frame in (columns or lay_columns(frames)).items()
    }


# --- Table 2, severity distribution -------------------------------------------------------------


def confidence_vs_accuracy(frames: StudyFrames) -> dict[str, dict[str, float | None]]:
    """Table 2: every (confidence, severity guess) pair of both panels, grouped by the confidence
    level, against the source's reference severity. Each answer counts once (not per system)."""
    answers = frames.lay_answers
    table = {}
    for level in scales.CONFIDENCE.levels:
        rows = answers[answers["confidence"] == level.value]
        mse, accuracy, n = mse_and_accuracy(rows["severity_guess"], rows["reference_severity"])
        table[level.name] = {"mse": _float(mse), "accuracy": _float(accuracy), "n": int(n)}
    return table


def severity_distribution(frames: StudyFrames) -> dict[str, int]:
    """How many sources have each reference severity (sources without one are not counted)."""
    counts = frames.sources["reference_severity"].value_counts()
    return {name: int(counts.get(name, 0)) for name in scales.SEVERITY.names}


# --- Table 3, Figures 3 and 4 -----------------------------------------------------------------


def vote_counts(frames: StudyFrames, side: str) -> pd.DataFrame:
    """Sources × systems: how many participants chose a text of that system as `side` (most or
    least); a vote for a shared text counts for every system that produced it."""
    systems = system_keys(frames)
    sources = list(frames.sources["source"])
    prefs = frames.lay_preferences
    counts = pd.DataFrame(0, index=pd.Index(sources, name="source"), columns=systems, dtype=np.int64)
    if len(prefs):
        votes = credit_systems(prefs[["source", side]], side)
        tally = votes.groupby(["source", "system"]).size().unstack("system", fill_value=0)
        counts = counts.add(tally.reindex(index=sources, columns=systems, fill_value=0), fill_value=0).astype(
            np.int64
        )
    return counts


def preference_votes(frames: StudyFrames) -> dict[str, pd.DataFrame]:
    """``vote_counts`` of both sides, {"most": ..., "least": ...}: computed once per analysis."""
    return {side: vote_counts(frames, side) for side in ("most", "least")}


def preference_wins(
    frames: StudyFrames, votes: Mapping[str, pd.DataFrame] | None = None
) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """Table 3: per source, the system(s) with the most votes win; ties credit every tied system;
    a source nobody voted on has no winner. Returns (wins, details)."""
    votes = votes or preference_votes(frames)
    wins: dict[str, dict[str, int]] = {}
    details: dict[str, Any] = {}
    for side in ("most", "least"):
        counts = votes[side]
        top = counts.max(axis=1)
        winners = counts.eq(top, axis=0) & (top > 0).to_numpy()[:, None]
        systems = list(counts.columns)
        wins[side] = {system: int(winners[system].sum()) for system in counts.columns}
        details[side] = {
            "votes": {system: int(counts[system].sum()) for system in counts.columns},
            "winners": _winners(counts.index, winners.to_numpy(), systems),
            "sources_with_votes": int((top > 0).sum()),
        }
    return wins, details


def _winners(sources: Sequence[str], winners: np.ndarray, systems: Sequence[str]) -> dict[str, list[str]]:
    """{source: the systems of its row of the sources × systems boolean `winners`}, by the few
    distinct rows rather than row by row."""
    patterns, pattern_of = np.unique(winners, axis=0, return_inverse=True)
    named = [[systems[j] for j in np.flatnonzero(row)] for row in patterns]
    return {source: list(named[k]) for source, k in zip(sources, pattern_of.ravel().tolist(), strict=True)}


def _level_counts(values: pd.Series, scale: scales.Scale) -> dict[str, int]:
    counts = values.dropna().value_counts()
    return {level.name: int(counts.get(float(level.value), 0)) for level in scale.levels}


def distributions(
    frames: StudyFrames,
    columns: Mapping[str, pd.DataFrame] | None = None,
    votes: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """Figure 3 (confidence per column), Figure 4 (sources by number of votes, per system and
    side) and the Likert distributions of every rated aspect and question."""
    columns = columns or lay_columns(frames)
    votes = votes or preference_votes(frames)
    lay = {
        question: {
            column: _level_counts(frame[question], scales.LAY_SCALES[question])
            for column, frame in columns.items()
            if not (question == "helpfulness" and column == ORIGINAL)
        }
        for question in ("understanding", "confidence", "severity_guess", "helpfulness")
    }
    expert = {
        aspect: {
            system: _level_counts(
                frames.expert_ratings.loc[frames.expert_ratings["system"] == system, aspect], scales.LIKERT
            )
            for system in system_keys(frames)
        }
        for aspect in EXPERT_ASPECTS
    }
    n_voters = (
        frames.lay_preferences.groupby("source")["participant"].nunique()
        if len(frames.lay_preferences)
        else pd.Series(dtype=np.int64)
    )
    voted: dict[str, dict[str, dict[str, int]]] = {}
    for side in ("most", "least"):
        counts = votes[side]
        top = int(n_voters.max()) if len(n_voters) else 0
        voted[side] = {
            system: {str(k): int((counts[system] == k).sum()) for k in range(top + 1)}
            for system in counts.columns
        }
    return {"confidence": lay["confidence"], "lay": lay, "expert": expert, "votes": voted}


# --- agreement ------------------------------------------------------------------------------------


def _set_annotations(frames: StudyFrames, side: str) -> tuple[np.ndarray, np.ndarray]:
    """(units, sets) of the preference answers on `side`, coder by coder in order of first
    appearance, as ``{participant: {source: set}}`` lists them: one answer per (participant,
    source), the last one given. An empty selection is a skipped question, not an answer "none
    of them", so it is left out."""
    prefs = frames.lay_preferences
    chosen = prefs[side].to_numpy(dtype=object)
    codes, distinct = pd.factorize(chosen, use_na_sentinel=False)
    answered = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))[codes] > 0
    participants = prefs["participant"].to_numpy(dtype=object)[answered]
    sources = prefs["source"].to_numpy(dtype=object)[answered]
    chosen = chosen[answered]
    coder, _ = pd.factorize(participants, use_na_sentinel=False)
    source, _ = pd.factorize(sources, use_na_sentinel=False)
    cell, _ = pd.factorize(coder.astype(np.int64) * (int(source.max(initial=0)) + 1) + source)
    last = np.full(int(cell.max(initial=-1)) + 1, -1, dtype=np.int64)
    np.maximum.at(last, cell, np.arange(cell.size))
    first = ~pd.Series(cell).duplicated().to_numpy()
    # Each cell where it first appears, with the value of its last answer; coders in the order
    # they first appear.
    rows = last[cell[first]]
    rows = rows[np.argsort(coder[first], kind="stable")]
    return sources[rows], chosen[rows]


def _reliability(frame: pd.DataFrame, unit: str, coder: str, value: str) -> tuple[np.ndarray, np.ndarray]:
    """(coders × units grid of `value`, NaN where missing; the coders): what
    ``frame.dropna(subset=[value]).pivot_table(index=coder, columns=unit, values=value,
    aggfunc="first")`` holds, coders and units sorted, from integer codes."""
    rows = frame[frame[value].notna()]
    coder_codes, coders = pd.factorize(rows[coder].to_numpy(), sort=True)
    unit_codes, units = pd.factorize(rows[unit].to_numpy(), sort=True)
    grid = np.full((len(coders), len(units)), np.nan)
    first = ~pd.Series(coder_codes.astype(np.int64) * len(units) + unit_codes).duplicated().to_numpy()
    grid[coder_codes[first], unit_codes[first]] = rows[value].to_numpy(np.float64)[first]
    return grid, np.asarray(coders)


def agreement(frames: StudyFrames) -> dict[str, Any]:
    """Krippendorff's alpha (MASI) on preference sets; for two or more radiologists per aspect:
    alpha (ordinal, interval), pairwise quadratic-weighted Cohen's kappa, ICC; laypeople's panel-1
    severity guesses: alpha (ordinal)."""
    result: dict[str, Any] = {"preference_alpha_masi": {}}
    for side in ("most", "least"):
        units, sets = _set_annotations(frames, side)
        result["preference_alpha_masi"][side] = (
            _float(krippendorff_alpha_set_cells(units, sets)) if sets.size else None
        )
    result["preference_alpha_masi"]["n_coders"] = (
        int(frames.lay_preferences["participant"].nunique()) if len(frames.lay_preferences) else 0
    )

    ratings = frames.expert_ratings.drop_duplicates(
        "rating_id"
    )  # one rating per (rater, text), not per system
    raters = sorted(ratings["participant"].unique()) if len(ratings) else []
    expert: dict[str, Any] = {"n_raters": len(raters)}
    if len(raters) >= 2:
        scale = scale_values(scales.LIKERT)
        for aspect in EXPERT_ASPECTS:
            grid, grid_raters = _reliability(ratings, "text_id", "participant", aspect)
            kappa = cohen_kappa_pairwise_grid(grid, grid_raters.tolist(), weights="quadratic", labels=scale)
            try:
                icc_result = icc(
                    ratings.dropna(subset=[aspect]), unit="text_id", rater="participant", score=aspect
                )
                icc_record = {
                    "icc2_1": _float(icc_result.icc2_1),
                    "icc3_1": _float(icc_result.icc3_1),
                    "icc2_k": _float(icc_result.icc2_k),
                    "icc3_k": _float(icc_result.icc3_k),
                    "n_units": icc_result.n_units,
                    "n_raters": icc_result.n_raters,
                }
            except ValueError as exc:
                icc_record = {"error": str(exc)}
            expert[aspect] = {
                "alpha_ordinal": _float(krippendorff_alpha(grid, "ordinal", value_domain=scale)),
                "alpha_interval": _float(krippendorff_alpha(grid, "interval")),
                "kappa_quadratic_mean": _float(kappa.mean),
                "kappa_pairs": [{**pair, "kappa": _float(pair["kappa"])} for pair in kappa.pairs],
                "icc": icc_record,
            }
        judgements = frames.expert_judgements
        if judgements["participant"].nunique() >= 2:
            grid, _ = _reliability(judgements, "source", "participant", "severity_value")
            expert["severity_alpha_ordinal"] = _float(
                krippendorff_alpha(grid, "ordinal", value_domain=scale_values(scales.SEVERITY))
            )
    else:
        expert["note"] = "Agreement between radiologists needs two or more radiologists."
    result["expert"] = expert

    original = _phase(frames, "original")
    lay: dict[str, Any] = {"n_raters": int(original["participant"].nunique())}
    for question in ("severity_guess", "understanding", "confidence"):
        domain = scale_values(scales.LAY_SCALES[question])
        grid, _ = _reliability(original, "source", "participant", question)
        value = krippendorff_alpha(grid, "ordinal", value_domain=domain) if grid.size else math.nan
        lay[f"{question}_alpha_ordinal"] = _float(value)
    result["lay"] = lay
    result["lay_severity_alpha_ordinal"] = lay["severity_guess_alpha_ordinal"]
    return result
