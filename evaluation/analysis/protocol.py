"""The protocol's analysis (seed 003 Tables 1–3, Figures 3–4, agreement) and radlay's additions
(bootstrap intervals, paired comparisons, metric–human correlations), from pandas frames.

Pure computation: no Django. `evaluation/analysis/study_frames.py::study_frames` builds a
`StudyFrames` from the database; a notebook can build one from anything else. `study_analysis` returns one
JSON-ready dict, the same one `manage.py analyze`, the API, the dashboard and the report show
(evaluation/analysis/document.py reads it back without this module's libraries).

Codings (annotation/scales.py): severity Critical = 1 … Healthy = 5; Q1 understanding 1–4; Q2
confidence 1–3; Q4 helpfulness −1..2; radiologist aspects 1–5. Shared texts: an answer on a text
that several systems produced counts for each of them (frames carry the tuple `systems`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotation import scales
from evaluation.analysis.document import ORIGINAL
from evaluation.analysis.error_spans import error_span_sections
from evaluation.analysis.instrument_items import correlation_rows, instrument_items_analysis
from instruments.schema import Instrument
from measures.metrics import registry as metric_registry
from measures.stats.agreement import (
    cohen_kappa_pairwise_grid,
    icc,
    krippendorff_alpha,
    krippendorff_alpha_set_cells,
)
from measures.stats.comparisons import paired_system_comparisons
from measures.stats.correlation import BOOTSTRAP_MAX_PAIRS, correlate_columns
from measures.stats.crossed import (
    crossed_group_intervals,
    crossed_mean_ci,
    difference_records,
    group_components,
    interval_record,
)
from measures.stats.intervals import bootstrap_mean_ci
from measures.stats.rater_reliability import ControlScore, z_scores
from measures.stats.severity import mse_and_accuracy, severity_errors_per_answer
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


# --- Table 1 ----------------------------------------------------------------------------------


# The metric tables of the last analysed studies, by the texts and options they were computed
# from: a study's texts rarely change between two analyses (new answers do), and its metrics are
# most of a recomputation. A few entries of tens of MB each at 20 000 sources.
_METRIC_TABLES: OrderedDict[bytes, tuple[Any, dict[str, Any]]] = OrderedDict()
_METRIC_TABLES_KEPT = 4
_PLAIN_OPTION = (str, int, float, bool, type(None))


def _metric_tables_key(frames: StudyFrames, options: AnalysisOptions) -> bytes | None:
    """A digest of everything metric_tables reads, or None when an option is not plain data
    (an object such as a custom glossary has no content digest, so it is never cached)."""
    metric_options = dict(options.metric_options)
    if not all(isinstance(value, _PLAIN_OPTION) for value in metric_options.values()):
        return None
    digest = hashlib.blake2b(digest_size=32)

    def add(*parts: Any) -> None:
        digest.update(json.dumps(parts, sort_keys=True, default=str).encode())
        digest.update(b"\0")

    add(options.metric_families, sorted(metric_options.items()))
    simplifications, sources, systems = frames.simplifications, frames.sources, frames.systems
    add(systems["system"].tolist(), systems["is_reference"].astype(bool).tolist())
    for column in ("source", "system", "text"):
        add(simplifications[column].tolist())
    add(simplifications["text_id"].astype(np.int64).tolist())
    for column in ("source", "text", "metadata"):
        add(sources[column].tolist())
    return digest.digest()


def metric_tables(
    frames: StudyFrames, options: AnalysisOptions, store: metric_registry.TextMetricStore | None = None
) -> dict[str, Any]:
    """Every registered metric family over the study's simplifications (and, for the families
    that judge a text on its own, over the originals). Per-text values are averaged per system
    over the study's simplifications (a shared text counts once for each of its systems).

    Per-text values are read from `store` where it has them and given to it where it does not
    (registry.compute_all). The tables of the same texts, families, options and embedder are
    also kept in this process (the last few): a second analysis in a worker reads nothing;
    callers get copies of the frames."""
    key = _metric_tables_key(frames, options)
    cached = _METRIC_TABLES.get(key) if key is not None else None
    if cached is not None and cached[0] is options.embedder:
        _METRIC_TABLES.move_to_end(key)
        tables = cached[1]
    else:
        tables = _metric_tables_computed(frames, options, store)
        if key is not None:
            _METRIC_TABLES[key] = (options.embedder, tables)
            while len(_METRIC_TABLES) > _METRIC_TABLES_KEPT:
                _METRIC_TABLES.popitem(last=False)
    return {
        **copy.deepcopy({k: v for k, v in tables.items() if k not in ("per_text", "per_original")}),
        "per_text": tables["per_text"].copy(),
        "per_original": tables["per_original"].copy(),
    }


@dataclass
class _Columns:
    """compute_all's report with the per-text values as one float64 column per metric."""

    texts: dict[str, np.ndarray]
    systems: dict[str, dict[str, Any]]
    unavailable: dict[str, str]


def _family_by_family(
    records: Sequence[metric_registry.MetricRecord],
    chosen: Sequence[str],
    options: AnalysisOptions,
    store: metric_registry.TextMetricStore | None,
    kind: str,
) -> _Columns:
    """registry.compute_all of the `chosen` families, one family at a time, each family's values
    turned into columns at once: a dict per record holds one family's metrics, not all of them
    (80 000 dicts at 20 000 sources)."""
    texts: dict[str, np.ndarray] = {}
    systems: dict[str, dict[str, Any]] = {}
    unavailable: dict[str, str] = {}
    for name in chosen:
        report = metric_registry.compute_all(
            records,
            families=[name],
            embedder=options.embedder,
            options=dict(options.metric_options),
            store=store,
            kind=kind,
        )
        for metric in metric_registry.get_family(name).text_metrics:
            texts[metric] = np.array([row[metric] for row in report.texts], dtype=np.float64)
        for system, values in report.systems.items():
            systems.setdefault(system, {}).update(values)
        unavailable.update(report.unavailable)
        del report
    return _Columns(texts=texts, systems=systems, unavailable=unavailable)


def _metric_tables_computed(
    frames: StudyFrames, options: AnalysisOptions, store: metric_registry.TextMetricStore | None
) -> dict[str, Any]:
    simplifications = frames.simplifications.merge(
        frames.sources[["source", "text", "metadata"]].rename(columns={"text": "source_text"}), on="source"
    )
    reference_systems = set(frames.systems.loc[frames.systems["is_reference"].astype(bool), "system"])
    references: dict[str, str] = {}
    if reference_systems:
        for row in simplifications[simplifications["system"].isin(reference_systems)].itertuples():
            references.setdefault(row.source, row.text)
    no_metadata: dict[str, Any] = {}  # shared (never changed) by the sources without metadata
    records = [
        metric_registry.MetricRecord(
            source_text=source_text,
            candidate_text=text,
            reference_text=None if system in reference_systems else references.get(source),
            source_metadata=metadata or no_metadata,
            system=system,
            source=source,
        )
        for source_text, text, system, source, metadata in zip(
            simplifications["source_text"].tolist(),
            simplifications["text"].tolist(),
            simplifications["system"].tolist(),
            simplifications["source"].tolist(),
            simplifications["metadata"].tolist(),
            strict=True,
        )
    ]
    available = metric_registry.families()
    chosen = list(options.metric_families) if options.metric_families is not None else list(available)
    text_metric_names = [name for family in chosen for name in available[family].text_metrics]
    report = _family_by_family(records, chosen, options, store, "simplification")
    del records
    per_text = pd.DataFrame(
        report.texts, columns=text_metric_names, index=pd.RangeIndex(len(simplifications))
    )
    per_text.insert(0, "system", simplifications["system"].to_numpy())
    per_text.insert(0, "text_id", simplifications["text_id"].to_numpy())
    per_text.insert(0, "source", simplifications["source"].to_numpy())

    # The original is a text on its own: only families that need neither a source nor a reference.
    standalone = [
        f
        for f in chosen
        if not available[f].needs_source
        and not available[f].needs_reference
        and available[f].compute_texts is not None
    ]
    original_records = [
        metric_registry.MetricRecord(
            source_text=row.text, candidate_text=row.text, system=ORIGINAL, source=row.source
        )
        for row in frames.sources.itertuples()
    ]
    standalone_names = [name for family in standalone for name in available[family].text_metrics]
    original_report = (
        _family_by_family(original_records, standalone, options, store, "original")
        if standalone and original_records
        else None
    )
    per_original = pd.DataFrame(
        original_report.texts if original_report else {name: [] for name in standalone_names},
        columns=standalone_names,
        index=pd.RangeIndex(len(original_records) if original_report else 0),
        dtype="float64",
    )
    per_original.insert(0, "source", frames.sources["source"].to_numpy()[: len(per_original)])

    families_info = {
        name: {
            "description": available[name].description,
            "text_metrics": list(available[name].text_metrics),
            "corpus_metrics": list(available[name].corpus_metrics),
            "definitions": dict(available[name].definitions),
        }
        for name in chosen
    }
    return {
        "per_text": per_text,
        "per_original": per_original,
        "text_metrics": text_metric_names,
        "original_metrics": standalone_names,
        "corpus": report.systems,
        "unavailable": report.unavailable,
        "families": families_info,
    }


def readability_table(metrics: Mapping[str, Any], frames: StudyFrames) -> dict[str, dict[str, float | None]]:
    """Table 1 (top): mean per-text readability of the originals and of each system's texts."""
    names = list(metric_registry.get_family(READABILITY_FAMILY).text_metrics)
    table: dict[str, dict[str, float | None]] = {}
    per_original = metrics["per_original"]
    table[ORIGINAL] = {
        name: _mean(per_original[name]) if name in per_original else None for name in names
    } | {"n": len(per_original)}
    per_text = metrics["per_text"]
    for system in system_keys(frames):
        rows = per_text[per_text["system"] == system]
        table[system] = {name: _mean(rows[name]) if name in rows else None for name in names} | {
            "n": len(rows)
        }
    return table


def metrics_summary(metrics: Mapping[str, Any], frames: StudyFrames) -> dict[str, Any]:
    """The `metrics` key: every registered per-text metric averaged per system (and for the
    original), each system's corpus-level metrics, and the values per simplification."""
    per_text = metrics["per_text"]
    names = metrics["text_metrics"]
    per_system: dict[str, dict[str, float | None]] = {}
    for system in system_keys(frames):
        rows = per_text[per_text["system"] == system]
        per_system[system] = {name: _mean(rows[name]) for name in names}
        per_system[system].update(metrics["corpus"].get(system, {}))
    per_original = metrics["per_original"]
    # Column by column (the rows of a 20 000-source study are 80 000 dicts): metric values as
    # _float gives them (None where not finite), the other columns as to_dict("records").
    metric_names = set(names)
    values = [
        [None if not math.isfinite(v) else v for v in per_text[k].to_numpy(np.float64).tolist()]
        if k in metric_names
        else per_text[k].tolist()
        for k in per_text.columns
    ]
    keys = list(per_text.columns)
    records = [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)]
    return {
        "families": metrics["families"],
        "text_metrics": names,
        "original": {name: _mean(per_original[name]) for name in metrics["original_metrics"]},
        "per_system": per_system,
        "per_simplification": records,
        "unavailable": metrics["unavailable"],
    }


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


# --- beyond the paper -------------------------------------------------------------------------


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


# --- the whole analysis ---------------------------------------------------------------------------


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
