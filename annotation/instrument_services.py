"""Writing a study's instruments and the answers of their generic items.

- `study_instruments_attach`: a new study gets the protocol presets (radiologist page, lay flow);
- `study_instrument_save`: the version rule of instruments/versioning.py, enforced where it is
  written: before any answer an instrument is edited in place; once answers exist (ItemAnswer rows
  under it, or, for a protocol instrument, any answer of its flow) a change is a new version row, with
  who made it and why, the old row kept and the current flag moved in one transaction;
- `item_answer_save`: one answer to an unbound item (a team's added item), validated by
  instruments.answers.item_value_validate, stored (annotation/answer_store.py) with its analysis
  code as `score`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.answer_store import CLEAR, Target, answers_upsert
from annotation.instrument_binding import binding_errors, item_value_to_json
from annotation.instrument_selectors import EXPERT, LAY, PROTOCOL_PRESETS, instruments_stamp
from annotation.item_questions import item_refusal
from annotation.models import (
    ItemAnswer,
    Participant,
    SimplificationText,
    Study,
    StudyInstrument,
)
from instruments.answers import InvalidAnswer, item_value_code, item_value_validate
from instruments.presets import preset_load
from instruments.schema import AppliesTo, Instrument, Item, ItemKind
from instruments.validation import instrument_from_data, instrument_to_data
from instruments.versioning import (
    instrument_change_allowed,
    instrument_fingerprint,
    instrument_structure_fingerprint,
)

# The kinds the radiologist page and the lay panels show for an added item; the others (sentence
# matching, pairwise) belong to the rate-each-pair flow. Error spans are marked on the
# radiologist page only (EXPERT_ONLY_KINDS): the lay panels have no marking widget.
PAGE_KINDS = frozenset(
    {ItemKind.ORDINAL, ItemKind.SINGLE_CHOICE, ItemKind.COUNT, ItemKind.FREE_TEXT, ItemKind.ERROR_SPANS}
)
EXPERT_ONLY_KINDS = frozenset({ItemKind.ERROR_SPANS})
# Where a lay item may be added: panel 1 (the source alone), panel 2 (the source and one text) and
# panel 3 (the source and all its texts, where an item is about the source).
LAY_ADDED_PHASES = ("original", "assisted", "preference")
# The lay panels' form fields besides answers: an added item may not take their names.
_LAY_FORM_FIELDS = frozenset(
    {"fields", "continue", "autosave", "rendered_at", "elapsed_ms", "csrfmiddlewaretoken"}
)
ATTACHED_NOTE = "attached when the study was created"
_FLOW_ROLE = {EXPERT: Participant.Role.RADIOLOGIST.value, LAY: Participant.Role.LAYPERSON.value}


def study_instruments_stamp_refresh(*, study: Study) -> None:
    """Rewrite Study.instruments_stamp from the study's current instrument rows: call inside the
    transaction that changed them (here, and where a study's rows are copied)."""
    _stamp_refresh(study)


def _stamp_refresh(study: Study) -> None:
    """Call inside the transaction that changed the study's current instruments."""
    rows = StudyInstrument.objects.filter(study=study, is_current=True).values_list("pk", "fingerprint")
    study.instruments_stamp = instruments_stamp(rows)
    Study.objects.filter(pk=study.pk).update(instruments_stamp=study.instruments_stamp)


def _row_new(
    *, study: Study, instrument: Instrument, flow: str, preset: str, actor: Any, note: str
) -> StudyInstrument:
    row = StudyInstrument(
        study=study,
        key=instrument.key,
        version=instrument.version,
        flow=flow,
        definition=instrument_to_data(instrument),
        fingerprint=instrument_fingerprint(instrument),
        structure_fingerprint=instrument_structure_fingerprint(instrument),
        preset=preset,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        change_note=note,
    )
    row.full_clean(validate_constraints=False)
    row.save()
    return row


def study_instruments_attach(*, study: Study) -> list[StudyInstrument]:
    """Give `study` the protocol presets for the flows that have no instrument yet (idempotent).
    Called where studies are created (services.study_get_or_create)."""
    with transaction.atomic():
        have = set(
            StudyInstrument.objects.filter(study=study, is_current=True).values_list("flow", flat=True)
        )
        made = [
            _row_new(
                study=study,
                instrument=preset_load(name),
                flow=flow,
                preset=name,
                actor=None,
                note=ATTACHED_NOTE,
            )
            for flow, name in PROTOCOL_PRESETS.items()
            if flow not in have
        ]
        if made:
            _stamp_refresh(study)
    return made


def instrument_has_answers(*, row: StudyInstrument) -> bool:
    """Whether any answer was given under this version: its ItemAnswer rows, or (for a protocol
    instrument, whose bound items are not versioned in their typed columns) any answer of its flow
    in the study."""
    if ItemAnswer.objects.filter(instrument=row).exists():
        return True
    if row.key == PROTOCOL_PRESETS.get(row.flow):
        # The protocol's items pool across its versions: any answer of the flow counts.
        return ItemAnswer.objects.filter(
            instrument__study_id=row.study_id, instrument__flow=row.flow
        ).exists()
    return False


def instrument_flow_errors(instrument: Instrument, flow: str) -> list[str]:
    """What the flow's pages cannot ask (study_instrument_save refuses these; the console's preview
    shows them before a save): a protocol flow lays out its protocol instrument's bound
    items and shows an added item of a page kind, for its role, about the source or the text shown
    (a lay item in one of panels 1-3)."""
    if flow not in PROTOCOL_PRESETS:
        return []
    if instrument.key != PROTOCOL_PRESETS[flow]:
        return [
            f"the {flow} flow asks the protocol instrument {PROTOCOL_PRESETS[flow]!r} (with any items "
            f"you add to it); {instrument.key!r} runs in the rate-each-pair flow"
        ]
    errors = binding_errors(instrument)
    preset_keys = {item.key for item in preset_load(instrument.key).items}
    for item in instrument.items:
        if item.key in preset_keys:
            continue
        where = f"items[{instrument.items.index(item)}] ({item.key})"
        if item.kind not in PAGE_KINDS or (flow != EXPERT and item.kind in EXPERT_ONLY_KINDS):
            errors.append(f"{where}: the {flow} pages cannot show a {item.kind.value} item")
        if item.applies_to is AppliesTo.PAIR:
            errors.append(f"{where}: the {flow} pages show no (simplification, reference) pair")
        if _FLOW_ROLE[flow] not in item.roles:
            errors.append(f"{where}: roles must include {_FLOW_ROLE[flow]!r} to be asked in the {flow} flow")
        if flow == LAY and (len(item.phases) != 1 or item.phases[0] not in LAY_ADDED_PHASES):
            errors.append(
                f"{where}: an added lay item is asked in exactly one of {', '.join(LAY_ADDED_PHASES)}"
            )
        if flow == LAY and item.key in _LAY_FORM_FIELDS:
            errors.append(f"{where}: {item.key!r} is a field of the lay panels' form; choose another key")
        if flow == LAY and "original" in item.phases and item.applies_to is not AppliesTo.SOURCE:
            errors.append(f"{where}: panel 1 shows no simplification, so its items apply to the source")
        if flow == LAY and "preference" in item.phases and item.applies_to is not AppliesTo.SOURCE:
            errors.append(
                f"{where}: panel 3 shows every simplification of the sentence, so its items apply to "
                "the source"
            )
        if item.options_from:
            errors.append(f"{where}: options from the texts are asked in the rate-each-pair flow")
    return errors


def instrument_revision(row: StudyInstrument | None) -> str:
    """What identifies the current row's content: an in-place edit keeps the version and changes
    the fingerprint, a new version changes the row."""
    return "" if row is None else f"{row.pk}:{row.fingerprint}"


def study_instrument_save(
    *,
    study: Study,
    instrument: Instrument,
    actor: Any,
    note: str = "",
    flow: str | None = None,
    preset: str = "",
    based_on: str | None = None,
) -> StudyInstrument:
    """Make `instrument` the study's current version of its key. Before any answer the current row
    is edited in place; once answers exist the change must carry a higher version and becomes a
    new row (the old one kept, no longer current). Refused with a ValidationError naming the reason
    (an edit under the same version once answers exist, a bound item's structure changed, an item
    its flow cannot show). `flow` is needed only for a key the study does not have yet. `based_on`:
    the `instrument_revision` of the current row the caller's edit started from (the console's
    hidden field); the save is refused when another save changed it since."""
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).exists()  # one writer of a study's instruments
        current = (
            StudyInstrument.objects.select_for_update()
            .filter(study=study, key=instrument.key, is_current=True)
            .first()
        )
        if based_on is not None and based_on != instrument_revision(current):
            raise ValidationError(
                {
                    "based_on": "the instrument was changed by another save since this page was shown: "
                    "reload it and make the change again"
                }
            )
        flow = current.flow if current is not None else flow
        if flow is None:
            raise ValidationError(
                {"flow": f"the study has no instrument {instrument.key!r}: say which flow asks it"}
            )
        errors = instrument_flow_errors(instrument, flow)
        if errors:
            raise ValidationError({"instrument": errors})
        if current is None:
            if (
                StudyInstrument.objects.filter(study=study, flow=flow, is_current=True).exists()
                and flow in PROTOCOL_PRESETS
            ):
                raise ValidationError({"flow": f"the {flow} flow already asks another instrument"})
            row = _row_new(
                study=study, instrument=instrument, flow=flow, preset=preset, actor=actor, note=note
            )
        else:
            old = instrument_from_data(current.definition)
            has_answers = instrument_has_answers(row=current)
            allowed, reason = instrument_change_allowed(old, instrument, has_answers=has_answers)
            if not allowed:
                raise ValidationError({"instrument": [reason]})
            if reason == "unchanged":
                return current
            if not has_answers:
                current.version = instrument.version
                current.definition = instrument_to_data(instrument)
                current.fingerprint = instrument_fingerprint(instrument)
                current.structure_fingerprint = instrument_structure_fingerprint(instrument)
                current.change_note = note or current.change_note
                current.save(
                    update_fields=[
                        "version",
                        "definition",
                        "fingerprint",
                        "structure_fingerprint",
                        "change_note",
                    ]
                )
                row = current
            else:
                # The partial unique constraint allows one current row per key: the old one first.
                StudyInstrument.objects.filter(pk=current.pk).update(is_current=False)
                row = _row_new(
                    study=study,
                    instrument=instrument,
                    flow=flow,
                    preset=current.preset,
                    actor=actor,
                    note=note or reason,
                )
        _stamp_refresh(study)
        activity_record(
            study=study,
            actor=actor,
            verb="instrument.saved",
            obj=row,
            details={"key": row.key, "version": row.version, "note": note},
        )
    return row


# More marks than any rater sets on one text: the limit stops a script from filling the database.
MAX_ERROR_SPANS = 500


def error_marks_decode(item: Item, raw: str) -> object:
    """An error-span item's answer as the page posts it: the JSON list of marks ("" is none). Every
    row of a radiologist page reads it here, a planted control's too (surveys/radiologist/controls.py)."""
    if not raw.strip():
        return None
    try:
        marks = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValidationError(
            {item.key: [f"{item.key}: the marks are not a JSON list of {{start, end, category, severity}}"]}
        ) from None
    if isinstance(marks, list) and len(marks) > MAX_ERROR_SPANS:
        raise ValidationError(
            {
                item.key: [
                    f"{item.key}: {len(marks)} marks on one text; at most {MAX_ERROR_SPANS} are accepted"
                ]
            }
        )
    return marks


def _suggestion_fates(
    participant: Participant, item: Item, shown_text_id: int | None, posted: dict[str, Any]
) -> tuple[object, dict[str, Any]]:
    """(the marks, the suggestions record) of an assisted page's answer. The suggestions and
    their origin are the server's (span_suggestions_offered), never the page's: the page sends
    only each suggestion's fate."""
    from annotation.span_suggestions import span_suggestions_offered, suggestion_fates_apply

    if set(posted) - {"marks", "suggestions"}:
        raise ValidationError({item.key: [f"{item.key}: the answer is {{marks, suggestions}}"]})
    text = (
        SimplificationText.objects.filter(pk=shown_text_id).select_related("source").first()
        if shown_text_id is not None
        else None
    )
    offer = (
        span_suggestions_offered(participant=participant, text=text, item=item) if text is not None else None
    )
    if offer is None or not offer[0]:
        raise ValidationError({item.key: [f"{item.key}: this page offers no suggestions"]})
    try:
        items = suggestion_fates_apply(offer[1], posted.get("suggestions") or {})
    except ValueError as exc:
        raise ValidationError({item.key: [f"{item.key}: {exc}"]}) from None
    return posted.get("marks"), {"assisted": True, "items": items}


def item_answers_none_marked(
    *, participant_id: int, instrument_id: int, source_id: int, targets: list[tuple[str, int]], language: str
) -> None:
    """Store "no error marked" ([], score 0) for each (error-span item key, shown text id) of
    `targets` that has no answer yet; an answer given meanwhile is kept (the insert yields to it)."""
    ItemAnswer.objects.bulk_create(
        [
            ItemAnswer(
                participant_id=participant_id,
                instrument_id=instrument_id,
                item_key=key,
                source_id=source_id,
                shown_text_id=text_id,
                value=[],
                score=0.0,
                language=language,
            )
            for key, text_id in targets
        ],
        ignore_conflicts=True,
    )


def item_answer_save(
    *,
    participant: Participant,
    instrument_id: int,
    item: Item,
    raw: object,
    source_id: int,
    shown_text_id: int | None = None,
    shown_text: str | None = None,
    language: str = "",
    time_spent_ms: int = 0,
    phase: str = "",
) -> ItemAnswer | None:
    """Save one answer to an unbound item. An empty answer clears a free-text answer and is ignored
    otherwise ("not given" never clears a rating); a bad value raises ValidationError keyed by the
    item's key, with item_value_validate's reason in the active language. Returns the row (None
    when there is none).

    An error-span item's `raw` is the JSON list of marks the page posts, checked against the text
    shown (`shown_text`, read by `shown_text_id` when not given: its length bounds the offsets). Its
    answer is the whole list, so an emptied list replaces the marks given before (stored as [],
    "no error marked"); where none were given it is no answer. A changed answer keeps its earlier
    value in AnswerRevision, as every answer write does (annotation/answer_writes.py)."""
    target = Target(source_id=source_id, shown_text_id=shown_text_id, phase=phase)
    text_length = None
    suggestions: dict[str, Any] | None = None
    if item.kind is ItemKind.ERROR_SPANS:
        if isinstance(raw, str):
            raw = error_marks_decode(item, raw)
        if isinstance(raw, dict) and {"marks", "suggestions"} & set(raw):
            # An assisted page sends {"marks": [...], "suggestions": {id: fate}} (span_suggestions).
            raw, suggestions = _suggestion_fates(participant, item, shown_text_id, raw)
            if raw is None and suggestions["items"]:
                raw = []  # every suggestion deleted, none kept: "no error marked", fates stored
        if shown_text is None and shown_text_id is not None:
            shown_text = SimplificationText.objects.values_list("text", flat=True).get(pk=shown_text_id)
        text_length = None if shown_text is None else len(shown_text)
    empty = raw is None or (isinstance(raw, str) and not raw.strip())
    write = functools.partial(
        answers_upsert,
        participant=participant,
        instrument_id=instrument_id,
        target=target,
        language=language,
        time_spent_ms=time_spent_ms,
    )
    if empty:
        if item.kind is ItemKind.FREE_TEXT:
            write(values={item.key: CLEAR})
        return None
    try:
        value = item_value_validate(item, raw, text_length=text_length)
    except InvalidAnswer as exc:
        # Named by the item's key, the reason in the participant's language.
        raise ValidationError({item.key: [f"{item.key}: {item_refusal(exc)}"]}) from None
    if value is None and item.kind is ItemKind.ERROR_SPANS:
        exists = ItemAnswer.objects.filter(
            participant=participant, instrument_id=instrument_id, item_key=item.key, **target.lookup()
        ).exists()
        if not suggestions and not exists:
            return None
        value = ()  # every mark removed: the list given before is replaced (and kept as a revision)
    code = item_value_code(item, value)
    written = write(
        values={item.key: (item_value_to_json(value), code if isinstance(code, float) else None)},
        suggestions={item.key: suggestions} if suggestions is not None else None,
    )
    return written[item.key]
