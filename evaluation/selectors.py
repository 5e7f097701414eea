"""Reads of the evaluation app: the database as pandas frames for the Django-free analysis
(evaluation/analysis.py). Participant progress and the Latin-square balance are in
evaluation/progress.py.

Answers are stored by level name; here they become the numbers of annotation/scales.py (one
documented coding: Critical = 1 … Healthy = 5, Q1 1–4, Q2 1–3, Q4 −1..2). A missing answer is NaN.

Crediting shared texts: when several systems produced the same text for a source, participants
saw and answered that text once (one `SimplificationText`). Every frame here that is "per system"
credits such an answer to each of those systems; frames that keep one row per answer carry the
tuple of credited systems instead (column `systems`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

import pandas as pd
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max

from annotation import scales
from annotation.models import (
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    LayPreference,
    Simplification,
    Source,
    Study,
    System,
)
from annotation.selectors import systems_by_text
from evaluation.analysis import AnalysisOptions, StudyFrames, study_analysis
from evaluation.plots import all_svgs

LAY_QUESTIONS = scales.LAY_QUESTIONS
EXPERT_ASPECTS = tuple(scales.EXPERT_ASPECTS)
CHUNK = 5000
ANALYSIS_CACHE_SECONDS = 24 * 3600


def _codes(scale: scales.Scale) -> dict[str, float]:
    return {level.name: float(level.value) for level in scale.levels}


def _to_numbers(values: pd.Series, scale: scales.Scale) -> pd.Series:
    # "" (not answered) and unknown names become NaN; the database constraints already
    # guarantee stored names are levels of the scale.
    return values.map(_codes(scale)).astype("float64")


def _frame(rows: Iterable, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


def participant_label(pseudonym: str, pk: int) -> str:
    """How a participant is named in frames, progress and exports: the pseudonym, else P<pk>."""
    return pseudonym or f"P{pk}"


def _insert_participant(frame: pd.DataFrame, position: int) -> None:
    # Replaces the columns participant_id and pseudonym by one column "participant" at `position`.
    labels = [
        participant_label(p, i)
        for p, i in zip(frame.pop("pseudonym"), frame.pop("participant_id"), strict=True)
    ]
    frame.insert(position, "participant", labels)


def systems_frame(*, study: Study) -> pd.DataFrame:
    """One row per system in study order: system (key), label, position, is_reference."""
    rows = (
        System.objects.filter(study=study)
        .order_by("position", "key")
        .values_list("key", "label", "position", "is_reference")
    )
    frame = _frame(rows, ["system", "label", "position", "is_reference"])
    frame["label"] = [label or key for key, label in zip(frame["system"], frame["label"], strict=True)]
    return frame


def sources_frame(*, study: Study) -> pd.DataFrame:
    """One row per source in study order: source (key), position, text, reference_severity (level
    name or None) and reference_severity_value (1–5, NaN when the source has none)."""
    rows = (
        Source.objects.filter(study=study)
        .order_by("position")
        .values_list("key", "position", "text", "reference_severity", "metadata")
    )
    frame = _frame(rows, ["source", "position", "text", "reference_severity", "metadata"])
    frame["reference_severity_value"] = _to_numbers(frame["reference_severity"], scales.SEVERITY)
    frame["reference_severity"] = frame["reference_severity"].where(frame["reference_severity"] != "", None)
    return frame


def simplifications_frame(*, study: Study) -> pd.DataFrame:
    """Texts per system: one row per (source, system) simplification with its shown text."""
    rows = (
        Simplification.objects.filter(source__study=study)
        .order_by("source__position", "system__position", "system__key")
        .values_list("pk", "source__key", "system__key", "shown_text_id", "shown_text__text", "flagged")
    )
    return _frame(rows, ["simplification_id", "source", "system", "text_id", "text", "flagged"])


def _text_systems(study: Study) -> dict[int, tuple[str, ...]]:
    return {text_id: tuple(keys) for text_id, keys in systems_by_text(study=study).items()}


def expert_ratings_frame(*, study: Study) -> pd.DataFrame:
    """Radiologists' ratings credited per system: one row per (rating, system that produced the
    rated text), with the five aspects as numbers 1–5 (NaN = not rated)."""
    rows = (
        ExpertRating.objects.filter(participant__study=study)
        .order_by("pk")
        .values_list(
            "pk",
            "participant_id",
            "participant__pseudonym",
            "shown_text_id",
            "shown_text__source__key",
            *EXPERT_ASPECTS,
            "time_spent_ms",
        )
        .iterator(chunk_size=CHUNK)
    )
    frame = _frame(
        rows,
        ["rating_id", "participant_id", "pseudonym", "text_id", "source", *EXPERT_ASPECTS, "time_spent_ms"],
    )
    _insert_participant(frame, 1)
    text_systems = _text_systems(study)
    frame["system"] = frame["text_id"].map(lambda t: list(text_systems.get(t, ())))
    frame = frame.explode("system", ignore_index=True).dropna(subset=["system"])
    for aspect in EXPERT_ASPECTS:
        frame[aspect] = frame[aspect].astype("float64")
    return frame.reset_index(drop=True)


def expert_judgements_frame(*, study: Study) -> pd.DataFrame:
    """Radiologists' judgements of each original: severity (name and 1–5) and its simplicity."""
    rows = (
        ExpertSourceJudgement.objects.filter(participant__study=study)
        .order_by("pk")
        .values_list("participant_id", "participant__pseudonym", "source__key", "severity", "simplicity")
    )
    frame = _frame(rows, ["participant_id", "pseudonym", "source", "severity", "simplicity"])
    _insert_participant(frame, 0)
    frame["severity_value"] = _to_numbers(frame["severity"], scales.SEVERITY)
    frame["simplicity"] = frame["simplicity"].astype("float64")
    return frame


def lay_answers_frame(*, study: Study) -> pd.DataFrame:
    """Every lay answer (both panels), one row per answer, answers as numbers.

    Columns: answer_id, item_id, participant, source, phase ("original" = panel 1, "assisted" =
    panel 2), assigned_system (the Latin square's), text_id (the text panel 2 showed), systems
    (tuple of every system that produced that text: the answer counts for each), the five
    questions as numbers, reference_severity (1–5 of the source) and time_spent_ms.
    """
    rows = (
        LayAnswer.objects.filter(item__participant__study=study)
        .order_by("item__participant_id", "item__position", "phase")
        .values_list(
            "pk",
            "item_id",
            "item__participant_id",
            "item__participant__pseudonym",
            "item__source__key",
            "phase",
            "item__assigned_system__key",
            "item__shown_text_id",
            *LAY_QUESTIONS,
            "item__source__reference_severity",
            "time_spent_ms",
        )
        .iterator(chunk_size=CHUNK)
    )
    frame = _frame(
        rows,
        [
            "answer_id",
            "item_id",
            "participant_id",
            "pseudonym",
            "source",
            "phase",
            "assigned_system",
            "text_id",
            *LAY_QUESTIONS,
            "reference_severity",
            "time_spent_ms",
        ],
    )
    _insert_participant(frame, 2)
    text_systems = _text_systems(study)
    frame.insert(
        frame.columns.get_loc("text_id") + 1,
        "systems",
        frame["text_id"].map(lambda t: text_systems.get(t, ())),
    )
    for question in LAY_QUESTIONS:
        frame[question] = _to_numbers(frame[question], scales.LAY_SCALES[question])
    frame["reference_severity"] = _to_numbers(frame["reference_severity"], scales.SEVERITY)
    return frame


def lay_preferences_frame(*, study: Study) -> pd.DataFrame:
    """Panel 3, one row per answered item: most / least as frozensets of system keys (every
    system that produced a chosen text) and of SimplificationText ids."""
    prefs = (
        LayPreference.objects.filter(item__participant__study=study)
        .order_by("item__participant_id", "item__position")
        .values_list(
            "pk", "item_id", "item__participant_id", "item__participant__pseudonym", "item__source__key"
        )
        .iterator(chunk_size=CHUNK)
    )
    frame = _frame(prefs, ["preference_id", "item_id", "participant_id", "pseudonym", "source"])
    _insert_participant(frame, 2)
    text_systems = _text_systems(study)
    for side in ("most", "least"):
        through = getattr(LayPreference, side).through
        chosen: dict[int, set[int]] = {}
        for preference_id, text_id in (
            through.objects.filter(laypreference__item__participant__study=study)
            .values_list("laypreference_id", "simplificationtext_id")
            .iterator(chunk_size=CHUNK)
        ):
            chosen.setdefault(preference_id, set()).add(text_id)
        texts = [frozenset(chosen.get(pk, ())) for pk in frame["preference_id"]]
        frame[f"{side}_texts"] = texts
        frame[side] = [frozenset(s for t in ids for s in text_systems.get(t, ())) for ids in texts]
    return frame


def study_frames(*, study: Study) -> StudyFrames:
    """Everything the analysis reads, in one bundle."""
    return StudyFrames(
        study=study.slug,
        title=study.title,
        systems=systems_frame(study=study),
        sources=sources_frame(study=study),
        simplifications=simplifications_frame(study=study),
        expert_ratings=expert_ratings_frame(study=study),
        expert_judgements=expert_judgements_frame(study=study),
        lay_answers=lay_answers_frame(study=study),
        lay_preferences=lay_preferences_frame(study=study),
    )


# --- cached analysis ------------------------------------------------------------------------------


def study_data_version(*, study: Study) -> str:
    """A fingerprint of everything the analysis reads: it changes whenever an answer, a rating,
    a simplification, a source's reference severity or the study itself changes."""
    parts: list[object] = [study.pk, study.updated_at.isoformat() if study.updated_at else ""]
    for queryset in (
        LayAnswer.objects.filter(item__participant__study=study),
        LayPreference.objects.filter(item__participant__study=study),
        ExpertRating.objects.filter(participant__study=study),
        ExpertSourceJudgement.objects.filter(participant__study=study),
        Simplification.objects.filter(source__study=study),
    ):
        aggregate = queryset.aggregate(n=Count("pk"), last=Max("updated_at"))
        parts += [aggregate["n"], aggregate["last"].isoformat() if aggregate["last"] else ""]
    parts.append(System.objects.filter(study=study).count())
    digest = hashlib.sha256(repr(parts).encode())
    for key, severity, text in (
        Source.objects.filter(study=study)
        .order_by("position")
        .values_list("key", "reference_severity", "text")
        .iterator(chunk_size=CHUNK)
    ):
        digest.update(f"{key}\x1f{severity}\x1f{text}\x1e".encode())
    return digest.hexdigest()[:32]


def study_analysis_cached(*, study: Study, options: AnalysisOptions | None = None) -> dict:
    """`study_analysis` of the study's current data, cached (Django cache) per data version and
    options, so the dashboard, API and downloads do not recompute it on every request."""
    options = options or AnalysisOptions()
    key_options = (
        options.n_resamples,
        options.correlation_resamples,
        options.confidence,
        options.seed,
        options.metric_families,
        options.correlations,
        options.correlation_metrics,
        tuple(sorted(options.metric_options.items())),
        options.embedder is not None,
    )
    key = (
        "radlay:analysis:"
        + hashlib.sha256(repr((study.pk, study_data_version(study=study), key_options)).encode()).hexdigest()
    )
    analysis = cache.get(key)
    if analysis is None:
        analysis = study_analysis(study_frames(study=study), options=options)
        cache.set(key, analysis, timeout=ANALYSIS_CACHE_SECONDS)
    return analysis


def analysis_options_from_settings(**overrides) -> AnalysisOptions:
    """The options the dashboard, API and report use: AnalysisOptions' defaults, overridden by
    the optional setting RADLAY_ANALYSIS_OPTIONS (a dict of AnalysisOptions fields, plus
    "embeddings": True or a model directory), then by `overrides`."""
    values = {**getattr(settings, "RADLAY_ANALYSIS_OPTIONS", {}), **overrides}
    # {"embeddings": True} (or a model directory) gives the semantic metrics their embedder.
    embeddings = values.pop("embeddings", None)
    if embeddings:
        from ml.services import embedder_get

        values["embedder"] = embedder_get(model=None if embeddings is True else embeddings)
    for key in ("metric_families", "correlation_metrics"):
        if values.get(key) is not None:
            values[key] = tuple(values[key])
    return AnalysisOptions(**values)


def analysis_figures_cached(*, analysis: dict) -> dict[str, str]:
    """The SVG figures of an analysis (evaluation/plots.py), cached by the content they draw."""
    drawn = {
        key: analysis.get(key)
        for key in ("systems", "system_details", "distributions", "severity_distribution")
    }
    key = (
        "radlay:figures:"
        + hashlib.sha256(json.dumps(drawn, sort_keys=True, default=str).encode()).hexdigest()
    )
    figures = cache.get(key)
    if figures is None:
        figures = all_svgs(analysis)
        cache.set(key, figures, timeout=ANALYSIS_CACHE_SECONDS)
    return figures
