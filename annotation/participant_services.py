"""Writes of participants: creating them (pseudonyms assigned under the study row lock), invites,
consent and its refusal, activity stamps, the language first seen, completion, returns; and for the
console's participants page invites with names and e-mails, a new link, and withdrawing one (their
answers deleted). Researcher actions are recorded in the activity log (pseudonyms only: names,
e-mails and recruiters' ids never enter the log)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.answer_selectors import (
    expert_judgements,
    expert_ratings,
    lay_answers,
    lay_preferences,
    protocol_answers,
)
from annotation.models import (
    AnswerRevision,
    ConsentRefusal,
    ExpertItem,
    ItemAnswer,
    LayItem,
    Participant,
    Study,
)

if TYPE_CHECKING:
    pass


from django.core.validators import validate_email

from annotation.models import (
    AttentionCheckResponse,
    new_participant_token,
)

# One form submission invites at most this many (a typo of 100000 must not create them).
MAX_INVITES = 1000
MAX_NAME: int = Participant._meta.get_field("contact_name").max_length or 200


def invite_contacts_parse(text: str) -> list[tuple[str, str]]:
    """The contacts box of the invite form: one radiologist per line, "Name, e-mail", "Name" or
    "e-mail"; blank lines skipped. ValidationError names the line at fault."""
    contacts: list[tuple[str, str]] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        name, _, email = line.rpartition(",") if "," in line else ("", "", line)
        name, email = name.strip(), email.strip()
        if "@" not in email:
            name, email = line, ""
        if email:
            try:
                validate_email(email)
            except ValidationError:
                problems.append(f"line {number}: {email!r} is not an e-mail address.")
        if len(name) > MAX_NAME:
            problems.append(f"line {number}: the name is longer than {MAX_NAME} characters.")
        contacts.append((name, email))
    if problems:
        raise ValidationError({"contacts": problems})
    return contacts


def participants_invite_with_contacts(
    *, study: Study, role: str, count: int, contacts: Sequence[tuple[str, str]] = (), actor: Any = None
) -> list[Participant]:
    """Invite `count` participants of `role` (labels R001…, L001… as `participants_invite` gives
    them), or one radiologist per (name, e-mail) of `contacts` when given."""
    if contacts and role != Participant.Role.RADIOLOGIST:
        raise ValidationError({"contacts": "Names and e-mails are kept for radiologists only."})
    if contacts:
        if count and count != len(contacts):
            raise ValidationError(
                {"count": f"{count} invites asked for but {len(contacts)} contacts given; leave one empty."}
            )
        count = len(contacts)
    if count > MAX_INVITES:
        raise ValidationError({"count": f"At most {MAX_INVITES} invites at a time."})
    with transaction.atomic():
        participants = participants_invite(study=study, role=role, count=count, actor=actor)
        for participant, (name, email) in zip(participants, contacts, strict=False):
            participant.contact_name, participant.contact_email = name, email
            participant.full_clean(validate_unique=False, validate_constraints=False)
            participant.save(update_fields=["contact_name", "contact_email"])
    return participants


def participant_link_regenerate(*, participant: Participant, actor: Any = None) -> Participant:
    """Give `participant` a new survey link: the old one stops working at once (a link sent to the
    wrong person, or shared). Their answers stay theirs."""
    with transaction.atomic():
        participant.token = new_participant_token()
        participant.save(update_fields=["token"])
        activity_record(
            study=participant.study,
            actor=actor,
            verb="participants.link_regenerated",
            obj=participant,
            details={"pseudonym": participant.pseudonym},
        )
    return participant


def _answers_of(participant: Participant) -> dict[str, Any]:
    """Every answer row of `participant` (querysets), in the order they are deleted."""
    return {
        "answers": ItemAnswer.objects.filter(participant=participant),
        "attention-check answers": AttentionCheckResponse.objects.filter(participant=participant),
        "answer revisions": AnswerRevision.objects.filter(participant=participant),
    }


def _answer_counts(participant: Participant) -> dict[str, int]:
    """What `participant` answered, per kind: the protocol's typed shapes
    (annotation/answer_selectors.py), every other item answer, the checks and the revisions."""
    mine = Q(participant=participant)
    typed: dict[str, list[Any]] = {
        "lay answers": lay_answers(where=mine),
        "lay preferences": lay_preferences(where=mine),
        "radiologist ratings": expert_ratings(where=mine),
        "radiologist judgements of originals": expert_judgements(where=mine),
    }
    counts = {kind: len(rows) for kind, rows in typed.items()}
    counts["instrument answers"] = (
        ItemAnswer.objects.filter(mine, control__isnull=True).exclude(protocol_answers()).count()
    )
    counts["attention-check answers"] = AttentionCheckResponse.objects.filter(participant=participant).count()
    counts["answer revisions"] = AnswerRevision.objects.filter(participant=participant).count()
    return counts


def participant_answer_counts(*, participant: Participant) -> dict[str, int]:
    """What withdrawing `participant` deletes, per kind (background answers counted as one per
    question answered). Shown on the confirmation page, recorded with the withdrawal."""
    counts = _answer_counts(participant)
    counts["background answers"] = sum(1 for value in (participant.background or {}).values() if value)
    return counts


def participant_withdraw(*, participant: Participant, actor: Any = None) -> dict[str, int]:
    """Withdraw `participant`: delete every answer they gave (and their survey pages, so progress
    shows none), mark them withdrawn and returned (their link stops working; a layperson's
    Latin-square row is handed out again) and record it. Returns the deleted counts per kind. The
    analysis snapshot no longer matches the study's answers after this, so its next check
    recomputes it (the caller may ask for that at once: evaluation.services)."""
    with transaction.atomic():
        locked = Participant.objects.select_for_update().select_related("study").get(pk=participant.pk)
        if locked.withdrawn_at is not None:
            raise ValidationError(f"{locked.pseudonym or locked.pk} was already withdrawn.")
        counts = participant_answer_counts(participant=locked)
        for queryset in _answers_of(locked).values():
            queryset.delete()
        LayItem.objects.filter(participant=locked).delete()
        ExpertItem.objects.filter(participant=locked).delete()
        now = timezone.now()
        locked.background = {}
        locked.withdrawn_at = now
        locked.returned_at = locked.returned_at or now
        # A new token nobody holds: the link stops working for either role (the radiologist's
        # pages do not look at returned_at).
        locked.token = new_participant_token()
        locked.save(update_fields=["background", "withdrawn_at", "returned_at", "token"])
        activity_record(
            study=locked.study,
            actor=actor,
            verb="participants.withdrawn",
            obj=locked,
            details={"pseudonym": locked.pseudonym, "deleted": counts},
        )
    participant.refresh_from_db()
    return counts


LINK_COLUMNS = ("participant", "role", "name", "email", "status", "link")


def participant_links_export(
    *, study: Study, rows: Sequence[dict[str, Any]], actor: Any = None
) -> list[tuple]:
    """The rows of the links CSV (`rows` from the participants table, each with its absolute link),
    recorded in the activity log: the file holds every working survey link and the radiologists'
    names and e-mails. Withdrawn participants have no working link and are left out."""
    lines = [
        (row["participant"], row["role"], row["name"], row["email"], row["status"], row["link"])
        for row in rows
        if row["status"] != "withdrawn"
    ]
    # A download like the answer exports: the same verb, so the log's download filter finds it.
    activity_record(
        study=study,
        actor=actor,
        verb="export.downloaded",
        details={"file": "participant-links.csv", "links": len(lines)},
    )
    return lines


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
    surveys.rate_each_pair.services.pairs_participants_invite)."""
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
