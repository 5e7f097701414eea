"""The rater groups a study invites into: the groups its instruments ask (seed 000's `annotator`,
`medical_expert`; the roles themselves for the protocol, seed 002 and the compare-two flow), each with
how many participants it has, as the console's invitation form lists them (never typed in) and the
service that invites into one of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count

from annotation.models import Participant, Study, StudyInstrument
from annotation.participant_services import participants_invite_with_contacts
from surveys.rate_each_pair.selectors import instrument_of
from surveys.rate_each_pair.services import pairs_participants_invite

ROLES = tuple(Participant.Role.values)
_ROLE_LABELS = {
    Participant.Role.RADIOLOGIST.value: "radiologists",
    Participant.Role.LAYPERSON.value: "laypeople",
}
# Which role a named group most likely is, offered first (both are offered).
_CLINICAL_WORDS = ("expert", "radiolog", "clinic", "medical", "physician", "doctor")
_SEPARATOR = ":"


@dataclass(frozen=True)
class GroupChoice:
    value: str  # the role, or "<group>:<role>"
    group: str
    role: str
    count: int

    @property
    def label(self) -> str:
        counted = f"{self.count} invited"
        if self.group == self.role:
            return f"{self.group} ({counted})"
        return f"{self.group}, as {_ROLE_LABELS[self.role]} ({counted})"


def instrument_groups(*, study: Study) -> list[str]:
    """Every rater group the study's current pairs and pairwise instruments ask, sorted; the two
    roles where it asks only the protocol."""
    groups: set[str] = set()
    for row in StudyInstrument.objects.filter(
        study=study, is_current=True, flow__in=[StudyInstrument.Flow.PAIRS, StudyInstrument.Flow.PAIRWISE]
    ):
        for item in instrument_of(row).items:
            groups.update(item.roles)
    return sorted(groups) or list(ROLES)


def group_counts(*, study: Study) -> dict[str, int]:
    """Participants per rater group (the role where they have none), previews left out."""
    counts: dict[str, int] = {}
    for role, group, n in (
        Participant.objects.filter(study=study, is_preview=False, withdrawn_at__isnull=True)
        .values_list("role", "rater_group")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        counts[group or role] = counts.get(group or role, 0) + n
    return counts


def invite_groups(*, study: Study) -> list[GroupChoice]:
    counts = group_counts(study=study)
    choices = []
    for group in instrument_groups(study=study):
        if group in ROLES:
            choices.append(GroupChoice(group, group, group, counts.get(group, 0)))
            continue
        clinical = any(word in group for word in _CLINICAL_WORDS)
        roles = ROLES if clinical else tuple(reversed(ROLES))
        choices.extend(
            GroupChoice(f"{group}{_SEPARATOR}{role}", group, role, counts.get(group, 0)) for role in roles
        )
    return choices


def default_group(*, study: Study) -> str:
    choices = invite_groups(study=study)
    return choices[0].value if choices else Participant.Role.LAYPERSON.value


def invite_group(
    *, study: Study, value: str, count: int, contacts: Sequence[tuple[str, str]] = (), actor: Any = None
) -> list[Participant]:
    """Invite `count` participants (or one per contact) into the group `value` names (a
    GroupChoice's value); refused, naming the field, for a group the study does not ask."""
    offered = {choice.value: choice for choice in invite_groups(study=study)}
    if value not in offered:
        raise ValidationError({"role": f"{value!r} is not a rater group of this study."})
    choice = offered[value]
    if choice.group == choice.role:
        return participants_invite_with_contacts(
            study=study, role=choice.role, count=count, contacts=contacts, actor=actor
        )
    if contacts:
        raise ValidationError({"contacts": "Names and e-mails are kept for radiologists only."})
    return pairs_participants_invite(
        study=study, rater_group=choice.group, role=choice.role, count=count, actor=actor
    )
