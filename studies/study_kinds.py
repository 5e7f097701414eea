"""The kinds of study a team can set up from the console (or `manage.py study_kind`), one per
shipped preset: what each asks, of whom, in which flow, and the paper it comes from. Reads only;
studies/study_kind_services.py writes."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import StudyInstrument
from instruments.presets import preset_load
from instruments.schema import AppliesTo, Citation, Instrument, ItemKind
from surveys.rate_each_pair.selectors import pairs_item_problems

PROTOCOL = "protocol"
PAIRS, PAIRWISE = StudyInstrument.Flow.PAIRS.value, StudyInstrument.Flow.PAIRWISE.value
# In the order the new-study form offers them; `protocol` is the two protocol presets together.
KIND_PRESETS = (
    PROTOCOL,
    "medlaybench_002",
    "layman_rrg_000_expert",
    "layman_rrg_000_matching",
    "pairwise_clinical",
)
# Items that compare a text with a human-written reference need the study's reference system: a
# study without one pairs each text with its source instead (surveys/rate_each_pair/selectors.py), which is
# not what sentence matching measures.
NEEDS_REFERENCE_KINDS = frozenset({ItemKind.SENTENCE_MATCHING})


@dataclass(frozen=True)
class AskedItem:
    key: str
    title: str
    kind: str
    about: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class StudyKind:
    key: str  # a preset's name, or `protocol`
    title: str
    flow: str  # expert+lay (protocol), pairs or pairwise
    description: str
    citation: Citation | None
    items: tuple[AskedItem, ...]
    groups: tuple[str, ...]
    needs_reference: bool

    @property
    def citation_text(self) -> str:
        c = self.citation
        if c is None:
            return ""
        when = f" ({c.year})" if c.year else ""
        return f"{c.authors}{when}. {c.title}. {c.venue}. {c.section}."


def _text(wording, language: str = "en") -> str:
    return (wording or {}).get(language) or next(iter((wording or {}).values()), "")


def _short(text: str, limit: int = 80) -> str:
    """`text` cut to at most `limit` characters at a word's end, with an ellipsis where cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace() and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def _asked(instrument: Instrument) -> tuple[AskedItem, ...]:
    return tuple(
        AskedItem(
            key=item.key,
            title=_text(item.title) or _short(_text(item.wording)),
            kind=item.kind.value,
            about=item.applies_to.value,
            groups=tuple(item.roles),
        )
        for item in instrument.items
    )


def instrument_flow(instrument: Instrument) -> str | None:
    """The flow that asks an instrument of the team's own: pairwise where it has a pairwise item,
    pairs where a pairs page can ask every item; None where neither can (the protocol's own flows
    take only the protocol's instruments, edited on the Instruments page)."""
    if any(item.kind is ItemKind.PAIRWISE for item in instrument.items):
        return PAIRWISE
    if not pairs_item_problems(instrument):
        return PAIRS
    return None


def needs_reference(instrument: Instrument) -> bool:
    return any(
        item.kind in NEEDS_REFERENCE_KINDS and item.applies_to is AppliesTo.PAIR for item in instrument.items
    )


def study_kind_of(instrument: Instrument, *, flow: str) -> StudyKind:
    items = _asked(instrument)
    return StudyKind(
        key=instrument.key,
        title=_text(instrument.title) or instrument.key,
        flow=flow,
        description=_text(instrument.description),
        citation=instrument.citation,
        items=items,
        groups=tuple(sorted({group for item in items for group in item.groups})),
        needs_reference=needs_reference(instrument),
    )


def study_kind(key: str) -> StudyKind:
    """The kind `key` (one of KIND_PRESETS); KeyError for another."""
    if key not in KIND_PRESETS:
        raise KeyError(key)
    if key == PROTOCOL:
        radiologist, lay = preset_load("protocol_003_radiologist"), preset_load("protocol_003_layperson")
        items = _asked(radiologist) + _asked(lay)
        return StudyKind(
            key=PROTOCOL,
            title="Two-pronged protocol — radiologist rubric and layperson survey",
            flow="expert+lay",
            description=_text(radiologist.description),
            citation=radiologist.citation,
            items=items,
            groups=("layperson", "radiologist"),
            needs_reference=False,
        )
    instrument = preset_load(key)
    flow = instrument_flow(instrument)
    assert flow is not None, f"{key}: a shipped preset every flow refuses"
    return study_kind_of(instrument, flow=flow)


def study_kinds() -> list[StudyKind]:
    return [study_kind(key) for key in KIND_PRESETS]
