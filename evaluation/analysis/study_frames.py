"""What the Django-free analysis (evaluation/analysis/study.py) reads: the database as pandas frames
(`study_frames`) and its options from the settings. Only the worker or command that computes an
analysis imports this module (through evaluation.services.study_analysis_compute); the pages read
stored snapshots (evaluation/selectors.py) and never load pandas.

Answers are stored by level name; here they become the numbers of annotation/scales.py (one
documented coding: Critical = 1 … Healthy = 5, Q1 1–4, Q2 1–3, Q4 −1..2). A missing answer is NaN.

Crediting shared texts: when several systems produced the same text for a source, participants
saw and answered that text once (one `SimplificationText`). Every frame here that is "per system"
credits such an answer to each of those systems; frames that keep one row per answer carry the
tuple of credited systems instead (column `systems`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.db import connection
from django.db.models import Case, FloatField, Value, When

from annotation import answer_selectors, scales
from annotation.models import (
    LayItem,
    Participant,
    Simplification,
    Source,
    Study,
    System,
)
from annotation.selectors import analysed_participants, counted_participants, participant_label
from evaluation.analysis.error_span_selectors import span_shown_texts
from evaluation.analysis.instrument_frames import analysis_answers_frame
from evaluation.analysis.instrument_selectors import instruments_outside_protocol, study_instruments
from evaluation.analysis.protocol import AnalysisOptions, StudyFrames
from evaluation.selectors import EXPERT_ASPECTS, FETCH_CHUNK, LAY_QUESTIONS


def _codes(scale: scales.Scale) -> dict[str, float]:
    return {level.name: float(level.value) for level in scale.levels}


def _to_numbers(values: pd.Series, scale: scales.Scale) -> pd.Series:
    # "" (not answered) and unknown names become NaN; the database constraints already
    # guarantee stored names are levels of the scale.
    return values.map(_codes(scale)).astype("float64")


def _level_number(field: str, scale: scales.Scale) -> Case:
    """The stored level name of `field` as its number on `scale`, in SQL (NULL when not answered):
    the rows then come from the database as numbers, not one string object per answer."""
    return Case(
        *(When(**{field: level.name}, then=Value(float(level.value))) for level in scale.levels),
        default=Value(None),
        output_field=FloatField(),
    )


def _frame(rows: Iterable, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


def _numbers(rows: list[tuple], width: int) -> np.ndarray:
    """`rows` as a (len(rows), width) float64 array, NULL = NaN. A flat iteration over the values
    (twice as fast as np.array's walk over the tuples) unless a NULL is among them."""
    try:
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.float64, count=len(rows) * width)
    except TypeError:
        return np.array(rows, dtype=np.float64).reshape(len(rows), width)
    return flat.reshape(len(rows), width)


def _fetched_numbers(queryset, columns: list[str]) -> dict[str, np.ndarray]:
    """The rows of a `values_list` queryset of numbers (NULL = NaN), read with the database
    cursor in chunks straight into one float64 array per column: no per-row conversion by the
    ORM and no Python object per value. Integer ids are exact in float64 (below 2**53). Each
    chunk is split into its columns at once, so no second copy of the whole table is held."""
    sql, params = queryset.query.sql_with_params()
    parts: list[list[np.ndarray]] = [[] for _ in columns]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH_CHUNK):
            chunk = _numbers(rows, len(columns))
            for part, column in zip(parts, chunk.T, strict=True):
                part.append(column.copy())
            del rows, chunk
    arrays = {}
    for name, part in zip(columns, parts, strict=True):
        arrays[name] = np.concatenate(part) if part else np.empty(0)
        part.clear()
    return arrays


def _row_columns(rows: list, names: Mapping[str, str]) -> dict[str, np.ndarray]:
    """The typed rows' attributes as one float64 array per column (None = NaN)."""
    return {
        column: np.array(
            [np.nan if (value := getattr(row, attribute)) is None else value for row in rows],
            dtype=np.float64,
        )
        for column, attribute in names.items()
    }


def _ids(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64)


def _labels(ids: np.ndarray, mapping: Mapping[int, Any], default: Any = None) -> np.ndarray:
    """`mapping[id]` for every id, as an object array sharing the mapping's values (one lookup
    per distinct id, not per row); `default` for an id the mapping lacks."""
    distinct, inverse = np.unique(ids, return_inverse=True)
    values = np.empty(distinct.size, dtype=object)
    values[:] = [mapping.get(key, default) for key in distinct.tolist()]
    return values[inverse.ravel()]


@dataclass(frozen=True)
class _Lookups:
    """The small tables every answer frame names its ids with, read once per study_frames."""

    participants: dict[int, str]  # participant pk -> label
    sources: dict[int, str]  # source pk -> key
    severities: dict[int, float]  # source pk -> reference severity 1-5 (NaN: none)
    systems: dict[int, str]  # system pk -> key
    text_systems: dict[int, tuple[str, ...]]  # SimplificationText pk -> systems that produced it


def _lookups(study: Study) -> _Lookups:
    participants = {
        pk: participant_label(pseudonym, pk)
        for pk, pseudonym in Participant.objects.filter(study=study).values_list("pk", "pseudonym")
    }
    sources, severities = {}, {}
    codes = _codes(scales.SEVERITY)
    for pk, key, severity in Source.objects.filter(study=study).values_list(
        "pk", "key", "reference_severity"
    ):
        sources[pk] = key
        severities[pk] = codes.get(severity, math.nan)
    systems = dict(System.objects.filter(study=study).values_list("pk", "key"))
    # annotation.selectors.systems_by_text, read as numbers (one row per simplification, 80 000
    # at 20 000 sources): each text's systems in study order, one tuple per text.
    produced = _fetched_numbers(
        Simplification.objects.filter(source__study=study)
        .order_by("system__position", "system__key")
        .values_list("shown_text_id", "system_id"),
        ["text_id", "system_id"],
    )
    grouped: dict[int, list[str]] = {}
    for text_id, system_id in zip(
        _ids(produced["text_id"]).tolist(), _ids(produced["system_id"]).tolist(), strict=True
    ):
        grouped.setdefault(text_id, []).append(systems[system_id])
    text_systems = {text_id: tuple(keys) for text_id, keys in grouped.items()}
    return _Lookups(participants, sources, severities, systems, text_systems)


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


def expert_ratings_frame(*, study: Study, lookups: _Lookups | None = None) -> pd.DataFrame:
    """Radiologists' ratings credited per system: one row per (rating, system that produced the
    rated text), with the five aspects as numbers 1–5 (NaN = not rated)."""
    lookups = lookups or _lookups(study)
    ratings = answer_selectors.expert_ratings(study=study, where=counted_participants(path="participant__"))
    columns = _row_columns(
        ratings,
        {
            "rating_id": "id",
            "participant_id": "participant_id",
            "text_id": "shown_text_id",
            "source_id": "source_id",
            **{aspect: aspect for aspect in EXPERT_ASPECTS},
            "time_spent_ms": "time_spent_ms",
        },
    )
    text_ids = _ids(columns["text_id"])
    # One row per (rating, credited system), in rating order then system order; a rating of a
    # text no system produced has no row.
    credited = _labels(text_ids, lookups.text_systems, ())
    counts = np.fromiter(map(len, credited), dtype=np.int64, count=credited.size)
    rows_of = np.repeat(np.arange(text_ids.size), counts)
    system = np.empty(rows_of.size, dtype=object)
    system[:] = [key for systems in credited for key in systems]
    return pd.DataFrame(
        {
            "rating_id": _ids(columns["rating_id"])[rows_of],
            "participant": _labels(_ids(columns["participant_id"]), lookups.participants)[rows_of],
            "text_id": text_ids[rows_of],
            "source": _labels(_ids(columns["source_id"]), lookups.sources)[rows_of],
            **{aspect: columns[aspect][rows_of] for aspect in EXPERT_ASPECTS},
            "time_spent_ms": _ids(columns["time_spent_ms"])[rows_of],
            "system": system,
        }
    )


def expert_judgements_frame(*, study: Study) -> pd.DataFrame:
    """Radiologists' judgements of each original: severity (name and 1–5) and its simplicity."""
    judgements = answer_selectors.expert_judgements(
        study=study, where=counted_participants(path="participant__")
    )
    labels = dict(Participant.objects.filter(study=study).values_list("pk", "pseudonym"))
    sources = dict(Source.objects.filter(study=study).values_list("pk", "key"))
    rows = [
        (
            participant_label(labels.get(j.participant_id, ""), j.participant_id),
            sources[j.source_id],
            j.severity,
            j.simplicity,
        )
        for j in judgements
    ]
    frame = _frame(rows, ["participant", "source", "severity", "simplicity"])
    frame["severity_value"] = _to_numbers(frame["severity"], scales.SEVERITY)
    frame["simplicity"] = frame["simplicity"].astype("float64")
    return frame


# In the order of their names, so that sorting by the code sorts as the database sorts names.
PHASES = ("assisted", "original")


def _lay_items(study: Study) -> dict[str, np.ndarray]:
    """The study's lay items as columns of numbers, sorted by item id (NULL = NaN): what the lay
    answers and preferences share, read once."""
    columns = _fetched_numbers(
        LayItem.objects.filter(analysed_participants(path="participant__"), participant__study=study)
        .order_by()
        .values_list("pk", "participant_id", "position", "source_id", "assigned_system_id", "shown_text_id"),
        ["item_id", "participant_id", "position", "source_id", "assigned_system_id", "text_id"],
    )
    order = np.argsort(columns["item_id"], kind="stable")
    return {name: values[order] for name, values in columns.items()}


def _of_items(
    items: Mapping[str, np.ndarray], item_ids: np.ndarray, names: Iterable[str]
) -> dict[str, np.ndarray]:
    rows = np.searchsorted(items["item_id"], item_ids)
    return {name: items[name][rows] for name in names}


def lay_answers_frame(
    *, study: Study, lookups: _Lookups | None = None, items: Mapping[str, np.ndarray] | None = None
) -> pd.DataFrame:
    """Every lay answer (both panels), one row per answer, answers as numbers.

    Columns: answer_id, item_id, participant, source, phase ("original" = panel 1, "assisted" =
    panel 2), assigned_system (the Latin square's), text_id (the text panel 2 showed), systems
    (tuple of every system that produced that text: the answer counts for each), the five
    questions as numbers, reference_severity (1–5 of the source) and time_spent_ms.
    """
    lookups = lookups or _lookups(study)
    items = items if items is not None else _lay_items(study)
    answers = [
        a
        for a in answer_selectors.lay_answers(study=study, where=analysed_participants(path="participant__"))
        if a.item_id is not None
    ]
    item_ids = np.array([a.item_id for a in answers], dtype=np.float64)
    item_columns = _of_items(
        items,
        item_ids,
        ["participant_id", "position", "source_id", "assigned_system_id", "text_id"],
    )
    columns = {
        "answer_id": np.array([a.id for a in answers], dtype=np.float64),
        "item_id": item_ids,
        **item_columns,
        "phase": np.array([float(PHASES.index(a.phase)) for a in answers], dtype=np.float64),
        **{
            question: _to_numbers(
                pd.Series([getattr(a, question) for a in answers], dtype=object), scale
            ).to_numpy(dtype=np.float64)
            for question, scale in ((q, scales.LAY_SCALES[q]) for q in LAY_QUESTIONS)
        },
        "time_spent_ms": np.array([a.time_spent_ms for a in answers], dtype=np.float64),
    }
    del item_columns
    # Participant by participant, their items in order, panel by panel: sorted here rather than
    # by the database, which would sort the whole joined table.
    order = np.lexsort((columns["phase"], columns.pop("position"), columns["participant_id"]))
    columns = {name: values[order] for name, values in columns.items()}
    phases = np.array([*PHASES, None], dtype=object)
    phase_codes = np.where(np.isnan(columns["phase"]), len(PHASES), columns["phase"]).astype(np.int64)
    # An item without an assigned system (NULL) has no key: NaN like the ORM's None.
    assigned = np.nan_to_num(columns["assigned_system_id"], nan=-1).astype(np.int64)
    source_ids = _ids(columns["source_id"])
    text_ids = _ids(columns["text_id"])
    return pd.DataFrame(
        {
            "answer_id": _ids(columns["answer_id"]),
            "item_id": _ids(columns["item_id"]),
            "participant": _labels(_ids(columns["participant_id"]), lookups.participants),
            "source": _labels(source_ids, lookups.sources),
            "phase": phases[phase_codes],
            "assigned_system": _labels(assigned, lookups.systems),
            "text_id": text_ids,
            "systems": _labels(text_ids, lookups.text_systems, ()),
            **{question: columns[question] for question in LAY_QUESTIONS},
            "reference_severity": _labels(source_ids, lookups.severities).astype(np.float64),
            "time_spent_ms": _ids(columns["time_spent_ms"]),
        }
    )


def lay_preferences_frame(
    *, study: Study, lookups: _Lookups | None = None, items: Mapping[str, np.ndarray] | None = None
) -> pd.DataFrame:
    """Panel 3, one row per answered item: most / least as frozensets of system keys (every
    system that produced a chosen text) and of SimplificationText ids."""
    lookups = lookups or _lookups(study)
    items = items if items is not None else _lay_items(study)
    preferences = [
        p
        for p in answer_selectors.lay_preferences(
            study=study, where=analysed_participants(path="participant__")
        )
        if p.item_id is not None
    ]
    columns = {
        "preference_id": np.array([p.id for p in preferences], dtype=np.float64),
        "item_id": np.array([p.item_id for p in preferences], dtype=np.float64),
    }
    columns.update(_of_items(items, columns["item_id"], ["participant_id", "position", "source_id"]))
    order = np.lexsort((columns.pop("position"), columns["participant_id"]))
    columns = {name: values[order] for name, values in columns.items()}
    chosen_of = {p.id: p for p in preferences}
    preference_ids = _ids(columns["preference_id"])
    frame = pd.DataFrame(
        {
            "preference_id": preference_ids,
            "item_id": _ids(columns["item_id"]),
            "participant": _labels(_ids(columns["participant_id"]), lookups.participants),
            "source": _labels(_ids(columns["source_id"]), lookups.sources),
        }
    )
    # Equal sets are one object: a text chosen by many participants has one frozenset, and the
    # sets of systems are a handful.
    system_sets: dict[frozenset, frozenset] = {}
    for side in ("most", "least"):
        # Equal sets are one object: most answers choose one text, shared by its rows.
        shared: dict[frozenset, frozenset] = {}
        texts = np.full(preference_ids.size, frozenset(), dtype=object)
        for row, preference_id in enumerate(preference_ids.tolist()):
            chosen = frozenset(getattr(chosen_of[preference_id], side))
            texts[row] = shared.setdefault(chosen, chosen)
        codes, distinct = pd.factorize(texts)
        systems = np.empty(len(distinct), dtype=object)
        for i, text_set in enumerate(distinct):
            found = frozenset(key for text_id in text_set for key in lookups.text_systems.get(text_id, ()))
            systems[i] = system_sets.setdefault(found, found)
        frame[f"{side}_texts"] = texts
        frame[side] = systems[codes] if len(codes) else np.empty(0, dtype=object)
    return frame


def study_frames(*, study: Study) -> StudyFrames:
    """Everything the analysis reads, in one bundle."""
    lookups = _lookups(study)
    items = _lay_items(study)
    return StudyFrames(
        study=study.slug,
        title=study.title,
        systems=systems_frame(study=study),
        sources=sources_frame(study=study),
        simplifications=simplifications_frame(study=study),
        expert_ratings=expert_ratings_frame(study=study, lookups=lookups),
        expert_judgements=expert_judgements_frame(study=study),
        lay_answers=lay_answers_frame(study=study, lookups=lookups, items=items),
        lay_preferences=lay_preferences_frame(study=study, lookups=lookups, items=items),
        instrument_answers=analysis_answers_frame(study=study),
        instruments=study_instruments(study=study),
        instrument_section=instruments_outside_protocol(study=study),
        shown_texts=span_shown_texts(study=study),
    )


def analysis_options_from_settings(**overrides) -> AnalysisOptions:
    """The options the dashboard, API and report use: AnalysisOptions' defaults, overridden by
    the setting RADLAY_ANALYSIS_OPTIONS (a dict of AnalysisOptions fields, plus "embeddings": True
    or a model directory), then by `overrides`; embeddings by default as RADLAY_ANALYSIS says."""
    values = {**settings.RADLAY_ANALYSIS_OPTIONS, **overrides}
    # {"embeddings": True} (or a model directory) gives the semantic metrics their embedder.
    embeddings = values.pop("embeddings", settings.RADLAY_ANALYSIS.embeddings)
    if embeddings:
        from ml.services import embedder_get

        values["embedder"] = embedder_get(model=None if embeddings is True else embeddings)
    for key in ("metric_families", "correlation_metrics"):
        if values.get(key) is not None:
            values[key] = tuple(values[key])
    return AnalysisOptions(**values)
