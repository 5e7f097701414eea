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

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd
from django.conf import settings
from django.db import connection
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
from evaluation.analysis import AnalysisOptions, StudyFrames, join_details
from evaluation.models import AnalysisSnapshot

LAY_QUESTIONS = scales.LAY_QUESTIONS
EXPERT_ASPECTS = tuple(scales.EXPERT_ASPECTS)
CHUNK = 5000


def _codes(scale: scales.Scale) -> dict[str, float]:
    return {level.name: float(level.value) for level in scale.levels}


def _to_numbers(values: pd.Series, scale: scales.Scale) -> pd.Series:
    # "" (not answered) and unknown names become NaN; the database constraints already
    # guarantee stored names are levels of the scale.
    return values.map(_codes(scale)).astype("float64")


def _frame(rows: Iterable, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


FETCH_CHUNK = 50_000


def _fetched_frame(queryset, columns: list[str]) -> pd.DataFrame:
    """The rows of a `values_list` queryset as a frame, read with the database cursor in chunks:
    no per-row conversion by the ORM (8× faster on a million answers) and no list of every row.
    Only for columns that need no conversion from the database (numbers, text, NULL)."""
    sql, params = queryset.query.sql_with_params()
    chunks = []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH_CHUNK):
            chunks.append(pd.DataFrame.from_records(rows, columns=columns))
    if not chunks:
        return pd.DataFrame(columns=columns)
    return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


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
    )
    frame = _fetched_frame(
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
    )
    frame = _fetched_frame(
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
    )
    frame = _fetched_frame(prefs, ["preference_id", "item_id", "participant_id", "pseudonym", "source"])
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


# --- analysis snapshots ----------------------------------------------------------------------------


# The answer tables whose rows the analysis reads; their counts and last change say whether a
# snapshot still covers the study's data.
def _coverage_querysets(study: Study) -> dict[str, object]:
    return {
        "lay_answers": LayAnswer.objects.filter(item__participant__study=study),
        "lay_preferences": LayPreference.objects.filter(item__participant__study=study),
        "expert_ratings": ExpertRating.objects.filter(participant__study=study),
        "expert_judgements": ExpertSourceJudgement.objects.filter(participant__study=study),
        "simplifications": Simplification.objects.filter(source__study=study),
    }


ANSWER_TABLES = ("lay_answers", "lay_preferences", "expert_ratings", "expert_judgements")


def analysis_coverage(*, study: Study) -> dict:
    """What the analysis of `study` would cover now: per table the row count and the last
    change, plus the study's own last change and its numbers of sources and systems. Cheap: one
    aggregate per table, no row is read. (A source's text or reference severity edited in place
    changes none of these; the dashboard's "recompute" button covers that.)"""
    coverage: dict = {
        "study_updated_at": study.updated_at.isoformat() if study.updated_at else "",
        "sources": Source.objects.filter(study=study).count(),
        "systems": System.objects.filter(study=study).count(),
    }
    for name, queryset in _coverage_querysets(study).items():
        aggregate = queryset.aggregate(n=Count("pk"), last=Max("updated_at"))
        coverage[name] = {
            "n": aggregate["n"],
            "last": aggregate["last"].isoformat() if aggregate["last"] else "",
        }
    coverage["n_answers"] = sum(coverage[name]["n"] for name in ANSWER_TABLES)
    coverage["last_answer_at"] = max((coverage[name]["last"] for name in ANSWER_TABLES), default="") or None
    return coverage


def analysis_snapshot_get(*, study: Study, details: bool = False) -> AnalysisSnapshot | None:
    """The study's snapshot row; without `details` the long per-item sections and the figures
    stay in the database (the dashboard's first paint needs neither)."""
    # `document` (the same analysis as one JSON text) is read only where it is served.
    queryset = AnalysisSnapshot.objects.filter(study=study).defer("document")
    if not details:
        queryset = queryset.defer("details", "figures")
    return queryset.first()


def snapshot_analysis(snapshot: AnalysisSnapshot, *, details: bool = True) -> dict | None:
    """The analysis document of a snapshot: `result` with its `details` put back in place (see
    evaluation.analysis.split_details), or None before the first computation."""
    if snapshot is None or snapshot.result is None:
        return None
    if not details:
        return snapshot.result
    return join_details(snapshot.result, snapshot.details or {})


def snapshot_analysis_json(
    snapshot: AnalysisSnapshot | None,
    *,
    extra: dict[str, Any] | None = None,
    encoder: type[json.JSONEncoder] | None = None,
) -> str | None:
    """The analysis document of a snapshot, as `snapshot_analysis` gives it, plus the keys of
    `extra` (encoded with `encoder`), as JSON text; None before the first computation. The stored
    text is served as it is (megabytes at 20 000 sources): nothing long is decoded or encoded."""
    if snapshot is None or snapshot.result is None:
        return None
    document = AnalysisSnapshot.objects.filter(pk=snapshot.pk).values_list("document", flat=True).first()
    if not document or not document.endswith("}") or document == "{}":
        analysis = snapshot_analysis(
            AnalysisSnapshot.objects.defer("figures", "document").get(pk=snapshot.pk)
        )
        return json.dumps({**analysis, **(extra or {})}, cls=encoder, ensure_ascii=False, allow_nan=False)
    if not extra:
        return document
    added = json.dumps(extra, cls=encoder, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return f"{document[:-1]},{added[1:]}"


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
