"""The provider's groups as radlay roles (RADLAY_OIDC_GROUP_ROLES: group → role), applied at each
hospital sign-in. A role is `researcher` (may create studies: staff, without admin permissions),
`admin` (superuser), or `<study slug>:<owner|editor|viewer>` (a member of that study's team)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import transaction

from annotation.models import Study, StudyMembership
from studies.team_services import study_member_add

logger = logging.getLogger(__name__)
ACTOR = "hospital sign-in"
ACCOUNT_ROLES = ("researcher", "admin")


def roles_of_groups(*, groups: Iterable[str], mapping: Mapping[str, str]) -> list[str]:
    """The roles `groups` map to, in the mapping's order; unknown groups give none."""
    member_of = set(groups)
    roles = [role for group, role in mapping.items() if group in member_of]
    for role in roles:
        if role not in ACCOUNT_ROLES and (
            ":" not in role or role.rsplit(":", 1)[1] not in StudyMembership.Role.values
        ):
            raise ImproperlyConfigured(
                f"RADLAY_OIDC_GROUP_ROLES: {role!r} is not researcher, admin or <study slug>:"
                f"<{'|'.join(StudyMembership.Role.values)}>."
            )
    return roles


def user_roles_apply(*, user, roles: list[str]) -> None:
    """Give `user` the account flags and study roles `roles` name. The flags follow the groups at
    every sign-in (a group left is a right lost); study roles are added or changed, never taken
    away here (an owner manages the team on the Members page). A study not (yet) there is skipped."""
    with transaction.atomic():
        staff = "researcher" in roles or "admin" in roles
        superuser = "admin" in roles
        if (user.is_staff, user.is_superuser) != (staff, superuser):
            user.is_staff, user.is_superuser = staff, superuser
            user.save(update_fields=["is_staff", "is_superuser"])
        for role in roles:
            if role in ACCOUNT_ROLES:
                continue
            slug, study_role = role.rsplit(":", 1)
            study = Study.objects.filter(slug=slug).first()
            if study is None:
                logger.warning("RADLAY_OIDC_GROUP_ROLES names study %r, which does not exist.", slug)
                continue
            try:
                study_member_add(study=study, user=user, role=study_role, actor=ACTOR)
            except ValidationError as exc:  # the study's last owner is not demoted by a group
                logger.warning("Group role %r not applied to %s: %s", role, user, " ".join(exc.messages))
