"""What the error-span analysis reads (evaluation/span_analysis.py): the study's error-span items,
their answers (the humans' and the registered judges', one frame as the item analysis reads them) and
the texts the raters saw."""

from __future__ import annotations

from typing import Any

import pandas as pd

from annotation.models import SimplificationText, Study
from evaluation.instrument_inputs import analysis_answers_frame
from evaluation.instrument_rows import study_instruments
from evaluation.span_analysis import span_analysis, span_frame
from instruments.schema import Item, ItemKind


def span_items(*, study: Study) -> list[tuple[str, Item]]:
    """(instrument key, item) of every error-span item the study asks, the newest version's wording."""
    found: dict[tuple[str, str], Item] = {}
    for (key, _version), instrument in sorted(study_instruments(study=study).items()):
        for item in instrument.items:
            if item.kind is ItemKind.ERROR_SPANS:
                found[(key, item.key)] = item
    return [(key, item) for (key, _), item in found.items()]


def shown_texts(*, ids: Any) -> dict[int, str]:
    return dict(SimplificationText.objects.filter(pk__in=[int(i) for i in ids]).values_list("pk", "text"))


def study_span_frames(*, study: Study, answers: pd.DataFrame | None = None) -> list[tuple[str, Item, pd.DataFrame]]:
    """(instrument key, item, SPAN_COLUMNS frame) of each error-span item with answers."""
    items = span_items(study=study)
    if not items:
        return []
    answers = analysis_answers_frame(study=study) if answers is None else answers
    if not len(answers):
        return []
    texts = shown_texts(ids=answers["text_id"].dropna().unique())
    frames = [(key, item, span_frame(answers, texts, instrument=key, item=item.key)) for key, item in items]
    return [(key, item, frame) for key, item, frame in frames if len(frame)]


def study_span_analysis(*, study: Study, systems: list[str]) -> list[dict[str, Any]]:
    """The span analysis of each answered error-span item: {instrument, item, title, analysis}."""
    return [
        {
            "instrument": key,
            "item": item.key,
            "title": next(iter(item.title.values()), item.key) if item.title else item.key,
            "analysis": span_analysis(
                frame,
                categories=[option.key for option in item.options],
                severities=[option.key for option in item.severities],
                systems=systems,
            ),
        }
        for key, item, frame in study_span_frames(study=study)
    ]
