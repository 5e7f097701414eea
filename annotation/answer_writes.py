"""What every answer write shares: the value checks (Likert range, level names, free text) and the
lock refusal. `None` for an answer field means
"not given in this call" (autosave sends one question at a time); it never clears an answer that
was given. The write itself, with its revision rule, is annotation/answer_store.py's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy

from annotation import scales
from annotation.models import Participant

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


class AnswerLocked(ValidationError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """An answer that may no longer change: panel 1's, once its item's `original_locked_at` is set
    (surveys/lay/panels.py sets it when the simplification is first shown)."""

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
