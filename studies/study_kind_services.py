"""Setting a study up as one of the kinds of studies/study_kinds.py, from the console's
new-study form and set-up pages or from `manage.py study_kind`: the preset (or the team's own
instrument file) attached, the reference system chosen, and the checks before participants are let
in (a reference system where an item compares with a reference, participants in every rater group).
Every write goes through the services that already own it (the pairs and pairwise attach,
study_create, study_open); a refusal is a ValidationError keyed by the form field it is about, and
nothing is left half-created."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.instrument_services import study_instrument_save
from annotation.models import Participant, Simplification, Study, StudyInstrument, System
from instruments.schema import Instrument
from studies.study_kinds import (
    KIND_PRESETS,
    PAIRS,
    PAIRWISE,
    PROTOCOL,
    instrument_flow,
    needs_reference,
)
from studies.study_services import study_create, study_open
from surveys.compare_two.services import pairwise_instrument_attach
from surveys.rate_each_pair.selectors import instrument_of, study_rater_groups
from surveys.rate_each_pair.services import study_instrument_attach


def study_kind_attach(*, study: Study, kind: str, actor: Any = None) -> StudyInstrument | None:
    """Give `study` the instrument of `kind` (a key of KIND_PRESETS): the protocol's presets are
    every study's already; a pairs preset joins the rate-each-pair flow, the pairwise preset the pairwise
    flow. Returns the attached row (None for the protocol)."""
    if kind not in KIND_PRESETS:
        raise ValidationError(
            {"kind": f"{kind!r} is not a kind of study radlay ships ({', '.join(KIND_PRESETS)})."}
        )
    if kind == PROTOCOL:
        return None
    if kind == "pairwise_clinical":
        return pairwise_instrument_attach(study=study, preset=kind, actor=actor)
    return study_instrument_attach(study=study, preset_name=kind, actor=actor)


def study_instrument_file_attach(
    *, study: Study, instrument: Instrument, actor: Any = None
) -> StudyInstrument:
    """Give `study` the team's own instrument (an uploaded file, already validated): a protocol
    instrument replaces the protocol's (the Instruments page's rule), any other joins the flow
    that can ask it, or is refused naming why no flow can."""
    current = StudyInstrument.objects.filter(study=study, key=instrument.key, is_current=True).first()
    if current is not None and current.flow in (StudyInstrument.Flow.EXPERT, StudyInstrument.Flow.LAY):
        return study_instrument_save(study=study, instrument=instrument, actor=actor, note="uploaded")
    flow = instrument_flow(instrument)
    if flow is None:
        raise ValidationError(
            {
                "instrument_file": f"{instrument.key}: no flow can ask every item of this instrument "
                "(a rate-each-pair page asks items about a text or a pair; a pairwise item is the "
                "compare-two flow's). Edit the protocol's instruments on the Instruments page instead."
            }
        )
    try:
        return study_instrument_save(
            study=study, instrument=instrument, actor=actor, note="uploaded", flow=flow
        )
    except ValidationError as exc:
        raise ValidationError({"instrument_file": exc.messages}) from None


def study_create_as(
    *,
    slug: str,
    title: str,
    actor: Any,
    settings: Mapping[str, Any],
    kind: str = PROTOCOL,
    instrument: Instrument | None = None,
) -> Study:
    """A new study of `kind`, or asking the team's own `instrument`: all in one transaction, so a
    refused instrument leaves no study behind."""
    with transaction.atomic():
        study = study_create(slug=slug, title=title, actor=actor, settings=settings)
        if instrument is not None:
            study_instrument_file_attach(study=study, instrument=instrument, actor=actor)
        else:
            study_kind_attach(study=study, kind=kind, actor=actor)
    return study


def study_reference_set(*, study: Study, key: str, actor: Any = None) -> System | None:
    """Make the system `key` the study's one reference (its texts are the references of the pairs
    flow), or none with key ''. Refused, on the field, for a system the study does not have, and
    for none while an item compares with a reference."""
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).get()
        chosen = None
        if key:
            chosen = System.objects.filter(study=study, key=key).first()
            if chosen is None:
                raise ValidationError({"reference_system": f"The study has no system {key!r}."})
        elif reference_needed_by(study=study):
            raise ValidationError(
                {
                    "reference_system": f"{', '.join(reference_needed_by(study=study))} compares each "
                    "text with a reference: choose the system whose texts are the references."
                }
            )
        System.objects.filter(study=study, is_reference=True).exclude(key=key).update(is_reference=False)
        if chosen is not None and not chosen.is_reference:
            System.objects.filter(pk=chosen.pk).update(is_reference=True)
        activity_record(
            study=study, actor=actor, verb="study.reference_set", details={"reference_system": key or None}
        )
    return chosen


def reference_needed_by(*, study: Study) -> list[str]:
    """The study's current pairs instruments whose items compare with a reference system."""
    return [
        row.key
        for row in StudyInstrument.objects.filter(
            study=study, is_current=True, flow=StudyInstrument.Flow.PAIRS
        )
        if needs_reference(instrument_of(row))
    ]


def study_launch_problems(*, study: Study) -> dict[str, list[str]]:
    """Why the study's pairs or compare-two flow cannot start, keyed by the set-up field each is
    about (empty: it can): texts to show, a reference system where an item needs one, and at
    least one participant in every rater group an instrument asks."""
    problems: dict[str, list[str]] = {}
    if not Simplification.objects.filter(source__study=study).exists():
        problems.setdefault("texts", []).append(
            "The study has no texts to show yet: upload or generate them."
        )
    if (
        reference_needed_by(study=study)
        and not System.objects.filter(study=study, is_reference=True).exists()
    ):
        problems.setdefault("reference_system", []).append(
            f"{', '.join(reference_needed_by(study=study))} compares each text with a reference: "
            "choose the reference system."
        )
    people = Participant.objects.filter(study=study, is_preview=False, withdrawn_at__isnull=True)
    invited = {group or role for role, group in people.values_list("role", "rater_group")}
    # Every rater group a pairs instrument asks is part of its design (seed 002's radiologists and
    # lay reader): each needs participants. The compare-two flow needs judges of one of its roles.
    for group in sorted(study_rater_groups(study=study)):
        if group not in invited:
            problems.setdefault("rater_group", []).append(
                f"The rater group {group!r} has no participants: invite them before launching."
            )
    pairwise = StudyInstrument.objects.filter(
        study=study, is_current=True, flow=StudyInstrument.Flow.PAIRWISE
    ).first()
    if pairwise is not None:
        roles = sorted({role for item in instrument_of(pairwise).items for role in item.roles})
        if not invited & set(roles):
            problems.setdefault("rater_group", []).append(
                f"The pairwise comparison has no judges: invite participants as {' or '.join(roles)}."
            )
    return problems


def study_flows_launch(*, study: Study, actor: Any = None) -> bool:
    """Open a pairs or pairwise study once `study_launch_problems` finds nothing; refused with
    those problems (keyed by field) otherwise. False when it was open already."""
    with transaction.atomic():
        if study.instruments.filter(is_current=True, flow__in=[PAIRS, PAIRWISE]).exists():
            problems = study_launch_problems(study=study)
            if problems:
                raise ValidationError(problems)
        return study_open(study=study, actor=actor)
