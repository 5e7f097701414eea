"""Where a lay participant is: `lay_next_step(participant)` is the one rule that every lay view and
redirect follows (resume after a break, refuse a page out of turn), and `lay_progress` what the
progress bar shows. Both cost a few queries whatever the study's size and the participant's
progress."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import CharField, Count, Func, OuterRef, Q, Subquery, Value

from annotation.access import (
    access_lay_item,
    access_participant,
    participant_admit,
    shown_text_attach,
    token_possible,
)
from annotation.models import AttentionCheck, LayItem, Participant
from annotation.prepared_queries import Joined, PreparedQuery
from annotation.qualification_states import GATED as PRACTICE_STATES
from surveys.lay.selectors import ASSISTED, DONE, PREFERENCE, lay_background_pending, panel_number

# Step kinds, in the order a participant meets them.
COMPLETED = "completed"  # finished: the completion code (shown even after the study closed)
CLOSED = "closed"  # the study is not open
RETURNED = "returned"  # returned or withdrawn (e.g. on Prolific): may not continue
PRACTICE = "practice"  # the qualification round is due (or ended it): its pages, not the survey's
SCREENED = "screened"  # ended by failed attention checks (Study.screen_out_after_failed_checks)
DECLINED = "declined"
CONSENT = "consent"
BACKGROUND = "background"
INSTRUCTIONS = "instructions"
CHECK = "check"  # an attention check due before the next item
ITEM = "item"  # a panel of an item
COMPLETE = "complete"  # everything answered: completing hands out the code
# Steps of a participant who may answer (after consent, before completion).
IN_SURVEY = frozenset({BACKGROUND, INSTRUCTIONS, CHECK, ITEM, COMPLETE})


@dataclass(frozen=True)
class LayStep:
    kind: str
    item: LayItem | None = None
    panel: str | None = None
    check: AttentionCheck | None = None

    @property
    def in_survey(self) -> bool:
        return self.kind in IN_SURVEY

    def is_panel(self, *, item_id: int, panel: str) -> bool:
        return self.kind == ITEM and self.item is not None and self.item.pk == item_id and self.panel == panel


def lay_standing(*, participant: Participant) -> LayStep | None:
    """The step of a participant who is not answering (finished, study closed, returned, screened
    out, declined, not consented yet), from the participant row alone; None for one in the survey.
    Where such a participant goes needs no query; `lay_next_step` starts here."""
    if participant.completed_at is not None:
        return LayStep(COMPLETED)
    if not participant.may_answer:
        return LayStep(CLOSED)
    if participant.returned_at is not None:
        return LayStep(RETURNED)
    if participant.qualification in PRACTICE_STATES:  # screened out by the round: its end page
        return LayStep(PRACTICE)
    if participant.screened_out_at is not None:
        return LayStep(SCREENED)
    if participant.declined_at is not None:
        return LayStep(DECLINED)
    if participant.consented_at is None:
        return LayStep(CONSENT)
    return None


# Asked by every lay request (the saves under the item's lock): SQL compiled once per process.
_CURRENT_ITEM = Joined(LayItem, "source", "shown_text")


def _unanswered_checks(study_id, participant_id):
    return (
        AttentionCheck.objects.filter(study_id=study_id)
        .exclude(responses__participant_id=participant_id)
        .order_by("position")
    )


# The first unfinished item is found on its own (the partial index lay_item_unfinished) and only
# then joined: joined first, the database may join all of a participant's unfinished items and sort
# them when its statistics do not know the participant yet. The position of the next unanswered
# attention check comes with it: the check itself is read only when it is due.
# "Not done" is compared with the literal 'done', not a parameter: the index's condition is that
# literal comparison, and only then can a prepared statement's generic plan (the one PostgreSQL
# keeps after five runs) prove that the index covers the query. With a parameter it walked the
# participant's whole index and skipped the done items: ~1 ms a statement 1,500 sentences in.
_DONE_LITERAL = Func(template=f"'{DONE}'", output_field=CharField())


def _first_unfinished(participant_id):
    return (
        LayItem.objects.filter(participant_id=participant_id)
        .exclude(stage=_DONE_LITERAL)
        .order_by("position")
    )


def _next_check_position(study_id, participant_id):
    return Subquery(_unanswered_checks(study_id, participant_id).values("position")[:1])


_current_item_rows = PreparedQuery(
    lambda participant_id, study_id: (
        LayItem.objects.filter(pk=Subquery(_first_unfinished(participant_id).values("pk")[:1]))
        .annotate(check_position=_next_check_position(study_id, participant_id))
        # With the source's de-identified text: what the panel shows (privacy.selectors.source_text).
        .values_list(*_CURRENT_ITEM.columns(), "source__deidentification__text", "check_position")
    )
)
# A save's item under its row lock, with what says whether it is where the participant is: the
# first unfinished item and the next check's position, as lay_next_step reads them. (Read in the
# locking statement's snapshot: only the locked row can have changed while it waited, and that row
# is read as committed, so a save compares the item's fresh stage first.)
_locked_item_rows = PreparedQuery(
    lambda item_id, participant_id, study_id: (
        LayItem.objects.select_for_update(of=("self",))
        .filter(pk=item_id)  # by key alone (whose it is is checked after): see access_lay_item
        .annotate(
            first_unfinished=Subquery(_first_unfinished(participant_id).values("pk")[:1]),
            check_position=_next_check_position(study_id, participant_id),
        )
        .values_list(*_CURRENT_ITEM.columns(), "first_unfinished", "check_position")
    )
)
# The same for an autosave, its first statement: the participant found by the URL's token in the
# same statement (joined to the locked item, whose own row alone is locked), so that the token
# costs no round trip of its own. Whose the item is is the join itself.
_LOCKED_ITEM = Joined(LayItem, "source", "shown_text", "participant", "participant__study")
_locked_item_by_token_rows = PreparedQuery(
    lambda item_id, token: (
        LayItem.objects.select_for_update(of=("self",))
        .filter(pk=item_id, participant__token=token)
        .annotate(
            first_unfinished=Subquery(_first_unfinished(OuterRef("participant_id")).values("pk")[:1]),
            check_position=_next_check_position(
                OuterRef("participant__study_id"), OuterRef("participant_id")
            ),
        )
        .values_list(*_LOCKED_ITEM.columns(), "first_unfinished", "check_position")
    )
)
_CHECK = Joined(AttentionCheck)
_next_check_rows = PreparedQuery(
    lambda study_id, participant_id: _unanswered_checks(study_id, participant_id).values_list(
        *_CHECK.columns()
    )[:1]
)


def lay_next_step(*, participant: Participant) -> LayStep:
    """Where the participant goes next: the finished page, a refusal (study closed, returned,
    declined), consent, background, instructions, the attention check due before their first
    unfinished item, that item's current panel, or "complete"."""
    standing = lay_standing(participant=participant)
    if standing is not None:
        return standing
    rows = _current_item_rows.rows(participant_id=participant.pk, study_id=participant.study_id)
    if not rows:
        if not LayItem.objects.filter(participant=participant).exists():
            return LayStep(BACKGROUND if lay_background_pending(participant=participant) else INSTRUCTIONS)
        check = _next_check(participant)
        return LayStep(CHECK, check=check) if check is not None else LayStep(COMPLETE)
    *columns, deidentified, check_position = rows[0]
    item = _CURRENT_ITEM.instances(columns)
    shown_text_attach(item.source, deidentified)
    item.participant = participant  # already loaded, with its study: what the panel reads
    check = _check_due(participant, item, check_position)
    return LayStep(CHECK, check=check) if check is not None else LayStep(ITEM, item=item, panel=item.stage)


def _check_due(participant: Participant, item: LayItem, check_position: int | None) -> AttentionCheck | None:
    """The attention check due before the participant's first unfinished `item`, given the position
    of their next unanswered check. A check at position p is due once p items are behind; an item's
    index never exceeds its position, so only then is the (rarely needed) count of earlier items
    asked for."""
    if check_position is None or check_position > item.position:
        return None
    if check_position > LayItem.objects.filter(participant=participant, position__lt=item.position).count():
        return None
    return _next_check(participant)


def lay_item_for_save(*, participant: Participant, item_id: int) -> tuple[LayItem, bool]:
    """The participant's item `item_id` under its row lock (call inside a transaction), and whether
    it is the item lay_next_step would show now (first unfinished, no attention check due), from one
    query. Whether the participant may answer at all (lay_standing) is the caller's to ask; someone
    else's item is a 404."""
    rows = _locked_item_rows.rows(
        item_id=int(item_id), participant_id=participant.pk, study_id=participant.study_id
    )
    item = _CURRENT_ITEM.instances(rows[0][:-2]) if rows else None
    if item is None or item.participant_id != participant.pk:
        access_lay_item(participant=participant, item_id=item_id)  # raises the 404 of a foreign item
    assert item is not None  # a missing item is a 404 too
    first_unfinished, check_position = rows[0][-2:]
    item.participant = participant
    current = first_unfinished == item.pk and _check_due(participant, item, check_position) is None
    return item, current


@dataclass(frozen=True)
class LayPanelSave:
    """The participant of a save to a panel URL and, when the save's first statement found the
    item theirs, the item under its row lock and whether it is the one they are at
    (lay_item_for_save's answer, for panels.lay_panel_save's `locked`)."""

    participant: Participant
    item_id: int
    locked: tuple[LayItem, bool] | None = None


def lay_panel_for_save(*, token: str, item_id: int, role: str, require_open: bool = True) -> LayPanelSave:
    """The token's participant and its item `item_id` under the item's row lock, in one statement
    (call inside the save's transaction): lay_item_for_save with the token resolved in the same
    query. A token that is not a participant's, or an item that is not theirs, is resolved as
    access_participant resolves it (its refusals first), without the lock: the save then takes it
    itself, and refuses someone else's item as it always did."""
    token = str(token)
    rows = _locked_item_by_token_rows.rows(item_id=int(item_id), token=token) if token_possible(token) else []
    if not rows:
        return LayPanelSave(
            access_participant(token=token, role=role, require_open=require_open), int(item_id)
        )
    item = _LOCKED_ITEM.instances(rows[0][:-2])
    participant = participant_admit(item.participant, role=role, require_open=require_open)
    first_unfinished, check_position = rows[0][-2:]
    current = first_unfinished == item.pk and _check_due(participant, item, check_position) is None
    return LayPanelSave(participant, item.pk, (item, current))


def _next_check(participant: Participant) -> AttentionCheck | None:
    rows = _next_check_rows.rows(study_id=participant.study_id, participant_id=participant.pk)
    return _CHECK.instances(rows[0]) if rows else None


@dataclass(frozen=True)
class LayProgress:
    done: int
    total: int
    items_total: int
    item_number: int | None = None  # 1-based, of the current item
    panel_number: int | None = None
    panels_total: int | None = None

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


# Asked by every lay page, in one statement: the participant's items by stage (a row "items") and
# the study's attention checks with those answered (a row "checks"); a query with nothing to count
# has no row. SQL compiled once per process.
_THREE = Q(preference_order__1__isnull=False)  # panel 3 needs two texts to compare
_ITEM_COUNTS = {
    "items": Count("pk"),
    "three": Count("pk", filter=_THREE),
    "assisted": Count("pk", filter=Q(stage=ASSISTED)),
    "preference": Count("pk", filter=Q(stage=PREFERENCE)),
    "done": Count("pk", filter=Q(stage=DONE)),
    "done_three": Count("pk", filter=Q(stage=DONE) & _THREE),
}
_CHECK_COUNTS = ("n", "answered")


def _counted(queryset, field: str, kind: str, counts: list):
    # Both rows have as many columns as the item counts: the check counts are padded with zeros.
    padded = {
        f"c{n}": count for n, count in enumerate(counts + [Value(0)] * (len(_ITEM_COUNTS) - len(counts)))
    }
    return queryset.order_by().values(field).annotate(kind=Value(kind), **padded).values_list("kind", *padded)


_progress_rows = PreparedQuery(
    lambda participant_id, study_id: _counted(
        LayItem.objects.filter(participant_id=participant_id),
        "participant_id",
        "items",
        [*_ITEM_COUNTS.values()],
    ).union(
        _counted(
            AttentionCheck.objects.filter(study_id=study_id),
            "study_id",
            "checks",
            [  # _CHECK_COUNTS
                Count("pk", distinct=True),
                Count("responses", filter=Q(responses__participant_id=participant_id), distinct=True),
            ],
        ),
        all=True,
    )
)


def _progress_counts(participant: Participant) -> tuple[dict[str, int], dict[str, int]]:
    """(the participant's item counts, the study's check counts), each 0 where there is nothing."""
    items = dict.fromkeys(_ITEM_COUNTS, 0)
    checks = dict.fromkeys(_CHECK_COUNTS, 0)
    for kind, *values in _progress_rows.rows(participant_id=participant.pk, study_id=participant.study_id):
        if kind == "items":
            items = dict(zip(_ITEM_COUNTS, values, strict=True))
        else:
            checks = dict(zip(_CHECK_COUNTS, values[: len(_CHECK_COUNTS)], strict=True))
    return items, checks


def lay_progress(*, participant: Participant, step: LayStep) -> LayProgress:
    """Panels and attention checks done / in all, counted in the database (one query)."""
    counts, checks = _progress_counts(participant)
    total = checks["n"] + 2 * counts["items"] + counts["three"]
    done = (
        checks["answered"]
        + counts["assisted"]
        + 2 * counts["preference"]
        + 2 * counts["done"]
        + counts["done_three"]
    )
    if step.kind == ITEM:
        assert step.item is not None and step.panel is not None  # an item's step names both
        panels_total = 3 if len(step.item.preference_order) >= 2 else 2
        return LayProgress(
            done=done,
            total=total,
            items_total=counts["items"],
            item_number=step.item.position + 1,
            panel_number=panel_number(step.panel),
            panels_total=panels_total,
        )
    return LayProgress(done=done, total=total, items_total=counts["items"])
