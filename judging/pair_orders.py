"""Both orders of a comparison a judge is asked outside the compare-two flow: an instrument of another
flow whose pair items include a pairwise (preference) item asks each (text, reference) pair as
asked of the humans, the text as A and the reference as B, and once more reversed, the reference
as A and the text as B, so that the judge's position bias is measured (judging.position_bias) and
the ranking counts both orders. The compare-two flow itself asks every pair of texts in both orders
(judging.services.pairwise_orders).

The reversed order is a judge item whose shown text is the source's reference text and whose
reference text is the system's text. It asks only the pairwise items (a rating of "the text against
its reference" would otherwise be given of the reference), and its answers stay out of the
judge-vs-human figures (the humans answered the first order only): they feed the position bias.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from annotation.models import Simplification, StudyInstrument
from instruments.schema import AppliesTo, Instrument, Item, ItemKind
from judging.instrument_items import judge_items

# Option keys a pairwise item may use for "the first text" and "the second text", as the position
# bias reads them (measures.stats.position_bias.CHOICES: left, right, tie, neither).
_CHOICE_ALIASES = {"first": "left", "a": "left", "second": "right", "b": "right"}


def asks_both_orders(instrument: Instrument) -> bool:
    """Whether a judge asks this (non-pairwise-flow) instrument's pairs in both orders."""
    return any(item.kind is ItemKind.PAIRWISE for item in judge_items(instrument, AppliesTo.PAIR))


def reversed_order_items(items: Iterable[Item]) -> tuple[Item, ...]:
    """What the reversed order asks: the pairwise items only."""
    return tuple(item for item in items if item.kind is ItemKind.PAIRWISE)


def reference_texts(*, study_id: int, source_id: int | None = None) -> dict[int, set[int]]:
    """Per source, the ids of its reference systems' texts. One query."""
    rows = Simplification.objects.filter(source__study_id=study_id, system__is_reference=True)
    if source_id is not None:
        rows = rows.filter(source_id=source_id)
    out: dict[int, set[int]] = {}
    for source, text in rows.values_list("source_id", "shown_text_id"):
        out.setdefault(source, set()).add(text)
    return out


def is_reversed_order(
    *,
    flow: str,
    source_id: int,
    text_id: int | None,
    reference_id: int | None,
    references: Mapping[int, set[int]],
) -> bool:
    """Whether a judge item is the reversed order of a (text, reference) pair (see the module
    docstring); never in the compare-two flow, whose orders are both its own."""
    if flow == StudyInstrument.Flow.PAIRWISE or text_id is None or reference_id is None:
        return False
    theirs = references.get(source_id, set())
    return text_id in theirs and reference_id not in theirs


def ordered_choice(value: Any) -> str | None:
    """A pairwise answer as the position bias reads it (left, right, tie, neither), or None."""
    if not isinstance(value, str):
        return None
    choice = _CHOICE_ALIASES.get(value.lower(), value.lower())
    return choice if choice in ("left", "right", "tie", "neither") else None
