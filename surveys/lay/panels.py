"""One panel of one lay item: what it shows and what is answered so far, parsing a panel form,
saving it, and moving on — and the panel-1 lock, whose whole rule lives here:

    Panel 1 (the original alone) is locked once the simplification is shown: `lay_panel_open`
    sets `LayItem.original_locked_at` when panel 2 is first shown, and from then on no save
    changes panel 1's answers (`lay_answers.lay_answer_save` refuses with AnswerLocked, which
    `lay_panel_save` reports with the same message as any other change to panel 1).

More generally a panel the participant has left accepts no changes (a repeated identical save, e.g.
a double-clicked submit, is a harmless no-op), so there is no way back; a panel ahead of the
participant's current step is refused. A text cannot be both most and least liked: the tick stored
first stays, the conflicting new tick is refused and reported (PreferenceConflict, naming the box),
and every other answer of the same save is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation import answer_writes, scales
from annotation.answer_selectors import LayAnswerRow
from annotation.instrument_selectors import LAY, CurrentInstrument, study_instrument_current
from annotation.instrument_services import item_answer_save
from annotation.item_questions import ItemQuestion, item_question, shown
from annotation.models import (
    ItemAnswer,
    LayItem,
    Participant,
    SimplificationText,
    Study,
)
from instruments.schema import AppliesTo, Item, ItemKind
from surveys.lay import services as lay_answers
from surveys.lay.assignment import lay_item_apply_safety_gate
from surveys.lay.errors import PanelClosed, PreferenceConflict
from surveys.lay.selectors import (
    ASSISTED,
    DONE,
    ORIGINAL,
    PANELS,
    PREFERENCE,
    lay_item_panels,
    panel_number,
)
from surveys.lay.steps import lay_item_for_save, lay_standing
from surveys.survey_language import participant_language
from surveys.survey_page import free_text_clean, page_elapsed_ms, render_stamp, text_label

MAX_TEXT_ANSWER = 2000
_STAMP_SALT = "surveys.lay.panel_stamp"
LOCKED_MESSAGE = answer_writes.AnswerLocked.MESSAGE


def lay_panel_questions(*, study: Study, panel: str) -> tuple[str, ...]:
    """The answer fields of panel 1 or 2, in the survey's order."""
    asked = {"understanding", "confidence", "severity_guess"}
    if study.ask_urgency:
        asked.add("urgency_confidence")
    if panel == ASSISTED:
        asked.add("helpfulness")
    return tuple(name for name in scales.LAY_QUESTIONS if name in asked)


def _asked(study: Study, participant: Participant | None = None) -> tuple[CurrentInstrument, str]:
    """The study's lay instrument and the language it is shown in (no query: cached by the study);
    the participant keeps the language they first saw (surveys/survey_language.py)."""
    current = study_instrument_current(study=study, flow=LAY)
    return current, current.language(participant_language(study=study, participant=participant))


def lay_panel_added(*, study: Study, panel: str) -> tuple[Item, ...]:
    """The items the study added to its lay instrument for a panel, in the instrument's order
    (asked after the protocol's questions of that panel; stored in ItemAnswer)."""
    current, _ = _asked(study)
    return tuple(item for item in current.added_items if panel in item.phases)


# --- State ---------------------------------------------------------------------------------------------


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
    added: dict[str, Any] = field(default_factory=dict)  # this panel's added items' answers, by key
    original_added: dict[str, Any] = field(default_factory=dict)  # panel 1's, shown locked in panel 2

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def answered(self) -> bool:
        return bool(self.answers or self.most or self.least or self.added)


def _answer_dict(answer: LayAnswerRow | None) -> dict[str, str]:
    if answer is None:
        return {}
    return {name: getattr(answer, name) for name in scales.LAY_QUESTIONS if getattr(answer, name)}


def _target(item: LayItem, asked: Item) -> int | None:
    """The text an added item of panel 2 is about (None: the sentence; every item of panels 1 and 3)."""
    return item.shown_text_id if asked.applies_to is AppliesTo.SIMPLIFICATION else None


def _added_answers(item: LayItem, added: tuple[Item, ...]) -> dict[str, Any]:
    """This item's answers to the panel's added items, by key; no query when there are none."""
    if not added:
        return {}
    current, _ = _asked(item.participant.study)
    targets = {(i.key, _target(item, i), i.phases[0]) for i in added}
    rows = ItemAnswer.objects.filter(
        participant_id=item.participant_id,
        instrument_id=current.row_id,
        source_id=item.source_id,
        item_key__in=[key for key, _, _ in targets],
    ).values_list("item_key", "shown_text_id", "phase", "value")
    return {key: value for key, text_id, phase, value in rows if (key, text_id, phase) in targets}


def _missing_added(added: tuple[Item, ...], answers: Mapping[str, Any]) -> list[str]:
    return [i.key for i in added if i.required and answers.get(i.key) in (None, "")]


def lay_panel_state(*, item: LayItem, panel: str) -> PanelState:
    study = item.participant.study
    state = PanelState(item=item, panel=panel)
    if panel in (ORIGINAL, ASSISTED):
        rows = lay_answers.lay_panel_rows(item=item)
        state.original_answers = _answer_dict(lay_answers.lay_answer_of(rows, item=item, phase=ORIGINAL))
        state.answers = _answer_dict(lay_answers.lay_answer_of(rows, item=item, phase=panel))
        state.missing = [q for q in lay_panel_questions(study=study, panel=panel) if q not in state.answers]
        added = lay_panel_added(study=study, panel=panel)
        # Panel 2 repeats panel 1's answers: both panels' added items in one query.
        repeated = lay_panel_added(study=study, panel=ORIGINAL) if panel == ASSISTED else ()
        answers = _added_answers(item, added + repeated)
        state.added = {i.key: answers[i.key] for i in added if i.key in answers}
        state.original_added = {i.key: answers[i.key] for i in repeated if i.key in answers}
        state.missing += _missing_added(added, state.added)
        return state
    texts = SimplificationText.objects.in_bulk(item.preference_order)
    state.texts = [(text_label(n), texts[t]) for n, t in enumerate(item.preference_order) if t in texts]
    preference = lay_answers.lay_preference_of(lay_answers.lay_panel_rows(item=item), item=item)
    if preference is not None:
        state.most, state.least = set(preference.most), set(preference.least)
        state.most_justification = preference.most_justification
        state.least_justification = preference.least_justification
    state.missing = [name for name, chosen in (("most", state.most), ("least", state.least)) if not chosen]
    added = lay_panel_added(study=study, panel=panel)
    state.added = _added_answers(item, added)
    state.missing += _missing_added(added, state.added)
    return state


# --- Showing a panel -----------------------------------------------------------------------------------


def _open(item: LayItem, panel: str) -> LayItem:
    """Call inside a transaction holding the item's row lock."""
    if panel in (ASSISTED, PREFERENCE):
        item = lay_item_apply_safety_gate(item=item)
    if panel == ASSISTED and item.stage == ASSISTED and item.original_locked_at is None:
        # The lock rule: the simplification is about to be shown.
        item = lay_answers.lay_item_lock_original(item=item)
    return item


def lay_panel_open(*, item: LayItem, panel: str) -> LayItem:
    """Prepare a panel for showing: apply the safety gate (panels 2 and 3), and lock panel 1 when
    panel 2 is first shown. Panel 1, and a panel 2 already locked while the gate is off, cost no
    query; panel 2 first shown while the gate is off, one UPDATE."""
    gate = item.participant.study.safety_gate_enabled
    if panel == ORIGINAL or (panel == ASSISTED and item.original_locked_at is not None and not gate):
        return item
    if panel == PREFERENCE and not gate:
        return item
    # Panel 2 first shown, nothing to re-check: panel 1 is locked by one UPDATE.
    if (
        panel == ASSISTED
        and not gate
        and item.stage == ASSISTED
        and lay_answers.lay_item_lock_original_shown(item=item)
    ):
        return item
    with transaction.atomic():
        locked = (
            LayItem.objects.select_for_update(of=("self",))
            .select_related("participant__study", "source", "shown_text")
            .get(pk=item.pk)
        )
        return _open(locked, panel)


def panel_stamp(*, item: LayItem, panel: str, now: float | None = None) -> str:
    """A signed render time, sent back by every panel POST: it times a plain form POST without
    JavaScript and caps what an autosave may claim."""
    return render_stamp(salt=_STAMP_SALT, page={"item": item.pk, "panel": panel}, now=now)


def panel_elapsed_ms(*, item_id: int, panel: str, data: Mapping[str, Any], now: float | None = None) -> int:
    """The time a panel POST adds: the client's interval, at most the time since the page was
    rendered (`rendered_at`)."""
    return page_elapsed_ms(
        salt=_STAMP_SALT,
        page={"item": item_id, "panel": panel},
        stamp=str(data.get("rendered_at") or ""),
        client_ms=data.get("elapsed_ms"),
        now=now,
    )


# --- Parsing -------------------------------------------------------------------------------------------


def _parse_answers(study: Study, panel: str, data: Mapping[str, Any]) -> dict[str, str | None]:
    asked = lay_panel_questions(study=study, panel=panel)
    answers: dict[str, str | None] = {}
    for name in scales.LAY_QUESTIONS:
        value = (data.get(name) or "").strip()
        if not value:
            continue
        if name not in asked:
            raise ValidationError(
                {name: _("This question is not asked in panel %(number)s.") % {"number": panel_number(panel)}}
            )
        answers[name] = value
    return answers


def _parse_added(added: tuple[Item, ...], data: Mapping[str, Any]) -> dict[str, Any]:
    """The added items' raw answers the form sent (checked by item_answer_save)."""
    return {i.key: data.get(i.key) for i in added if i.key in data}


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


def _justifications(data: Mapping[str, Any]) -> dict[str, str]:
    return {
        name: free_text_clean(name, data.get(name), max_length=MAX_TEXT_ANSWER, what="justification")
        for name in ("most_justification", "least_justification")
        if name in data
    }


def _added_unchanged(state: PanelState, data: Mapping[str, Any]) -> bool:
    added = _parse_added(lay_panel_added(study=state.item.participant.study, panel=state.panel), data)
    return all(str(state.added.get(k, "")) == str(v or "").strip() for k, v in added.items())


def _unchanged(item: LayItem, panel: str, data: Mapping[str, Any]) -> bool:
    """Whether a save to a panel that is not current would change nothing (a retried request)."""
    state = lay_panel_state(item=item, panel=panel)
    try:
        if panel in (ORIGINAL, ASSISTED):
            given = _parse_answers(item.participant.study, panel, data)
            return all(state.answers.get(k) == v for k, v in given.items()) and _added_unchanged(state, data)
        fields = set(_getlist(data, "fields"))
        for name, chosen in (("most", state.most), ("least", state.least)):
            if (name in fields or _getlist(data, name)) and set(
                _parse_ids(name, _getlist(data, name))
            ) != chosen:
                return False
        justified = all(getattr(state, name) == value for name, value in _justifications(data).items())
        return justified and _added_unchanged(state, data)
    except ValidationError:
        return False


# --- Saving --------------------------------------------------------------------------------------------


def lay_panel_save(
    *,
    participant: Participant,
    item_id: int,
    panel: str,
    data: Mapping[str, Any],
    time_spent_ms: int = 0,
    submit: bool = False,
    locked: tuple[LayItem, bool] | None = None,
) -> None:
    """Save a panel's answers from form data (autosave sends the whole form on every change; a
    plain POST too). With `submit`, a complete panel moves the item on; an incomplete one raises
    ValidationError listing what is missing (after committing what was given), known from the rows
    just written. Raises PanelClosed for a panel that is not the participant's current one, unless
    the request would change nothing (a retried or double-clicked submit is answered as the first
    one was). The item's row lock orders concurrent saves of one item, and where the participant
    is is read after taking it.

    `locked`: the caller holds the item's row lock in its transaction (steps.lay_panel_for_save:
    the item read under it, and whether it is the participant's current one); the save then runs
    in that transaction, and a refusal raised inside it marks it for rollback."""
    if panel not in PANELS:
        raise PanelClosed(_("This part does not exist for this sentence."))
    if locked is not None and not transaction.get_connection().in_atomic_block:
        raise TransactionManagementError("A locked item is saved inside the transaction that locked it.")
    with transaction.atomic(savepoint=locked is None):
        item, current_item = locked or lay_item_for_save(participant=participant, item_id=item_id)
        if panel not in lay_item_panels(item=item):
            raise PanelClosed(_("This part does not exist for this sentence."))
        current = None if item.stage == DONE else item.stage
        if panel != current:
            _refuse_unless_unchanged(item, panel, current, data)
            return
        if lay_standing(participant=participant) is not None or not current_item:
            # A later sentence (or one behind an attention check) answered ahead of time.
            raise PanelClosed(_("Please answer the current question first."))
        if panel == ASSISTED and item.original_locked_at is None:
            item = _open(item, panel)  # answering panel 2 means it was shown
            if item.stage != ASSISTED:
                raise PanelClosed(_("This sentence has no simplification to show; please continue."))
        missing, refused = _panel_answers_save(participant, item, panel, data, time_spent_ms)
        if not submit:
            missing = []  # an autosave shows nothing but "Saved" (or the refused ticks)
        elif not missing and not refused:
            _advance(item, panel)
    # Raised once the answers given are committed: a plain POST with a gap keeps what it had, and a
    # refused tick never costs the answers saved beside it.
    if refused:
        raise _conflict(item, refused, missing)
    if missing:
        raise ValidationError({name: _("Please answer this question.") for name in missing})


def _refuse_unless_unchanged(item: LayItem, panel: str, current: str | None, data: Mapping[str, Any]) -> None:
    """A save of a panel that is not the item's current one is refused (PanelClosed, saying why)
    unless it would change nothing: a retried or double-clicked submit."""
    if current is not None and PANELS.index(panel) > PANELS.index(current):
        raise PanelClosed(_("Please answer the questions of the current part first."))
    if _unchanged(item, panel, data):
        return
    if panel == ORIGINAL and item.original_locked_at is not None:
        raise PanelClosed(LOCKED_MESSAGE)
    raise PanelClosed(_("You have already moved on from this part; its answers can no longer be changed."))


def _panel_answers_save(
    participant: Participant, item: LayItem, panel: str, data: Mapping[str, Any], time_spent_ms: int
) -> tuple[list[str], Mapping[str, frozenset[int]]]:
    """Write the panel's answers (and the added questions'); the questions left unanswered and
    the refused preference ticks. A locked answer closes the panel."""
    refused: Mapping[str, frozenset[int]] = {}
    try:
        if panel in (ORIGINAL, ASSISTED):
            study = item.participant.study
            row = lay_answers.lay_answer_save(
                item=item,
                phase=panel,
                answers=_parse_answers(study, panel, data),
                time_spent_ms=time_spent_ms,
                item_locked=True,
            )
            answered = _answer_dict(row)
            missing = [q for q in lay_panel_questions(study=study, panel=panel) if q not in answered]
            missing += _added_save(participant, item, panel, data, time_spent_ms)
        else:
            missing, refused = _preference_save(item, data, time_spent_ms)
            missing += _added_save(participant, item, panel, data, time_spent_ms)
    except answer_writes.AnswerLocked:
        raise PanelClosed(LOCKED_MESSAGE) from None
    return missing, refused


_QUESTION_OF = {"most": gettext_lazy("Q5 (most liked)"), "least": gettext_lazy("Q6 (least liked)")}


def _conflict(item: LayItem, refused: Mapping[str, frozenset[int]], missing: list[str]) -> PreferenceConflict:
    labels = {t: text_label(n) for n, t in enumerate(item.preference_order)}
    conflicts = {name: {t: labels.get(t, str(t)) for t in sorted(texts)} for name, texts in refused.items()}
    messages: dict[str, list[str]] = {name: [_("Please answer this question.")] for name in missing}
    for name, texts in conflicts.items():
        other = "least" if name == "most" else "most"
        for label in texts.values():
            kept = label not in conflicts.get(other, {}).values()
            words = {"label": label, "question": _QUESTION_OF[name], "other": _QUESTION_OF[other]}
            if kept:
                message = _(
                    "Simplification %(label)s cannot be among both the most and the least liked: your "
                    "tick for %(label)s in %(question)s was not saved (%(label)s stays in %(other)s)."
                )
            else:
                message = _(
                    "Simplification %(label)s cannot be among both the most and the least liked: your "
                    "tick for %(label)s in %(question)s was not saved; please choose one."
                )
            messages.setdefault(name, []).append(message % words)
    return PreferenceConflict(messages, conflicts=conflicts)


def _preference_save(
    item: LayItem, data: Mapping[str, Any], time_spent_ms: int
) -> tuple[list[str], Mapping[str, frozenset[int]]]:
    """Save panel 3 from form data; returns the questions still unanswered after this save and the
    ticks refused as overlapping. A question not sent keeps its stored choice (the page always
    sends both)."""
    fields = set(_getlist(data, "fields"))
    chosen: dict[str, list[int] | None] = {}
    for name in ("most", "least"):
        values = _getlist(data, name)
        chosen[name] = _parse_ids(name, values) if (name in fields or values) else None
    saved = lay_answers.lay_preference_save(
        item=item,
        most=chosen["most"],
        least=chosen["least"],
        time_spent_ms=time_spent_ms,
        exclusive=True,
        **_justifications(data),
    )
    return [name for name, ids in (("most", saved.most), ("least", saved.least)) if not ids], saved.refused


def _added_save(
    participant: Participant, item: LayItem, panel: str, data: Mapping[str, Any], time_spent_ms: int
) -> list[str]:
    """Save the panel's added items the form sent (a bad value raises ValidationError keyed by the
    item, and the panel's transaction saves nothing); returns the required ones still unanswered."""
    added = lay_panel_added(study=item.participant.study, panel=panel)
    if not added:
        return []
    current, language = _asked(item.participant.study, item.participant)
    assert current.row_id is not None  # added items exist only in an instrument row of the study
    answers = _added_answers(item, added)
    for key, raw in _parse_added(added, data).items():
        asked = current.instrument.item(key)
        saved = item_answer_save(
            participant=participant,
            instrument_id=current.row_id,
            item=asked,
            raw=raw,
            source_id=item.source_id,
            shown_text_id=_target(item, asked),
            language=language,
            time_spent_ms=time_spent_ms,
            phase=panel,
        )
        if saved is not None:
            answers[key] = saved.value
        elif asked.kind is ItemKind.FREE_TEXT:
            answers.pop(key, None)
    return _missing_added(added, answers)


def _advance(item: LayItem, panel: str) -> None:
    panels = lay_item_panels(item=item)
    following = panels[panels.index(panel) + 1] if panels.index(panel) + 1 < len(panels) else DONE
    updates: dict[str, Any] = {"stage": following}
    if following == DONE:
        updates["completed_at"] = timezone.now()
    LayItem.objects.filter(pk=item.pk, stage=panel).update(**updates)


# --- What the page shows -------------------------------------------------------------------------------


@dataclass
class Option:
    value: str
    label: str
    definition: str = ""
    checked: bool = False
    conflict: bool = False  # panel 3: this tick was refused (the text is in the other question)


@dataclass
class Question:
    name: str
    number: str
    text: str
    options: list[Option]
    multiple: bool = False
    errors: list[str] = field(default_factory=list)
    justification: str | None = None  # panel 3: the justification field's name
    justification_value: str = ""
    template: str = "surveys/lay/_question.html"


_Wording = tuple[tuple[str, str, str, tuple[tuple[str, str, str], ...]], ...]


def _protocol_wording(current: CurrentInstrument, language: str, study: Study, panel: str) -> _Wording:
    """Panel 1 or 2's protocol questions as (name, number, wording, (posted value, label,
    definition) per level), worded by the instrument in `language`: built once per instrument
    version, language and panel, and kept with the cached instrument (every panel GET asks it)."""
    asked_names = lay_panel_questions(study=study, panel=panel)
    memo_key = ("lay-wording", language, asked_names)
    wording = current.memo.get(memo_key)
    if wording is None:
        built = []
        for name in asked_names:
            asked = current.instrument.item(name)
            assert asked.scale is not None
            points = {point.code: point for point in asked.scale.points}
            # Posted and stored as the level's name (annotation/scales.py); worded by the instrument.
            levels = tuple(
                (
                    level.name,
                    shown(points[level.value].label, language),
                    shown(points[level.value].definition, language),
                )
                for level in scales.LAY_SCALES[name].levels
            )
            built.append((name, asked.number, shown(asked.wording, language), levels))
        wording = current.memo[memo_key] = tuple(built)
    return wording


def panel_questions(
    state: PanelState,
    errors: Mapping[str, list[str]],
    conflicts: Mapping[str, Mapping[int, str]] | None = None,
) -> list[Question | ItemQuestion]:
    """The questions of the panel as the page shows them, with the answers so far, any errors and
    the panel-3 ticks refused as overlapping (`conflicts`, as PreferenceConflict has them)."""
    conflicts = conflicts or {}
    study = state.item.participant.study
    current, language = _asked(study, state.item.participant)
    if state.panel in (ORIGINAL, ASSISTED):
        questions: list[Question | ItemQuestion] = []
        for name, number, wording, levels in _protocol_wording(current, language, study, state.panel):
            answer = state.answers.get(name)
            options = [
                Option(value, label, definition, answer == value) for value, label, definition in levels
            ]
            questions.append(Question(name, number, wording, options, errors=errors.get(name, [])))
        return questions + _added_questions(state, language, errors)
    preference: list[Question | ItemQuestion] = []
    for name, chosen in (("most", state.most), ("least", state.least)):
        refused = conflicts.get(name, {})
        options = [Option(str(t.pk), label, "", t.pk in chosen, t.pk in refused) for label, t in state.texts]
        asked = current.instrument.item(name)
        preference.append(
            Question(
                name,
                asked.number,
                shown(asked.wording, language),
                options,
                multiple=True,
                errors=[*errors.get(name, []), *errors.get(f"{name}_justification", [])],
                justification=f"{name}_justification",
                justification_value=getattr(state, f"{name}_justification"),
            )
        )
    return preference + _added_questions(state, language, errors)


def _added_questions(
    state: PanelState, language: str, errors: Mapping[str, list[str]]
) -> list[Question | ItemQuestion]:
    """The panel's added items after its protocol questions: a scale or single choice as the
    panel's own radio rows, the other kinds through their item partial."""
    questions: list[Question | ItemQuestion] = []
    for asked in lay_panel_added(study=state.item.participant.study, panel=state.panel):
        question = item_question(asked, field=asked.key, language=language, value=state.added.get(asked.key))
        if asked.kind in (ItemKind.ORDINAL, ItemKind.SINGLE_CHOICE):
            options = [
                Option(c.value, c.label, c.definition, question.shown_value == c.value)
                for c in question.choices
            ]
            questions.append(
                Question(asked.key, asked.number, question.wording, options, errors=errors.get(asked.key, []))
            )
        else:
            question.errors = errors.get(asked.key, [])
            questions.append(question)
    return questions


def locked_answers(state: PanelState) -> list[tuple[str, str, str]]:
    """Panel 1's answers as panel 2 shows them (number, question, answer): the protocol's
    questions, then the items the study added to panel 1."""
    study = state.item.participant.study
    current, language = _asked(study, state.item.participant)
    shown_answers = []
    for name in lay_panel_questions(study=study, panel=ORIGINAL):
        asked = current.instrument.item(name)
        assert asked.scale is not None
        # Stored as the level's name: shown as the instrument's label of that level's point.
        stored = state.original_answers.get(name)
        answer = "—"
        if stored:
            code = scales.LAY_SCALES[name].value_of(stored)
            answer = next(shown(p.label, language) for p in asked.scale.points if p.code == code)
        shown_answers.append((asked.number, shown(asked.wording, language), answer))
    for asked in lay_panel_added(study=study, panel=ORIGINAL):
        question = item_question(
            asked, field=asked.key, language=language, value=state.original_added.get(asked.key)
        )
        # A choice shown by its label; a count or a text as given.
        labels = {choice.value: choice.label for choice in question.choices}
        answer = labels.get(question.shown_value, question.shown_value) if question.answered else "—"
        shown_answers.append((asked.number, question.wording, answer))
    return shown_answers
