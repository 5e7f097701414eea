"""A study's team: adding, removing members and changing their roles (the Members page and the
import commands' `--owner` call these). A study always keeps an owner once it has one: the last
owner can be neither removed nor demoted."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.models import Study, StudyMembership

Role = StudyMembership.Role


def user_by_username(*, username: str):
    """The account named `username`; a ValidationError naming it when there is none."""
    user = get_user_model()._default_manager.filter(username=username).first()
    if user is None:
        raise ValidationError(
            {
                "username": f"There is no account named {username!r}. Create it first "
                "(manage.py createsuperuser or the admin's Users page)."
            }
        )
    return user


def _locked_members(study: Study) -> dict[int, StudyMembership]:
    # Every team change locks the study's memberships, so that two owners removing each other at
    # once cannot leave the study without one.
    return {m.user_id: m for m in StudyMembership.objects.select_for_update().filter(study=study)}


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ValidationError({"role": f"Unknown role {role!r}; one of {', '.join(Role.values)}."})


@transaction.atomic
def study_member_add(*, study: Study, user, role: str, actor: Any) -> StudyMembership:
    """Add `user` to the team with `role`; a member already there is given `role` instead (the
    last owner keeps being owner)."""
    _check_role(role)
    members = _locked_members(study)
    if user.pk in members:
        return _role_set(study=study, members=members, membership=members[user.pk], role=role, actor=actor)
    membership = StudyMembership(study=study, user=user, role=role)
    membership.full_clean(validate_constraints=False, validate_unique=False)
    membership.save()
    _record(study, actor, "member.added", membership, {"user": user.get_username(), "role": role})
    return membership


def _record(study: Study, actor: Any, verb: str, membership: StudyMembership, details: dict) -> None:
    activity_record(study=study, actor=actor, verb=verb, obj=membership, details=details)


def _role_set(
    *, study: Study, members: dict[int, StudyMembership], membership: StudyMembership, role: str, actor: Any
):
    if membership.role == role:
        return membership
    if membership.role == Role.OWNER and _owners(members) == 1:
        raise ValidationError(
            {"role": f"{membership.user} is the study's last owner: make someone else owner first."}
        )
    details = {"user": membership.user.get_username(), "from": membership.role, "to": role}
    membership.role = role
    membership.save(update_fields=["role"])
    _record(study, actor, "member.role_changed", membership, details)
    return membership


def _owners(members: dict[int, StudyMembership]) -> int:
    return sum(m.role == Role.OWNER for m in members.values())


@transaction.atomic
def study_member_role_set(*, study: Study, user, role: str, actor: Any) -> StudyMembership:
    _check_role(role)
    members = _locked_members(study)
    if user.pk not in members:
        raise ValidationError({"user": f"{user} is not a member of {study.slug}."})
    return _role_set(study=study, members=members, membership=members[user.pk], role=role, actor=actor)


@transaction.atomic
def study_member_remove(*, study: Study, user, actor: Any) -> StudyMembership:
    members = _locked_members(study)
    membership = members.get(user.pk)
    if membership is None:
        raise ValidationError({"user": f"{user} is not a member of {study.slug}."})
    if membership.role == Role.OWNER and _owners(members) == 1:
        raise ValidationError({"user": f"{user} is the study's last owner and cannot be removed."})
    details = {"user": user.get_username(), "role": membership.role}
    _record(study, actor, "member.removed", membership, details)
    membership.delete()
    return membership
