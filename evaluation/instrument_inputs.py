"""What the instrument-item analysis and exports read: a study's ItemAnswer rows as one frame (the
column contract of evaluation/instrument_items.py), read in one query, and its instrument versions
parsed back to `instruments.schema.Instrument`s."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from annotation.instrument_binding import PROTOCOL_BINDINGS
from annotation.models import ItemAnswer, Study, StudyInstrument
from annotation.selectors import analysed_participants, counted_participants, systems_by_text
from evaluation.instrument_items import ANSWER_COLUMNS
from evaluation.selectors import participant_label
from instruments.schema import Instrument
from instruments.validation import instrument_from_data

# Presets whose items the protocol's typed tables (Tables 1–3) already analyse.
PROTOCOL_PRESETS = frozenset({"protocol_003_radiologist", "protocol_003_layperson"})


def study_instruments(*, study: Study) -> dict[tuple[str, int], Instrument]:
    """Every instrument version the study has, by (key, version), as validated instruments — but
    the protocol's: its bound items are the typed tables' (Tables 1–3), so a protocol version is
    here only with the items a team added to it, and only once one of them was answered."""
    answered = set(
        ItemAnswer.objects.filter(participant__study=study)
        .values_list("instrument__key", "instrument__version")
        .distinct()
    )
    found: dict[tuple[str, int], Instrument] = {}
    for key, version, definition in StudyInstrument.objects.filter(study=study).values_list(
        "key", "version", "definition"
    ):
        instrument = instrument_from_data(definition)
        bound = PROTOCOL_BINDINGS.get(key)
        if bound is not None:
            if (key, version) not in answered:
                continue
            instrument = dataclasses.replace(
                instrument, items=tuple(item for item in instrument.items if item.key not in bound)
            )
        found[(key, version)] = instrument
    return found


def instruments_outside_protocol(*, study: Study) -> bool:
    """Whether the study asks an instrument that is not one of the protocol's presets."""
    return StudyInstrument.objects.filter(study=study).exclude(preset__in=PROTOCOL_PRESETS).exists()


def answer_rows(*, study: Study, analysed_only: bool = False) -> list[tuple[Any, ...]]:
    """Every ItemAnswer of the study with what names it, one query, ordered by participant and
    target: (participant pk, pseudonym, external_id, role, participant language, answer language,
    instrument key, version, structure fingerprint, item, source key, source position, shown text
    id, reference text id, value, score, time_spent_ms, created_at, updated_at).
    `analysed_only`: without participants screened out (the analysis's rule,
    annotation.selectors.analysed_participants); the exports keep every counted participant
    (previews and the pilot's are in neither)."""
    answers = ItemAnswer.objects.filter(counted_participants(path="participant__"), participant__study=study)
    if analysed_only:
        answers = answers.filter(analysed_participants(path="participant__"))
    return list(
        answers.order_by(
            "participant_id",
            "instrument__key",
            "instrument__version",
            "source__position",
            "shown_text_id",
            "reference_text_id",
            "pk",
        ).values_list(
            "participant_id",
            "participant__pseudonym",
            "participant__external_id",
            "participant__role",
            "participant__language",
            "language",
            "instrument__key",
            "instrument__version",
            "instrument__structure_fingerprint",
            "item_key",
            "source__key",
            "source__position",
            "shown_text_id",
            "reference_text_id",
            "value",
            "score",
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
    )


# Raters of instrument items that other apps hold (judging's LLM judges): each a function
# (study=...) -> frame in ANSWER_COLUMNS, registered from that app's AppConfig.ready(), so that
# evaluation imports none of the apps that build on it.
_ITEM_RATERS: dict[str, Callable[..., pd.DataFrame]] = {}


def item_raters_register(key: str, frame: Callable[..., pd.DataFrame]) -> None:
    """Add (or, under the same key, replace) a source of non-human raters' item answers."""
    _ITEM_RATERS[key] = frame


def analysis_answers_frame(*, study: Study) -> pd.DataFrame:
    """What the analysis reads: the humans' item answers and the registered raters' (the judges')."""
    frames = [instrument_answers_frame(study=study)]
    frames += [_ITEM_RATERS[key](study=study) for key in sorted(_ITEM_RATERS)]
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return instrument_answers_frame(study=study, rows=[])
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def instrument_answers_frame(*, study: Study, rows: list[tuple[Any, ...]] | None = None) -> pd.DataFrame:
    """The study's item answers as evaluation/instrument_items.py's frame (ANSWER_COLUMNS)."""
    rows = answer_rows(study=study, analysed_only=True) if rows is None else rows
    if not rows:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in ANSWER_COLUMNS})
    systems = {text: tuple(keys) for text, keys in systems_by_text(study=study).items()}
    (
        pks,
        pseudonyms,
        _external,
        roles,
        _participant_language,
        languages,
        keys,
        versions,
        structures,
        items,
        sources,
        _positions,
        texts,
        references,
        values,
        scores,
        *_,
    ) = zip(*rows, strict=True)
    return pd.DataFrame(
        {
            "participant": [participant_label(p, pk) for pk, p in zip(pks, pseudonyms, strict=True)],
            "role": list(roles),
            "language": list(languages),
            "instrument": list(keys),
            "version": np.asarray(versions, dtype=np.int64),
            "structure": list(structures),
            "item": list(items),
            "source": list(sources),
            "text_id": np.asarray([np.nan if t is None else t for t in texts], dtype=np.float64),
            "reference_id": np.asarray([np.nan if r is None else r for r in references], dtype=np.float64),
            "systems": [systems.get(t, ()) if t is not None else () for t in texts],
            "value": list(values),
            "score": np.asarray([np.nan if s is None else s for s in scores], dtype=np.float64),
        },
        columns=list(ANSWER_COLUMNS),
    )
