"""The study's activity log: ONE service writes it, called where each researcher action happens
(services, commands, views). Events are only ever added."""

from __future__ import annotations

from typing import Any

from django.db import models

from annotation.models import ActivityEvent, Study

# When no account acted (a task, a service called from code): said as such, never left blank.
UNKNOWN_ACTOR = "system"


def activity_record(
    *, study: Study, actor: Any, verb: str, obj: models.Model | None = None, details: dict | None = None
) -> ActivityEvent:
    """Record that `actor` (a user, or a description such as "manage.py invite" when a command
    acted without one; None for "system") did `verb` on `obj` in `study`. `details` must be
    JSON-serialisable; it never holds identifying participant data (recruiters' ids, names,
    e-mails): the log is readable by the study's editors."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    label = user.get_username() if user is not None else str(actor or UNKNOWN_ACTOR)
    event = ActivityEvent(
        study=study,
        actor=user,
        actor_label=label[:150],
        verb=verb,
        details=details or {},
    )
    if obj is not None:
        event.object_type = obj._meta.label
        event.object_id = str(obj.pk)
        event.object_label = str(obj)[:200]
    event.save()
    return event
