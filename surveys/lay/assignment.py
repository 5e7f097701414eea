"""The Latin-square row handout (DESIGN.md "Latin square"; measures/latin_square.py computes).

A newcomer gets a row when they start the survey (after the instructions), chosen under a lock on
the study row from the rows of the live participants (surveys/lay/selectors.py), so two
newcomers never take the same free row and a row freed by a dropout is handed out first. An
abandoned participant keeps `latin_square_row` (it says which row their items came from; their
answers are kept and analysed); if they come back they resume their own items, and the row then
has two holders, which the researcher's progress page shows.

All items (one per source, display order drawn from `Participant.order_seed`) are created at the
start. New participants get the next non-withheld system in row order and a panel 3 without
withheld texts; the gate is applied again when a participant already in the survey first opens
panel 2 or 3 of a source, so a text withheld meanwhile is never shown; if every text of that
source is withheld the source ends after panel 1.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.allocation_hooks import RecruitmentClosed, adaptive_row
from annotation.models import ItemAnswer, LayItem, Participant, Study
from measures import latin_square
from surveys.lay.errors import LayFlowError, StudyNotReady
from surveys.lay.selectors import DONE, LayDesign, lay_design, lay_live_rows, lay_withheld_text_ids
from surveys.survey_page import seeded_shuffle


def _preference_order(
    participant: Participant, source_id: int, text_ids: Collection[int], withheld: Collection[int]
) -> list[int]:
    ids = sorted(t for t in text_ids if t not in withheld)
    return seeded_shuffle(ids, seed=participant.order_seed, purpose=f"pref:{source_id}")


def _next_row(*, study: Study, design: LayDesign, live_rows: list[int]) -> int | None:
    """The fixed square's next row, or the adaptive allocation's while the study has it on
    (evaluation/planning/adaptive.py, registered in annotation/allocation_hooks.py); None when the adaptive
    allocation closed recruitment (its closure is kept: no exception inside the handout's
    transaction)."""
    try:
        row = adaptive_row(study=study, design=design, live_rows=live_rows)
    except RecruitmentClosed:
        return None
    return latin_square.next_row(design.square, live_rows) if row is None else row


def _row_handout(
    *, participant: Participant, design: LayDesign, unavailable: set[tuple[int, int]], now: datetime | None
) -> int:
    """The participant's Latin-square row: theirs if they hold one, else the next free row, chosen
    and recorded under the study's row lock. Only this short transaction is serialised, so
    newcomers arriving together (a recruitment launch) wait for each other's handout, not for each
    other's items."""
    held = Participant.objects.filter(pk=participant.pk).values_list("latin_square_row", flat=True).get()
    if held is not None:
        return held
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=participant.study_id)
        locked = Participant.objects.select_for_update().get(pk=participant.pk)
        if locked.latin_square_row is not None:  # a second tab took it meanwhile
            return locked.latin_square_row
        row = _next_row(study=study, design=design, live_rows=lay_live_rows(study=study, now=now))
        if row is not None:
            if all(j is None for j in design.square.assignment(row, unavailable=unavailable).values()):
                raise StudyNotReady(_("No sentence of this study can be shown at the moment."))
            locked.latin_square_row = row
            locked.save(update_fields=["latin_square_row"])
    if row is None:
        raise StudyNotReady(_("This study has all the answers it needs: thank you for your interest."))
    return row


def lay_survey_start(*, participant: Participant, now: datetime | None = None) -> list[LayItem]:
    """Hand the participant a Latin-square row and create their items (idempotent: a second call,
    e.g. a double click, returns the existing items). The row is handed out first, in its own
    transaction under the study's row lock (so two newcomers never take the same free row); the
    items are then inserted in one statement under the participant's row lock. A participant
    holding a row without items (the second step failed) gets them at the next call."""
    if participant.role != Participant.Role.LAYPERSON:
        raise ValidationError("Only lay participants take the lay survey.")
    if participant.consented_at is None:
        raise LayFlowError(_("Please give your consent before starting the survey."))
    study = participant.study
    design = lay_design(study=study)
    withheld = lay_withheld_text_ids(study=study)
    unavailable = design.unavailable(withheld)
    row = _row_handout(participant=participant, design=design, unavailable=unavailable, now=now)
    with transaction.atomic():
        locked = Participant.objects.select_for_update().get(pk=participant.pk)
        existing = list(LayItem.objects.filter(participant=locked).order_by("position"))
        if existing:
            return existing
        assignment = design.square.assignment(row, unavailable=unavailable)
        display = seeded_shuffle(design.square.sources(row), seed=locked.order_seed, purpose="lay-order")
        items: list[LayItem] = []
        for i in display:
            j = assignment[i]
            if j is None:  # every text of this source is withheld
                continue
            source_id = design.source_ids[i]
            items.append(
                LayItem(
                    participant=locked,
                    source_id=source_id,
                    position=len(items),
                    shown_text_id=design.text_of[(i, j)],
                    assigned_system_id=design.system_ids[j],
                    preference_order=_preference_order(
                        locked, source_id, design.texts_of_source[source_id], withheld
                    ),
                )
            )
        if not items:
            raise StudyNotReady(_("No sentence of this study can be shown at the moment."))
        # One insert for the whole survey (thousands of items when a study shows every source).
        items = LayItem.objects.bulk_create(items, batch_size=1000)
    participant.latin_square_row = row
    return items


def lay_item_apply_safety_gate(*, item: LayItem) -> LayItem:
    """Re-apply the gate just before a panel first shows texts: panel 2's text is re-assigned (next
    available system in the participant's row order) if it was withheld since the item was made,
    and panel 3 drops withheld texts. Answers already given are never touched. Call inside a
    transaction holding the item's row lock."""
    study = item.participant.study
    withheld = lay_withheld_text_ids(study=study, among={item.shown_text_id, *item.preference_order})
    if not withheld:
        return item
    changed = []
    if item.original_locked_at is None and item.shown_text_id in withheld:
        design = lay_design(study=study)
        i = design.source_index(item.source_id)
        # Texts of this source withheld before the item was made are not in its preference order.
        withheld |= lay_withheld_text_ids(study=study, among=design.texts_of_source[item.source_id])
        row = item.participant.latin_square_row or 0
        j = design.square.assignment(row, unavailable=design.unavailable(withheld)).get(i)
        if j is None:
            # Nothing safe to show for this source: it ends with panel 1.
            item.stage, item.completed_at = DONE, timezone.now()
            item.preference_order = []
            changed += ["stage", "completed_at", "preference_order"]
        else:
            item.shown_text_id = design.text_of[(i, j)]
            item.assigned_system_id = design.system_ids[j]
            changed += ["shown_text", "assigned_system"]
    if not lay_preference_answered(item=item):
        kept = [t for t in item.preference_order if t not in withheld]
        if kept != item.preference_order:
            item.preference_order = kept
            changed.append("preference_order")
    if changed:
        item.save(update_fields=sorted(set(changed)))
        if "shown_text" in changed:
            item = LayItem.objects.select_related("participant__study", "source", "shown_text").get(
                pk=item.pk
            )
    return item


def lay_preference_answered(*, item: LayItem) -> bool:
    """Whether panel 3 of the item holds any answer (its order may no longer change)."""
    return ItemAnswer.objects.filter(
        participant_id=item.participant_id, source_id=item.source_id, phase=ItemAnswer.Phase.PREFERENCE
    ).exists()
