"""Setting a study up for the rate-each-pair flow: attach a shipped instrument, invite its rater groups."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation import participant_services
from annotation.activity_services import activity_record
from annotation.instrument_services import study_instruments_stamp_refresh
from annotation.models import Participant, Study, StudyInstrument
from instruments.presets import preset_load, preset_names
from instruments.validation import instrument_to_data
from instruments.versioning import (
    instrument_change_allowed,
    instrument_fingerprint,
    instrument_structure_fingerprint,
)
from surveys.rate_each_pair.selectors import instrument_of, pairs_item_problems, study_rater_groups


def study_instrument_attach(*, study: Study, preset_name: str, actor: Any = None) -> StudyInstrument:
    """Make the shipped preset `preset_name` one of the study's current rate-each-pair instruments.
    Attaching the same version again changes nothing; a different version of an instrument the
    study already asks replaces it in place while no answer names it, and is refused once answers
    exist (a change is then a recorded new version: instruments.versioning)."""
    if preset_name not in preset_names():
        raise ValidationError(
            {"instrument": f"No preset {preset_name!r}; the presets are {', '.join(preset_names())}."}
        )
    instrument = preset_load(preset_name)
    problems = pairs_item_problems(instrument)
    if problems:
        raise ValidationError({"instrument": [f"{preset_name}: {problem}" for problem in problems]})
    fields = {
        "flow": StudyInstrument.Flow.PAIRS,
        "version": instrument.version,
        "definition": instrument_to_data(instrument),
        "fingerprint": instrument_fingerprint(instrument),
        "structure_fingerprint": instrument_structure_fingerprint(instrument),
        "preset": preset_name,
    }
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).get()
        current = StudyInstrument.objects.filter(study=study, key=instrument.key, is_current=True).first()
        if (
            current is not None
            and current.fingerprint == fields["fingerprint"]
            and current.flow == fields["flow"]
        ):
            return current
        if current is None:
            row = StudyInstrument(study=study, key=instrument.key, created_by=_user(actor), **fields)
        else:
            allowed, reason = instrument_change_allowed(
                instrument_of(current), instrument, has_answers=current.answers.exists()
            )
            if not allowed or current.answers.exists():
                raise ValidationError({"instrument": f"{instrument.key}: {reason or 'answers exist.'}"})
            row = current
            for name, value in fields.items():
                setattr(row, name, value)
        row.full_clean()
        row.save()
        study_instruments_stamp_refresh(study=study)
        activity_record(
            study=study,
            actor=actor,
            verb="instrument.attached",
            obj=row,
            details={"preset": preset_name, "version": row.version, "flow": row.flow},
        )
    return row


def _user(actor: Any) -> Any:
    return actor if getattr(actor, "is_authenticated", False) else None


def pairs_participants_invite(
    *, study: Study, rater_group: str, count: int, role: str = "", actor: Any = None
) -> list[Participant]:
    """Invite `count` participants who answer as `rater_group` (a group the study's instruments
    name). Their role is the group itself where it is one (radiologist, layperson), else `role`
    says which (seed 000's annotators are laypeople, its medical experts radiologists)."""
    groups = study_rater_groups(study=study)
    if rater_group not in groups:
        known = ", ".join(sorted(groups)) or "none: attach an instrument first"
        raise ValidationError(
            {"rater_group": f"{rater_group!r} is not a rater group of this study ({known})."}
        )
    if rater_group in Participant.Role.values:
        if role and role != rater_group:
            raise ValidationError({"role": f"The rater group {rater_group!r} is the role itself."})
        role, group = rater_group, ""
    elif role not in Participant.Role.values:
        raise ValidationError({"role": f"Say whether the {rater_group} group are radiologists or laypeople."})
    else:
        group = rater_group
    return participant_services.participants_invite(
        study=study, role=role, count=count, actor=actor, rater_group=group
    )
