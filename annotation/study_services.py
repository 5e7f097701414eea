"""Opening and closing a study: what the admin actions and `manage.py study` call. Opening checks
that the study can be shown to participants (its settings are valid and it has sources); both are
harmless to repeat and report whether anything changed."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.models import AttentionCheck, Study


@transaction.atomic
def study_open(*, study: Study, actor: Any = None) -> bool:
    """Open `study` for participants; False when it was open already. Raises ValidationError
    (naming the study and the problem) when it cannot be shown to participants."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status == Study.Status.OPEN:
        return False
    problems: list[str] = []
    try:
        study.full_clean()
    except ValidationError as exc:
        problems += [message for messages in exc.message_dict.values() for message in messages]
    for check in AttentionCheck.objects.filter(study=study):
        try:
            check.full_clean(exclude=["study"])
        except ValidationError as exc:
            problems += [f"{message} (position {check.position})" for message in exc.messages]
    if not study.sources.exists():
        problems.append("It has no sources yet: import them first (manage.py import_study).")
    if problems:
        raise ValidationError(f"Study {study.slug!r} cannot be opened: " + " ".join(problems))
    study.status = Study.Status.OPEN
    study.save(update_fields=["status", "updated_at"])
    activity_record(study=study, actor=actor, verb="study.opened", obj=study)
    return True


@transaction.atomic
def study_close(*, study: Study, actor: Any = None) -> bool:
    """Close `study`: participants see the closed page and no answer is accepted any more. Answers
    given so far are kept. False when it was closed already."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status == Study.Status.CLOSED:
        return False
    study.status = Study.Status.CLOSED
    study.save(update_fields=["status", "updated_at"])
    activity_record(study=study, actor=actor, verb="study.closed", obj=study)
    return True
