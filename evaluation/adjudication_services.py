"""Writing adjudication: an adjudicator records the consensus value of one unit (an item on a
target whose raters disagree) beside the raters' answers, never over them. The console page, the
API and `manage.py adjudicate record` all call `adjudication_record`.

Refused, each on its field with the reason: a unit the study does not have or whose raters agree
(`unit`), an adjudicator who rated that item on that target (`adjudicator`), a value the item
cannot take (`value`: instruments.answers.item_value_validate), a reason outside the three
categories (`reason`)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.activity_services import activity_record
from annotation.instrument_binding import item_value_to_json
from annotation.models import SimplificationText, Study
from evaluation.adjudication_selectors import Unit, UnknownUnit, adjudication_unit, rater_users
from evaluation.models import AdjudicatedLabel
from instruments.answers import InvalidAnswer, item_value_code, item_value_validate
from instruments.schema import ItemKind

REASONS = AdjudicatedLabel.Reason
# A day: time on one unit beyond it is a clock that was left running, not work.
MAX_TIME_SPENT_MS = 24 * 3600 * 1000


def _raw(unit: Unit, raw: Any) -> Any:
    """A form's or command line's text as the value the item's validation reads: a JSON list for
    error spans and multiple choices, the code for a scale."""
    if isinstance(raw, str) and unit.item.kind in (ItemKind.ERROR_SPANS, ItemKind.MULTIPLE_CHOICE):
        text = raw.strip()
        if not text:
            return []
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError({"value": f"value: not a JSON list ({exc.msg})"}) from exc
    return raw


def _validated(unit: Unit, raw: Any) -> Any:
    text_length = None
    if unit.item.kind is ItemKind.ERROR_SPANS and unit.key.shown_text_id:
        text_length = len(SimplificationText.objects.get(pk=unit.key.shown_text_id).text)
    try:
        value = item_value_validate(unit.item, _raw(unit, raw), text_length=text_length)
    except InvalidAnswer as exc:
        raise ValidationError({"value": f"value: {exc.reason}"}) from exc
    if value is None:
        raise ValidationError({"value": "value: a consensus value is required"})
    return value


def adjudication_record(
    *,
    study: Study,
    unit: str,
    value: Any,
    reason: str,
    adjudicator: Any,
    guideline_gap: bool = False,
    note: str = "",
    time_spent_ms: int = 0,
) -> AdjudicatedLabel:
    """Record (or revise) the consensus of `unit` (a UnitKey token) by `adjudicator` (a user).
    Logged as adjudication.recorded or adjudication.revised."""
    try:
        found = adjudication_unit(study=study, token=unit)
    except UnknownUnit as exc:
        raise ValidationError({"unit": str(exc)}) from exc
    if not found.is_disagreement:
        raise ValidationError(
            {"unit": "unit: its raters agree (or only one rated it): nothing to adjudicate"}
        )
    if getattr(adjudicator, "pk", None) in rater_users(unit=found):
        refused = "adjudicator: you rated this item on this text yourself; another member adjudicates it"
        raise ValidationError({"adjudicator": refused})
    if reason not in REASONS.values:
        raise ValidationError({"reason": f"reason: {reason!r} is not one of {', '.join(REASONS.values)}"})
    if not isinstance(time_spent_ms, int) or not 0 <= time_spent_ms <= MAX_TIME_SPENT_MS:
        refused = f"time_spent_ms: a whole number of milliseconds from 0 to {MAX_TIME_SPENT_MS}"
        raise ValidationError({"time_spent_ms": refused})
    checked = _validated(found, value)
    score = item_value_code(found.item, checked)
    key = found.key
    fields = {
        "value": item_value_to_json(checked),
        "score": score if isinstance(score, float) else None,
        "reason": reason,
        "guideline_gap": bool(guideline_gap),
        "note": str(note or "").strip(),
        "disagreement": found.disagreement.score if found.disagreement else 0.0,
        "raters": len(found.answers),
        "time_spent_ms": time_spent_ms,
        "adjudicator": adjudicator if getattr(adjudicator, "is_authenticated", False) else None,
        "adjudicator_label": (
            adjudicator.get_username() if hasattr(adjudicator, "get_username") else str(adjudicator)
        )[:150],
    }
    try:
        with transaction.atomic():
            label = (
                AdjudicatedLabel.objects.select_for_update()
                .filter(
                    study=study,
                    instrument_id=key.instrument_id,
                    item_key=key.item_key,
                    source_id=key.source_id,
                    shown_text_id=key.shown_text_id,
                    reference_text_id=key.reference_text_id,
                )
                .first()
            )
            previous = None if label is None else {"value": label.value, "reason": label.reason}
            if label is None:
                label = AdjudicatedLabel(
                    study=study,
                    instrument_id=key.instrument_id,
                    item_key=key.item_key,
                    source_id=key.source_id,
                    shown_text_id=key.shown_text_id,
                    reference_text_id=key.reference_text_id,
                )
            for name, field_value in fields.items():
                setattr(label, name, field_value)
            label.full_clean(validate_constraints=False, validate_unique=False)
            label.save()
            details = {
                "unit": key.token,
                "instrument": found.instrument.key,
                "version": found.instrument.version,
                "item": key.item_key,
                "value": label.value,
                "reason": reason,
                "guideline_gap": label.guideline_gap,
                "disagreement": round(label.disagreement, 4),
                "raters": label.raters,
            }
            verb = "adjudication.recorded"
            if previous is not None:
                verb, details["previous"] = "adjudication.revised", previous
            activity_record(study=study, actor=adjudicator, verb=verb, obj=label, details=details)
    except IntegrityError as exc:
        raise ValidationError(
            {"unit": "unit: another adjudicator recorded this unit just now; reload it"}
        ) from exc
    return label
