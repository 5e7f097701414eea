"""What one radiologist page holds, as the page template reads it: its rating cells, a row per shown
text, the original's row, and the protocol rows' wording in the page's language (built once per
instrument version and language). surveys/radiologist/pages.py builds and saves pages of this shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotation import protocol_texts, scales
from annotation.instrument_selectors import CurrentInstrument
from annotation.item_questions import ItemQuestion, shown
from annotation.models import ExpertItem, Source

if TYPE_CHECKING:
    from surveys.radiologist.selectors import Progress

ORIGINAL = "original"
COMMENT = "comment"


@dataclass(frozen=True)
class Cell:
    """One 1-5 (or severity) answer on the page."""

    field: str
    key: str
    value: Any


@dataclass(frozen=True)
class AspectCell(Cell):
    aspect: protocol_texts.ExpertAspect | None = None


@dataclass(frozen=True)
class ShownLevel:
    """A scale point as a row shows it: `name` is what the form posts and the column stores (the
    severity level's English name, the Likert code's label), `label` what the rater reads."""

    name: str
    value: int
    definition: str = ""
    label: str = ""


@dataclass(frozen=True)
class PageWording:
    """The protocol rows' texts in one language, from the instrument."""

    aspects: tuple[protocol_texts.ExpertAspect, ...]
    severity_title: str
    severity_question: str
    severity_levels: tuple[ShownLevel, ...]
    simplicity_title: str
    simplicity_question: str
    likert_levels: tuple[ShownLevel, ...]


def page_wording(current: CurrentInstrument, language: str) -> PageWording:
    """Built once per instrument version and language (kept with the cached instrument)."""
    memo = current.memo.get(("expert-wording", language))
    if memo is not None:
        return memo
    instrument = current.instrument
    aspects = tuple(
        protocol_texts.ExpertAspect(
            key,
            shown(instrument.item(key).title, language),
            shown(instrument.item(key).wording, language),
            shown(instrument.item(key).short_wording, language),
        )
        for key in scales.EXPERT_ASPECTS
    )
    severity, simplicity = instrument.item("severity"), instrument.item("original_simplicity")
    assert severity.scale is not None and simplicity.scale is not None
    # The severity column stores the level's English name (annotation/scales.py), whatever is shown.
    names = {level.value: level.name for level in scales.SEVERITY.levels}
    wording = PageWording(
        aspects=aspects,
        severity_title=shown(severity.title, language),
        severity_question=shown(severity.wording, language),
        severity_levels=tuple(
            ShownLevel(names[p.code], p.code, shown(p.definition, language), shown(p.label, language))
            for p in severity.scale.points
        ),
        simplicity_title=shown(simplicity.title, language),
        simplicity_question=shown(simplicity.wording, language),
        likert_levels=tuple(
            ShownLevel(shown(p.label, language), p.code, label=shown(p.label, language))
            for p in simplicity.scale.points
        ),
    )
    current.memo[("expert-wording", language)] = wording
    return wording


@dataclass
class TextRow:
    label: str
    text: str
    aspects: list[AspectCell]
    comment: str
    added: list[ItemQuestion] = field(default_factory=list)

    @property
    def comment_field(self) -> str:
        return f"{self.label}-{COMMENT}"

    @property
    def complete(self) -> bool:
        return all(cell.value is not None for cell in self.aspects) and all(
            q.answered for q in self.added if q.required
        )


@dataclass
class ExpertPage:
    item: ExpertItem
    source: Source
    texts: list[TextRow]
    severity: Cell
    simplicity: Cell
    comment: str
    wording: PageWording
    missing: list[str] = field(default_factory=list)
    original_added: list[ItemQuestion] = field(default_factory=list)
    # How many required answers the page asks (its rows, added items included).
    required: int = 0
    # Set by a save that changed the page's completion: the survey's progress and the page's number
    # as of that save (None when the save left both as they were).
    progress: Progress | None = None
    number: int | None = None

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def started(self) -> bool:
        """Whether any rating of the page is answered (the comments do not count)."""
        return len(self.missing) < self.required

    @property
    def original_comment_field(self) -> str:
        return f"{ORIGINAL}-{COMMENT}"
