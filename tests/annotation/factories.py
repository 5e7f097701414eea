"""factory_boy factories for the annotation app, and `build_study` for a ready-made small study."""

from __future__ import annotations

import dataclasses

import factory

from annotation.models import LayItem, Participant, Source, Study, System
from instruments.presets import preset_load
from instruments.schema import AppliesTo, Instrument, Item, ItemKind, Point, Scale
from studies import source_services, study_services
from surveys.lay import services as lay_answers


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Study

    slug = factory.Sequence(lambda n: f"study-{n}")
    title = factory.LazyAttribute(lambda o: f"Study {o.slug}")
    status = Study.Status.OPEN


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source

    study = factory.SubFactory(StudyFactory)
    key = factory.Sequence(lambda n: f"s{n:03d}")
    position = factory.Sequence(lambda n: n)
    text = factory.Sequence(lambda n: f"Focal hypodensity number {n} in hepatic segment VI, probably a cyst.")
    reference_severity = "Mild"


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System

    study = factory.SubFactory(StudyFactory)
    key = factory.Sequence(lambda n: f"system_{n}")
    label = factory.LazyAttribute(lambda o: o.key)
    position = factory.Sequence(lambda n: n)


class ParticipantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Participant

    study = factory.SubFactory(StudyFactory)
    role = Participant.Role.LAYPERSON
    pseudonym = factory.Sequence(lambda n: f"P{n:04d}")


SEVERITIES = ["Critical", "Serious", "Moderate", "Mild", "Healthy"]


def build_study(
    *,
    slug: str = "demo",
    n_sources: int = 4,
    systems: tuple[str, ...] = ("plain_bs", "plain_sc", "cot_bs", "cot_sc"),
    shared: tuple[tuple[int, str, str], ...] = (),
    status: str = Study.Status.OPEN,
) -> Study:
    """A study with `n_sources` sources and one simplification per (source, system). `shared`
    lists (source index, system a, system b) pairs whose texts are made identical."""
    study, _ = study_services.study_get_or_create(slug=slug, title=f"Study {slug}")
    study.status = status
    study.save()
    system_rows = [source_services.system_upsert(study=study, key=key) for key in systems]
    for i in range(n_sources):
        source = source_services.source_upsert(
            study=study,
            key=f"s{i + 1:02d}",
            text=f"Sentence {i + 1}: a 1.{i} cm hypodense lesion in the liver.",
            reference_severity=SEVERITIES[i % 5],
        )
        texts = {s.key: f"Simplification of sentence {i + 1} by {s.key}." for s in system_rows}
        for index, a, b in shared:
            if index == i:
                texts[b] = texts[a]
        for system in system_rows:
            source_services.simplification_upsert(source=source, system=system, text=texts[system.key])
    return study


def lay_item_of(person: Participant, source: Source, system: System, *, position: int = 0) -> LayItem:
    """A lay item of `person`: `source`, with `system`'s text in panel 2."""
    return lay_answers.lay_item_create(
        participant=person,
        source=source,
        position=position,
        shown_text=source.simplifications.get(system=system).shown_text,
        assigned_system=system,
    )


# An aspect a team adds to the protocol's radiologist rubric (the instrument editor's example).
ACTIONABILITY = Item(
    key="actionability",
    kind=ItemKind.ORDINAL,
    applies_to=AppliesTo.SIMPLIFICATION,
    roles=("radiologist",),
    title={"en": "Actionability", "es": "Accionabilidad"},
    wording={"en": "It tells the patient what to do next.", "es": "Le dice al paciente qué hacer después."},
    scale=Scale(
        points=(
            Point(code=1, label={"en": "Not at all", "es": "En absoluto"}),
            Point(code=2, label={"en": "Partly", "es": "En parte"}),
            Point(code=3, label={"en": "Fully", "es": "Del todo"}),
        )
    ),
)


# A question a study adds to lay panel 3 (after the most and least liked), about the sentence.
WHY_BEST = Item(
    key="why_best",
    kind=ItemKind.FREE_TEXT,
    applies_to=AppliesTo.SOURCE,
    roles=("layperson",),
    phases=("preference",),
    wording={"en": "What made your favourite better?", "es": "¿Qué hizo mejor a su favorita?"},
    max_length=30,
)


def instrument_with(preset: str, *items: Item, version: int = 1) -> Instrument:
    """The preset with `items` added at the end, as `version`."""
    instrument = preset_load(preset)
    return dataclasses.replace(instrument, version=version, items=(*instrument.items, *items))
