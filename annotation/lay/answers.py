"""Writes of the lay flow's answers: panel 1–2 answers (with panel 1's lock), panel 3's
preferences, and the items (LayItem) a layperson is given. Each answer service is idempotent,
validates its values and adds the time spent to the row's total."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Value
from django.utils import timezone

from annotation import scales
from annotation.models import (
    LayAnswer,
    LayItem,
    LayPreference,
    Participant,
    SimplificationText,
    Source,
    System,
)
from annotation.prepared_queries import PreparedQuery, PreparedUpdate
from annotation.survey_page import seeded_shuffle

if TYPE_CHECKING:
    pass


from annotation.answer_writes import AnswerLocked, answer_save_locked, level_clean, role_require


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


def lay_answer_save(
    *,
    item: LayItem,
    phase: str,
    answers: Mapping[str, str | None],
    time_spent_ms: int = 0,
    item_locked: bool = False,
) -> LayAnswer:
    """Save (part of) a panel's answers. Panel 1 (phase "original") is locked once panel 2 was
    shown; helpfulness (Q4) exists only in panel 2. `item_locked`: the caller holds the item's row
    lock and read `item` under it (the lay panels do), so it is not read again."""
    if phase not in LayAnswer.Phase.values:
        raise ValidationError({"phase": f"Unknown phase {phase!r} (original or assisted)."})
    clean: dict[str, str] = {}
    for name, value in answers.items():
        if name not in scales.LAY_QUESTIONS:
            raise ValidationError({name: f"Unknown question {name!r}."})
        if value is None:
            continue
        if name == "helpfulness" and phase != LayAnswer.Phase.ASSISTED:
            raise ValidationError({name: "Helpfulness (Q4) is asked only with the simplification (panel 2)."})
        clean[name] = level_clean(name, value, scales.LAY_SCALES[name])
    # No savepoint, as for the radiologist's answers: the values are checked before, and a refusal
    # is raised after the block, so that a caller's transaction survives it.
    with transaction.atomic(savepoint=False):
        locked_item = item if item_locked else LayItem.objects.select_for_update().get(pk=item.pk)
        if phase == LayAnswer.Phase.ORIGINAL and locked_item.original_locked_at is not None and clean:
            existing = LayAnswer.objects.filter(item=item, phase=phase).first()
            changed = existing is None or any(getattr(existing, k) != v for k, v in clean.items())
        else:
            changed = False
        if not changed:
            return answer_save_locked(LayAnswer, {"item": item, "phase": phase}, clean, time_spent_ms)
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
    calls this when the simplification is first shown (annotation/lay/panels.py); importers call
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

    row: LayPreference
    most: frozenset[int]
    least: frozenset[int]
    # With `exclusive`: the ticks refused because the text was in the other question too
    # ("most"/"least" -> text ids); everything else of the save is stored.
    refused: Mapping[str, frozenset[int]] = dataclasses.field(default_factory=dict)


# A preference's choices, both relations in one statement ("most"/"least", text id): SQL compiled once.
_CHOICE_RELATIONS = (("most", LayPreference.most.through), ("least", LayPreference.least.through))
_choice_rows = PreparedQuery(
    lambda preference_id: functools.reduce(
        lambda left, right: left.union(right, all=True),
        (
            through.objects.filter(laypreference_id=preference_id)
            .annotate(relation=Value(name))
            .values_list("relation", "simplificationtext_id")
            for name, through in _CHOICE_RELATIONS
        ),
    )
)


def lay_preference_choices(*, preference_id: int) -> dict[str, set[int]]:
    """The ids of the texts most and least liked in a preference, from one query."""
    chosen: dict[str, set[int]] = {name: set() for name, _ in _CHOICE_RELATIONS}
    for name, text_id in _choice_rows.rows(preference_id=preference_id):
        chosen[name].add(text_id)
    return chosen


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
    answer. (Imported answers may hold such a pair: two systems' identical texts are one text.)
    The choices are written as differences to the stored ones: a save that changes one question
    costs one statement for it."""
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
    with transaction.atomic(savepoint=False):
        # The UPDATE locks the preference row: concurrent saves of one item read and write in turn.
        preference = answer_save_locked(
            LayPreference,
            {"item": item},
            given,
            time_spent_ms,
            defaults={"order_shown": item.preference_order},
        )
        stored = lay_preference_choices(preference_id=preference.pk)
        wanted = {name: set(chosen) if chosen is not None else stored[name] for name, chosen in ids.items()}
        refused = preference_overlap_refused(stored=stored, wanted=wanted) if exclusive else {}
        for name, texts in refused.items():
            wanted[name] -= texts
        for name, through in _CHOICE_RELATIONS:
            if removed := stored[name] - wanted[name]:
                mine = through.objects.filter(laypreference_id=preference.pk)
                mine.filter(simplificationtext_id__in=removed).delete()
            if added := wanted[name] - stored[name]:
                through.objects.bulk_create(
                    [through(laypreference_id=preference.pk, simplificationtext_id=t) for t in sorted(added)],
                    ignore_conflicts=True,
                )
    return SavedPreference(
        preference,
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
