"""Identifier spans and the de-identified text built from them. Django-free."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The Safe Harbor identifiers that occur in radiology reports, as radlay names them. "ID" covers
# device serials, account, encounter, health-plan and licence numbers; "LOCATION" addresses and
# geographic units smaller than a state.
KINDS: tuple[str, ...] = (
    "NAME",
    "DATE",
    "AGE",
    "PHONE",
    "EMAIL",
    "SSN",
    "MRN",
    "ACCESSION",
    "ID",
    "LOCATION",
    "URL",
    "IP",
)


# Names the detector configuration in what it stored (SourceDeidentification.detector).
DETECTOR_VERSION = "presidio-offline-1"

# Findings scored under this start as "to review": the review page lists them first and approval
# waits until someone accepted or removed each.
REVIEW_BELOW = 0.5


def placeholder(kind: str) -> str:
    """The typed placeholder a span of `kind` is replaced with: "[NAME]", "[DATE]", …"""
    return f"[{kind}]"


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    score: float = 1.0
    recognizer: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"a span needs 0 <= start < end, got {self.start}..{self.end}")
        if self.kind not in KINDS:
            raise ValueError(f"unknown identifier kind {self.kind!r}; use one of {', '.join(KINDS)}")


def merge_overlaps(spans: Iterable[Span]) -> list[Span]:
    """Spans ordered by start, none overlapping: of overlapping spans the one with the higher
    score wins the kind (the longer on a tie), and the merged span covers all of them, so that no
    character any recognizer flagged escapes."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            winner = max((last, span), key=lambda s: (s.score, s.end - s.start))
            merged[-1] = Span(
                last.start,
                max(last.end, span.end),
                winner.kind,
                max(last.score, span.score),
                winner.recognizer,
            )
        else:
            merged.append(span)
    return merged


def redact(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) span replaced; spans must not overlap."""
    pieces: list[str] = []
    at = 0
    for start, end, replacement in sorted(spans):
        if start < at:
            raise ValueError(f"overlapping spans at {start}")
        pieces.append(text[at:start])
        pieces.append(replacement)
        at = end
    pieces.append(text[at:])
    return "".join(pieces)
