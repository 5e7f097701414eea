"""Studies whose answers are ItemAnswer rows, built with the ORM (the survey flows that write them
are tested in their own modules): seed 002's design (two radiologists and one lay reader rate caption
pairs on four criteria) and seed 000's sentence matching (three annotators)."""

from __future__ import annotations

import random
from typing import Any

from annotation import participant_services
from annotation.models import ItemAnswer, Participant, SimplificationText, Study, StudyInstrument
from instruments.answers import item_value_code, item_value_validate
from instruments.presets import preset_load
from instruments.schema import Instrument
from instruments.validation import instrument_to_data
from instruments.versioning import instrument_fingerprint, instrument_structure_fingerprint
from studies import source_services, study_services

REFERENCE = "expert"


def instrument_add(
    *, study: Study, instrument: Instrument, preset: str = "", flow: str = "pairs"
) -> StudyInstrument:
    StudyInstrument.objects.filter(study=study, key=instrument.key).update(is_current=False)
    return StudyInstrument.objects.create(
        study=study,
        key=instrument.key,
        version=instrument.version,
        flow=flow,
        definition=instrument_to_data(instrument),
        fingerprint=instrument_fingerprint(instrument),
        structure_fingerprint=instrument_structure_fingerprint(instrument),
        preset=preset,
    )


def _stored(value: Any) -> Any:
    """The JSON form of a validated value (sets as sorted lists, matches as their raw mapping)."""
    if isinstance(value, frozenset):
        return sorted(value)
    if hasattr(value, "matches"):
        return {"generated_count": value.generated_count, "matches": [sorted(row) for row in value.matches]}
    return value


def answer_add(
    *,
    participant: Participant,
    row: StudyInstrument,
    instrument: Instrument,
    item_key: str,
    raw: Any,
    shown: SimplificationText | None,
    reference: SimplificationText | None = None,
    source=None,
) -> ItemAnswer:
    item = instrument.item(item_key)
    value = item_value_validate(item, raw)
    code = item_value_code(item, value)
    return ItemAnswer.objects.create(
        participant=participant,
        instrument=row,
        item_key=item_key,
        source=source if source is not None else shown.source,
        shown_text=shown,
        reference_text=reference,
        value=_stored(value),
        score=code if isinstance(code, float) else None,
        language=participant.language or "en",
    )


def pairs_study(
    *, slug: str, systems: tuple[str, ...], n_sources: int, reference: str = REFERENCE
) -> tuple[Study, dict[str, list[tuple[SimplificationText, SimplificationText]]]]:
    """A study whose sources each have a reference text (system `reference`, is_reference) and one
    text per system; returns the (shown, reference) pairs per system."""
    study, _ = study_services.study_get_or_create(slug=slug, title=f"Study {slug}")
    study.status = Study.Status.OPEN
    study.save()
    ref = source_services.system_upsert(study=study, key=reference, is_reference=True)
    rows = [source_services.system_upsert(study=study, key=key) for key in systems]
    pairs: dict[str, list[tuple[SimplificationText, SimplificationText]]] = {key: [] for key in systems}
    for i in range(n_sources):
        source = source_services.source_upsert(
            study=study, key=f"s{i + 1:02d}", text=f"Finding {i + 1}: a {i + 1} mm nodule in the right lung."
        )
        reference_text = source_services.simplification_upsert(
            source=source,
            system=ref,
            text=f"There is a small {i + 1} mm spot in the right lung. It is not urgent.",
        ).shown_text
        for j, system in enumerate(rows):
            words = [
                "There is a",
                ("small", "tiny", "little")[(i + j) % 3],
                f"{i + 1} mm spot",
                "in the lung.",
            ]
            if (i * 7 + j) % 3 == 0:
                words.append("It is not urgent.")
            shown = source_services.simplification_upsert(
                source=source, system=system, text=" ".join(words)
            ).shown_text
            pairs[system.key].append((shown, reference_text))
    return study, pairs


def seed002_study(*, slug: str = "medlay", n_sources: int = 12, systems=("scgr", "baseline"), seed: int = 2):
    """Seed 002's human evaluation: 2 radiologists (E1, E2) and 1 lay reader (L) rate every caption
    pair on Factual Correctness, Completeness, Simplicity and Fluency, 1–5."""
    study, pairs = pairs_study(slug=slug, systems=systems, n_sources=n_sources)
    instrument = preset_load("medlaybench_002")
    row = instrument_add(study=study, instrument=instrument, preset="medlaybench_002")
    raters = [
        participant_services.participant_create(study=study, role=role, pseudonym=name)
        for name, role in (("E1", "radiologist"), ("E2", "radiologist"), ("L", "layperson"))
    ]
    rng = random.Random(seed)
    for s, system in enumerate(systems):
        for i, (shown, reference) in enumerate(pairs[system]):
            base = 5 - ((i + s) % 3)  # a quality per pair that raters share, so agreement is real
            for r, rater in enumerate(raters):
                for item in instrument.items:
                    score = min(
                        5,
                        max(
                            1,
                            base - (1 if rng.random() < 0.25 else 0) + (r == 2 and item.key == "simplicity"),
                        ),
                    )
                    answer_add(
                        participant=rater,
                        row=row,
                        instrument=instrument,
                        item_key=item.key,
                        raw=score,
                        shown=shown,
                        reference=reference,
                    )
    return study, instrument, raters


def seed000_study(
    *, slug: str = "laymanrrg", n_sources: int = 10, systems=("layman", "prof", "mixed"), seed: int = 0
):
    """Seed 000 section 4.4: three annotators match the sentences of each generated report against
    its reference; the report's score is the matched proportion."""
    study, pairs = pairs_study(slug=slug, systems=systems, n_sources=n_sources)
    instrument = preset_load("layman_rrg_000_matching")
    row = instrument_add(study=study, instrument=instrument, preset="layman_rrg_000_matching")
    annotators = [
        participant_services.participant_create(study=study, role="layperson", pseudonym=f"A{k + 1}")
        for k in range(3)
    ]
    rng = random.Random(seed)
    for system in systems:
        for shown, reference in pairs[system]:
            generated = shown.text.count(".") or 1
            truth = [sorted(rng.sample(range(generated), k=rng.randint(0, generated))) for _ in range(2)]
            for annotator in annotators:
                matches = [list(row_) for row_ in truth]
                if rng.random() < 0.3:  # an annotator disagrees now and then
                    matches[0] = [] if matches[0] else [0]
                answer_add(
                    participant=annotator,
                    row=row,
                    instrument=instrument,
                    item_key="sentence_match",
                    raw={"generated_count": generated, "matches": matches},
                    shown=shown,
                    reference=reference,
                )
    return study, instrument, annotators
