"""A study's life from the researcher's side: creating and configuring it, duplicating it, and
its status (draft → pilot → open ⇄ paused → closed), what the console, the admin actions and
`manage.py study` call. Opening (and starting a pilot) checks that the study can be shown to
participants (its settings are valid and it has sources); status changes are harmless to repeat
and report whether anything changed. Every change is recorded in the activity log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.instrument_services import study_instruments_attach
from annotation.models import (
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
)

if TYPE_CHECKING:
    pass


from annotation import participant_services
from annotation.instrument_services import study_instruments_stamp_refresh
from annotation.models import (
    AttentionCheck,
    StudyInstrument,
    StudyMembership,
)

Status = Study.Status

# The settings a researcher configures (the console's form, `study_configure`); the rest of a
# study's row is its identity (slug), its status and its timestamps.
SETTINGS_FIELDS = (
    "title",
    "description",
    "unit",
    "language",
    "lay_sources_per_participant",
    "expert_sources_per_participant",
    "expert_consent_text",
    "expert_instructions",
    "lay_consent_text",
    "lay_instructions",
    "consent_contact",
    "ethics_approval",
    "expected_duration_minutes",
    "safety_gate_enabled",
    "safety_gate_threshold",
    "ask_urgency",
    "abandon_after_minutes",
    "completion_redirect_url",
    "decline_redirect_url",
    "screen_out_after_failed_checks",
    "screened_out_redirect_url",
    "background_questions",
)
ATTENTION_CHECK_FIELDS = ("position", "prompt", "options", "expected_answer")


# --- Creating, configuring, duplicating ------------------------------------------------------------


def _settings_of(study: Study) -> dict[str, Any]:
    return {name: getattr(study, name) for name in SETTINGS_FIELDS}


def _checks_of(study: Study) -> list[dict[str, Any]]:
    return [
        {name: getattr(check, name) for name in ATTENTION_CHECK_FIELDS}
        for check in AttentionCheck.objects.filter(study=study).order_by("position")
    ]


@transaction.atomic
def study_create(
    *,
    slug: str,
    title: str,
    actor: Any,
    settings: Mapping[str, Any] | None = None,
    attention_checks: Sequence[Mapping[str, Any]] = (),
) -> Study:
    """A new draft study owned by `actor` (a user), with `settings` (names of SETTINGS_FIELDS)
    and `attention_checks`. Raises ValidationError naming each field at fault."""
    unknown = sorted(set(settings or {}) - set(SETTINGS_FIELDS))
    if unknown:
        raise ValueError(f"Not study settings: {', '.join(unknown)}")
    study = Study(slug=slug, title=title, **{k: v for k, v in (settings or {}).items() if k != "title"})
    study.full_clean()
    study.save()
    # The protocol's instruments, as every study gets them (study_get_or_create).
    study_instruments_attach(study=study)
    if getattr(actor, "is_authenticated", False):
        StudyMembership.objects.create(study=study, user=actor, role=StudyMembership.Role.OWNER)
    _attention_checks_set(study=study, checks=attention_checks)
    activity_record(study=study, actor=actor, verb="study.created", obj=study, details={"slug": slug})
    return study


@transaction.atomic
def study_configure(
    *,
    study: Study,
    actor: Any,
    settings: Mapping[str, Any],
    attention_checks: Sequence[Mapping[str, Any]] | None = None,
) -> list[str]:
    """Change the study's settings (names of SETTINGS_FIELDS) and, when given, replace its
    attention checks by `attention_checks` (dicts of ATTENTION_CHECK_FIELDS, plus "id" for an
    existing one). Returns the names of what changed, which the activity log records; nothing is
    recorded when nothing changed. A check some participant answered cannot be removed (its
    answers would go with it): a ValidationError says which."""
    unknown = sorted(set(settings) - set(SETTINGS_FIELDS))
    if unknown:
        raise ValueError(f"Not study settings: {', '.join(unknown)}")
    study = Study.objects.select_for_update().get(pk=study.pk)
    before = _settings_of(study)
    for name, value in settings.items():
        setattr(study, name, value)
    study.full_clean()
    changed = [name for name in SETTINGS_FIELDS if getattr(study, name) != before[name]]
    if changed:
        study.save()
    if attention_checks is not None:
        checks_before = _checks_of(study)
        _attention_checks_set(study=study, checks=attention_checks)
        if _checks_of(study) != checks_before:
            changed.append("attention_checks")
    if changed:
        activity_record(
            study=study, actor=actor, verb="study.changed", obj=study, details={"fields": changed}
        )
    return changed


# Existing checks are moved out of the way before taking their new positions, so that two checks
# may swap places without tripping the (study, position) unique constraint.
_POSITION_SHIFT = 1_000_000


def _attention_checks_set(*, study: Study, checks: Sequence[Mapping[str, Any]]) -> None:
    existing = {check.pk: check for check in AttentionCheck.objects.filter(study=study)}
    errors: list[str] = []
    positions: set[int] = set()
    kept: list[tuple[AttentionCheck, Mapping[str, Any]]] = []
    for index, data in enumerate(checks, start=1):
        check = existing.pop(int(data["id"]), None) if data.get("id") else None
        if data.get("id") and check is None:
            errors.append(f"Attention check {index}: it is not one of this study's checks.")
            continue
        check = check or AttentionCheck(study=study)
        for name in ATTENTION_CHECK_FIELDS:
            setattr(check, name, data.get(name, getattr(check, name)))
        try:
            check.full_clean(exclude=["study"], validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            errors += [f"Attention check {index}: {message}" for message in _messages(exc)]
        if check.position in positions:
            errors.append(
                f"Attention check {index}: another check is already shown at position {check.position}."
            )
        positions.add(check.position)
        kept.append((check, data))
    answered = [c for c in existing.values() if c.responses.exists()]
    for check in answered:
        errors.append(
            f"Attention check at position {check.position} ({check.prompt[:40]!r}) has answers and "
            "cannot be removed: its answers would be lost."
        )
    if errors:
        raise ValidationError({"attention_checks": errors})
    AttentionCheck.objects.filter(pk__in=list(existing)).delete()
    moved = [check for check, _ in kept if check.pk is not None]
    for check in moved:
        AttentionCheck.objects.filter(pk=check.pk).update(position=check.position + _POSITION_SHIFT)
    for check, _ in kept:
        check.save()


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [message for messages in exc.message_dict.values() for message in messages]
    return list(exc.messages)


def _copy(instance, **changes):
    """An unsaved copy of `instance` with `changes` (its primary key cleared)."""
    fields = {
        f.attname: getattr(instance, f.attname)
        for f in instance._meta.concrete_fields
        if not f.primary_key and not getattr(f, "auto_now", False) and not getattr(f, "auto_now_add", False)
    }
    return type(instance)(**{**fields, **changes})


@transaction.atomic
def study_duplicate(*, study: Study, slug: str, title: str, actor: Any) -> Study:
    """A new draft study with `study`'s settings, sources, systems, simplification texts and
    simplifications (with their provenance), attention checks and instruments (every version);
    no participant and no answer. `actor` owns the copy."""
    copy = _copy(study, slug=slug, title=title, status=Status.DRAFT)
    copy.full_clean()
    copy.save()
    if getattr(actor, "is_authenticated", False):
        StudyMembership.objects.create(study=copy, user=actor, role=StudyMembership.Role.OWNER)
    sources = {s.pk: _copy(s, study_id=copy.pk) for s in Source.objects.filter(study=study)}
    Source.objects.bulk_create(sources.values())
    systems = {s.pk: _copy(s, study_id=copy.pk) for s in System.objects.filter(study=study)}
    System.objects.bulk_create(systems.values())
    texts = {
        t.pk: _copy(t, source_id=sources[t.source_id].pk)
        for t in SimplificationText.objects.filter(
            source__study=study, simplifications__isnull=False
        ).distinct()
    }
    SimplificationText.objects.bulk_create(texts.values())
    Simplification.objects.bulk_create(
        _copy(
            s,
            source_id=sources[s.source_id].pk,
            system_id=systems[s.system_id].pk,
            shown_text_id=texts[s.shown_text_id].pk,
        )
        for s in Simplification.objects.filter(source__study=study)
    )
    AttentionCheck.objects.bulk_create(
        _copy(c, study_id=copy.pk) for c in AttentionCheck.objects.filter(study=study)
    )
    StudyInstrument.objects.bulk_create(
        _copy(i, study_id=copy.pk, created_by_id=getattr(actor, "pk", None))
        for i in StudyInstrument.objects.filter(study=study)
    )
    # The copy's surveys name its own instrument rows (the cached current instrument's key).
    study_instruments_stamp_refresh(study=copy)
    details = {"slug": slug, "duplicated_from": study.slug}
    activity_record(study=copy, actor=actor, verb="study.created", obj=copy, details=details)
    activity_record(study=study, actor=actor, verb="study.duplicated", obj=study, details={"copy": slug})
    return copy


# --- Status ----------------------------------------------------------------------------------------


def study_open_problems(*, study: Study) -> list[str]:
    """Why `study` cannot be shown to participants (empty: it can): its settings, its attention
    checks, its sources."""
    problems: list[str] = []
    try:
        study.full_clean()
    except ValidationError as exc:
        problems += _messages(exc)
    for check in AttentionCheck.objects.filter(study=study):
        try:
            check.full_clean(exclude=["study"])
        except ValidationError as exc:
            problems += [f"{message} (position {check.position})" for message in exc.messages]
    if not study.sources.exists():
        problems.append(
            "It has no sources yet: upload them first (the console's Sources page or manage.py import_study)."
        )
    return problems


def _status_set(*, study: Study, status: str, actor: Any, verb: str, check: bool = False) -> bool:
    locked = Study.objects.select_for_update().get(pk=study.pk)
    study.status = locked.status  # the caller's copy follows
    if locked.status == status:
        return False
    if check and (problems := study_open_problems(study=locked)):
        raise ValidationError(f"Study {locked.slug!r} cannot be opened: " + " ".join(problems))
    previous = locked.status
    locked.status = study.status = status
    locked.save(update_fields=["status", "updated_at"])
    activity_record(study=locked, actor=actor, verb=verb, obj=locked, details={"from": previous})
    return True


@transaction.atomic
def study_open(*, study: Study, actor: Any = None) -> bool:
    """Open `study` for participants (from draft, pilot, paused or closed); False when it was open
    already. Raises ValidationError (naming the study and the problem) when it cannot be shown to
    participants."""
    return _status_set(study=study, status=Status.OPEN, actor=actor, verb="study.opened", check=True)


@transaction.atomic
def study_pilot_start(*, study: Study, actor: Any = None) -> bool:
    """Put a draft study in pilot: participants take part as if it were open (the same checks
    apply), but whoever joins is a pilot participant, kept out of progress, the analysis and the
    exports, and can be discarded (`pilot_participants_discard`) before opening."""
    study_row = Study.objects.select_for_update().get(pk=study.pk)
    if study_row.status not in (Status.DRAFT, Status.PILOT):
        raise ValidationError(
            f"Study {study.slug!r} is {study_row.get_status_display().lower()}: "
            "only a draft study can be piloted."
        )
    return _status_set(study=study, status=Status.PILOT, actor=actor, verb="study.pilot_started", check=True)


@transaction.atomic
def study_pause(*, study: Study, actor: Any = None) -> bool:
    """Pause an open study: participants see a "paused" page and no answer is accepted until it
    is opened again; nothing is lost. False when it was paused already."""
    study_row = Study.objects.select_for_update().get(pk=study.pk)
    if study_row.status not in (Status.OPEN, Status.PAUSED):
        raise ValidationError(
            f"Study {study.slug!r} is {study_row.get_status_display().lower()}: "
            "only an open study can be paused."
        )
    return _status_set(study=study, status=Status.PAUSED, actor=actor, verb="study.paused")


@transaction.atomic
def study_close(*, study: Study, actor: Any = None) -> bool:
    """Close `study`: participants see the closed page and no answer is accepted any more. Answers
    given so far are kept. False when it was closed already."""
    return _status_set(study=study, status=Status.CLOSED, actor=actor, verb="study.closed")


# --- Preview and pilot participants -------------------------------------------------------------------


@transaction.atomic
def preview_participant_create(*, study: Study, role: str, actor: Any) -> Participant:
    """A researcher's preview of the real survey of `role`: a participant who may answer whatever
    the study's status and is counted nowhere (annotation.selectors.counted_participants)."""
    participant = participant_services.participant_create(study=study, role=role, is_preview=True)
    activity_record(study=study, actor=actor, verb="study.previewed", obj=participant, details={"role": role})
    return participant


def pilot_participants(*, study: Study):
    return Participant.objects.filter(study=study, is_pilot=True).order_by("role", "pseudonym", "pk")


@transaction.atomic
def pilot_participants_discard(*, study: Study, actor: Any, expected: int | None = None) -> int:
    """Delete the study's pilot participants and every answer they gave (their rows cascade), so
    that the study opens without them. `expected`, the number the researcher confirmed, must match
    (someone joining meanwhile is not deleted unseen). Returns how many were deleted."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status == Status.OPEN:
        raise ValidationError("Pause or close the study before discarding its pilot participants.")
    pilots = Participant.objects.filter(study=study, is_pilot=True)
    pseudonyms = list(pilots.values_list("pseudonym", flat=True))
    if expected is not None and expected != len(pseudonyms):
        raise ValidationError(
            f"The study now has {len(pseudonyms)} pilot participant(s), not {expected}: "
            "look again and confirm."
        )
    pilots.delete()
    activity_record(
        study=study,
        actor=actor,
        verb="pilot.discarded",
        obj=study,
        details={"count": len(pseudonyms), "pseudonyms": pseudonyms},
    )
    return len(pseudonyms)


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
