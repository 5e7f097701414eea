"""Plant a study's controls: deterministic degraded copies of its simplifications
(generation/controls.py) that join radiologists' pages at a set rate, never shown as such
(surveys/radiologist/controls.py), to test each rater's attention
(evaluation/analysis/planted_control_scores.py).

The rate is the share of rows on radiologists' pages that are planted: with n distinct simplification
texts, round(rate · n / (1 − rate)) texts get one degraded copy each, so that planted rows are `rate`
of all rows. Which texts, and which kind of degradation each gets (the first of the kinds, in an order
drawn per text, that applies to it), come from `seed` and the texts themselves (sources' keys and
texts' hashes, never database ids): the same study, rate and seed always plant the same controls,
on this server or another, and planting again with them changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.models import ExpertItem, PlantedControl, SimplificationText, Study
from generation.controls import KINDS, plant_control
from generation.controls import PlantedControl as Planted

MAX_RATE = 0.5


@dataclass(frozen=True)
class Planting:
    rate: float
    seed: int
    texts: int  # distinct simplification texts of the study
    wanted: int  # fewer are planted where too few texts take any kind of degradation
    planted: int  # controls the study has now
    changed: bool

    @property
    def share(self) -> float:
        """The share of rows on a page of every source that are planted (the rate achieved)."""
        rows = self.texts + self.planted
        return self.planted / rows if rows else 0.0


def _wanted(rate: float, texts: int) -> int:
    return round(rate * texts / (1 - rate))


def _degraded(text: SimplificationText, seed: int) -> Planted | None:
    # The kinds in an order drawn per text: a study's controls mix every kind that applies.
    kinds = list(KINDS)
    random.Random(f"{seed}:kinds:{text.source.key}:{text.text_hash}").shuffle(kinds)
    for kind in kinds:
        control = plant_control(text.text, source=text.source.text, kind=kind, seed=seed)
        if control is not None:
            return control
    return None


def study_controls_plan(*, study: Study, rate: float, seed: int = 0) -> tuple[int, dict[int, Planted]]:
    """(texts, the controls `rate` and `seed` plant: {degraded text id: control}); reads only."""
    if not isinstance(rate, (int, float)) or not 0 <= rate <= MAX_RATE:
        raise ValidationError({"rate": f"rate must be a share from 0 to {MAX_RATE}, not {rate!r}."})
    texts = list(
        SimplificationText.objects.filter(source__study=study, simplifications__isnull=False)
        .select_related("source")
        .distinct()
        .order_by("source__position", "source__key", "text_hash")
    )
    wanted = _wanted(rate, len(texts))
    order = list(texts)
    random.Random(f"{seed}:plant").shuffle(order)
    chosen: dict[int, Planted] = {}
    for text in order:
        if len(chosen) >= wanted:
            break
        control = _degraded(text, seed)
        if control is not None:
            chosen[text.pk] = control
    return len(texts), chosen


def study_controls_plant(*, study: Study, rate: float, seed: int = 0, actor: Any = None) -> Planting:
    """Give `study` the controls of `rate` and `seed` (none for rate 0). Idempotent. Refused, with
    nothing changed, when the controls would change after radiologists' pages were made: a page
    keeps the controls it was made with, so every radiologist's pages hold the same rate."""
    n_texts, plan = study_controls_plan(study=study, rate=rate, seed=seed)
    with transaction.atomic():
        existing = {
            (c.degrades_id, c.kind, c.seed): c
            for c in PlantedControl.objects.select_for_update().filter(study=study)
        }
        desired = {(text_id, c.kind, seed) for text_id, c in plan.items()}
        changed = set(existing) != desired
        if changed:
            if ExpertItem.objects.filter(participant__study=study).exists():
                raise ValidationError(
                    "Radiologists' pages have been made already: plant controls before the first "
                    "radiologist opens the survey (each page keeps the controls it was made with)."
                )
            PlantedControl.objects.filter(study=study).delete()
            PlantedControl.objects.bulk_create(
                PlantedControl(
                    study=study,
                    degrades_id=text_id,
                    kind=c.kind,
                    text=c.text,
                    start=c.start,
                    end=c.end,
                    original_start=c.original_start,
                    original_end=c.original_end,
                    category=c.category,
                    severity=c.severity,
                    seed=seed,
                )
                for text_id, c in sorted(plan.items())
            )
        result = Planting(
            rate=float(rate),
            seed=seed,
            texts=n_texts,
            wanted=_wanted(rate, n_texts),
            planted=len(plan),
            changed=changed,
        )
        if changed:
            activity_record(
                study=study,
                actor=actor,
                verb="planted controls",
                details={
                    "rate": float(rate),
                    "seed": seed,
                    "controls": len(plan),
                    "share": round(result.share, 4),
                },
            )
    return result
