"""Launching a batch from a form, for every page that has one (the admin's launch pages, the
console's): the form's `launch_arguments()` go to the app's launch service; a refusal
(ValidationError) lands on the form field it names; a broker outage (TaskQueueUnreachable: the
batch exists and is sent once the broker is back) is a warning, not a failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Model
from django.forms import Form

from work.scheduler import TaskQueueUnreachable


@dataclass
class Launched:
    batch: Any  # the batch or run; None: refused, the form carries why
    warning: str = ""


def form_launch(form: Form, service: Callable[..., Model], *, created_by: Any) -> Launched:
    """Call `service(**form.launch_arguments(), created_by=...)` for a valid form."""
    try:
        batch = service(**form.launch_arguments(), created_by=created_by)  # type: ignore[attr-defined]
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return Launched(None)
    except TaskQueueUnreachable as exc:
        return Launched(exc.batch, warning=str(exc))
    return Launched(batch)
