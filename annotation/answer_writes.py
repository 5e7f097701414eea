"""What every answer write shares: the value checks (Likert range, level names, free text), the
lock refusal, and the one idempotent write of an answer row with its revision history (split out of
annotation/services.py by subject). `None` for an answer field means "not given in this call"
(autosave sends one question at a time); it never clears an answer that was given."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy

from annotation import scales
from annotation.models import (
    AnswerRevision,
    Participant,
)
from annotation.prepared_queries import Joined, PreparedUpdate, PreparedUpdateReturningOld

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


class AnswerLocked(ValidationError):
    """An answer that may no longer change: panel 1's, once its item's `original_locked_at` is set
    (annotation/lay/panels.py sets it when the simplification is first shown)."""

    MESSAGE = gettext_lazy(
        "Your answers about the original sentence are locked because the simplification has been "
        "shown; they were not changed."
    )

    def __init__(self, message: StrOrPromise = MESSAGE):
        super().__init__(message)


def likert_clean(name: str, value: Any) -> int:
    low, high = scales.LIKERT.lowest, scales.LIKERT.highest
    refusal = {name: f"{name} must be a whole number from {low} to {high}, not {value!r}."}
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(refusal) from None
    if not low <= number <= high or str(value).strip() not in {str(number), f"{number}.0"}:
        raise ValidationError(refusal)
    return number


def expert_scores_clean(scores: Mapping[str, Any] | None) -> dict[str, int]:
    """A radiologist's {aspect: 1-5} answers for one text (a real one or a planted control), None
    values left out; an unknown aspect or a value outside 1-5 is refused by name."""
    clean: dict[str, int] = {}
    for aspect, value in (scores or {}).items():
        if aspect not in scales.EXPERT_ASPECTS:
            raise ValidationError(
                {aspect: f"Unknown aspect {aspect!r} ({', '.join(scales.EXPERT_ASPECTS)})."}
            )
        if value is not None:
            clean[aspect] = likert_clean(aspect, value)
    return clean


def level_clean(name: str, value: str, scale: scales.Scale) -> str:
    if value not in scale.names:
        raise ValidationError(
            {name: f"{value!r} is not an answer to {name} (one of: {', '.join(scale.names)})."}
        )
    return value


# A justification is a few sentences; the limit stops a pasted document (or a script) from filling
# the database, and matches the page's maxlength.
COMMENT_MAX_LENGTH = 5000


def free_text_clean(name: str, value: str, *, max_length: int = COMMENT_MAX_LENGTH) -> str:
    """A participant's free text, stripped; NUL characters (which PostgreSQL cannot store) and text
    longer than `max_length` are refused with a message naming the field."""
    if not isinstance(value, str):
        raise ValidationError({name: f"{name} must be text."})
    if "\x00" in value:
        raise ValidationError({name: f"{name} contains a NUL character; please remove it."})
    value = value.strip()
    if len(value) > max_length:
        raise ValidationError(
            {name: f"{name} is {len(value)} characters long; at most {max_length} are accepted."}
        )
    return value


def role_require(participant: Participant, role: str) -> None:
    if participant.role != role:
        raise ValidationError(f"Participant {participant.pseudonym or participant.pk} is not a {role}.")


# The default of `current` in the expert answer services: the caller has not read the row.
UNREAD = object()


@functools.cache
def answer_update(model, names: tuple[str, ...]) -> PreparedUpdate:
    # Most autosaves update one answer row: SQL compiled once per process.
    return PreparedUpdate(
        lambda row_id, added_ms, now, **fields: (
            model.objects.filter(pk=row_id),
            _answer_changes(fields, added_ms, now),
        )
    )


def _answer_changes(fields: Mapping[str, Any], added_ms, now) -> dict[str, Any]:
    # What every later save of an answer sets: its fields, the time added in the database, when.
    return {**fields, "time_spent_ms": F("time_spent_ms") + added_ms, "updated_at": now}


def answer_write(model, lookup: dict[str, Any], current, fields: dict[str, Any], time_spent_ms: int):
    """Write `fields` of one answer row that the caller read as `current` under its lock: an
    UPDATE of just those fields (the time is added in the database), or an INSERT. Should a row
    appear that the caller's lock did not cover (a writer outside the page flow), the insert
    updates it instead of failing, keeping that row's time."""
    now = timezone.now()
    added = max(0, int(time_spent_ms))
    if current is not None:
        previous = {name: getattr(current, name) for name in fields}
        updated = answer_update(model, tuple(fields)).run(
            row_id=current.pk, added_ms=added, now=now, **fields
        )
        if updated:
            revision_record(model, lookup, current.pk, fields, previous, current.updated_at, now)
            for name, value in fields.items():
                setattr(current, name, value)
            current.time_spent_ms += added
            current.updated_at = now
            return current
    row = model(**lookup, **fields, time_spent_ms=added)
    model.objects.bulk_create(
        [row], update_conflicts=True, unique_fields=list(lookup), update_fields=[*fields, "updated_at"]
    )
    return row


def answer_save_locked(
    model, lookup: Mapping[str, Any], fields: Mapping[str, Any], time_spent_ms: int, defaults=None
):
    """The answer row of `lookup` with `fields` written and `time_spent_ms` added, inside the
    caller's transaction: a later save is one UPDATE that locks the row and returns it; a first
    save inserts the row with its values (and `defaults`). Of two concurrent first saves (double
    click, two tabs), the loser of the insert race updates the winner's row."""
    where = {model._meta.get_field(name).attname: getattr(v, "pk", v) for name, v in lookup.items()}
    update = answer_update_where(model, tuple(sorted(where)), tuple(fields))
    arguments = {
        **{f"where_{name}": value for name, value in where.items()},
        **fields,
        "added_ms": max(0, int(time_spent_ms)),
        "now": timezone.now(),
    }
    rows = update.rows(**arguments)
    if not rows:
        try:
            with transaction.atomic():
                row = {**lookup, **(defaults or {}), **fields, "time_spent_ms": arguments["added_ms"]}
                return model.objects.create(**row)
        except IntegrityError:
            rows = update.rows(**arguments)  # the winner's row, committed by now
            if not rows:
                raise
    # Each row is the answer as updated, then the changed fields' and updated_at's earlier values.
    width = len(model._meta.concrete_fields)
    answer = whole_row(model).instances(rows[0][:width])
    *previous, previous_at = rows[0][width:]
    revision_record(
        model,
        lookup,
        answer.pk,
        fields,
        dict(zip(fields, previous, strict=True)),
        previous_at,
        arguments["now"],
    )
    return answer


def revision_record(model, lookup, answer_id: int, fields, previous: dict, previous_at, now) -> None:
    """Keep the earlier values of the fields this save changed (one INSERT, only then). A field
    filled in for the first time (no earlier value) is not a change: a page saved aspect by aspect
    writes no revision."""
    changed = {
        name: value for name, value in previous.items() if value not in (None, "") and value != fields[name]
    }
    if not changed:
        return
    participant_id = lookup["participant"].pk if "participant" in lookup else lookup["item"].participant_id
    AnswerRevision.objects.create(
        participant_id=participant_id,
        answer_type=model._meta.label,
        answer_id=answer_id,
        previous=changed,
        # A caller's row read without its time (none in radlay now) must not cost the answer.
        previous_at=previous_at or now,
        revised_at=now,
    )


@functools.cache
def whole_row(model) -> Joined:
    return Joined(model)


@functools.cache
def answer_update_where(model, keys: tuple[str, ...], names: tuple[str, ...]) -> PreparedUpdateReturningOld:
    # An answer's later saves, found by their key (`where_<column>`): SQL compiled once per process.
    return PreparedUpdateReturningOld(
        lambda added_ms, now, **arguments: (
            model.objects.filter(**{key: arguments[f"where_{key}"] for key in keys}),
            _answer_changes({name: arguments[name] for name in names}, added_ms, now),
        ),
        model,
        old=(*names, "updated_at"),
    )
