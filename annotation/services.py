"""Writes of the annotation app: studies, sources, systems, simplifications, participants and every
kind of answer. Each answer service is idempotent (answering twice updates the one row, never
duplicates), validates its values, and adds the time spent it is given to the row's total.

`None` for an answer field means "not given in this call" (autosave sends one question at a time);
it never clears an answer that was given.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet, Value
from django.utils import timezone
from django.utils.translation import gettext_lazy

from annotation import scales
from annotation.activity_services import activity_record
from annotation.importers.bulk_insert import rows_insert
from annotation.instrument_services import study_instruments_attach
from annotation.models import (
    AnswerRevision,
    ConsentRefusal,
    ExpertItem,
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    LayItem,
    LayPreference,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
    normalize_text,
    text_hash,
)
from annotation.prepared_queries import Joined, PreparedQuery, PreparedUpdate, PreparedUpdateReturningOld
from annotation.survey_page import seeded_shuffle

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


# --- Studies, sources, systems, simplifications ------------------------------------------------


def study_get_or_create(*, slug: str, title: str = "", language: str = "") -> tuple[Study, bool]:
    """Call inside a transaction when more writes follow, so that a failure leaves no new study and
    no changed title. `language` (one of settings.LANGUAGES) sets the participants' language; empty
    leaves it as it is (English for a new study)."""
    study = Study.objects.filter(slug=slug).first()
    created = study is None
    if study is None:
        study = Study(slug=slug, title=title or slug, language=language or "en")
    elif (title and study.title != title) or (language and study.language != language):
        study.title = title or study.title
        study.language = language or study.language
    else:
        return study, False
    study.full_clean(validate_unique=False, validate_constraints=False)
    study.save()
    if created:
        # Every new study asks the protocol's instruments until its researchers change them.
        assert study is not None
        study_instruments_attach(study=study)
    return study, created


def study_set_status(*, study: Study, status: str) -> Study:
    if status not in Study.Status.values:
        raise ValidationError(
            {"status": f"Unknown status {status!r}; use one of {', '.join(Study.Status.values)}."}
        )
    study.status = status
    study.save(update_fields=["status", "updated_at"])
    return study


def source_upsert(
    *,
    study: Study,
    key: str,
    text: str,
    reference_severity: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Source:
    """Create the source `key` of `study` or update its text/severity/metadata. New sources take
    the next free position (the fixed index the Latin square uses)."""
    if reference_severity and reference_severity not in scales.SEVERITY.names:
        raise ValidationError(
            {
                "reference_severity": f"{reference_severity!r} is not a severity level "
                f"({', '.join(scales.SEVERITY.names)})."
            }
        )
    text = text.strip()
    if not key.strip() or not text:
        raise ValidationError("A source needs a non-empty key and text.")
    source = Source.objects.filter(study=study, key=key).first()
    if source is None:
        last = (
            Source.objects.filter(study=study)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        source = Source(study=study, key=key, position=0 if last is None else last + 1)
    source.text = text
    if reference_severity is not None:
        source.reference_severity = reference_severity
    if metadata is not None:
        source.metadata = {**source.metadata, **dict(metadata)}
    source.full_clean(validate_unique=False, validate_constraints=False)
    source.save()
    return source


def system_upsert(
    *,
    study: Study,
    key: str,
    label: str = "",
    config: Mapping[str, Any] | None = None,
    is_reference: bool | None = None,
) -> System:
    system = System.objects.filter(study=study, key=key).first()
    if system is None:
        last = (
            System.objects.filter(study=study)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        system = System(study=study, key=key, position=0 if last is None else last + 1)
    if label:
        system.label = label
    elif not system.label:
        system.label = key
    if config is not None:
        system.config = dict(config)
    if is_reference is not None:
        system.is_reference = is_reference
    system.full_clean(validate_unique=False, validate_constraints=False)
    system.save()
    return system


def simplification_text_get_or_create(*, source: Source, text: str) -> SimplificationText:
    digest = text_hash(text)
    shown, _ = SimplificationText.objects.get_or_create(
        source=source, text_hash=digest, defaults={"text": normalize_text(text)}
    )
    return shown


def simplification_upsert(
    *, source: Source, system: System, text: str, provenance: Mapping[str, Any] | None = None
) -> Simplification:
    """Set the (source, system) simplification. Identical texts of a source share one
    SimplificationText, so answers on it count for every system that produced it."""
    if system.study_id != source.study_id:
        raise ValidationError("The system and the source belong to different studies.")
    if not text or not text.strip():
        raise ValidationError(
            {"text": f"Empty simplification for source {source.key!r}, system {system.key!r}."}
        )
    shown = simplification_text_get_or_create(source=source, text=text)
    simplification = Simplification.objects.filter(source=source, system=system).first()
    previous_text_id = simplification.shown_text_id if simplification else None
    if simplification is None:
        simplification = Simplification(source=source, system=system)
    simplification.shown_text = shown
    for field, value in (provenance or {}).items():
        if not hasattr(Simplification, field):
            raise ValidationError(f"Unknown provenance field {field!r}.")
        setattr(simplification, field, value)
    simplification.save()
    if previous_text_id and previous_text_id != shown.pk:
        _text_delete_if_unused(previous_text_id)
    return simplification


def _text_delete_if_unused(text_id: int) -> None:
    shown = SimplificationText.objects.filter(pk=text_id).first()
    if shown is None:
        return
    in_use = (
        shown.simplifications.exists()
        or shown.expert_ratings.exists()
        or shown.lay_items.exists()
        or shown.most_votes.exists()
        or shown.least_votes.exists()
    )
    if not in_use:
        shown.delete()


# --- Participants --------------------------------------------------------------------------------


def _next_pseudonym(study: Study, role: str, *, preview: bool = False) -> str:
    """The role's next pseudonym (L001, L002, … / R001, …; previews: preview-L1, …, so that
    they take no participant's number). Call inside a transaction holding the study row lock:
    concurrent joins then number one after another instead of colliding."""
    if preview:
        prefix = "preview-R" if role == Participant.Role.RADIOLOGIST else "preview-L"
        n = Participant.objects.filter(study=study, role=role, is_preview=True).count() + 1
        while Participant.objects.filter(study=study, pseudonym=f"{prefix}{n}").exists():
            n += 1
        return f"{prefix}{n}"
    prefix = "R" if role == Participant.Role.RADIOLOGIST else "L"
    taken = set(
        Participant.objects.filter(study=study, role=role, is_preview=False).values_list(
            "pseudonym", flat=True
        )
    )
    n = len(taken) + 1
    while f"{prefix}{n:03d}" in taken:
        n += 1
    return f"{prefix}{n:03d}"


def participant_create(
    *,
    study: Study,
    role: str,
    external_id: str = "",
    user: Any = None,
    recruitment: Mapping[str, Any] | None = None,
    pseudonym: str = "",
    rater_group: str = "",
    is_preview: bool = False,
) -> Participant:
    """A new participant. Without a given pseudonym the next free one of the role is assigned
    under the study row lock, so simultaneous joins all succeed with distinct pseudonyms. A
    participant made while the study is in pilot is a pilot participant; `is_preview` makes a
    researcher's preview (counted nowhere)."""
    if role not in Participant.Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}; use radiologist or layperson."})
    with transaction.atomic():
        rows = Study.objects.filter(pk=study.pk)
        # The stored status, not the caller's copy: a study opened since it was loaded makes no pilots.
        status = (rows if pseudonym else rows.select_for_update()).values_list("status", flat=True).get()
        if not pseudonym:
            pseudonym = _next_pseudonym(study, role, preview=is_preview)
        participant = Participant(
            study=study,
            role=role,
            external_id=external_id,
            user=user,
            recruitment=dict(recruitment or {}),
            pseudonym=pseudonym,
            rater_group=rater_group,
            order_seed=random.SystemRandom().randrange(2**31),
            is_preview=is_preview,
            # Whoever joins or is invited during the pilot stays a pilot participant.
            is_pilot=not is_preview and status == Study.Status.PILOT,
        )
        participant.save()
    return participant


def participants_invite(
    *, study: Study, role: str, count: int, actor: Any = None, rater_group: str = ""
) -> list[Participant]:
    """`rater_group`: the instrument group they answer as, where it is not the role (checked by
    annotation.pairs.setup.pairs_participants_invite)."""
    if count < 1:
        raise ValidationError({"count": "Invite at least one participant."})
    with transaction.atomic():
        participants = [
            participant_create(study=study, role=role, rater_group=rater_group) for _ in range(count)
        ]
        details: dict[str, Any] = {"role": role, "count": count}
        if rater_group:
            details["rater_group"] = rater_group
        activity_record(
            study=study,
            actor=actor,
            verb="participants.invited",
            details={**details, "pseudonyms": [p.pseudonym for p in participants]},
        )
    return participants


def participant_touch(*, participant: Participant) -> None:
    now = timezone.now()
    updates = {"last_activity_at": now}
    if participant.started_at is None:
        updates["started_at"] = now
        participant.started_at = now
    participant.last_activity_at = now
    Participant.objects.filter(pk=participant.pk).update(**updates)


def participant_language_record(*, participant: Participant, language: str) -> None:
    """Record the language the participant is shown the study in, once: the first survey request
    sets it and later ones keep it (a study's language changed mid-fieldwork does not rewrite what
    earlier participants saw). Concurrent first requests write the same value once."""
    if participant.language:
        return
    Participant.objects.filter(pk=participant.pk, language="").update(language=language)
    participant.language = language


def participant_consent(*, participant: Participant, accepted: bool) -> Participant:
    """Record the participant's consent (or refusal). Whoever first consents while the study is in
    pilot is a pilot participant, and whoever first consents once it is open is not, whenever
    their link was made: a pilot participant is one who took part during the pilot."""
    now = timezone.now()
    fields = ["consented_at", "declined_at"]
    if accepted:
        if participant.consented_at is None and not participant.is_preview:
            # The stored status: the caller's study row may predate a status change.
            status = Study.objects.filter(pk=participant.study_id).values_list("status", flat=True).get()
            participant.is_pilot = status == Study.Status.PILOT
            fields.append("is_pilot")
        participant.consented_at = participant.consented_at or now
        participant.declined_at = None
    else:
        participant.declined_at = now
    participant.save(update_fields=fields)
    return participant


def consent_refusal_record(*, study: Study, role: str) -> ConsentRefusal:
    return ConsentRefusal.objects.create(study=study, role=role)


@transaction.atomic
def participants_mark_returned(*, participants: QuerySet[Participant], actor: Any = None) -> int:
    """Mark participants returned or withdrawn (e.g. on Prolific): they can no longer answer, and a
    layperson's Latin-square row is handed out again. Completed ones are left as they are; returns
    how many were marked. Each study's activity log records whom."""
    marked = list(
        participants.filter(completed_at__isnull=True, returned_at__isnull=True)
        .select_for_update()
        .select_related("study")
    )
    Participant.objects.filter(pk__in=[p.pk for p in marked]).update(returned_at=timezone.now())
    by_study: dict[int, list[Participant]] = {}
    for participant in marked:
        by_study.setdefault(participant.study_id, []).append(participant)
    for group in by_study.values():
        activity_record(
            study=group[0].study,
            actor=actor,
            verb="participants.returned",
            details={"pseudonyms": [p.pseudonym or str(p.pk) for p in group]},
        )
    return len(marked)


def participant_complete(*, participant: Participant) -> Participant:
    if participant.completed_at is None:
        participant.completed_at = timezone.now()
        participant.save(update_fields=["completed_at"])
    return participant


# --- Expert answers ---------------------------------------------------------------------------------


def _check_likert(name: str, value: Any) -> int:
    low, high = scales.LIKERT.lowest, scales.LIKERT.highest
    refusal = {name: f"{name} must be a whole number from {low} to {high}, not {value!r}."}
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(refusal) from None
    if not low <= number <= high or str(value).strip() not in {str(number), f"{number}.0"}:
        raise ValidationError(refusal)
    return number


def _check_level(name: str, value: str, scale: scales.Scale) -> str:
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


def _require_role(participant: Participant, role: str) -> None:
    if participant.role != role:
        raise ValidationError(f"Participant {participant.pseudonym or participant.pk} is not a {role}.")


# The default of `current` in the expert answer services: the caller has not read the row.
UNREAD = object()


@functools.cache
def _answer_update(model, names: tuple[str, ...]) -> PreparedUpdate:
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


def _answer_write(model, lookup: dict[str, Any], current, fields: dict[str, Any], time_spent_ms: int):
    """Write `fields` of one answer row that the caller read as `current` under its lock: an
    UPDATE of just those fields (the time is added in the database), or an INSERT. Should a row
    appear that the caller's lock did not cover (a writer outside the page flow), the insert
    updates it instead of failing, keeping that row's time."""
    now = timezone.now()
    added = max(0, int(time_spent_ms))
    if current is not None:
        previous = {name: getattr(current, name) for name in fields}
        updated = _answer_update(model, tuple(fields)).run(
            row_id=current.pk, added_ms=added, now=now, **fields
        )
        if updated:
            _revision_record(model, lookup, current.pk, fields, previous, current.updated_at, now)
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


def _expert_answer_save(model, lookup: dict[str, Any], current, fields: dict[str, Any], time_spent_ms: int):
    # A caller that read the row under its page lock passes it as `current`: one write.
    if current is not UNREAD:
        return _answer_write(model, lookup, current, fields, time_spent_ms)
    # No savepoint: the values are checked before, so what can fail inside is the database, and
    # that must abort the caller's whole transaction anyway.
    with transaction.atomic(savepoint=False):
        return _answer_save_locked(model, lookup, fields, time_spent_ms)


def _answer_save_locked(
    model, lookup: Mapping[str, Any], fields: Mapping[str, Any], time_spent_ms: int, defaults=None
):
    """The answer row of `lookup` with `fields` written and `time_spent_ms` added, inside the
    caller's transaction: a later save is one UPDATE that locks the row and returns it; a first
    save inserts the row with its values (and `defaults`). Of two concurrent first saves (double
    click, two tabs), the loser of the insert race updates the winner's row."""
    where = {model._meta.get_field(name).attname: getattr(v, "pk", v) for name, v in lookup.items()}
    update = _answer_update_where(model, tuple(sorted(where)), tuple(fields))
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
    answer = _whole_row(model).instances(rows[0][:width])
    *previous, previous_at = rows[0][width:]
    _revision_record(
        model,
        lookup,
        answer.pk,
        fields,
        dict(zip(fields, previous, strict=True)),
        previous_at,
        arguments["now"],
    )
    return answer


def _revision_record(model, lookup, answer_id: int, fields, previous: dict, previous_at, now) -> None:
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


def expert_rating_save(
    *,
    participant: Participant,
    shown_text: SimplificationText,
    scores: Mapping[str, Any] | None = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: ExpertRating | None | object = UNREAD,
) -> ExpertRating:
    """Save (part of) a radiologist's rating of one distinct text. Unknown aspects, values outside
    1-5 and texts of another study are refused. `current` is the row as the caller read it under a
    lock that serialises writers of this row (None: there is none yet); with it the save is one
    UPDATE or one INSERT instead of a locked read, a savepoint and a write."""
    _require_role(participant, Participant.Role.RADIOLOGIST)
    if shown_text.source.study_id != participant.study_id:
        raise ValidationError("This simplification belongs to another study.")
    clean: dict[str, int] = {}
    for aspect, value in (scores or {}).items():
        if aspect not in scales.EXPERT_ASPECTS:
            raise ValidationError(
                {aspect: f"Unknown aspect {aspect!r} ({', '.join(scales.EXPERT_ASPECTS)})."}
            )
        if value is not None:
            clean[aspect] = _check_likert(aspect, value)
    if comment is not None:
        comment = free_text_clean("comment", comment)
    fields: dict[str, Any] = dict(clean)
    if comment is not None:
        fields["comment"] = comment
    lookup = {"participant": participant, "shown_text": shown_text}
    return _expert_answer_save(ExpertRating, lookup, current, fields, time_spent_ms)


def expert_source_judgement_save(
    *,
    participant: Participant,
    source: Source,
    severity: str | None = None,
    simplicity: Any = None,
    comment: str | None = None,
    time_spent_ms: int = 0,
    current: ExpertSourceJudgement | None | object = UNREAD,
) -> ExpertSourceJudgement:
    """Save (part of) a radiologist's judgement of an original sentence; `current` as for
    expert_rating_save."""
    _require_role(participant, Participant.Role.RADIOLOGIST)
    if source.study_id != participant.study_id:
        raise ValidationError("This source belongs to another study.")
    if severity is not None:
        _check_level("severity", severity, scales.SEVERITY)
    simplicity_value = _check_likert("simplicity", simplicity) if simplicity is not None else None
    if comment is not None:
        comment = free_text_clean("comment", comment)
    fields: dict[str, Any] = {}
    if severity is not None:
        fields["severity"] = severity
    if simplicity_value is not None:
        fields["simplicity"] = simplicity_value
    if comment is not None:
        fields["comment"] = comment
    lookup = {"participant": participant, "source": source}
    return _expert_answer_save(ExpertSourceJudgement, lookup, current, fields, time_spent_ms)


def _expert_text_order(participant: Participant, source_id: int, text_ids: Iterable[int]) -> list[int]:
    """A page's texts in a random order drawn from the participant's seed (labels A, B, … follow it)."""
    return seeded_shuffle(sorted(set(text_ids)), seed=participant.order_seed, purpose=str(source_id))


def expert_item_create(
    *, participant: Participant, source: Source, position: int, text_order: Sequence[int] | None = None
) -> ExpertItem:
    """The radiologist's page for `source`; its texts in a random order drawn from the
    participant's seed unless given."""
    _require_role(participant, Participant.Role.RADIOLOGIST)
    if text_order is None:
        text_order = _expert_text_order(
            participant,
            source.pk,
            SimplificationText.objects.filter(source=source, simplifications__isnull=False).values_list(
                "pk", flat=True
            ),
        )
    item, _ = ExpertItem.objects.get_or_create(
        participant=participant,
        source=source,
        defaults={"position": position, "text_order": list(text_order)},
    )
    return item


def expert_items_create(
    *, participant: Participant, source_ids: Sequence[int], first_position: int
) -> list[int]:
    """Pages for `source_ids` at consecutive positions from `first_position`, in a constant
    number of queries whatever their number (a COPY on PostgreSQL); returns their ids in that
    order. Call inside a transaction holding the participant row lock (two first visits would
    otherwise race for the same positions)."""
    _require_role(participant, Participant.Role.RADIOLOGIST)
    texts: dict[int, list[int]] = {}
    rows = (
        Simplification.objects.filter(source__in=list(source_ids))
        .order_by()
        .values_list("source_id", "shown_text_id")
        .distinct()
    )
    for source_id, text_id in rows:
        texts.setdefault(source_id, []).append(text_id)
    return rows_insert(
        ExpertItem,
        columns=("source_id", "position", "text_order"),
        rows=[
            (
                source_id,
                first_position + offset,
                _expert_text_order(participant, source_id, texts.get(source_id, ())),
            )
            for offset, source_id in enumerate(source_ids)
        ],
        fixed={"participant_id": participant.pk},
    )


# --- Lay answers -------------------------------------------------------------------------------------


def lay_item_create(
    *,
    participant: Participant,
    source: Source,
    position: int,
    shown_text: SimplificationText,
    assigned_system: System | None,
    preference_order: Sequence[int] | None = None,
) -> LayItem:
    _require_role(participant, Participant.Role.LAYPERSON)
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
        clean[name] = _check_level(name, value, scales.LAY_SCALES[name])
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
            return _answer_save_locked(LayAnswer, {"item": item, "phase": phase}, clean, time_spent_ms)
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
        preference = _answer_save_locked(
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


@functools.cache
def _whole_row(model) -> Joined:
    return Joined(model)


@functools.cache
def _answer_update_where(model, keys: tuple[str, ...], names: tuple[str, ...]) -> PreparedUpdateReturningOld:
    # An answer's later saves, found by their key (`where_<column>`): SQL compiled once per process.
    return PreparedUpdateReturningOld(
        lambda added_ms, now, **arguments: (
            model.objects.filter(**{key: arguments[f"where_{key}"] for key in keys}),
            _answer_changes({name: arguments[name] for name in names}, added_ms, now),
        ),
        model,
        old=(*names, "updated_at"),
    )
