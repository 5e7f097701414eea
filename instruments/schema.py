"""What an instrument is: frozen dataclasses, built only through `instruments.validation`, which
checks every rule named there. Wording is a mapping language code → text, so one instrument carries
every language it offers. Django-free."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

# A text in each offered language ("en" → "Not at all", "es" → "En absoluto").
Wording = Mapping[str, str]


class ItemKind(StrEnum):
    ORDINAL = "ordinal"
    SINGLE_CHOICE = "single_choice"
    MULTIPLE_CHOICE = "multiple_choice"
    COUNT = "count"
    FREE_TEXT = "free_text"
    SENTENCE_MATCHING = "sentence_matching"
    # Error spans mark character ranges of a shown text with a category (the item's
    # options) and a severity (its severities); pairwise items are asked by the compare-two flow
    # (surveys/compare_two/).
    ERROR_SPANS = "error_spans"
    PAIRWISE = "pairwise"


class AppliesTo(StrEnum):
    SOURCE = "source"
    SIMPLIFICATION = "simplification"
    # A (simplification, reference) pair: seed 002's caption pairs, seed 000's generated/reference reports.
    PAIR = "pair"


class TranslationStatus(StrEnum):
    SOURCE = "source"
    UNVALIDATED = "unvalidated translation"
    VALIDATED = "validated"


class ProportionOf(StrEnum):
    """The denominator of a sentence-matching score. Seed 000 (section 4.4 and Algorithm 2 of
    appendix A.7) divides the generated sentences that match a reference sentence by the number of
    generated sentences; `reference` is the recall-side reading A.7 also mentions."""

    GENERATED = "generated"
    REFERENCE = "reference"


# Options of a choice item taken from the texts shown (panel 3's "which simplifications do you like
# the most?"): the flow supplies them per page, the instrument cannot list them.
OPTIONS_FROM_TEXTS = "texts"
# The stored value of an ordinal item answered "not applicable" (only where the scale offers it).
NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True)
class Citation:
    """The paper an instrument comes from, shown to researchers and participants."""

    title: str
    authors: str
    venue: str
    year: int | None
    section: str
    # What raters are shown instead of the full reference where the title would unblind them
    # (seed 003's title names the generator and the method under test).
    short: str = ""
    note: str = ""


@dataclass(frozen=True)
class Phase:
    """A step of a flow that places items (the lay flow's panels original / assisted / preference)."""

    key: str
    intro: Wording


@dataclass(frozen=True)
class Point:
    """One labelled point of an ordinal scale; `code` is its number in the analysis and exports."""

    code: int
    label: Wording
    definition: Wording = field(default_factory=dict)


@dataclass(frozen=True)
class Scale:
    points: tuple[Point, ...]
    # The label of a "not applicable" answer, in each language; empty when the scale has none.
    not_applicable: Wording = field(default_factory=dict)
    note: str = ""

    @property
    def codes(self) -> tuple[int, ...]:
        return tuple(point.code for point in self.points)


@dataclass(frozen=True)
class Option:
    key: str
    label: Wording


@dataclass(frozen=True)
class Item:
    key: str
    kind: ItemKind
    applies_to: AppliesTo
    roles: tuple[str, ...]
    wording: Wording
    help: Wording = field(default_factory=dict)
    required: bool = True
    # A short label (a rubric aspect's name, "Correctness") and a shorter form of the wording for
    # a row where space is tight; both optional.
    title: Wording = field(default_factory=dict)
    short_wording: Wording = field(default_factory=dict)
    # The number participants see ("Q1") and the flow phases the item is asked in, in order.
    number: str = ""
    phases: tuple[str, ...] = ()
    # Provenance for researchers: "radlay's wording; the paper gives none".
    note: str = ""
    # Kind-specific parts; validation holds that each kind has exactly its own.
    scale: Scale | None = None
    options: tuple[Option, ...] = ()
    # An error-span item's severities (minor / could mislead / could harm), mildest first.
    severities: tuple[Option, ...] = ()
    options_from: str = ""
    exclusive_with: str = ""
    max_count: int | None = None
    max_length: int | None = None
    proportion_of: ProportionOf | None = None


@dataclass(frozen=True)
class PracticeItem:
    """A practice item of the qualification round (instruments/practice.py): one of the instrument's
    items asked about texts written for practice, with its gold answer, the tolerance within which
    an answer counts as correct, and the explanation a participant reads after answering. Which
    rater groups see it is the item's `roles`. `gold` is the stored form of the answer
    (instruments.answers); an error-span item's gold is per language, as its texts are."""

    key: str
    item: str
    source: Wording
    explanation: Wording
    gold: object
    text: Wording = field(default_factory=dict)
    # The second text of a pair (a reference, or B of a pairwise comparison).
    other: Wording = field(default_factory=dict)
    # Tolerances, by kind: ordinal and count `within` points; choices and pairwise `also_accept`
    # further keys; multiple choice and error spans `min_overlap` (0..1); free text `keywords`.
    within: int = 0
    also_accept: tuple[str, ...] = ()
    min_overlap: float = 1.0
    keywords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Instrument:
    key: str
    version: int
    title: Wording
    citation: Citation
    languages: tuple[str, ...]
    default_language: str
    translation_status: Mapping[str, TranslationStatus]
    items: tuple[Item, ...]
    phases: tuple[Phase, ...] = ()
    description: Wording = field(default_factory=dict)
    # The qualification round's practice items (instruments/practice.py); none by default.
    practice: tuple[PracticeItem, ...] = ()

    def item(self, key: str) -> Item:
        for item in self.items:
            if item.key == key:
                return item
        raise KeyError(f"{self.key} v{self.version} has no item {key!r}")
