"""How much the raters of one item on one target disagree, and where a final label comes from.
Django-free, and light to import (numpy loads only when sets or spans are measured): the
adjudication queue (evaluation/adjudication_selectors.py) builds its inputs from
the study's answers and orders its units by `Disagreement.score`, highest first.

Every measure is a score from 0 (the raters agree) to 1 (they disagree as much as they can), so
that items of different kinds share one queue:

- ordinal items: the spread of the codes (highest minus lowest) over the scale's range; a rater
  who answered "not applicable" beside one who gave a code is the largest disagreement (1);
- categories (single choice, pairwise outcomes): one minus the share of the most chosen answer,
  scaled so that k raters split evenly over k answers score 1; `majority` is the answer more than
  half of the raters gave (None: no majority, the case adjudication exists for);
- sets (multiple choice): the mean MASI distance (Passonneau 2006) over the pairs of raters;
- error spans: one minus the mean span-level overlap F1 (measures/stats/span_agreement.py, the
  study's own span agreement) over the pairs of raters; two raters who both marked nothing agree,
  one who marked nothing beside one who marked something share no span (F1 = 0).

A unit's final label (`final_label`) is the adjudicated value where one was recorded, the one
rater's where only one rated it, the shared value where every rater gave the same answer, and none
otherwise ("unresolved"): radlay never makes up a consensus the raters did not give.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from measures.stats.span_agreement import Span

SPREAD, NO_MAJORITY, SET_DISTANCE, SPAN_OVERLAP = "spread", "majority share", "set distance", "span overlap"
SINGLE_RATER, AGREEMENT, ADJUDICATED, UNRESOLVED = "single rater", "agreement", "adjudicated", "unresolved"
PROVENANCES = (SINGLE_RATER, AGREEMENT, ADJUDICATED, UNRESOLVED)


@dataclass(frozen=True)
class Disagreement:
    """`score` 0..1 (0: the raters agree); `measure` names how it was taken; `majority` is the
    answer more than half of the raters gave, for categories (None otherwise or where none)."""

    score: float
    measure: str
    raters: int
    majority: Hashable | None = None

    @property
    def unanimous(self) -> bool:
        return self.score == 0


def _need_two(values: Sequence[Any]) -> None:
    if len(values) < 2:
        raise ValueError(f"a disagreement needs at least two raters' answers, got {len(values)}")


def ordinal_disagreement(
    values: Sequence[int | str], *, lowest: int, highest: int, not_applicable: str = "not_applicable"
) -> Disagreement:
    """The spread of ordinal codes over the scale's range (`lowest`..`highest`)."""
    _need_two(values)
    if highest <= lowest:
        raise ValueError(f"the scale's range is empty ({lowest}..{highest})")
    codes = [value for value in values if value != not_applicable]
    if len(codes) not in (0, len(values)):
        return Disagreement(1.0, SPREAD, len(values))
    if not codes:
        return Disagreement(0.0, SPREAD, len(values))
    numbers = [int(code) for code in codes]
    outside = [n for n in numbers if not lowest <= n <= highest]
    if outside:
        raise ValueError(f"codes {outside} lie outside the scale {lowest}..{highest}")
    return Disagreement((max(numbers) - min(numbers)) / (highest - lowest), SPREAD, len(values))


def category_disagreement(values: Sequence[Hashable]) -> Disagreement:
    """One minus the most chosen answer's share, scaled to 0..1 (k raters split over k answers
    = 1); the majority is the answer of more than half of the raters."""
    _need_two(values)
    counts = Counter(values)
    top, most = counts.most_common(1)[0]
    n = len(values)
    score = (1 - most / n) / (1 - 1 / n)
    return Disagreement(score, NO_MAJORITY, n, top if most * 2 > n else None)


def _pairs_mean(values: Sequence[Any], distance: Callable[[Any, Any], float]) -> float:
    pairs = list(itertools.combinations(values, 2))
    return float(sum(distance(a, b) for a, b in pairs) / len(pairs))


def set_disagreement(values: Sequence[frozenset[Any]]) -> Disagreement:
    """The mean MASI distance over the pairs of raters' sets of choices."""
    from measures.stats.agreement import masi_distance

    _need_two(values)
    return Disagreement(_pairs_mean(values, masi_distance), SET_DISTANCE, len(values))


def span_pair_f1(a: Sequence[Span], b: Sequence[Span]) -> float:
    """Overlap F1 (all categories) between two raters' spans on one text: 1 when neither marked
    anything, 0 when only one did."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    from measures.stats.span_agreement import overlap_f1

    f1 = overlap_f1({0: list(a)}, {0: list(b)})["all"]["f1"]
    return float(f1) if f1 is not None else 0.0


def span_disagreement(values: Sequence[Sequence[Span]]) -> Disagreement:
    """One minus the mean overlap F1 over the pairs of raters' spans on one text."""
    _need_two(values)
    return Disagreement(1 - _pairs_mean(values, span_pair_f1), SPAN_OVERLAP, len(values))


class FinalLabel(NamedTuple):
    value: Any
    provenance: str


def final_label(
    values: Sequence[Any], *, adjudicated: Any = None, has_adjudication: bool = False
) -> FinalLabel:
    """The final label of one unit from its raters' answers (comparable values: codes, keys,
    frozensets, tuples of spans) and its adjudication, if any."""
    if has_adjudication:
        return FinalLabel(adjudicated, ADJUDICATED)
    if not values:
        return FinalLabel(None, UNRESOLVED)
    if len(values) == 1:
        return FinalLabel(values[0], SINGLE_RATER)
    if all(value == values[0] for value in values[1:]):
        return FinalLabel(values[0], AGREEMENT)
    return FinalLabel(None, UNRESOLVED)


@dataclass(frozen=True)
class AgreementBeforeAfter:
    """Over the units several raters answered: how many, the share on which they all agreed
    (before adjudication), the share with a final label after it (agreed or adjudicated), and the
    mean share of each rater's answers equal to the final label, where the unit has one, before
    (agreed units only) and after (adjudicated units too)."""

    units: int
    unanimous_share: float | None
    resolved_share: float | None
    adjudicated: int
    rater_accuracy_before: float | None
    rater_accuracy_after: float | None


def agreement_before_after(
    units: Sequence[tuple[Sequence[tuple[Hashable, Any]], Any, bool]],
) -> AgreementBeforeAfter:
    """`units`: per unit with at least two raters, ((rater, value) pairs, adjudicated value,
    whether it was adjudicated)."""
    several = [unit for unit in units if len(unit[0]) >= 2]
    n = len(several)
    if not n:
        return AgreementBeforeAfter(0, None, None, 0, None, None)
    unanimous = adjudicated = resolved = 0
    hits_before: dict[Hashable, list[int]] = {}
    hits_after: dict[Hashable, list[int]] = {}
    for answers, value, was_adjudicated in several:
        values = [v for _, v in answers]
        raw = final_label(values)
        unanimous += raw.provenance == AGREEMENT
        adjudicated += bool(was_adjudicated)
        after = final_label(values, adjudicated=value, has_adjudication=was_adjudicated)
        resolved += after.provenance != UNRESOLVED
        for rater, given in answers:
            if raw.provenance == AGREEMENT:
                hits_before.setdefault(rater, []).append(int(given == raw.value))
            if after.provenance in (AGREEMENT, ADJUDICATED):
                hits_after.setdefault(rater, []).append(int(given == after.value))

    def mean_of_raters(hits: dict[Hashable, list[int]]) -> float | None:
        shares = [sum(h) / len(h) for h in hits.values() if h]
        return sum(shares) / len(shares) if shares else None

    return AgreementBeforeAfter(
        units=n,
        unanimous_share=unanimous / n,
        resolved_share=resolved / n,
        adjudicated=adjudicated,
        rater_accuracy_before=mean_of_raters(hits_before),
        rater_accuracy_after=mean_of_raters(hits_after),
    )
