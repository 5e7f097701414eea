"""What the error-span analysis and the judge page read of the database: the study's error-span
items and the texts the raters saw (evaluation/analysis/error_spans.py computes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from annotation.models import ItemAnswer, SimplificationText, Study
from evaluation.analysis.error_spans import error_span_items
from evaluation.analysis.instrument_selectors import study_instruments
from instruments.schema import Item


def span_items(*, study: Study) -> list[tuple[str, Item]]:
    """(instrument key, item) of every error-span item the study asks, the newest version's wording."""
    return error_span_items(study_instruments(study=study))


def shown_texts(*, ids: Iterable[Any]) -> dict[int, str]:
    """SimplificationText id -> the text, for `ids`."""
    return dict(SimplificationText.objects.filter(pk__in=[int(i) for i in ids]).values_list("pk", "text"))


def span_shown_texts(*, study: Study) -> dict[int, str]:
    """The texts of the study on which an error-span item was answered (by a person; a judge
    answers the same texts), for the analysis; none when the study asks no such item."""
    items = span_items(study=study)
    if not items:
        return {}
    answered = ItemAnswer.objects.filter(
        participant__study=study, item_key__in=[item.key for _, item in items], shown_text__isnull=False
    ).values_list("shown_text_id", flat=True)
    return dict(SimplificationText.objects.filter(pk__in=answered).values_list("pk", "text"))
