"""What a study's rate-each-pair flow asks, of whom, about what (selectors; nothing here writes).

The reference of a pair. Seed 002 rates "caption pairs": the expert caption and its lay rewrite; in
a radlay study the expert caption is the source and the lay caption a simplification. Seed 000's
sentence matching compares a generated report with a human-written lay reference, i.e. the text of
the study's reference system. So:

- a study with a reference system (System.is_reference; the first by position when several are
  marked) pairs every other system's text with that system's text for the same source; a source
  without a reference text has no pairs, and a text identical to its reference is not shown (it
  would be compared with itself). ItemAnswer.reference_text is the reference's text;
- a study without one pairs each simplification with its source (seed 002's design, and seed 000's
  expert verification of a translated report against its professional original).
  ItemAnswer.reference_text is then empty: the answer's source is the reference.

Items that apply to a simplification are asked on the same page and stored without a reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Q

from annotation.data_policy_hooks import shown_source_text
from annotation.models import Participant, Simplification, SimplificationText, Study, StudyInstrument, System
from instruments.schema import OPTIONS_FROM_TEXTS, AppliesTo, Citation, Instrument, Item, ItemKind, Wording
from instruments.validation import instrument_from_data
from surveys.survey_page import seeded_shuffle

# The kinds a pairs page shows. Error spans belong to the radiologist page and pairwise
# comparison to its own flow.
PAGE_KINDS = frozenset(
    {
        ItemKind.ORDINAL,
        ItemKind.SINGLE_CHOICE,
        ItemKind.MULTIPLE_CHOICE,
        ItemKind.COUNT,
        ItemKind.FREE_TEXT,
        ItemKind.SENTENCE_MATCHING,
    }
)
PAGE_TARGETS = frozenset({AppliesTo.PAIR, AppliesTo.SIMPLIFICATION})
ORDER_PURPOSE = "pairs-order"


# Parsed once per version: a stored definition never changes under its fingerprint.
_PARSED: dict[str, Instrument] = {}


def instrument_of(row: StudyInstrument) -> Instrument:
    found = _PARSED.get(row.fingerprint)
    if found is None:
        found = _PARSED[row.fingerprint] = instrument_from_data(row.definition)
    return found


def pairs_item_problems(instrument: Instrument) -> list[str]:
    """Why a pairs page cannot ask some of `instrument`'s items (empty when it can ask them all)."""
    problems = []
    for item in instrument.items:
        if item.kind not in PAGE_KINDS:
            problems.append(
                f"item {item.key!r}: the rate-each-pair flow does not show {item.kind.value} items yet."
            )
        if item.applies_to not in PAGE_TARGETS:
            problems.append(
                f"item {item.key!r} applies to the {item.applies_to.value}: a pairs page asks about a "
                "text or a pair (use the radiologist or lay flow for questions about the source)."
            )
        if item.options_from == OPTIONS_FROM_TEXTS:
            problems.append(
                f"item {item.key!r}: choices among the texts shown are the lay flow's preference panel."
            )
    return problems


@dataclass(frozen=True)
class PairsInstrument:
    row: StudyInstrument
    instrument: Instrument


@dataclass(frozen=True)
class PageItem:
    """One item as a page asks it; `field` is its form field name (unique on the page)."""

    asked: PairsInstrument
    item: Item

    @property
    def field(self) -> str:
        return f"{self.asked.instrument.key}.{self.item.key}"


def pairs_instruments(*, study: Study) -> list[PairsInstrument]:
    rows = StudyInstrument.objects.filter(study=study, flow=StudyInstrument.Flow.PAIRS, is_current=True)
    return [PairsInstrument(row=row, instrument=instrument_of(row)) for row in rows.order_by("key")]


def rater_group(participant: Participant) -> str:
    return participant.rater_group or participant.role


def pairs_page_items(*, study: Study, group: str) -> list[PageItem]:
    """The items a participant of `group` answers on every page, in instrument then item order."""
    return [
        PageItem(asked=asked, item=item)
        for asked in pairs_instruments(study=study)
        for item in asked.instrument.items
        if group in item.roles
    ]


def pairs_participant(participant: Participant) -> bool:
    """Whether `participant` takes part through the rate-each-pair flow: their study runs one and asks their
    rater group something. (A study runs one flow per rater group.)"""
    return bool(pairs_page_items(study=participant.study, group=rater_group(participant)))


def study_rater_groups(*, study: Study) -> set[str]:
    """Every rater group the study's current rate-each-pair instruments name (the protocol's
    instruments, which every study has, name the radiologist page's and the lay flow's roles)."""
    groups: set[str] = set()
    for row in StudyInstrument.objects.filter(study=study, is_current=True, flow=StudyInstrument.Flow.PAIRS):
        for item in instrument_of(row).items:
            groups.update(item.roles)
    return groups


@dataclass(frozen=True)
class Pair:
    """One page: a shown text and its reference (None: the source is the reference)."""

    source_id: int
    shown_text_id: int
    reference_text_id: int | None


def reference_system(*, study: Study) -> System | None:
    return System.objects.filter(study=study, is_reference=True).order_by("position", "key").first()


def study_pairs(*, study: Study) -> list[Pair]:
    """Every pair of the study, in source then text order (see the module's docstring)."""
    reference = reference_system(study=study)
    simplifications = Simplification.objects.filter(source__study=study).order_by(
        "source__position", "shown_text_id"
    )
    if reference is None:
        rows = simplifications.values_list("source_id", "shown_text_id").distinct()
        return [Pair(source, text, None) for source, text in rows]
    reference_of = dict(simplifications.filter(system=reference).values_list("source_id", "shown_text_id"))
    rows = simplifications.filter(~Q(system=reference)).values_list("source_id", "shown_text_id").distinct()
    return [
        Pair(source, text, reference_of[source])
        for source, text in rows
        if source in reference_of and reference_of[source] != text
    ]


def participant_pairs(*, participant: Participant) -> list[Pair]:
    """The participant's pages in their own seeded order (stable across visits)."""
    return seeded_shuffle(
        study_pairs(study=participant.study), seed=participant.order_seed, purpose=ORDER_PURPOSE
    )


def pair_of(*, participant: Participant, shown_text_id: int) -> Pair | None:
    """The participant's page showing this text, or None where their survey has none."""
    for pair in study_pairs(study=participant.study):
        if pair.shown_text_id == shown_text_id:
            return pair
    return None


def pair_texts(pair: Pair) -> tuple[SimplificationText, str]:
    """The shown text and the reference's words (the source's where the source is the reference)."""
    shown = SimplificationText.objects.select_related("source").get(pk=pair.shown_text_id)
    if pair.reference_text_id is None:
        # Raters of pairs may be laypeople: the source as laypeople see it (privacy's reader).
        return shown, shown_source_text(source=shown.source, audience="lay")
    return shown, SimplificationText.objects.get(pk=pair.reference_text_id).text


def participant_language(participant: Participant, instrument: Instrument) -> str:
    """The language the participant sees an instrument in: theirs, else the study's, when the
    instrument offers it; else the instrument's default."""
    for language in (participant.language, participant.study.language):
        if language and language in instrument.languages:
            return language
    return instrument.default_language


def worded(text: Wording, language: str, default: str) -> str:
    return text.get(language) or text.get(default, "")


def citation_short(citation: Citation) -> str:
    """What participants see of an instrument's source: its `short` form, else authors and year
    (or venue). The full title is the researchers'."""
    if citation.short:
        return citation.short
    # A venue's parenthetical is a note for researchers ("(paper text in radlay's seeds)"), not for
    # participants.
    venue = re.sub(r"\s*\([^)]*\)", "", citation.venue).strip()
    when = str(citation.year) if citation.year is not None else venue
    return f"{citation.authors}, {when}" if when else citation.authors
