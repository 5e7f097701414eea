"""Agreement on error spans between two annotators (radiologists, or a judge and a radiologist), and
alignment of an LLM judge's quoted text to character offsets. Django-free.

Spans are ``(start, end, category, severity)`` with character offsets into the shown text
(``end`` exclusive).

- ``overlap_f1`` (span level, "partial"/overlap match as in SemEval-2013 Task 9 and the span
  evaluations of factgenie, Kasner et al. 2024): a span of one annotator is matched when it shares
  at least one character with a span of the same category from the other annotator on the same
  text. Precision is the share of A's spans matched, recall the share of B's spans matched, F1
  their harmonic mean; per category and over all categories. Symmetric up to swapping P and R.
- ``character_f1`` (partial credit): per category, the characters both annotators marked over the
  characters each marked, so half-overlapping spans earn half credit.
- ``count_alpha``: Krippendorff's α (interval) on the number of spans per text (optionally of one
  category), through ``measures.stats.agreement.krippendorff_alpha`` (the ``krippendorff``
  package). A text an annotator saw without marking anything counts 0; a text the annotator did
  not see is missing.
- ``align_quoted_spans``: exact match first, then a match ignoring case and runs of whitespace,
  then the best ``difflib`` match among word-aligned windows if its ratio reaches ``threshold``.
  Unmatched quotes are returned, never dropped.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from measures.stats.agreement import krippendorff_alpha

ALL = "all"


class Span(NamedTuple):
    start: int
    end: int
    category: str
    severity: str = ""


Annotation = Mapping[Hashable, Sequence[Span]]  # text id -> spans


def _check(spans: Annotation, name: str) -> None:
    for text, items in spans.items():
        for span in items:
            if not 0 <= span.start < span.end:
                raise ValueError(f"{name}, text {text!r}: span {tuple(span)!r} needs 0 <= start < end")


def _overlaps(span: Span, others: Sequence[Span]) -> bool:
    return any(o.category == span.category and o.start < span.end and o.end > span.start for o in others)


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _shared_texts(a: Annotation, b: Annotation) -> tuple[list[Hashable], list[str]]:
    """The texts both annotated, and the categories marked on them followed by ``"all"``."""
    _check(a, "a")
    _check(b, "b")
    texts = [t for t in a if t in b]
    return texts, [*sorted({s.category for t in texts for s in (*a[t], *b[t])}), ALL]


def overlap_f1(a: Annotation, b: Annotation) -> dict[str, dict[str, Any]]:
    """Span-level overlap F1 by category (and ``"all"``) over the texts both annotated.
    ``precision`` is None when A marked nothing in the category, ``recall`` when B marked nothing."""
    texts, categories = _shared_texts(a, b)
    out: dict[str, dict[str, Any]] = {}
    for category in categories:
        counts = np.zeros(4)  # matched A, all A, matched B, all B
        for t in texts:
            spans_a = [s for s in a[t] if category in (ALL, s.category)]
            spans_b = [s for s in b[t] if category in (ALL, s.category)]
            counts += [
                sum(_overlaps(s, spans_b) for s in spans_a),
                len(spans_a),
                sum(_overlaps(s, spans_a) for s in spans_b),
                len(spans_b),
            ]
        precision = float(counts[0] / counts[1]) if counts[1] else None
        recall = float(counts[2] / counts[3]) if counts[3] else None
        out[category] = {
            "precision": precision,
            "recall": recall,
            "f1": _f1(precision, recall),
            "n_a": int(counts[1]),
            "n_b": int(counts[3]),
        }
    return out


def _characters(spans: Sequence[Span], category: str) -> set[int]:
    return {i for s in spans if category in (ALL, s.category) for i in range(s.start, s.end)}


def character_f1(a: Annotation, b: Annotation) -> dict[str, dict[str, Any]]:
    """Character-level (partial credit) precision, recall and F1 by category and ``"all"``."""
    texts, categories = _shared_texts(a, b)
    out: dict[str, dict[str, Any]] = {}
    for category in categories:
        both = only_a = only_b = 0
        for t in texts:
            chars_a, chars_b = _characters(a[t], category), _characters(b[t], category)
            both += len(chars_a & chars_b)
            only_a += len(chars_a)
            only_b += len(chars_b)
        precision = both / only_a if only_a else None
        recall = both / only_b if only_b else None
        out[category] = {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}
    return out


def count_alpha(annotations: Mapping[Hashable, Annotation], *, category: str | None = None) -> float:
    """Krippendorff's α (interval) on spans per text: ``annotations`` is annotator -> text -> spans
    (an empty list for a text seen without errors). ``nan`` when α is undefined."""
    texts = list(dict.fromkeys(t for spans in annotations.values() for t in spans))
    data = np.full((len(annotations), len(texts)), np.nan)
    for row, (name, spans) in enumerate(annotations.items()):
        _check(spans, str(name))
        for col, text in enumerate(texts):
            if text in spans:
                data[row, col] = sum(1 for s in spans[text] if category in (None, s.category))
    if not texts:
        return math.nan
    return krippendorff_alpha(data, "interval")


# --- quoted text -> offsets ---------------------------------------------------------------------


@dataclass(frozen=True)
class AlignedQuote:
    index: int  # position of the quote in the judge's list
    quote: str
    start: int
    end: int
    method: str  # "exact", "normalised" or "fuzzy"
    ratio: float  # 1.0 for exact/normalised matches


def _normalised(text: str) -> tuple[str, list[int]]:
    """Lower-cased text with runs of whitespace collapsed to one space, and each character's offset
    in the original."""
    chars: list[str] = []
    offsets: list[int] = []
    for m in re.finditer(r"\s+|\S", text):
        chars.append(" " if m.group().isspace() else m.group().lower())
        offsets.append(m.start())
    return "".join(chars), offsets


def align_quoted_spans(
    text: str, quotes: Sequence[str], *, threshold: float = 0.85
) -> tuple[list[AlignedQuote], list[tuple[int, str]]]:
    """Character offsets in ``text`` of each quote: ``(aligned, unmatched)`` where ``unmatched``
    lists ``(index, quote)`` of quotes found by none of the three rules. A quote occurring several
    times takes its first occurrence not already taken by an earlier quote; a quote repeated more
    often than the text has it is reported unmatched."""
    aligned: list[AlignedQuote] = []
    unmatched: list[tuple[int, str]] = []
    taken: set[tuple[int, int]] = set()
    norm_text, offsets = _normalised(text)
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    for index, quote in enumerate(quotes):
        stripped = quote.strip()
        if not stripped:
            unmatched.append((index, quote))
            continue
        found = _exact(text, stripped, taken)
        method, ratio = "exact", 1.0
        if found is None:
            method = "normalised"
            found = _exact(norm_text, _normalised(stripped)[0], taken, offsets)
        if found is None:
            method = "fuzzy"
            found, ratio = _fuzzy(text, stripped, words)
            if ratio < threshold or found in taken:
                found = None
        if found is None:
            unmatched.append((index, quote))
            continue
        taken.add(found)
        aligned.append(AlignedQuote(index, quote, found[0], found[1], method, ratio))
    return aligned, unmatched


def _exact(
    text: str, quote: str, taken: set[tuple[int, int]], offsets: list[int] | None = None
) -> tuple[int, int] | None:
    """First occurrence of ``quote`` in ``text`` not in ``taken``, as offsets of the original text
    (``offsets`` maps a normalised text's characters back)."""
    start = text.find(quote)
    while start >= 0:
        end = start + len(quote)
        span = (start, end) if offsets is None else (offsets[start], offsets[end - 1] + 1)
        if span not in taken:
            return span
        start = text.find(quote, start + 1)
    return None


def _fuzzy(text: str, quote: str, words: list[tuple[int, int]]) -> tuple[tuple[int, int] | None, float]:
    target = _normalised(quote)[0]
    best: tuple[int, int] | None = None
    best_ratio = 0.0
    for i, (start, _) in enumerate(words):
        for end in (e for _, e in words[i:]):
            if end - start > 1.5 * len(quote) + 5:
                break
            if end - start < 0.5 * len(quote):
                continue
            ratio = difflib.SequenceMatcher(None, _normalised(text[start:end])[0], target).ratio()
            if ratio > best_ratio:
                best, best_ratio = (start, end), ratio
    return best, best_ratio
