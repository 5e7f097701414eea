"""Writes of the lay flow's answers: panel 1–2 answers (with panel 1's lock), panel 3's
preferences (the protocol's items, stored as every answer is by annotation/answer_store.py, with
the panel as the answer's phase), and the items (LayItem) a layperson is given. Each answer service
is idempotent, validates its values and adds the time spent to the target's total."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation import scales
from annotation.answer_selectors import LayAnswerRow, PreferenceRow
from annotation.answer_store import (
    CLEAR,
    Target,
    Write,
    answers_upsert,
    answers_upsert_targets,
    flow_instrument_id,
    target_answers,
)
from annotation.answer_writes import AnswerLocked, level_clean, role_require
from annotation.instrument_binding import LAYPERSON_PRESET, PROTOCOL_BINDINGS
from annotation.models import (
    ItemAnswer,
    LayItem,
    Participant,
    SimplificationText,
    Source,
    StudyInstrument,
    System,
)
from annotation.prepared_queries import Joined, PreparedQuery, PreparedUpdate
from surveys.survey_page import seeded_shuffle

LAY = StudyInstrument.Flow.LAY.value
PHASES = (ItemAnswer.Phase.ORIGINAL.value, ItemAnswer.Phase.ASSISTED.value)
_BINDINGS = PROTOCOL_BINDINGS[LAYPERSON_PRESET]
_PREFERENCE_KEYS = ("most", "least", "most_justification", "least_justification")


def lay_item_create(
    *,
    participant: Participant,
    source: Source,
    position: int,
    shown_text: SimplificationText,
    assigned_system: System | None,
    preference_order: Sequence[int] | None = None,
) -> LayItem:
    role_require(participant, Participant.Role.LAYPERSON)
    if shown_text.source_id != source.pk:
        raise ValidationError("The assigned text is not a simplification of this source.")
    if preference_order is None:
        ids = sorted(
            SimplificationText.objects.filter(source=source, simplifications__isnull=False)
            .values_list("pk", flat=True)
            .distinct()
        )
        preference_order = seeded_shuffle(ids, seed=participant.order_seed, purpose=f"pref:{source.pk}")
    return LayItem.objects.create(
        participant=participant,
        source=source,
        position=position,
        shown_text=shown_text,
        assigned_system=assigned_system,
        preference_order=list(preference_order),
    )


def _targets(item: LayItem, phase: str) -> dict[str, Target]:
    """Where each of a panel's questions is stored: Q1-Q3 about the source, Q4 about the text."""
    on_source = Target(source_id=item.source_id, phase=phase)
    on_text = Target(source_id=item.source_id, shown_text_id=item.shown_text_id, phase=phase)
    return {name: on_text if name == "helpfulness" else on_source for name in scales.LAY_QUESTIONS}


_PANEL_KEYS = (*scales.LAY_QUESTIONS, *_PREFERENCE_KEYS)
_ANSWER = Joined(ItemAnswer)
# A save's read of the panel's stored rows: the same SQL on every autosave, written once.
_panel_rows = PreparedQuery(
    lambda participant_id, source_id, instrument_id: (
        ItemAnswer.objects.filter(
            participant_id=participant_id,
            source_id=source_id,
            instrument_id=instrument_id,
            item_key__in=_PANEL_KEYS,
            control__isnull=True,
        )
        .order_by("updated_at", "pk")
        .values_list(*_ANSWER.columns())
    )
)


def lay_panel_rows(*, item: LayItem, instrument_id: int | None = None) -> list[ItemAnswer]:
    """The item's stored answers to the protocol's lay questions and preference, both panels:
    under `instrument_id` (a save knows it: no join to the instrument's key), else under any
    version of the protocol's lay instrument."""
    if instrument_id is not None:
        return [
            _ANSWER.instances(row)
            for row in _panel_rows.rows(
                participant_id=item.participant_id, source_id=item.source_id, instrument_id=instrument_id
            )
        ]
    rows = ItemAnswer.objects.filter(
        participant_id=item.participant_id,
        source_id=item.source_id,
        instrument__key=LAYPERSON_PRESET,
        item_key__in=_PANEL_KEYS,
        control__isnull=True,
    )
    return list(rows.order_by("updated_at", "pk"))


def _folded(rows: Iterable[ItemAnswer], keep, make):
    """One typed row of the store's `rows` that `keep` selects: `make(first row)` starts it, each
    row adds its time, its latest change and its value (as the typed column); None when none."""
    typed = None
    for row in rows:
        if not keep(row):
            continue
        if typed is None:
            typed = make(row)
        typed.id = min(typed.id, row.pk)
        typed.time_spent_ms += row.time_spent_ms
        typed.updated_at = max(typed.updated_at or row.updated_at, row.updated_at)
        setattr(typed, row.item_key, _BINDINGS[row.item_key].column_of(row.value))
    return typed


def lay_answer_of(rows: Iterable[ItemAnswer], *, item: LayItem, phase: str) -> LayAnswerRow | None:
    """A panel's answers (phase "original" or "assisted") as one typed row, None when none."""
    return _folded(
        rows,
        lambda row: row.phase == phase and row.item_key in scales.LAY_QUESTIONS,
        lambda row: LayAnswerRow(
            id=row.pk,
            participant_id=item.participant_id,
            source_id=item.source_id,
            phase=phase,
            item_id=item.pk,
            created_at=row.created_at,
            updated_at=row.updated_at,
        ),
    )


def lay_preference_of(rows: Iterable[ItemAnswer], *, item: LayItem) -> PreferenceRow | None:
    """Panel 3's answers as one typed row, None when none."""
    return _folded(
        rows,
        lambda row: row.phase == ItemAnswer.Phase.PREFERENCE and row.item_key in _PREFERENCE_KEYS,
        lambda row: PreferenceRow(
            id=row.pk,
            participant_id=item.participant_id,
            source_id=item.source_id,
            item_id=item.pk,
            order_shown=list(item.preference_order),
            created_at=row.created_at,
            updated_at=row.updated_at,
        ),
    )


def lay_answer_save(
    *,
    item: LayItem,
    phase: str,
    answers: Mapping[str, str | None],
    time_spent_ms: int = 0,
    item_locked: bool = False,
) -> LayAnswerRow:
    """Save (part of) a panel's answers (level names by question). Panel 1 (phase "original") is
    locked once panel 2 was shown; helpfulness (Q4) exists only in panel 2. `item_locked`: the
    caller holds the item's row lock and read `item` under it (the lay panels do), so it is not
    read again."""
    if phase not in PHASES:
        raise ValidationError({"phase": f"Unknown phase {phase!r} (original or assisted)."})
    clean: dict[str, str] = {}
    for name, value in answers.items():
        if name not in scales.LAY_QUESTIONS:
            raise ValidationError({name: f"Unknown question {name!r}."})
        if value is None:
            continue
        if name == "helpfulness" and phase != ItemAnswer.Phase.ASSISTED:
            raise ValidationError({name: "Helpfulness (Q4) is asked only with the simplification (panel 2)."})
        clean[name] = level_clean(name, value, scales.LAY_SCALES[name])
    participant = item.participant
    # No savepoint, as for the radiologist's answers: the values are checked before, and a refusal
    # is raised after the block, so that a caller's transaction survives it.
    with transaction.atomic(savepoint=False):
        locked_item = item if item_locked else LayItem.objects.select_for_update().get(pk=item.pk)
        instrument_id = flow_instrument_id(study=participant.study, flow=LAY)
        rows = lay_panel_rows(item=locked_item, instrument_id=instrument_id)
        existing = lay_answer_of(rows, item=locked_item, phase=phase)
        if phase == ItemAnswer.Phase.ORIGINAL and locked_item.original_locked_at is not None and clean:
            changed = existing is None or any(getattr(existing, k) != v for k, v in clean.items())
        else:
            changed = False
        if not changed:
            targets = _targets(locked_item, phase)
            stored = {(r.item_key, r.phase): r for r in rows}
            # The panel's targets (the sentence, and the text for Q4) in one write: their new
            # answers in one INSERT; the time goes to the first.
            writes: list[Write] = []
            for target in dict.fromkeys(targets[name] for name in clean) or [targets["understanding"]]:
                keys = [name for name in clean if targets[name] == target]
                writes.append(
                    Write(
                        target,
                        {name: _BINDINGS[name].answer_of(clean[name]) for name in keys},
                        {name: stored[(name, phase)] for name in keys if (name, phase) in stored},
                        time_spent_ms if not writes else 0,
                    )
                )
            for written in answers_upsert_targets(
                participant=participant,
                instrument_id=instrument_id,
                writes=writes,
                language=participant.language,
            ):
                stored |= {(name, phase): row for name, row in written.items()}
            empty = LayAnswerRow(
                id=0,
                participant_id=item.participant_id,
                source_id=item.source_id,
                phase=phase,
                item_id=item.pk,
            )
            return lay_answer_of(stored.values(), item=locked_item, phase=phase) or empty
    raise AnswerLocked()


# The lock rule for a request that holds no lock on the item (showing panel 2, gate off): one
# conditional UPDATE, which changes nothing if panel 1 is locked already or the item moved on.
_lock_original_shown = PreparedUpdate(
    lambda item_id, now: (
        LayItem.objects.filter(pk=item_id, stage=LayItem.Stage.ASSISTED, original_locked_at__isnull=True),
        {"original_locked_at": now},
    )
)


def lay_item_lock_original_shown(*, item: LayItem) -> bool:
    """Lock panel 1 of an item in panel 2 whose panel 1 is not locked yet, without its row lock;
    whether it did (False: another request locked it, or the item moved on: read it again)."""
    now = timezone.now()
    if not _lock_original_shown.run(item_id=item.pk, now=now):
        return False
    item.original_locked_at = now
    return True


def lay_item_lock_original(*, item: LayItem) -> LayItem:
    """Lock panel 1: from now on `lay_answer_save` refuses to change its answers. The lay flow
    calls this when the simplification is first shown (surveys/lay/panels.py); importers call
    it for answers given in an earlier tool."""
    if item.original_locked_at is None:
        item.original_locked_at = timezone.now()
        if item.stage == LayItem.Stage.ORIGINAL:
            item.stage = LayItem.Stage.ASSISTED
        item.save(update_fields=["original_locked_at", "stage"])
    return item


@dataclass(frozen=True)
class SavedPreference:
    """A panel-3 save: the row and the texts most and least liked after it."""

    row: PreferenceRow
    most: frozenset[int]
    least: frozenset[int]
    # With `exclusive`: the ticks refused because the text was in the other question too
    # ("most"/"least" -> text ids); everything else of the save is stored.
    refused: Mapping[str, frozenset[int]] = dataclasses.field(default_factory=dict)


def lay_preference_save(
    *,
    item: LayItem,
    most: Iterable[int] | None = None,
    least: Iterable[int] | None = None,
    most_justification: str | None = None,
    least_justification: str | None = None,
    time_spent_ms: int = 0,
    exclusive: bool = False,
) -> SavedPreference:
    """Save panel 3. `most`/`least` are SimplificationText ids among the item's shown texts; None
    keeps a question's stored choice. With `exclusive` (the survey page's rule) a text cannot be
    both most and least liked: the tick that is already stored stays, the new tick of the same
    text in the other question is refused (both, when neither was stored: the two came in one
    request and nothing says which was meant), and every other part of the save is stored — the
    refused ticks are returned in `refused`, never raised, so a conflict never costs a valid
    answer. (Imported answers may hold such a pair: two systems' identical texts are one text.)"""
    allowed = set(item.preference_order)
    ids = {"most": _check_choice_ids("most", most, allowed)}
    ids["least"] = _check_choice_ids("least", least, allowed)
    given = {
        name: value.strip()
        for name, value in (
            ("most_justification", most_justification),
            ("least_justification", least_justification),
        )
        if value is not None
    }
    participant = item.participant
    target = Target(source_id=item.source_id, phase=ItemAnswer.Phase.PREFERENCE)
    with transaction.atomic(savepoint=False):
        instrument_id = flow_instrument_id(study=participant.study, flow=LAY)
        # The read locks the preference's rows: concurrent saves of one item read and write in turn.
        current = target_answers(
            participant_id=participant.pk,
            instrument_id=instrument_id,
            target=target,
            item_keys=_PREFERENCE_KEYS,
        )
        stored = {
            name: {int(t) for t in current[name].value} if name in current else set()
            for name in ("most", "least")
        }
        wanted = {name: set(chosen) if chosen is not None else stored[name] for name, chosen in ids.items()}
        refused = preference_overlap_refused(stored=stored, wanted=wanted) if exclusive else {}
        for name, texts in refused.items():
            wanted[name] -= texts
        values: dict[str, Any] = {
            name: (sorted(str(t) for t in wanted[name]), None) if wanted[name] else CLEAR
            for name in ("most", "least")
            if wanted[name] != stored[name]
        }
        values.update({name: (text, None) if text else CLEAR for name, text in given.items()})
        written = answers_upsert(
            participant=participant,
            instrument_id=instrument_id,
            target=target,
            values=values,
            language=participant.language,
            time_spent_ms=time_spent_ms,
            current=current,
        )
        rows = {**{k: v for k, v in current.items() if k not in values}, **written}
    row = lay_preference_of(rows.values(), item=item) or PreferenceRow(
        id=0, participant_id=participant.pk, source_id=item.source_id, item_id=item.pk
    )
    return SavedPreference(
        row,
        frozenset(wanted["most"]),
        frozenset(wanted["least"]),
        {name: frozenset(texts) for name, texts in refused.items() if texts},
    )


def preference_overlap_refused(
    *, stored: Mapping[str, set[int]], wanted: Mapping[str, set[int]]
) -> dict[str, set[int]]:
    """The ticks of panel 3 refused by the rule that a text is not both most and least liked: for
    a text wanted in both questions, the question where it is already stored keeps it and the
    other tick is refused; a text stored in neither is refused in both."""
    refused: dict[str, set[int]] = {"most": set(), "least": set()}
    for text in wanted["most"] & wanted["least"]:
        if text in stored["most"]:
            refused["least"].add(text)
        elif text in stored["least"]:
            refused["most"].add(text)
        else:
            refused["most"].add(text)
            refused["least"].add(text)
    return refused


def _check_choice_ids(name: str, ids: Iterable[int] | None, allowed: set[int]) -> list[int] | None:
    if ids is None:
        return None
    clean = []
    for raw in ids:
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise ValidationError({name: f"{raw!r} is not a simplification of this sentence."}) from None
        if value not in allowed:
            raise ValidationError({name: f"{raw!r} is not a simplification of this sentence."})
        clean.append(value)
    return sorted(set(clean))
