"""A study whose radiologist instrument carries the clinical error-span item, with
radiologists' span answers written as ItemAnswer rows (the rater page that writes them is tested in
its own module). Sources are real-looking report sentences so that the glossary judge finds errors."""

from __future__ import annotations

import dataclasses
import random
import re

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.models import ItemAnswer, Participant, SimplificationText, Study, StudyInstrument
from instruments.answers import item_value_code, item_value_validate
from instruments.presets import preset_load
from instruments.schema import Instrument
from tests.annotation.factories import build_study

SPAN_ITEM = preset_load("clinical_error_spans").item("error_spans")
# (source, a "plain" text that keeps the jargon, a "lay" text that explains it)
SENTENCES = (
    ("There are 2 hyperenhancing liver lesions.", "There are 2 hyperenhancing liver lesions.",
     "There are 2 spots in the liver that light up more than the rest."),
    ("No pneumothorax.", "There is a pneumothorax.", "There is no collapsed lung."),
    ("Small left pleural effusion.", "Small left pleural effusion.",
     "There is a little fluid around the left lung."),
    ("Mild hepatic steatosis.", "Mild hepatic steatosis.", "There is a little fat in the liver."),
    ("A 5 mm nodule in the right lower lobe.", "A 5 mm nodule in the left lower lobe.",
     "A small 5 mm spot in the lower part of the right lung."),
    ("Cholelithiasis without cholecystitis.", "Cholelithiasis without cholecystitis.",
     "There are gallstones, but the gallbladder is not inflamed."),
)  # fmt: skip


def span_instrument() -> Instrument:
    """The protocol's radiologist instrument with the typology's span item added."""
    base = preset_load("protocol_003_radiologist")
    return dataclasses.replace(base, items=(*base.items, SPAN_ITEM))


def _span_version(study: Study) -> StudyInstrument:
    """The study's radiologist instrument with the span item, saved by study_instrument_save."""
    return study_instrument_save(study=study, instrument=span_instrument(), actor=None)


def span_study(
    *, slug: str, raters: int = 3, seed: int = 3
) -> tuple[Study, StudyInstrument, list[Participant]]:
    """Two systems ("plain", "lay") on SENTENCES; `raters` radiologists each answer the span item on
    every text: on "plain" texts a jargon span over the first word the glossary judge also marks
    (most of the time) and, now and then, a could-harm span; "lay" texts mostly without marks."""
    study = build_study(slug=slug, n_sources=len(SENTENCES), systems=("plain", "lay"))
    for i, (source, plain, lay) in enumerate(SENTENCES):
        row = study.sources.get(key=f"s{i + 1:02d}")
        row.text = source
        row.save(update_fields=["text"])
        for simplification in row.simplifications.select_related("system", "shown_text"):
            text = plain if simplification.system.key == "plain" else lay
            SimplificationText.objects.filter(pk=simplification.shown_text_id).update(text=text)
    version = _span_version(study)
    people = [
        participant_services.participant_create(
            study=study, role=Participant.Role.RADIOLOGIST, pseudonym=f"E{r + 1}"
        )
        for r in range(raters)
    ]
    rng = random.Random(seed)
    for r, person in enumerate(people):
        for shown in SimplificationText.objects.filter(source__study=study).select_related("source"):
            text = shown.text
            spans = []
            system = shown.simplifications.first().system.key
            if system == "plain" and rng.random() < 0.8:
                words = [m.span() for m in re.finditer(r"\w+", text)]
                start, end = words[-1] if r % 2 == 0 else words[min(1, len(words) - 1)]
                spans.append(
                    {"start": start, "end": end, "category": "unexplained_jargon", "severity": "minor"}
                )
            if rng.random() < 0.25:
                spans.append({"start": 0, "end": min(5, len(text)), "category": "wrong_finding_or_location",
                              "severity": "could_harm"})  # fmt: skip
            value = item_value_validate(SPAN_ITEM, spans, text_length=len(text))
            code = item_value_code(SPAN_ITEM, value) if value is not None else None
            ItemAnswer.objects.create(
                participant=person,
                instrument=version,
                item_key=SPAN_ITEM.key,
                source=shown.source,
                shown_text=shown,
                value=[] if value is None else [dataclasses.asdict(s) for s in value],  # [] a text seen clean
                score=code if code is not None else 0.0,
                language="en",
            )
    study.refresh_from_db()
    return study, version, people
