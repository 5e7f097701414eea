"""One radiologist page (seed 003 Figure 5): what it holds, when it is complete, and how its form
is saved; and the signed render time that times a page without JavaScript.

A page's form fields are named after the blind labels, never after ids, so the HTML carries
nothing that could hint at a system (text ids are created in system order):

    A-correctness … A-simplicity, A-comment      one per distinct simplification text (A, B, C …)
    original-severity, original-simplicity, original-comment
    A-<item key>, original-<item key>            the items a study added to its instrument

The questions come from the study's current radiologist instrument, in the study's language: the
protocol's items (annotation/instrument_binding.py) keep their layout and take their wording from
the instrument; every added item is asked beside them (an item about the simplification in each
text's card, one about the source under the original). Every answer is an ItemAnswer row
(annotation/answer_store.py): a page reads the participant's rows on its source in one query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, FilteredRelation, IntegerField, Q, TextField, Value
from django.db.transaction import TransactionManagementError
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import participant_services, scales
from annotation.access import access_expert_page, access_expert_page_locked
from annotation.answer_selectors import JudgementRow, RatingRow, rows_of_page
from annotation.answer_store import Write
from annotation.instrument_selectors import EXPERT, CurrentInstrument, study_instrument_current
from annotation.instrument_services import item_answer_save
from annotation.item_questions import item_question
from annotation.models import (
    ExpertItem,
    ItemAnswer,
    Participant,
    SimplificationText,
)
from annotation.prepared_queries import Joined, PreparedQuery, PreparedUpdate, PreparedUpdateReturningOld
from instruments.schema import AppliesTo, ItemKind
from surveys.radiologist import controls as planted
from surveys.radiologist import services as expert_answers
from surveys.radiologist.page_rows import (  # noqa: F401  (re-exported: views and tests read pages here)
    COMMENT,
    ORIGINAL,
    AspectCell,
    Cell,
    ExpertPage,
    PageWording,
    ShownLevel,
    TextRow,
    page_wording,
)
from surveys.radiologist.selectors import expert_page_place
from surveys.radiologist.span_marks import (
    no_marks_record,
    page_suggestions,
    span_instructions_once,
    with_suggestions,
)
from surveys.survey_language import participant_language
from surveys.survey_page import (  # noqa: F401  (re-exported: views and tests time pages here)
    MAX_INTERVAL_MS,
    elapsed_ms_clean,
    render_stamp,
    render_stamp_elapsed_ms,
    text_label,
)

ORIGINAL_FIELDS = ("severity", "simplicity")
# Form fields that are not answers; every other field must name an answer on the page.
NON_ANSWER_FIELDS = frozenset({"csrfmiddlewaretoken", "elapsed_ms", "rendered_at", "action"})
_ANSWER_FIELD = re.compile(r"^(?P<row>[^-]+)-(?P<name>[^-]+)$")

_STAMP_SALT = "annotation.expert_flow.page_stamp"


# --- Reading a page ----------------------------------------------------------------------------------

# An item answer's columns (all of them, in the model's order), read beside the page's texts: a row
# read is built back positionally (prepared_queries.Joined).
_ANSWER = Joined(ItemAnswer)


def _answer_of(values) -> ItemAnswer | None:
    return None if values[0] is None else _ANSWER.instances(values)


# The page's texts, each with this participant's answers about it (LEFT JOIN: a text unanswered yet
# comes once, with NULL answer columns), then this participant's answers about the page's source
# (the original's questions, the added items about it) and its planted controls: every answer of
# theirs on the source without a shown text (with NULL for the text's columns). One query.
_page_answer_rows = PreparedQuery(
    lambda text_ids, participant_id, source_id: (
        SimplificationText.objects.filter(pk__in=text_ids)
        .annotate(
            mine=FilteredRelation("item_answers", condition=Q(item_answers__participant_id=participant_id))
        )
        .values_list("pk", "text", *(f"mine__{name}" for name in _ANSWER.columns()))
        .union(
            ItemAnswer.objects.filter(
                source_id=source_id, participant_id=participant_id, shown_text__isnull=True
            )
            .annotate(no_text=Value(None, IntegerField()), no_text_text=Value(None, TextField()))
            .values_list("no_text", "no_text_text", *_ANSWER.columns()),
            all=True,
        )
    )
)


def _page_texts(item: ExpertItem) -> tuple[list[tuple[int, str]], list[ItemAnswer]]:
    """The page's (text id, text) and this participant's answers about them, about its source and
    about its planted controls: one query."""
    texts: dict[int, str] = {}
    answers: list[ItemAnswer] = []
    for pk, text, *values in _page_answer_rows.rows(
        text_ids=tuple(item.text_order), participant_id=item.participant_id, source_id=item.source_id
    ):
        if pk is not None:
            texts[pk] = text
        if (answer := _answer_of(values)) is not None:
            answers.append(answer)
    return list(texts.items()), answers


def _page_rows(
    item: ExpertItem, rows: list[tuple[int, str]], answers: list[ItemAnswer]
) -> tuple[list[tuple[str, SimplificationText]], dict[int, RatingRow], JudgementRow | None]:
    """The page's (label, text) in the stored order with this participant's rating of each and
    their judgement of the original. An id whose text has since been deleted (the source's
    simplification was regenerated before anyone rated it) is skipped, so labels stay stable."""
    order = item.text_order
    by_id: dict[int, SimplificationText] = {}
    ratings: dict[int, Any] = {}
    judgement: JudgementRow | None = None
    for pk, text in rows:
        # The page's own source: saves a query per text in the services.
        by_id[pk] = SimplificationText(pk=pk, source=item.source, text=text)
    control_rows = {}
    for typed in rows_of_page(answers, participant_id=item.participant_id):
        if isinstance(typed, RatingRow):
            ratings[typed.shown_text_id] = typed
        elif isinstance(typed, JudgementRow):
            judgement = typed
        else:
            control_rows[planted.row_key(typed.control_id)] = typed
    if item.control_slots:
        # Planted controls are rows like the others (surveys/radiologist/controls.py).
        controls = planted.page_controls_of(item)
        order = planted.merged_order(item)
        for key, control in controls.items():
            by_id[key] = SimplificationText(pk=key, source=item.source, text=control.text)
            if key in control_rows:
                ratings[key] = planted.answer_as_rating(control_rows[key], key)
    texts = [(text_label(i), by_id[text_id]) for i, text_id in enumerate(order) if text_id in by_id]
    return texts, ratings, judgement


def _target_rows(
    answers: list[ItemAnswer], instrument_id: int | None, *, shown_text_id: int | None
) -> dict[str, ItemAnswer]:
    """A target's rows (a text, or the original) under the instrument version saved to now."""
    return {
        a.item_key: a
        for a in answers
        if a.instrument_id == instrument_id and a.control_id is None and a.shown_text_id == shown_text_id
    }


@dataclass(frozen=True)
class _Asked:
    """What the study's instrument asks on a radiologist page, in the language shown."""

    current: CurrentInstrument
    language: str
    wording: PageWording

    @property
    def added(self) -> tuple[Any, ...]:
        return self.current.added_items


def _asked(participant: Participant) -> _Asked:
    """No query: the study (loaded with the participant) names its cached instrument."""
    study = participant.study
    current = study_instrument_current(study=study, flow=EXPERT)
    # The participant keeps the language they first saw (surveys/survey_language.py).
    language = current.language(participant_language(study=study, participant=participant))
    return _Asked(current=current, language=language, wording=page_wording(current, language))


def _added_answers(
    item: ExpertItem, asked: _Asked, answers: list[ItemAnswer]
) -> dict[tuple[str, int | None], Any]:
    """This participant's answers to the added items on the page, by (item key, text id; a
    control's row key)."""
    if not asked.added or asked.current.row_id is None:
        return {}
    keys = {i.key for i in asked.added}
    values: dict[tuple[str, int | None], Any] = {}
    for a in answers:
        if a.item_key not in keys:
            continue
        if a.control_id is not None:
            values[(a.item_key, planted.row_key(a.control_id))] = a.value
        elif a.instrument_id == asked.current.row_id:
            values[(a.item_key, a.shown_text_id)] = a.value
    return values


def _page_build(
    item: ExpertItem,
    texts: list[tuple[str, SimplificationText]],
    ratings: Mapping[int, RatingRow],
    judgement: JudgementRow | None,
    asked: _Asked,
    added: Mapping[tuple[str, int | None], Any],
) -> ExpertPage:
    rows = []
    missing: list[str] = []
    required = 0
    about_text = [i for i in asked.added if i.applies_to is AppliesTo.SIMPLIFICATION]
    about_source = [i for i in asked.added if i.applies_to is AppliesTo.SOURCE]
    suggested = page_suggestions(item, texts, about_text)
    for label, text in texts:
        rating = ratings.get(text.pk)
        cells = []
        for aspect in asked.wording.aspects:
            value = getattr(rating, aspect.key) if rating else None
            cell = AspectCell(field=f"{label}-{aspect.key}", key=aspect.key, value=value, aspect=aspect)
            cells.append(cell)
            if value is None:
                missing.append(cell.field)
        questions = [
            item_question(
                i,
                field=f"{label}-{i.key}",
                language=asked.language,
                value=added.get((i.key, text.pk)),
                text=text.text,  # an error-span item marks this text
            )
            for i in about_text
        ]
        questions = [with_suggestions(q, text, suggested) for q in questions]
        missing += [q.field for q in questions if q.required and not q.answered]
        required += len(cells) + sum(1 for q in questions if q.required)
        rows.append(
            TextRow(
                label=label,
                text=text.text,
                aspects=cells,
                comment=rating.comment if rating else "",
                added=questions,
            )
        )
    span_instructions_once([q for row in rows for q in row.added])
    severity = Cell(
        field=f"{ORIGINAL}-severity",
        key="severity",
        value=(judgement.severity or None) if judgement else None,
    )
    simplicity = Cell(
        field=f"{ORIGINAL}-simplicity", key="simplicity", value=judgement.simplicity if judgement else None
    )
    missing += [cell.field for cell in (severity, simplicity) if cell.value is None]
    original_added = [
        item_question(i, field=f"{ORIGINAL}-{i.key}", language=asked.language, value=added.get((i.key, None)))
        for i in about_source
    ]
    missing += [q.field for q in original_added if q.required and not q.answered]
    required += 2 + sum(1 for q in original_added if q.required)
    return ExpertPage(
        item=item,
        source=item.source,
        texts=rows,
        severity=severity,
        simplicity=simplicity,
        comment=judgement.comment if judgement else "",
        missing=missing,
        wording=asked.wording,
        original_added=original_added,
        required=required,
    )


def expert_page_get(*, item: ExpertItem) -> ExpertPage:
    """Everything one page shows: the original, its texts under blind labels with this
    participant's answers (never anyone else's), and which required answers are missing. One
    query (two when the study's instrument adds items)."""
    asked = _asked(item.participant)
    text_rows, answers = _page_texts(item)
    texts, ratings, judgement = _page_rows(item, text_rows, answers)
    return _page_build(item, texts, ratings, judgement, asked, _added_answers(item, asked, answers))


# --- Saving a page ---------------------------------------------------------------------------------


def _field_errors(exc: ValidationError, row: str) -> dict[str, list[str]]:
    """Re-key a service's ValidationError ({aspect: [...]} or a plain message) by form field."""
    if hasattr(exc, "error_dict"):
        return {f"{row}-{name}": list(messages) for name, messages in exc.message_dict.items()}
    return {row: list(exc.messages)}


def _parse(data: Mapping[str, Any], labels: dict[str, SimplificationText], asked: _Asked):
    per_text: dict[str, dict[str, str]] = {}
    original: dict[str, str] = {}
    added: dict[tuple[str, str], Any] = {}
    errors: dict[str, list[str]] = {}
    allowed = {*scales.EXPERT_ASPECTS, COMMENT}
    added_about = {
        kind: {i.key for i in asked.added if i.applies_to is kind}
        for kind in (AppliesTo.SOURCE, AppliesTo.SIMPLIFICATION)
    }
    for key in data:
        if key in NON_ANSWER_FIELDS:
            continue
        value = data.get(key)
        match = _ANSWER_FIELD.match(key)
        if match is None:
            errors[key] = [_("%(field)s is not a question on this page.") % {"field": repr(key)}]
            continue
        row, name = match["row"], match["name"]
        if row == ORIGINAL:
            if name in added_about[AppliesTo.SOURCE]:
                added[(row, name)] = value
            elif name not in {*ORIGINAL_FIELDS, COMMENT}:
                errors[key] = [
                    _("%(field)s is not a question about the original sentence.") % {"field": repr(key)}
                ]
            else:
                original[name] = value
        elif row not in labels:
            errors[key] = [_("There is no simplification %(label)s on this page.") % {"label": row}]
        elif name in added_about[AppliesTo.SIMPLIFICATION]:
            added[(row, name)] = value
        elif name not in allowed:
            errors[key] = [
                _("%(name)s is not an aspect (%(aspects)s).")
                % {"name": repr(name), "aspects": ", ".join(scales.EXPERT_ASPECTS)}
            ]
        else:
            per_text.setdefault(row, {})[name] = value
    return per_text, original, added, errors


# Every save of a page starts here: the page's row locked by the UPDATE that adds the save's time
# to it, which returns the page's completion as it is now (after any save that held the lock).
_page_lock_rows = PreparedUpdateReturningOld(
    lambda item_id, added_ms: (
        ExpertItem.objects.filter(pk=item_id),
        {"time_spent_ms": F("time_spent_ms") + added_ms},
    ),
    ExpertItem,
    ("completed_at",),
)
_COMPLETED_AT = [f.attname for f in ExpertItem._meta.concrete_fields].index("completed_at")


def _page_lock(item: ExpertItem, time_spent_ms: int) -> Any:
    """Lock the page's row (every writer of its answers takes it first) and add the save's time to
    it, in one statement; returns the page's completion. The page's answers are read after it, in
    a statement of their own, so that they are the ones the last holder of the lock committed."""
    (row,) = _page_lock_rows.rows(item_id=item.pk, added_ms=max(0, int(time_spent_ms)))
    return row[_COMPLETED_AT]


@dataclass
class _Save:
    """One expert_page_save: the page, what it asks, its rows read under the lock, the time to
    give a single answered row, and the errors by form field gathered so far."""

    participant: Participant
    item: ExpertItem
    asked: _Asked
    labels: dict[str, SimplificationText]
    page_answers: list[ItemAnswer]
    row_time: int
    errors: dict[str, list[str]]
    # The protocol's writes gathered (a text's id, or None for the original), run in one call.
    pending: list[tuple[int | None, Write]] = field(default_factory=list)

    def current(self, *, shown_text_id: int | None) -> dict[str, ItemAnswer] | None:
        """The stored answers of a target, when the study asks an instrument row."""
        instrument_id = self.asked.current.row_id
        if instrument_id is None:
            return None
        return _target_rows(self.page_answers, instrument_id, shown_text_id=shown_text_id)


def _texts_save(save: _Save, per_text: dict[str, dict[str, str]], ratings: dict[int, RatingRow]) -> None:
    """The aspects and justification of each text (ids in order), gathered for _protocol_save; a
    planted control's go to its control answer (into `ratings`)."""
    for label, fields in sorted(per_text.items(), key=lambda entry: save.labels[entry[0]].pk):
        shown_text = save.labels[label]
        scores = {k: v for k, v in fields.items() if k != COMMENT and v not in (None, "")}
        comment = fields.get(COMMENT)
        current = ratings.get(shown_text.pk)
        if not scores and not comment and current is None:
            continue  # an empty justification box of an unrated text is not an answer
        if planted.is_planted(shown_text.pk):
            try:
                ratings[shown_text.pk] = planted.answer_as_rating(
                    planted.control_answer_save(
                        participant=save.participant,
                        control=planted.control_of(shown_text.pk, save.item),
                        scores=scores,
                        comment=comment,
                        time_spent_ms=save.row_time,
                    ),
                    shown_text.pk,
                )
            except ValidationError as exc:
                save.errors.update(_field_errors(exc, label))
            continue
        try:
            write = expert_answers.expert_rating_write(
                participant=save.participant,
                shown_text=shown_text,
                scores=scores,
                comment=comment,
                time_spent_ms=save.row_time,
                current=save.current(shown_text_id=shown_text.pk),
            )
        except ValidationError as exc:
            save.errors.update(_field_errors(exc, label))
            continue
        save.pending.append((shown_text.pk, write))


def _original_save(save: _Save, original: dict[str, str], judgement: JudgementRow | None) -> None:
    """The judgement of the original sentence, to be saved when the page gives or had one."""
    severity = original.get("severity") or None
    simplicity = original.get("simplicity") or None
    comment = original.get(COMMENT)
    if not (severity or simplicity or comment or judgement is not None):
        return
    try:
        write = expert_answers.expert_source_judgement_write(
            participant=save.participant,
            source=save.item.source,
            severity=severity,
            simplicity=simplicity,
            comment=comment,
            time_spent_ms=save.row_time,
            current=save.current(shown_text_id=None),
        )
    except ValidationError as exc:
        save.errors.update(_field_errors(exc, ORIGINAL))
        return
    save.pending.append((None, write))


def _protocol_save(
    save: _Save, ratings: dict[int, RatingRow], judgement: JudgementRow | None
) -> JudgementRow | None:
    """Write the page's protocol answers gathered by _texts_save and _original_save (the texts
    by id, then the original: the new answers of all of them in one INSERT), into `ratings`;
    returns the judgement of the original as it is now. Nothing is written once a value was
    refused (the save raises)."""
    if not save.pending or save.errors:
        return judgement
    written = expert_answers.protocol_writes_run(
        participant=save.participant,
        writes=[write for _, write in save.pending],
        language=save.asked.language,
    )
    source_id = save.item.source_id
    for (text_id, _write), rows in zip(save.pending, written, strict=True):
        if text_id is None:
            judgement = expert_answers.judgement_of(rows, participant=save.participant, source_id=source_id)
        else:
            ratings[text_id] = expert_answers.rating_of(
                rows, participant=save.participant, shown_text_id=text_id, source_id=source_id
            )
    return judgement


def _added_items_save(
    save: _Save, added: dict[tuple[str, str], Any], answers: dict[tuple[str, int | None], Any]
) -> None:
    """The answers to the instrument's added items, into `answers` ((key, text id) to value); a
    planted control's go to its control answer."""
    asked, item = save.asked, save.item
    for (row, key), raw in added.items():
        # Added items exist only in an instrument row of the study (never in the bare preset).
        assert asked.current.row_id is not None
        text_id = None if row == ORIGINAL else save.labels[row].pk
        asked_item = asked.current.instrument.item(key)
        if text_id is not None and planted.is_planted(text_id):
            try:
                control_answer = planted.control_answer_save(
                    participant=save.participant,
                    control=planted.control_of(text_id, item),
                    added=[(asked_item, raw)],
                    time_spent_ms=save.row_time,
                )
            except ValidationError as exc:
                save.errors.update(_field_errors(exc, row))
                continue
            answers.pop((key, text_id), None)
            if key in control_answer.added:
                answers[(key, text_id)] = control_answer.added[key]
            continue
        try:
            saved = item_answer_save(
                participant=save.participant,
                instrument_id=asked.current.row_id,
                item=asked_item,
                raw=raw,
                source_id=item.source_id,
                shown_text_id=text_id,
                shown_text=None if row == ORIGINAL else save.labels[row].text,
                language=asked.language,
                time_spent_ms=save.row_time,
            )
        except ValidationError as exc:
            save.errors.update(_field_errors(exc, row))
            continue
        if saved is not None:
            answers[(key, text_id)] = saved.value
        elif asked_item.kind is ItemKind.FREE_TEXT:
            answers.pop((key, text_id), None)  # an emptied text clears its answer


def expert_page_for_save(*, token: str, item_id: int, added_ms: int, require_open: bool = True) -> ExpertItem:
    """The page a save is for, resolved from the URL's token and id and locked in the caller's
    transaction with the save's time added to it (`expert_page_save(locked=True)` follows): one
    statement on PostgreSQL (access_expert_page_locked), the look-up and then the lock elsewhere."""
    if not transaction.get_connection().in_atomic_block:
        raise TransactionManagementError("A page is locked for a save inside the save's transaction.")
    if transaction.get_connection().vendor == "postgresql":
        return access_expert_page_locked(
            token=token, item_id=item_id, added_ms=added_ms, require_open=require_open
        )
    item = access_expert_page(token=token, item_id=item_id, require_open=require_open)
    item.completed_at = _page_lock(item, added_ms)
    return item


def expert_page_save(
    *,
    participant: Participant,
    item: ExpertItem,
    data: Mapping[str, Any],
    time_spent_ms: int = 0,
    locked: bool = False,
) -> ExpertPage:
    """Save the answers in `data` (form fields, see the module docstring; autosave sends one, a
    plain form POST all of them). Empty values mean "not given" and never clear an answer; an empty
    justification does clear one. All or nothing: one bad value raises ValidationError keyed by form
    field and saves nothing. `time_spent_ms` goes to the page and, when the call answers a single
    row (autosave), to that row too. Marks the page, and the survey, complete when they are. When
    the save changed the page's completion, the page returned carries the survey's progress and the
    page's number (the only answers that change them).

    Every save of a page first locks the page's ExpertItem row, then writes its rows in one order
    (texts by id, then the original): two full-page posts whose fields come in different orders
    queue behind each other instead of deadlocking. The page's rows are read under that lock, so
    each answer is written with one UPDATE (or INSERT) and the page's state is known without
    reading them again: a one-row autosave is four queries.

    `locked`: the caller took the page's lock in its transaction and added `time_spent_ms` to the
    page (`expert_page_for_save`), and `item` is the row that lock returned; the save then runs in
    that transaction (a refusal marks it for rollback) and starts with the page's rows."""
    if item.participant_id != participant.pk:
        raise ValidationError("This page belongs to another participant.")
    if locked and not transaction.get_connection().in_atomic_block:
        raise TransactionManagementError("A locked page is saved inside the transaction that locked it.")
    with transaction.atomic(savepoint=not locked):
        if not locked:
            item.completed_at = _page_lock(item, time_spent_ms)
        was_completed = item.completed_at
        text_rows, page_answers = _page_texts(item)
        texts, ratings, judgement = _page_rows(item, text_rows, page_answers)
        labels = dict(texts)
        asked = _asked(participant)
        per_text, original, added, errors = _parse(data, labels, asked)
        if errors:
            raise ValidationError(errors)
        one_row = len({*per_text, *([ORIGINAL] if original else []), *(row for row, _ in added)}) == 1
        save = _Save(
            participant=participant,
            item=item,
            asked=asked,
            labels=labels,
            page_answers=page_answers,
            row_time=time_spent_ms if one_row else 0,
            errors=errors,
        )
        _texts_save(save, per_text, ratings)
        if original:
            _original_save(save, original, judgement)
        judgement = _protocol_save(save, ratings, judgement)
        answers = _added_answers(item, asked, page_answers)
        _added_items_save(save, added, answers)
        if errors:
            raise ValidationError(errors)  # leaving the atomic block by an exception rolls it all back
        page = _page_build(item, texts, ratings, judgement, asked, answers)
        _item_record(item=item, complete=page.complete, time_spent_ms=0)  # the time: added by the lock
        if page.complete and was_completed is None:
            no_marks_record(item=item, texts=texts, asked=asked, answers=answers)
        if (item.completed_at is None) != (was_completed is None):
            # Only a change of the page's completion changes the survey's progress: counted then
            # (under the lock, so with this save), not on every answer.
            place = expert_page_place(item=item, neighbours=False)
            page.progress, page.number = place.progress, place.number
            if page.complete and place.progress.done >= place.progress.total:
                participant_services.participant_complete(participant=participant)
    return page


# Every save of a page: SQL compiled once per process.
_item_update = PreparedUpdate(
    lambda item_id, added_ms, **completion: (
        ExpertItem.objects.filter(pk=item_id),
        {"time_spent_ms": F("time_spent_ms") + added_ms, **completion},
    )
)


def _item_record(*, item: ExpertItem, complete: bool, time_spent_ms: int) -> None:
    """Add the page's time and keep its completion mark true to the answers, in one UPDATE."""
    completion: dict[str, Any] = {}
    if complete and item.completed_at is None:
        item.completed_at = completion["completed_at"] = timezone.now()
    elif not complete and item.completed_at is not None:
        item.completed_at = completion["completed_at"] = None
    added_ms = max(0, int(time_spent_ms))
    if completion or added_ms:
        _item_update.run(item_id=item.pk, added_ms=added_ms, **completion)


def expert_item_mark_completion(*, item: ExpertItem, complete: bool) -> None:
    """Keep ExpertItem.completed_at true to the answers: set when the page became complete (the
    first time only, so it records when), cleared if it is not complete any more."""
    _item_record(item=item, complete=complete, time_spent_ms=0)


# --- Time spent ------------------------------------------------------------------------------------


def page_stamp(*, item: ExpertItem, now: float | None = None) -> str:
    """A signed render time, sent back by a plain form POST so the server can time a page without
    JavaScript."""
    return render_stamp(salt=_STAMP_SALT, page={"item": item.pk}, now=now)


def page_stamp_elapsed_ms(*, item: ExpertItem, stamp: str, now: float | None = None) -> int:
    return render_stamp_elapsed_ms(salt=_STAMP_SALT, page={"item": item.pk}, stamp=stamp, now=now)
