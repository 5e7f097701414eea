"""The lay survey flow (seed 003 Figure 1, section 5.4): services and selectors of one layperson's
path through a study. Views stay thin: they parse the request and call one function here.

Path: consent → optional background questions → instructions → per source three panels
(original; original + the simplification the Latin square assigns; all simplifications) with the
study's attention checks in between → completion code.

Decisions worth knowing:

- Latin-square rows (annotation/latin_square.py) are handed out when the participant starts the
  survey (after the instructions), under a lock on the study row, from the rows of the *live*
  participants: completed ones, and active ones. A participant is *abandoned* when not completed
  and either returned (`returned_at`) or idle for `Study.abandon_after_minutes`. An abandoned
  participant's row no longer counts, so the next newcomer gets it first. The abandoned
  participant keeps `latin_square_row` (it says which row their items came from; their answers are
  kept and analysed); if they come back they resume their own items, and the row then has two
  holders, which the balance page shows.
- The survey's items (one per source, display order drawn from `Participant.order_seed`) are all
  created at the start. Systems and sources without a simplification take no part in the square.
- Safety gate (`Study.safety_gate_enabled`): a text any radiologist rated at or below
  `Study.safety_gate_threshold` on Hallucination or Correctness is withheld. New participants get
  the next non-withheld system in row order and a panel 3 without it. The gate is also applied
  when a participant already in the survey first opens panel 2 or panel 3 of a source, so a text
  withheld meanwhile is never shown; if every text of that source is withheld the source ends after
  panel 1.
- Stages: panel 1 is left with "Continue" (stage → assisted); panel 1 is locked when panel 2 is
  first shown (`services.lay_item_lock_original`). A panel the participant has left accepts no
  changes (a repeated identical save is a harmless no-op), so there is no way back.
- Panel 3 needs at least two distinct texts; a source whose systems all wrote the same text ends
  after panel 2. A text cannot be both most and least liked.
- Completion URL: `Study.completion_redirect_url` is used as given (e.g. Prolific's
  `https://app.prolific.com/submissions/complete?cc=ABC123`, whose code the researcher sets on
  Prolific); a `{code}` placeholder in it is replaced by the participant's own completion code.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import latin_square, selectors, services
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    ExpertRating,
    LayAnswer,
    LayItem,
    LayPreference,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
)
from annotation.survey_page import (  # noqa: F401  (re-exported: views and tests time panels here)
    MAX_INTERVAL_MS,
    elapsed_ms_clean,
    render_stamp,
    render_stamp_elapsed_ms,
    text_label,
)

ORIGINAL = LayItem.Stage.ORIGINAL.value
ASSISTED = LayItem.Stage.ASSISTED.value
PREFERENCE = LayItem.Stage.PREFERENCE.value
DONE = LayItem.Stage.DONE.value
PANELS = (ORIGINAL, ASSISTED, PREFERENCE)
SAFETY_ASPECTS = ("hallucination", "correctness")

MAX_TEXT_ANSWER = 2000
_STAMP_SALT = "annotation.lay_flow.panel_stamp"
LOCKED_MESSAGE = (
    "Your answers about the original sentence are locked because the simplification has been shown; "
    "they were not changed."
)


class LayFlowError(ValidationError):
    """A request the flow refuses for where the participant is (the view answers 409)."""


class PanelClosed(LayFlowError):
    """An answer to a panel the participant has left (or not reached yet)."""


class StudyNotReady(LayFlowError):
    """The study has nothing a layperson could be shown (no source with a simplification)."""


def panel_number(panel: str) -> int:
    return PANELS.index(panel) + 1


# --- The design, from the database ------------------------------------------------------------


@dataclass(frozen=True)
class LayDesign:
    square: latin_square.LatinSquare
    source_ids: tuple[int, ...]  # by source index i
    system_ids: tuple[int, ...]  # by system index j
    text_of: Mapping[tuple[int, int], int]  # (i, j) -> SimplificationText id
    texts_of_source: Mapping[int, tuple[int, ...]]  # source id -> its distinct text ids

    def unavailable(self, withheld: set[int]) -> set[tuple[int, int]]:
        """Pairs the square must skip: no simplification, or a withheld text."""
        return {
            (i, j)
            for i in range(len(self.source_ids))
            for j in range(len(self.system_ids))
            if self.text_of.get((i, j)) is None or self.text_of[(i, j)] in withheld
        }

    def source_index(self, source_id: int) -> int:
        return self.source_ids.index(source_id)


def lay_design(*, study: Study) -> LayDesign:
    """The study's Latin square: sources with at least one simplification (index = rank of
    Source.position) × systems with at least one simplification (rank of System.position)."""
    rows = list(
        Simplification.objects.filter(source__study=study)
        .order_by("source__position", "system__position", "system__key")
        .values_list(
            "source_id", "source__position", "system_id", "system__position", "system__key", "shown_text_id"
        )
    )
    if not rows:
        raise StudyNotReady("This study has no sentences with simplifications yet.")
    source_ids = tuple(dict.fromkeys(r[0] for r in sorted(rows, key=lambda r: r[1])))
    system_ids = tuple(dict.fromkeys(r[2] for r in sorted(rows, key=lambda r: (r[3], r[4]))))
    source_index = {sid: i for i, sid in enumerate(source_ids)}
    system_index = {sid: j for j, sid in enumerate(system_ids)}
    text_of = {(source_index[r[0]], system_index[r[2]]): r[5] for r in rows}
    texts: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        if r[5] not in texts[r[0]]:
            texts[r[0]].append(r[5])
    square = latin_square.LatinSquare(
        n_sources=len(source_ids),
        n_systems=len(system_ids),
        per_participant=study.lay_sources_per_participant,
    )
    return LayDesign(
        square=square,
        source_ids=source_ids,
        system_ids=system_ids,
        text_of=text_of,
        texts_of_source={sid: tuple(sorted(ids)) for sid, ids in texts.items()},
    )


# --- Safety gate -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SafetyFlag:
    text_id: int
    source_key: str
    text: str
    systems: tuple[str, ...]
    rater: str
    aspect: str
    score: int
    comment: str


def lay_safety_flags(*, study: Study) -> list[SafetyFlag]:
    """Every radiologist rating at or below the study's threshold on Hallucination or Correctness,
    one flag per (rating, aspect), whether or not the gate is enabled."""
    threshold = study.safety_gate_threshold
    ratings = (
        ExpertRating.objects.filter(
            participant__study=study,
            participant__role=Participant.Role.RADIOLOGIST,
            shown_text__source__study=study,
        )
        .filter(Q(hallucination__lte=threshold) | Q(correctness__lte=threshold))
        .select_related("participant", "shown_text__source")
        .order_by("shown_text__source__position", "shown_text_id", "participant_id")
    )
    systems = selectors.systems_by_text(study=study)
    flags = []
    for rating in ratings:
        for aspect in SAFETY_ASPECTS:
            score = getattr(rating, aspect)
            if score is not None and score <= threshold:
                flags.append(
                    SafetyFlag(
                        text_id=rating.shown_text_id,
                        source_key=rating.shown_text.source.key,
                        text=rating.shown_text.text,
                        systems=tuple(systems.get(rating.shown_text_id, ())),
                        rater=rating.participant.pseudonym or f"#{rating.participant_id}",
                        aspect=aspect,
                        score=score,
                        comment=rating.comment,
                    )
                )
    return flags


def lay_withheld_text_ids(*, study: Study) -> set[int]:
    if not study.safety_gate_enabled:
        return set()
    return {flag.text_id for flag in lay_safety_flags(study=study)}


# --- Participants, rows ---------------------------------------------------------------------------


def _idle_cutoff(study: Study, now: datetime | None) -> datetime:
    return (now or timezone.now()) - timedelta(minutes=study.abandon_after_minutes)


def participant_is_abandoned(*, participant: Participant, now: datetime | None = None) -> bool:
    """Not completed, and returned or idle for `Study.abandon_after_minutes`."""
    if participant.completed_at is not None:
        return False
    if participant.returned_at is not None:
        return True
    last = participant.last_activity_at or participant.started_at or participant.created_at
    return last is not None and last < _idle_cutoff(participant.study, now)


def _lay_with_rows(study: Study):
    return Participant.objects.filter(
        study=study, role=Participant.Role.LAYPERSON, latin_square_row__isnull=False
    ).annotate(last_seen=Coalesce("last_activity_at", "started_at", "created_at"))


def _live_q(study: Study, now: datetime | None) -> Q:
    return Q(completed_at__isnull=False) | (
        Q(returned_at__isnull=True) & Q(last_seen__gte=_idle_cutoff(study, now))
    )


def lay_live_rows(*, study: Study, now: datetime | None = None) -> list[int]:
    """Latin-square rows of the live lay participants (completed, or active and not returned)."""
    return list(_lay_with_rows(study).filter(_live_q(study, now)).values_list("latin_square_row", flat=True))


def _preference_order(
    participant: Participant, source_id: int, text_ids: tuple[int, ...], withheld: set[int]
):
    ids = sorted(t for t in text_ids if t not in withheld)
    random.Random(f"{participant.order_seed}:pref:{source_id}").shuffle(ids)
    return ids


def lay_survey_start(*, participant: Participant, now: datetime | None = None) -> list[LayItem]:
    """Hand the participant a Latin-square row and create their items (idempotent: a second call,
    e.g. a double click, returns the existing items). Holds the study row lock while choosing the
    row so two newcomers never take the same free row."""
    if participant.role != Participant.Role.LAYPERSON:
        raise ValidationError("Only lay participants take the lay survey.")
    if participant.consented_at is None:
        raise LayFlowError("Please give your consent before starting the survey.")
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=participant.study_id)
        locked = Participant.objects.select_for_update().get(pk=participant.pk)
        existing = list(LayItem.objects.filter(participant=locked).order_by("position"))
        if existing:
            return existing
        design = lay_design(study=study)
        withheld = lay_withheld_text_ids(study=study)
        row = locked.latin_square_row
        if row is None:
            row = latin_square.next_row(design.square, lay_live_rows(study=study, now=now))
        assignment = design.square.assignment(row, unavailable=design.unavailable(withheld))
        display = design.square.sources(row)
        random.Random(f"{locked.order_seed}:lay-order").shuffle(display)
        sources = Source.objects.in_bulk([design.source_ids[i] for i in display])
        systems = System.objects.in_bulk([design.system_ids[j] for j in assignment.values() if j is not None])
        texts = SimplificationText.objects.in_bulk(list(design.text_of.values()))
        items = []
        for i in display:
            j = assignment[i]
            if j is None:  # every text of this source is withheld
                continue
            source_id = design.source_ids[i]
            items.append(
                services.lay_item_create(
                    participant=locked,
                    source=sources[source_id],
                    position=len(items),
                    shown_text=texts[design.text_of[(i, j)]],
                    assigned_system=systems[design.system_ids[j]],
                    preference_order=_preference_order(
                        locked, source_id, design.texts_of_source[source_id], withheld
                    ),
                )
            )
        if not items:
            raise StudyNotReady("No sentence of this study can be shown at the moment.")
        locked.latin_square_row = row
        locked.save(update_fields=["latin_square_row"])
        services.participant_touch(participant=locked)
    participant.latin_square_row = row
    return items


def lay_item_apply_safety_gate(*, item: LayItem) -> LayItem:
    """Re-apply the gate just before a panel first shows texts: panel 2's text is re-assigned (next
    available system in the participant's row order) if it was withheld since the item was made,
    and panel 3 drops withheld texts. Answers already given are never touched."""
    study = item.participant.study
    withheld = lay_withheld_text_ids(study=study)
    if not withheld:
        return item
    with transaction.atomic():
        item = LayItem.objects.select_for_update().select_related("participant__study").get(pk=item.pk)
        changed = []
        if item.original_locked_at is None and item.shown_text_id in withheld:
            design = lay_design(study=study)
            i = design.source_index(item.source_id)
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
        if not LayPreference.objects.filter(item=item).exists():
            kept = [t for t in item.preference_order if t not in withheld]
            if kept != item.preference_order:
                item.preference_order = kept
                changed.append("preference_order")
        if changed:
            item.save(update_fields=sorted(set(changed)))
    return item


# --- Where the participant is ----------------------------------------------------------------------


def lay_item_panels(*, item: LayItem) -> tuple[str, ...]:
    """The panels of this item: panel 3 only when there are at least two texts to compare."""
    return PANELS if len(item.preference_order) >= 2 else PANELS[:2]


def lay_item_panel(*, item: LayItem) -> str | None:
    """The panel the participant is on for this item (None when the item is done)."""
    return None if item.stage == DONE else item.stage


@dataclass(frozen=True)
class LayStep:
    kind: str  # "item" | "check" | "complete"
    item: LayItem | None = None
    panel: str | None = None
    check: AttentionCheck | None = None


def lay_current_step(*, participant: Participant) -> LayStep:
    """Where a participant who has started resumes: the first unfinished item's current panel, or
    an unanswered attention check due before it, or "complete"."""
    items = list(
        LayItem.objects.filter(participant=participant)
        .select_related("source", "shown_text")
        .order_by("position")
    )
    answered = set(
        AttentionCheckResponse.objects.filter(participant=participant).values_list("check_item_id", flat=True)
    )
    pending = [
        c
        for c in AttentionCheck.objects.filter(study_id=participant.study_id).order_by("position")
        if c.pk not in answered
    ]
    for index, item in enumerate(items):
        due = [c for c in pending if c.position <= index]
        if due:
            return LayStep("check", check=due[0])
        if item.stage != DONE:
            return LayStep("item", item=item, panel=item.stage)
    if pending:
        return LayStep("check", check=pending[0])
    return LayStep("complete")


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


def lay_progress(*, participant: Participant, step: LayStep | None = None) -> LayProgress:
    step = step or lay_current_step(participant=participant)
    items = list(LayItem.objects.filter(participant=participant).order_by("position"))
    checks = AttentionCheck.objects.filter(study_id=participant.study_id).count()
    answered = AttentionCheckResponse.objects.filter(participant=participant).count()
    total = checks + sum(len(lay_item_panels(item=i)) for i in items)
    done = answered
    for item in items:
        panels = lay_item_panels(item=item)
        done += len(panels) if item.stage == DONE else panels.index(item.stage) if item.stage in panels else 0
    if step.kind == "item":
        panels = lay_item_panels(item=step.item)
        return LayProgress(
            done=done,
            total=total,
            items_total=len(items),
            item_number=step.item.position + 1,
            panel_number=panels.index(step.panel) + 1,
            panels_total=len(panels),
        )
    return LayProgress(done=done, total=total, items_total=len(items))


# --- Panels ---------------------------------------------------------------------------------------


def lay_panel_questions(*, study: Study, panel: str) -> tuple[str, ...]:
    """The answer fields of panel 1 or 2, in the survey's order."""
    fields = ["understanding", "confidence"]
    if study.ask_urgency:
        fields.append("urgency_confidence")
    fields.append("severity_guess")
    if panel == ASSISTED:
        fields.append("helpfulness")
    return tuple(fields)


@dataclass
class PanelState:
    """What a panel shows and what is answered so far."""

    item: LayItem
    panel: str
    answers: dict[str, str] = field(default_factory=dict)  # this panel's (panels 1-2)
    original_answers: dict[str, str] = field(default_factory=dict)  # panel 1's, shown locked in panel 2
    texts: list[tuple[str, SimplificationText]] = field(default_factory=list)  # panel 3: (label, text)
    most: set[int] = field(default_factory=set)
    least: set[int] = field(default_factory=set)
    most_justification: str = ""
    least_justification: str = ""
    missing: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing


def _answer_dict(answer: LayAnswer | None) -> dict[str, str]:
    if answer is None:
        return {}
    return {name: getattr(answer, name) for name in services.LAY_FIELDS if getattr(answer, name)}


def lay_panel_state(*, item: LayItem, panel: str) -> PanelState:
    study = item.participant.study
    state = PanelState(item=item, panel=panel)
    answers = {a.phase: a for a in LayAnswer.objects.filter(item=item)}
    state.original_answers = _answer_dict(answers.get(ORIGINAL))
    if panel in (ORIGINAL, ASSISTED):
        state.answers = _answer_dict(answers.get(panel))
        state.missing = [q for q in lay_panel_questions(study=study, panel=panel) if q not in state.answers]
        return state
    texts = SimplificationText.objects.in_bulk(item.preference_order)
    state.texts = [(text_label(n), texts[t]) for n, t in enumerate(item.preference_order) if t in texts]
    preference = LayPreference.objects.filter(item=item).first()
    if preference is not None:
        state.most = set(preference.most.values_list("pk", flat=True))
        state.least = set(preference.least.values_list("pk", flat=True))
        state.most_justification = preference.most_justification
        state.least_justification = preference.least_justification
    state.missing = [name for name, chosen in (("most", state.most), ("least", state.least)) if not chosen]
    return state


def lay_panel_open(*, item: LayItem, panel: str) -> LayItem:
    """Prepare a panel for showing: apply the safety gate, and lock panel 1 when panel 2 is first
    shown (from then on panel 1's answers cannot change)."""
    if panel in (ASSISTED, PREFERENCE):
        item = lay_item_apply_safety_gate(item=item)
    if panel == ASSISTED and item.stage == ASSISTED and item.original_locked_at is None:
        item = services.lay_item_lock_original(item=item)
    return item


def _parse_answers(study: Study, panel: str, data: Mapping[str, Any]) -> dict[str, str | None]:
    asked = lay_panel_questions(study=study, panel=panel)
    answers: dict[str, str | None] = {}
    for name in services.LAY_FIELDS:
        value = (data.get(name) or "").strip()
        if not value:
            continue
        if name not in asked:
            raise ValidationError({name: f"This question is not asked in panel {panel_number(panel)}."})
        answers[name] = value
    return answers


def _parse_ids(name: str, values: list[str]) -> list[int]:
    ids = []
    for raw in values:
        try:
            ids.append(int(raw))
        except (TypeError, ValueError):
            raise ValidationError({name: f"{raw!r} is not one of the simplifications shown."}) from None
    return ids


def _getlist(data: Mapping[str, Any], name: str) -> list[str]:
    if hasattr(data, "getlist"):
        return list(data.getlist(name))
    value = data.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _unchanged(item: LayItem, panel: str, data: Mapping[str, Any]) -> bool:
    """Whether a save to a panel that is not current would change nothing (a retried request)."""
    state = lay_panel_state(item=item, panel=panel)
    if panel in (ORIGINAL, ASSISTED):
        try:
            given = _parse_answers(item.participant.study, panel, data)
        except ValidationError:
            return False
        return all(state.answers.get(k) == v for k, v in given.items())
    fields = set(_getlist(data, "fields"))
    for name, chosen in (("most", state.most), ("least", state.least)):
        if name in fields or _getlist(data, name):
            try:
                if set(_parse_ids(name, _getlist(data, name))) != chosen:
                    return False
            except ValidationError:
                return False
    for name in ("most_justification", "least_justification"):
        if name in data and (data.get(name) or "").strip() != getattr(state, name):
            return False
    return True


def lay_panel_save(
    *, item: LayItem, panel: str, data: Mapping[str, Any], time_spent_ms: int = 0, submit: bool = False
) -> PanelState:
    """Save a panel's answers from form data (autosave sends the whole form on every change; a
    plain POST too). With `submit`, a complete panel moves the item on; an incomplete one raises
    ValidationError listing what is missing. Raises PanelClosed for a panel that is not the current
    one unless the request would change nothing; services.AnswerLocked guards panel 1 as well."""
    item = LayItem.objects.select_related("participant__study").get(pk=item.pk)
    study = item.participant.study
    if panel not in lay_item_panels(item=item):
        raise PanelClosed("This part does not exist for this sentence.")
    current = lay_item_panel(item=item)
    if panel != current:
        if current is not None and PANELS.index(panel) > PANELS.index(current):
            raise PanelClosed("Please answer the questions of the current part first.")
        if _unchanged(item, panel, data):
            return lay_panel_state(item=item, panel=panel)
        if panel == ORIGINAL and item.original_locked_at is not None:
            raise PanelClosed(LOCKED_MESSAGE)
        raise PanelClosed("You have already moved on from this part; its answers can no longer be changed.")
    if panel == ASSISTED and item.original_locked_at is None:
        item = lay_panel_open(item=item, panel=panel)  # answering panel 2 means it was shown
        if item.stage != ASSISTED:
            raise PanelClosed("This sentence has no simplification to show; please continue.")
    if panel in (ORIGINAL, ASSISTED):
        services.lay_answer_save(
            item=item, phase=panel, answers=_parse_answers(study, panel, data), time_spent_ms=time_spent_ms
        )
    else:
        _preference_save(item, data, time_spent_ms)
    state = lay_panel_state(item=item, panel=panel)
    if submit:
        if state.missing:
            raise ValidationError({name: "Please answer this question." for name in state.missing})
        _advance(item, panel)
    return state


def _preference_save(item: LayItem, data: Mapping[str, Any], time_spent_ms: int) -> None:
    fields = set(_getlist(data, "fields"))
    chosen: dict[str, list[int] | None] = {}
    for name in ("most", "least"):
        values = _getlist(data, name)
        chosen[name] = _parse_ids(name, values) if (name in fields or values) else None
    justifications = {}
    for name in ("most_justification", "least_justification"):
        if name in data:
            value = (data.get(name) or "").strip()
            if len(value) > MAX_TEXT_ANSWER:
                raise ValidationError(
                    {name: f"Please keep your justification under {MAX_TEXT_ANSWER} characters."}
                )
            justifications[name] = value
    current = LayPreference.objects.filter(item=item).first()
    most = (
        set(chosen["most"])
        if chosen["most"] is not None
        else (set(current.most.values_list("pk", flat=True)) if current else set())
    )
    least = (
        set(chosen["least"])
        if chosen["least"] is not None
        else (set(current.least.values_list("pk", flat=True)) if current else set())
    )
    if most & least:
        labels = {t: text_label(n) for n, t in enumerate(item.preference_order)}
        both = ", ".join(labels.get(t, str(t)) for t in sorted(most & least, key=lambda t: labels.get(t, "")))
        raise ValidationError(
            {"least": f"Simplification {both} cannot be among both the most and the least liked."}
        )
    services.lay_preference_save(
        item=item, most=chosen["most"], least=chosen["least"], time_spent_ms=time_spent_ms, **justifications
    )


def _advance(item: LayItem, panel: str) -> None:
    panels = lay_item_panels(item=item)
    following = panels[panels.index(panel) + 1] if panels.index(panel) + 1 < len(panels) else DONE
    updates: dict[str, Any] = {"stage": following}
    if following == DONE:
        updates["completed_at"] = timezone.now()
    # Conditional on the stage, so two racing submits advance once.
    LayItem.objects.filter(pk=item.pk, stage=panel).update(**updates)


def lay_panel_add_time(*, item: LayItem, panel: str, time_spent_ms: int) -> None:
    """Time spent on a panel without an answer change (e.g. the last interval before Continue)."""
    if time_spent_ms <= 0:
        return
    if panel in (ORIGINAL, ASSISTED):
        services.lay_answer_save(item=item, phase=panel, answers={}, time_spent_ms=time_spent_ms)
    else:
        services.lay_preference_save(item=item, time_spent_ms=time_spent_ms)


def panel_stamp(*, item: LayItem, panel: str, now: float | None = None) -> str:
    """A signed render time, sent back by a plain form POST so a panel is timed without JavaScript."""
    return render_stamp(salt=_STAMP_SALT, page={"item": item.pk, "panel": panel}, now=now)


def panel_stamp_elapsed_ms(*, item: LayItem, panel: str, stamp: str, now: float | None = None) -> int:
    return render_stamp_elapsed_ms(
        salt=_STAMP_SALT, page={"item": item.pk, "panel": panel}, stamp=stamp, now=now
    )


# --- Attention checks ----------------------------------------------------------------------------


def _normalized(answer: str) -> str:
    return " ".join(answer.split()).casefold()


def attention_check_answer(
    *, participant: Participant, check: AttentionCheck, answer: str
) -> AttentionCheckResponse:
    """Record an attention-check answer and whether it matches the expected one (case and spacing
    ignored). The participant is not told. Answering again updates the one response."""
    if check.study_id != participant.study_id:
        raise ValidationError("This check belongs to another study.")
    answer = (answer or "").strip()
    if not answer:
        raise ValidationError({"answer": "Please answer this question."})
    if check.options and answer not in [str(o) for o in check.options]:
        raise ValidationError({"answer": f"{answer!r} is not one of the options."})
    if len(answer) > 200:
        raise ValidationError({"answer": "Please keep the answer under 200 characters."})
    passed = _normalized(answer) == _normalized(check.expected_answer)
    try:
        with transaction.atomic():
            response, _ = AttentionCheckResponse.objects.update_or_create(
                participant=participant, check_item=check, defaults={"answer": answer, "passed": passed}
            )
    except IntegrityError:  # two racing first answers: the loser updates the winner's row
        response = AttentionCheckResponse.objects.get(participant=participant, check_item=check)
        response.answer, response.passed = answer, passed
        response.save()
    return response


# --- Background questions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BackgroundQuestion:
    key: str
    question: str
    options: tuple[str, ...]


def lay_background_questions(*, study: Study) -> list[BackgroundQuestion]:
    """Study.background_questions as questions; malformed entries (no key or question) are skipped
    rather than breaking the survey."""
    questions = []
    for entry in study.background_questions or []:
        if not isinstance(entry, Mapping):
            continue
        key, question = str(entry.get("key", "")).strip(), str(entry.get("question", "")).strip()
        if not key or not question:
            continue
        options = entry.get("options") or []
        questions.append(BackgroundQuestion(key, question, tuple(str(o) for o in options)))
    return questions


def lay_background_pending(*, participant: Participant) -> bool:
    questions = lay_background_questions(study=participant.study)
    return any(q.key not in participant.background for q in questions)


def lay_background_save(*, participant: Participant, data: Mapping[str, Any]) -> Participant:
    """Store the answers (every question is optional: unanswered ones are stored as "")."""
    answers: dict[str, str] = {}
    for question in lay_background_questions(study=participant.study):
        value = (data.get(question.key) or "").strip()
        if question.options and value and value not in question.options:
            raise ValidationError({question.key: f"{value!r} is not one of the options."})
        if len(value) > 500:
            raise ValidationError({question.key: "Please keep the answer under 500 characters."})
        answers[question.key] = value
    participant.background = {**participant.background, **answers}
    participant.save(update_fields=["background"])
    return participant


# --- Consent and entry -------------------------------------------------------------------------------

RECRUITMENT_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def recruitment_clean(params: Mapping[str, Any]) -> dict[str, str]:
    """The recruiter's query parameters (Prolific style); refuses odd values."""
    clean = {}
    for name in RECRUITMENT_PARAMS:
        value = (params.get(name) or "").strip()
        if not value:
            continue
        if len(value) > 200 or not all(ch.isalnum() or ch in "-_.@" for ch in value):
            raise ValidationError({name: f"The link's {name} is not valid."})
        clean[name] = value
    return clean


def lay_participant_join(*, study: Study, recruitment: Mapping[str, str]) -> Participant:
    """The participant behind a recruitment link who has just consented: the one with this PID if
    any (resume, never a second participant), else a new one. Survives two racing first requests
    (the unique constraint on (study, external_id) decides; the loser re-reads the winner)."""
    pid = recruitment.get("PROLIFIC_PID", "")
    for _ in range(3):
        existing = lay_join_existing(study=study, recruitment=recruitment)
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                return services.participant_create(
                    study=study, role=Participant.Role.LAYPERSON, external_id=pid, recruitment=recruitment
                )
        except IntegrityError:
            continue  # same PID created meanwhile, or a pseudonym race: look again
    raise LayFlowError("Please try again in a moment.")


def lay_join_existing(*, study: Study, recruitment: Mapping[str, str]) -> Participant | None:
    pid = recruitment.get("PROLIFIC_PID", "")
    if not pid:
        return None
    return Participant.objects.filter(study=study, external_id=pid).first()


# --- Completion ----------------------------------------------------------------------------------


def lay_survey_complete(*, participant: Participant) -> Participant:
    if lay_current_step(participant=participant).kind != "complete":
        raise LayFlowError("The survey is not finished yet.")
    return services.participant_complete(participant=participant)


def lay_completion_url(*, participant: Participant) -> str:
    url = participant.study.completion_redirect_url
    return url.replace("{code}", quote(participant.completion_code, safe="")) if url else ""


# --- The researcher's view: balance, withheld texts, attention checks ----------------------------


@dataclass
class BalanceCell:
    answered: int = 0  # panel-2 answers given on this system's own assignment
    pending: int = 0  # assigned to live participants who have not answered panel 2 yet
    shared: int = 0  # panel-2 answers on this system's text, assigned through another system


@dataclass
class LayBalance:
    study: Study
    sources: list[Source]
    systems: list[System]
    cells: dict[tuple[int, int], BalanceCell]
    spread: int  # max - min of `answered` over the design's pairs
    rows: list[dict[str, int]]
    status_counts: dict[str, int]
    refusals: int
    flags: list[SafetyFlag]
    withheld: set[int]
    checks: list[dict[str, Any]]
    failures: list[AttentionCheckResponse]
    period: int | None


def lay_participant_status(*, participant: Participant, now: datetime | None = None) -> str:
    if participant.completed_at:
        return "completed"
    if participant.returned_at:
        return "returned"
    if participant.declined_at:
        return "declined"
    if participant.consented_at is None:
        return "not consented"
    if participant.latin_square_row is None:
        return "consented"
    return "abandoned" if participant_is_abandoned(participant=participant, now=now) else "in progress"


def lay_balance(*, study: Study, now: datetime | None = None) -> LayBalance:
    try:
        design = lay_design(study=study)
    except StudyNotReady:
        design = None
    sources = list(Source.objects.filter(pk__in=design.source_ids).order_by("position")) if design else []
    systems = (
        list(System.objects.filter(pk__in=design.system_ids).order_by("position", "key")) if design else []
    )
    cells = {(so.pk, sy.pk): BalanceCell() for so in sources for sy in systems}
    participants = list(
        Participant.objects.filter(study=study, role=Participant.Role.LAYPERSON).select_related("study")
    )
    status = {p.pk: lay_participant_status(participant=p, now=now) for p in participants}
    systems_of_text: dict[int, list[int]] = defaultdict(list)
    for text_id, system_id in Simplification.objects.filter(source__study=study).values_list(
        "shown_text_id", "system_id"
    ):
        systems_of_text[text_id].append(system_id)
    answered_items = set(
        LayAnswer.objects.filter(item__participant__study=study, phase=ASSISTED)
        .exclude(helpfulness="")
        .filter(item__stage__in=[PREFERENCE, DONE])
        .values_list("item_id", flat=True)
    )
    for item in LayItem.objects.filter(participant__study=study).values(
        "pk", "participant_id", "source_id", "assigned_system_id", "shown_text_id"
    ):
        key = (item["source_id"], item["assigned_system_id"])
        if key not in cells:
            continue
        if item["pk"] in answered_items:
            cells[key].answered += 1
            for other in systems_of_text.get(item["shown_text_id"], []):
                if other != item["assigned_system_id"] and (item["source_id"], other) in cells:
                    cells[(item["source_id"], other)].shared += 1
        elif status.get(item["participant_id"]) == "in progress":
            cells[key].pending += 1
    answered = [cell.answered for cell in cells.values()]
    rows: dict[int, Counter] = defaultdict(Counter)
    for p in participants:
        if p.latin_square_row is not None:
            rows[p.latin_square_row][status[p.pk]] += 1
    checks = []
    for check in AttentionCheck.objects.filter(study=study).order_by("position"):
        responses = AttentionCheckResponse.objects.filter(check_item=check)
        checks.append(
            {"check": check, "answered": responses.count(), "failed": responses.filter(passed=False).count()}
        )
    return LayBalance(
        study=study,
        sources=sources,
        systems=systems,
        cells=cells,
        spread=(max(answered) - min(answered)) if answered else 0,
        rows=[{"row": r, **{k.replace(" ", "_"): n for k, n in rows[r].items()}} for r in sorted(rows)],
        status_counts=dict(Counter(status.values())),
        refusals=study.consent_refusals.filter(role=Participant.Role.LAYPERSON).count(),
        flags=lay_safety_flags(study=study),
        withheld=lay_withheld_text_ids(study=study),
        checks=checks,
        failures=list(
            AttentionCheckResponse.objects.filter(check_item__study=study, passed=False)
            .select_related("participant", "check_item")
            .order_by("participant_id", "check_item__position")
        ),
        period=design.square.period if design else None,
    )
