"""`manage.py study policy SLUG [POLICY] [--endpoint URL] --reason TEXT`: annotation's `study`
command runs this (registered in `PrivacyConfig.ready()`): it sets the study's data policy, or
with no policy prints it."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from annotation.models import Study
from privacy.selectors import data_policy_of
from privacy.services import data_policy_change


def study_policy(study: Study, policy: str | None, *, endpoint: str, reason: str, stdout: Any) -> None:
    if policy is not None:
        try:
            data_policy_change(
                study=study,
                policy=policy,
                endpoint=endpoint,
                reason=reason,
                actor="manage.py study policy",
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
    current = data_policy_of(study=study)
    stdout.write(
        json.dumps(
            {
                "study": study.slug,
                "policy": current.policy,
                "endpoint": current.endpoint,
                "deidentification_approved": current.is_approved,
                "radiologists_see_originals": current.originals_for_radiologists,
            },
            indent=2,
        )
    )
