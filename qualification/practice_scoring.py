"""Whether a practice answer is within its gold answer's tolerance, and whether an attempt at the
qualification round passes its rule. Django-free.

Error spans are compared with the span measures the analysis uses (measures.stats.span_agreement):
an answer is within tolerance when its character-level F1 against the gold spans (partial credit,
categories pooled) reaches `min_overlap` and every gold span is overlapped by a span of its own
category. A practice item with no gold span is answered correctly by marking nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from instruments.answers import AnswerValue, ErrorSpan
from instruments.schema import Item, ItemKind, PracticeItem


@dataclass(frozen=True)
class PracticeScore:
    """`correct`: within tolerance; `measure`: how far (points off, for ordinal and count items)
    or how close (the overlap share, for multiple choice and error spans); None for the others."""

    correct: bool
    measure: float | None = None


def practice_score(item: Item, entry: PracticeItem, answer: AnswerValue, *, language: str) -> PracticeScore:
    """Score `answer` (a stored value, as instruments.answers.item_value_validate returns it)."""
    gold = entry.gold
    kind = item.kind
    if kind in (ItemKind.ORDINAL, ItemKind.COUNT):
        if isinstance(answer, int) and isinstance(gold, int):
            off = abs(answer - gold)
            return PracticeScore(off <= entry.within, float(off))
        return PracticeScore(answer == gold)
    if kind in (ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE):
        return PracticeScore(answer == gold or answer in entry.also_accept)
    if kind is ItemKind.MULTIPLE_CHOICE:
        chosen = answer if isinstance(answer, frozenset) else frozenset()
        wanted = gold if isinstance(gold, frozenset) else frozenset()
        union = chosen | wanted
        share = len(chosen & wanted) / len(union) if union else 1.0
        return PracticeScore(share >= entry.min_overlap, share)
    if kind is ItemKind.FREE_TEXT:
        text = (answer if isinstance(answer, str) else "").casefold()
        words = entry.keywords.get(language, ())
        return PracticeScore(any(word.casefold() in text for word in words))
    if kind is ItemKind.ERROR_SPANS:
        assert isinstance(gold, Mapping)
        return spans_score(
            tuple(answer) if isinstance(answer, tuple) else (), gold.get(language, ()), entry.min_overlap
        )
    raise ValueError(f"{item.key}: a practice item cannot ask a {kind.value} item")


def spans_score(
    answer: tuple[ErrorSpan, ...], gold: tuple[ErrorSpan, ...], min_overlap: float
) -> PracticeScore:
    # Imported here: the span measures load numpy, which a web worker's start-up does not
    # (tests/test_web_imports.py); only a span item's practice answer needs them.
    from measures.stats.span_agreement import ALL, Annotation, Span, character_f1, overlap_f1

    if not gold or not answer:
        return PracticeScore(not gold and not answer, 1.0 if not gold and not answer else 0.0)

    def spans(given: tuple[ErrorSpan, ...]) -> list[Span]:
        return [Span(s.start, s.end, s.category, s.severity) for s in given]

    mine: Annotation = {"t": spans(answer)}
    theirs: Annotation = {"t": spans(gold)}
    f1 = character_f1(mine, theirs)[ALL]["f1"] or 0.0
    # Recall of the span-level overlap match: the share of gold spans that an answer span of the
    # same category overlaps.
    found = overlap_f1(mine, theirs)[ALL]["recall"] or 0.0
    return PracticeScore(f1 >= min_overlap and found == 1.0, f1)


# --- The pass rule -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassRule:
    """Pass with at least `share_percent` % of the practice items within tolerance, taking at least
    `min_seconds` over the attempt; `retries` further attempts after a failed one."""

    share_percent: int
    retries: int = 0
    min_seconds: int = 0

    def needed(self, items: int) -> int:
        """The correct answers an attempt over `items` practice items needs."""
        return math.ceil(self.share_percent * items / 100 - 1e-9)

    @property
    def attempts(self) -> int:
        return 1 + self.retries


def pass_rule_errors(rule: PassRule, *, items: int) -> dict[str, str]:
    """Why a rule cannot be met (or makes no sense), by field; empty when it can."""
    errors: dict[str, str] = {}
    if rule.share_percent < 1:
        errors["share_percent"] = "The share correct is at least 1 %: a round anyone passes is no round."
    elif rule.share_percent > 100:
        errors["share_percent"] = (
            f"{rule.share_percent} % cannot be met: it needs more correct answers than the round's "
            f"{items} practice item{'s' if items != 1 else ''}."
        )
    elif items == 0:
        errors["share_percent"] = (
            "This flow has no practice items for this rater group: no attempt could pass. Add a "
            "practice section to the instrument first."
        )
    if rule.retries < 0:
        errors["retries"] = "Retries: 0 or more."
    if rule.min_seconds < 0:
        errors["min_seconds"] = "Time floor: 0 or more seconds."
    return errors


@dataclass(frozen=True)
class AttemptOutcome:
    passed: bool
    correct: int
    total: int
    needed: int
    too_fast: bool


def attempt_outcome(rule: PassRule, *, correct: int, total: int, seconds: float) -> AttemptOutcome:
    needed = rule.needed(total)
    too_fast = seconds < rule.min_seconds
    return AttemptOutcome(
        passed=total > 0 and correct >= needed and not too_fast,
        correct=correct,
        total=total,
        needed=needed,
        too_fast=too_fast,
    )
