"""Writes of the console's participants page: invites with names and e-mails, a new link for a
participant, and withdrawing one (their answers deleted). Creating participants is
`services.participants_invite`'s and marking them returned `services.participants_mark_returned`'s;
these add what the page needs on top, each recorded in the activity log (pseudonyms only: names,
e-mails and recruiters' ids never enter the log)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.models import (
    AnswerRevision,
    AttentionCheckResponse,
    ExpertItem,
    ExpertRating,
    ExpertSourceJudgement,
    ItemAnswer,
    LayAnswer,
    LayItem,
    LayPreference,
    Participant,
    Study,
    new_participant_token,
)
from annotation.services import participants_invite

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
    """Every answer row of `participant`, by kind (querysets), in the order they are deleted."""
    return {
        "lay answers": LayAnswer.objects.filter(item__participant=participant),
        "lay preferences": LayPreference.objects.filter(item__participant=participant),
        "radiologist ratings": ExpertRating.objects.filter(participant=participant),
        "radiologist judgements of originals": ExpertSourceJudgement.objects.filter(participant=participant),
        "instrument answers": ItemAnswer.objects.filter(participant=participant),
        "attention-check answers": AttentionCheckResponse.objects.filter(participant=participant),
        "answer revisions": AnswerRevision.objects.filter(participant=participant),
    }


def participant_answer_counts(*, participant: Participant) -> dict[str, int]:
    """What withdrawing `participant` deletes, per kind (background answers counted as one per
    question answered). Shown on the confirmation page, recorded with the withdrawal."""
    counts = {kind: queryset.count() for kind, queryset in _answers_of(participant).items()}
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
