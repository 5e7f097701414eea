"""One page of the rate-each-pair flow: what it shows (each item with its stored or just-posted
answer), saving it, and where a participant is (progress, resume).

Saving (`pair_answers_save`) is all or nothing: every answer a request carries is checked with
`instruments.answers.item_value_validate` first, and if any is refused nothing is stored and each
refused item is named with its reason; otherwise each answer is written to ItemAnswer through
annotation/answer_store.py (value as JSON, score = `item_value_code` where it is a number). An
empty answer (a cleared text, no box ticked) removes the stored one. An autosave carries the
controls that changed; a plain submit the whole page.

Sentence matching (seed 000 section 4.4) is asked as a grid: the reference's sentences as rows, the
shown (generated) text's sentences as columns, split by `measures.metrics.sentences.split_sentences`
(the splitter the reference-based metrics use; a line break ends a sentence). Each row is answered by
ticking the generated sentences that match it or its "none" box, so "nothing matches" is told apart
from "not answered yet"; a grid is stored once every row is answered, and its score is
`sentence_matching_proportion` of the ticks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import QueryDict
from django.utils.translation import gettext as _

from annotation import participant_services
from annotation.answer_store import CLEAR, Target, answers_upsert
from annotation.item_questions import item_refusal
from annotation.models import ItemAnswer, Participant
from instruments.answers import (
    InvalidAnswer,
    SentenceMatches,
    item_value_code,
    item_value_validate,
)
from instruments.schema import AppliesTo, ItemKind
from measures.metrics.sentences import split_sentences
from surveys.radiologist.selectors import Progress
from surveys.rate_each_pair.selectors import (
    PageItem,
    Pair,
    citation_short,
    pair_texts,
    pairs_page_items,
    participant_language,
    participant_pairs,
    rater_group,
    worded,
)

# The autosave's list of checkbox groups it carries (survey.js `listField`): a group with nothing
# ticked then still reaches the server as "none ticked" rather than as "not sent".
LISTS_FIELD = "lists"
NONE_SUFFIX = ".none"


class GridRefused(ValueError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """A posted sentence-matching grid the page could not have sent (its message already in the
    participant's language); checked before the item's own check, item_value_validate."""


class PairsFlowError(ValidationError):
    """A request the flow refuses for where the participant is (the views answer 409)."""


# --- What a page shows -------------------------------------------------------------------------------


@dataclass
class ShownItem:
    """One item on a page, worded in the participant's language, with its answer: the stored
    value (as JSON), or what was just posted when a save was refused (so nothing typed is lost)."""

    asked: PageItem
    language: str
    value: Any = None
    error: str = ""
    # Sentence matching: the grid's rows (reference) and columns (generated), ticks and "none" rows.
    reference_sentences: list[str] = field(default_factory=list)
    generated_sentences: list[str] = field(default_factory=list)
    ticks: set[tuple[int, int]] = field(default_factory=set)
    none_rows: set[int] = field(default_factory=set)

    @property
    def item(self):  # noqa: ANN201 - instruments.schema.Item
        return self.asked.item

    @property
    def field(self) -> str:
        return self.asked.field

    @property
    def kind(self) -> str:
        return self.item.kind.value

    def _text(self, text) -> str:  # noqa: ANN001 - a Wording
        return worded(text, self.language, self.asked.asked.instrument.default_language)

    @property
    def title(self) -> str:
        return self._text(self.item.title)

    @property
    def wording(self) -> str:
        return self._text(self.item.wording)

    @property
    def help(self) -> str:
        return self._text(self.item.help)

    @property
    def points(self) -> list[dict[str, Any]]:
        scale = self.item.scale
        if scale is None:
            return []
        return [
            {"code": p.code, "label": self._text(p.label), "definition": self._text(p.definition)}
            for p in scale.points
        ]

    @property
    def not_applicable(self) -> str:
        return self._text(self.item.scale.not_applicable) if self.item.scale else ""

    @property
    def options(self) -> list[dict[str, str]]:
        return [{"key": o.key, "label": self._text(o.label)} for o in self.item.options]

    @property
    def chosen(self) -> list[str]:
        return [str(v) for v in self.value] if isinstance(self.value, list) else []

    @property
    def grid(self) -> list[dict[str, Any]]:
        return [
            {
                "index": r,
                "sentence": sentence,
                "cells": [(g, (r, g) in self.ticks) for g in range(len(self.generated_sentences))],
                "none": r in self.none_rows,
            }
            for r, sentence in enumerate(self.reference_sentences)
        ]

    @property
    def answered(self) -> bool:
        return self.value is not None and self.value != "" and self.value != []


@dataclass
class PairPageState:
    pair: Pair
    shown_text: str
    reference: str
    reference_is_source: bool
    items: list[ShownItem]
    number: int
    total: int
    previous_id: int | None
    following_id: int | None
    citations: list[str]

    @property
    def missing(self) -> list[str]:
        return [shown.field for shown in self.items if shown.item.required and not shown.answered]

    @property
    def complete(self) -> bool:
        return not self.missing


def _target(pair: Pair, page_item: PageItem) -> dict[str, Any]:
    reference = pair.reference_text_id if page_item.item.applies_to is AppliesTo.PAIR else None
    return {"source_id": pair.source_id, "shown_text_id": pair.shown_text_id, "reference_text_id": reference}


def _stored(participant: Participant, pair: Pair, items: list[PageItem]) -> dict[str, ItemAnswer]:
    rows = ItemAnswer.objects.filter(
        participant=participant,
        shown_text_id=pair.shown_text_id,
        instrument_id__in={page_item.asked.row.pk for page_item in items},
    )
    by_key = {(row.instrument_id, row.item_key, row.reference_text_id): row for row in rows}
    found = {}
    for page_item in items:
        row = by_key.get(
            (page_item.asked.row.pk, page_item.item.key, _target(pair, page_item)["reference_text_id"])
        )
        if row is not None:
            found[page_item.field] = row
    return found


def _grid_from_value(shown: ShownItem, value: Any) -> None:
    if isinstance(value, Mapping):
        rows = value.get("matches") or []
        shown.ticks = {(r, int(g)) for r, row in enumerate(rows) for g in row}
        shown.none_rows = {r for r, row in enumerate(rows) if not row}


def pair_page_get(
    *,
    participant: Participant,
    pair: Pair,
    posted: QueryDict | None = None,
    errors: Mapping[str, list[str]] | None = None,
) -> PairPageState:
    """The page of `pair` for `participant`; with `posted` (a refused save), its answers are the
    ones just posted and `errors` marks the refused items."""
    items = pairs_page_items(study=participant.study, group=rater_group(participant))
    shown_text, reference = pair_texts(pair)
    stored = _stored(participant, pair, items)
    shown_items = []
    for page_item in items:
        language = participant_language(participant, page_item.asked.instrument)
        shown = ShownItem(
            asked=page_item, language=language, error=" ".join((errors or {}).get(page_item.field, []))
        )
        if page_item.item.kind is ItemKind.SENTENCE_MATCHING:
            shown.reference_sentences = split_sentences(reference)
            shown.generated_sentences = split_sentences(shown_text.text)
        row = stored.get(page_item.field)
        shown.value = row.value if row is not None else None
        if page_item.item.kind is ItemKind.SENTENCE_MATCHING:
            _grid_from_value(shown, shown.value)
            if posted is not None:
                # Malformed cells (its error is shown): the stored grid stays on the page.
                with contextlib.suppress(GridRefused):
                    shown.ticks, shown.none_rows = _grid_posted(page_item, posted)
        elif posted is not None:
            shown.value = _posted_value(page_item, posted)
        shown_items.append(shown)
    order = [p.shown_text_id for p in participant_pairs(participant=participant)]
    index = order.index(pair.shown_text_id)
    citations = []
    for page_item in items:
        short = citation_short(page_item.asked.instrument.citation)
        if short not in citations:
            citations.append(short)
    return PairPageState(
        pair=pair,
        shown_text=shown_text.text,
        reference=reference,
        reference_is_source=pair.reference_text_id is None,
        items=shown_items,
        number=index + 1,
        total=len(order),
        previous_id=order[index - 1] if index > 0 else None,
        following_id=order[index + 1] if index + 1 < len(order) else None,
        citations=citations,
    )


# --- Reading a posted page ---------------------------------------------------------------------------


def _given(page_item: PageItem, data: QueryDict, *, whole_page: bool) -> bool:
    """Whether the request answers this item: a plain submit answers every item (an empty control
    clears it); an autosave the controls it carries."""
    if whole_page:
        return True
    name = page_item.field
    lists = set(data.getlist(LISTS_FIELD))
    names = {name, name + NONE_SUFFIX}
    return any(n in data or n in lists for n in names)


def _posted_value(page_item: PageItem, data: QueryDict) -> Any:
    kind = page_item.item.kind
    if kind is ItemKind.MULTIPLE_CHOICE:
        return data.getlist(page_item.field)
    if kind is ItemKind.SENTENCE_MATCHING:
        return None  # read by _grid_posted
    return data.get(page_item.field, "")


def _grid_posted(page_item: PageItem, data: QueryDict) -> tuple[set[tuple[int, int]], set[int]]:
    """The ticked cells ("r-g": reference sentence r matches generated sentence g) and the rows
    ticked "none"; a malformed cell is refused (GridRefused)."""
    ticks = set()
    for cell in data.getlist(page_item.field):
        parts = str(cell).split("-")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise GridRefused(_("%(cell)s is not a cell of the grid") % {"cell": repr(cell)})
        ticks.add((int(parts[0]), int(parts[1])))
    nones = set()
    for row in data.getlist(page_item.field + NONE_SUFFIX):
        if not str(row).isdigit():
            raise GridRefused(_("%(row)s is not a row of the grid") % {"row": repr(row)})
        nones.add(int(row))
    return ticks, nones


def _grid_raw(page_item: PageItem, data: QueryDict, *, references: int, generated: int) -> Any:
    """The item_value_validate input of a posted grid; None where nothing in it is ticked."""
    ticks, nones = _grid_posted(page_item, data)
    if not ticks and not nones:
        return None
    for r, g in ticks:
        if not (0 <= r < references and 0 <= g < generated):
            raise GridRefused(_("%(cell)s is not a cell of the grid") % {"cell": f"{r}-{g}"})
    if any(not 0 <= r < references for r in nones):
        raise GridRefused(_("a “None” box outside the grid"))
    rows = [sorted(g for rr, g in ticks if rr == r) for r in range(references)]
    both = [r + 1 for r in range(references) if rows[r] and r in nones]
    if both:
        raise GridRefused(
            _("reference sentence %(n)s is ticked both as matching and as “None”") % {"n": both[0]}
        )
    open_rows = [r + 1 for r in range(references) if not rows[r] and r not in nones]
    if open_rows:
        raise GridRefused(
            _(
                "reference sentence %(n)s has no answer yet: tick the generated sentences that match "
                "it, or “None”"
            )
            % {"n": open_rows[0]}
        )
    return {"generated_count": generated, "matches": rows}


def _json(value: Any) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, SentenceMatches):
        return {"generated_count": value.generated_count, "matches": [sorted(row) for row in value.matches]}
    return value


# --- Saving ------------------------------------------------------------------------------------------


def pair_answers_save(
    *, participant: Participant, pair: Pair, data: QueryDict, time_spent_ms: int = 0, whole_page: bool = False
) -> list[str]:
    """Store the answers `data` carries for the page of `pair` (all or nothing; ValidationError
    keyed by each refused item's field). Returns the fields written or cleared. `time_spent_ms` is
    added to the page's first answer written (a page's time is the sum over its answers)."""
    if participant.consented_at is None:
        raise PairsFlowError(_("Please read and agree to the study information first."))
    if participant.completed_at is not None:
        raise PairsFlowError(_("You have finished this survey; answers can no longer be changed."))
    items = pairs_page_items(study=participant.study, group=rater_group(participant))
    shown_text, reference = pair_texts(pair)
    writes: list[tuple[PageItem, Any]] = []
    clears: list[PageItem] = []
    errors: dict[str, list[str]] = {}
    for page_item in items:
        if not _given(page_item, data, whole_page=whole_page):
            continue
        item = page_item.item
        try:
            if item.kind is ItemKind.SENTENCE_MATCHING:
                raw = _grid_raw(
                    page_item,
                    data,
                    references=len(split_sentences(reference)),
                    generated=len(split_sentences(shown_text.text)),
                )
            else:
                raw = _posted_value(page_item, data)
            if raw is None or raw == "" or raw == [] or (isinstance(raw, str) and not raw.strip()):
                clears.append(page_item)
                continue
            if isinstance(raw, str) and "\x00" in raw:
                raise GridRefused(_("contains a character that cannot be saved (NUL)"))
            writes.append((page_item, item_value_validate(item, raw)))
        except (InvalidAnswer, GridRefused) as exc:
            # Named as the page shows it (the participant's language of the instrument).
            title = (
                worded(
                    item.title,
                    participant_language(participant, page_item.asked.instrument),
                    page_item.asked.instrument.default_language,
                )
                or item.key
            )
            reason = item_refusal(exc) if isinstance(exc, InvalidAnswer) else str(exc)
            errors[page_item.field] = [f"{title}: {reason}"]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        # One save of a participant at a time: two racing first answers to an item cannot collide.
        Participant.objects.select_for_update().filter(pk=participant.pk).values_list("pk", flat=True).get()
        time_left = time_spent_ms
        for page_item, value in writes:
            code = item_value_code(page_item.item, value)
            answers_upsert(
                participant=participant,
                instrument_id=page_item.asked.row.pk,
                target=Target(**_target(pair, page_item)),
                values={page_item.item.key: (_json(value), code if isinstance(code, float) else None)},
                language=participant_language(participant, page_item.asked.instrument),
                time_spent_ms=time_left,
            )
            time_left = 0
        for page_item in clears:
            answers_upsert(
                participant=participant,
                instrument_id=page_item.asked.row.pk,
                target=Target(**_target(pair, page_item)),
                values={page_item.item.key: CLEAR},
            )
    return [page_item.field for page_item, _value in writes] + [page_item.field for page_item in clears]


def pairs_consent_accept(*, participant: Participant) -> Participant:
    """The participant agreed: record it, their activity, and the language they are shown the
    questions in (the exports record it), where none is recorded yet."""
    participant_services.participant_consent(participant=participant, accepted=True)
    participant_services.participant_touch(participant=participant)
    items = pairs_page_items(study=participant.study, group=rater_group(participant))
    if items and not participant.language:
        participant.language = participant_language(participant, items[0].asked.instrument)
        participant.save(update_fields=["language"])
    return participant


# --- Where a participant is --------------------------------------------------------------------------


def _complete_texts(participant: Participant) -> tuple[list[Pair], set[int]]:
    pairs = participant_pairs(participant=participant)
    required = [
        page_item
        for page_item in pairs_page_items(study=participant.study, group=rater_group(participant))
        if page_item.item.required
    ]
    answered = set(
        ItemAnswer.objects.filter(
            participant=participant, instrument_id__in={p.asked.row.pk for p in required}
        ).values_list("instrument_id", "item_key", "shown_text_id", "reference_text_id")
    )
    complete = {
        pair.shown_text_id
        for pair in pairs
        if all(
            (p.asked.row.pk, p.item.key, pair.shown_text_id, _target(pair, p)["reference_text_id"])
            in answered
            for p in required
        )
    }
    return pairs, complete


def pairs_progress(*, participant: Participant) -> Progress:
    pairs, complete = _complete_texts(participant)
    return Progress(done=len(complete), total=len(pairs))


def pairs_resume(*, participant: Participant) -> Pair | None:
    """The first page in the participant's order that is not complete; None when all are."""
    pairs, complete = _complete_texts(participant)
    return next((pair for pair in pairs if pair.shown_text_id not in complete), None)
