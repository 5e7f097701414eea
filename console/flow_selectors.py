"""What the console's Flows page reads: the study's current instruments by flow with the paper
each cites, its systems and reference, the pairwise comparisons it would draw, its planted
controls, and what stands in the way of launching."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Any

from django.db.models import Count

from annotation.models import PlantedControl, Simplification, Study, StudyInstrument, System
from studies.rater_groups import group_counts, invite_groups
from studies.study_kind_services import reference_needed_by, study_launch_problems
from studies.study_kinds import KIND_PRESETS, StudyKind, study_kind_of, study_kinds
from surveys.rate_each_pair.selectors import instrument_of


@dataclass(frozen=True)
class AskedFlow:
    row: StudyInstrument
    kind: StudyKind


def asked_flows(*, study: Study) -> list[AskedFlow]:
    rows = StudyInstrument.objects.filter(study=study, is_current=True).order_by("flow", "key")
    return [AskedFlow(row=row, kind=study_kind_of(instrument_of(row), flow=row.flow)) for row in rows]


@dataclass(frozen=True)
class PairwisePlan:
    sources: int  # sources with two different texts to compare
    pairs_per_source: list[tuple[str, int]]  # (source key, distinct pairs of its texts), first ones
    judges: dict[str, int]  # role → participants


def pairwise_plan_summary(*, study: Study, row: StudyInstrument) -> PairwisePlan:
    texts = (
        Simplification.objects.filter(source__study=study)
        .values("source__key", "source__position")
        .annotate(n=Count("shown_text_id", distinct=True))
        .order_by("source__position", "source__key")
    )
    comparable = [(t["source__key"], comb(t["n"], 2)) for t in texts if t["n"] >= 2]
    roles = sorted({role for item in instrument_of(row).items for role in item.roles})
    counts = group_counts(study=study)
    return PairwisePlan(
        sources=len(comparable),
        pairs_per_source=comparable[:20],
        judges={role: counts.get(role, 0) for role in roles},
    )


def flows_page(*, study: Study) -> dict[str, Any]:
    asked = asked_flows(study=study)
    pairwise = next((a.row for a in asked if a.row.flow == StudyInstrument.Flow.PAIRWISE), None)
    attached = {a.row.preset for a in asked} | {a.row.key for a in asked}
    return {
        "asked": asked,
        "addable": [k for k in study_kinds() if k.key != KIND_PRESETS[0] and k.key not in attached],
        "systems": list(System.objects.filter(study=study).order_by("position", "key")),
        "reference": System.objects.filter(study=study, is_reference=True)
        .order_by("position", "key")
        .first(),
        "reference_needed_by": reference_needed_by(study=study),
        "pairwise": pairwise,
        "pairwise_plan": pairwise_plan_summary(study=study, row=pairwise) if pairwise else None,
        "groups": invite_groups(study=study),
        "runs_other_flows": any(a.row.flow in ("pairs", "pairwise") for a in asked),
        "launch_problems": study_launch_problems(study=study),
        "controls": list(
            PlantedControl.objects.filter(study=study)
            .select_related("degrades__source")
            .order_by("degrades__source__position", "pk")
        ),
    }
