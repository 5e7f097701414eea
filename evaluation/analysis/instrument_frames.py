"""What the instrument-item analysis and exports read: a study's ItemAnswer rows as one frame (the
column contract of evaluation/analysis/instrument_items.py), read in one query, and its instrument versions
parsed back to `instruments.schema.Instrument`s."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from annotation.models import Study
from annotation.selectors import participant_label, systems_by_text
from evaluation.analysis.instrument_items import ANSWER_COLUMNS
from evaluation.analysis.instrument_selectors import answer_rows
from evaluation.analysis.item_raters import item_raters


def analysis_answers_frame(*, study: Study) -> pd.DataFrame:
    """What the analysis reads: the humans' item answers and the registered raters' (the judges')."""
    frames = [instrument_answers_frame(study=study)]
    frames += [frame(study=study) for frame in item_raters()]
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return instrument_answers_frame(study=study, rows=[])
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def instrument_answers_frame(*, study: Study, rows: list[tuple[Any, ...]] | None = None) -> pd.DataFrame:
    """The study's item answers as evaluation/analysis/instrument_items.py's frame (ANSWER_COLUMNS)."""
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
