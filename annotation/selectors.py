"""Reads of the annotation app."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Q, QuerySet
from django.utils import translation

from annotation.answer_selectors import expert_judgements, expert_ratings, lay_answers, lay_preferences
from annotation.models import (
    NEEDS,
    ROLE_CAPABILITIES,
    ActivityEvent,
    AnswerRevision,
    ItemAnswer,
    LayItem,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    StudyMembership,
    System,
)
from annotation.wording import translation_status


def counted_participants(*, path: str = "") -> Q:
    """The one rule for who counts at all: every participant but the researchers' previews
    (Participant.is_preview) and the pilot's participants (Participant.is_pilot). Progress, the
    analysis, the exports, the API, the safety gate and the Latin-square balance all filter with
    it. `path` leads from the queried model to its participant ("participant__" from an
    ItemAnswer, "item__participant__" from a LayItem's relation)."""
    return Q(**{f"{path}is_preview": False, f"{path}is_pilot": False})


def analysed_participants(*, path: str = "") -> Q:
    """The one rule for whose answers the analysis uses: the counted participants but those
    screened out by failed attention checks (Study.screen_out_after_failed_checks); the exports
    keep the screened-out ones."""
    return counted_participants(path=path) & Q(**{f"{path}screened_out_at__isnull": True})


def roles_allowing(need: str) -> list[str]:
    if need not in NEEDS:
        raise ValueError(f"Unknown capability {need!r}; one of {', '.join(NEEDS)}.")
    return [role for role, capabilities in ROLE_CAPABILITIES.items() if need in capabilities]


def studies_for_user(*, user, need: str = "view") -> QuerySet[Study]:
    """The studies whose team `user` is in with a role that allows `need` ("view", "edit",
    "own"); superusers have every study."""
    roles = roles_allowing(need)
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return Study.objects.filter(memberships__user=user, memberships__role__in=roles)


def study_role(*, user, study: Study) -> str | None:
    """`user`'s role in `study` (superusers are owners of every study), None for a non-member."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return StudyMembership.Role.OWNER
    return StudyMembership.objects.filter(study=study, user=user).values_list("role", flat=True).first()


def activity_events(*, study: Study, verb: str = "") -> QuerySet[ActivityEvent]:
    """The study's activity log, newest first; only events of `verb` when given."""
    events = ActivityEvent.objects.filter(study=study).order_by("-created_at", "-id")
    return events.filter(verb=verb) if verb else events


def activity_verbs(*, study: Study) -> list[str]:
    return list(
        ActivityEvent.objects.filter(study=study).order_by("verb").values_list("verb", flat=True).distinct()
    )


def answer_revisions(*, study: Study, pseudonym: str = "") -> QuerySet[AnswerRevision]:
    """The earlier values of the study's changed answers, newest first; one participant's with
    `pseudonym`."""
    revisions = AnswerRevision.objects.filter(participant__study=study).select_related("participant")
    if pseudonym:
        revisions = revisions.filter(participant__pseudonym=pseudonym)
    return revisions.order_by("-revised_at", "-id")


def answer_revisions_described(revisions: Iterable[AnswerRevision]) -> list[AnswerRevision]:
    """`revisions` with what a reader needs on each: `question` (the answer's item key, with its
    phase where it has one) and `earlier` (the earlier value as the participant chose it: a level's
    name for a protocol scale, else the stored value). A revision of an answer since withdrawn
    shows its stored value."""
    from annotation.instrument_binding import PROTOCOL_BINDINGS

    revisions = list(revisions)
    ids = [r.answer_id for r in revisions if r.answer_type == ItemAnswer._meta.label]
    answers = {
        pk: (key, item_key, phase)
        for pk, key, item_key, phase in ItemAnswer.objects.filter(pk__in=ids).values_list(
            "pk", "instrument__key", "item_key", "phase"
        )
    }
    for revision in revisions:
        previous = revision.previous
        stored = previous.get("value", previous) if isinstance(previous, dict) else previous
        found = answers.get(revision.answer_id) if revision.answer_type == ItemAnswer._meta.label else None
        revision.question = ""
        revision.earlier = stored
        if found is not None:
            key, item_key, phase = found
            revision.question = f"{item_key} ({phase})" if phase else item_key
            binding = PROTOCOL_BINDINGS.get(key, {}).get(item_key)
            if binding is not None and binding.levels is not None:
                revision.earlier = binding.column_of(stored) or stored
    return revisions


def study_members(*, study: Study) -> QuerySet[StudyMembership]:
    return StudyMembership.objects.filter(study=study).select_related("user").order_by("user__username")


def study_counts(*, study: Study) -> dict:
    """The counts `manage.py study_stats` prints. An expert rating on a text that several systems
    share counts once per system (rater × simplification pairs rated)."""
    counted = counted_participants(path="participant__")
    participants = dict(
        Participant.objects.filter(counted_participants(), study=study)
        .values_list("role")
        .annotate(n=Count("id"))
        .values_list("role", "n")
    )
    ratings = expert_ratings(study=study, where=counted)
    produced = dict(
        SimplificationText.objects.filter(source__study=study)
        .annotate(n=Count("simplifications"))
        .values_list("pk", "n")
    )
    answers: dict[str, int] = {}
    for answer in lay_answers(study=study, where=counted):
        answers[answer.phase] = answers.get(answer.phase, 0) + 1
    return {
        "study": study.slug,
        "sources": Source.objects.filter(study=study).count(),
        "systems": System.objects.filter(study=study).count(),
        "simplifications": Simplification.objects.filter(source__study=study).count(),
        "distinct_texts": SimplificationText.objects.filter(
            source__study=study, simplifications__isnull=False
        )
        .distinct()
        .count(),
        "participants": {role: participants.get(role, 0) for role in Participant.Role.values},
        "expert_ratings": sum(produced.get(r.shown_text_id, 0) for r in ratings),
        "expert_source_judgements": len(expert_judgements(study=study, where=counted)),
        "lay_items": LayItem.objects.filter(counted, participant__study=study).count(),
        "lay_answers": {phase: answers.get(phase, 0) for phase in ("original", "assisted")},
        "lay_preferences": len(lay_preferences(study=study, where=counted)),
    }


def systems_by_text(*, study: Study, texts: Iterable[int] | None = None) -> dict[int, list[str]]:
    """SimplificationText id → keys of every system that produced it (study order); only for the
    ids in `texts` when given."""
    mapping: dict[int, list[str]] = {}
    simplifications = Simplification.objects.filter(source__study=study)
    if texts is not None:
        simplifications = simplifications.filter(shown_text_id__in=texts)
    rows = simplifications.order_by("system__position", "system__key").values_list(
        "shown_text_id", "system__key"
    )
    for text_id, key in rows:
        mapping.setdefault(text_id, []).append(key)
    return mapping


def study_language_summary(*, study: Study) -> dict[str, str] | None:
    """The language participants see, for the researcher's pages: its code, English name and
    translation status (annotation/wording.py); None for English, the protocol's source language."""
    if study.language == "en":
        return None
    try:
        name = translation.get_language_info(study.language)["name"]
    except KeyError:
        name = study.language
    return {"code": study.language, "name": name, "status": translation_status(study.language)}


def participant_label(pseudonym: str, pk: int) -> str:
    """How a participant is named in frames, progress and exports: the pseudonym, else P<pk>."""
    return pseudonym or f"P{pk}"
