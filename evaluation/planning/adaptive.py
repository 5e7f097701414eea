"""Adaptive allocation with a stopping rule: the study's option (AdaptiveAllocation), the row a
newcomer gets while it is on, and where the study stands against its target. The computation is
measures/stats/adaptive_allocation.py; this module reads the answers through the analysis
inputs (evaluation/analysis/study_frames.py, the planner's outcome frames) and the option, and writes
the option and its activity-log events. docs/guide/adaptive-allocation.md says what a team sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.allocation_hooks import RecruitmentClosed
from annotation.models import Source, Study, System
from evaluation.models import AdaptiveAllocation
from evaluation.planning.outcomes import OUTCOMES
from measures.latin_square import LatinSquare
from measures.stats.interval_methods import MIN_PARTICIPANTS, MIN_SOURCES

if TYPE_CHECKING:
    import numpy as np

    from measures.stats import adaptive_allocation as allocation

# numpy, pandas and the allocation's statistics load in the functions that compute (a web worker
# imports this module with the progress page and starts without them: tests/test_web_imports.py).

LAY_OUTCOMES = {key: outcome for key, outcome in OUTCOMES.items() if outcome.design == "lay"}


def adaptive_allocation_of(*, study: Study) -> AdaptiveAllocation | None:
    """The study's option, on or off (None: never set)."""
    return AdaptiveAllocation.objects.select_related("system_a", "system_b").filter(study=study).first()


def _planner_components(*, pilot: Study, outcome_key: str, system_a: System, system_b: System) -> dict:
    """The planner's components of `pilot` for the outcome (evaluation/planning/pilot.py), and the source ×
    system one of the two systems' answers (the crossed difference model; 0 where the pilot
    cannot tell it), as stored."""
    from evaluation.planning.pilot import pilot_components, pilot_frame  # numpy/statsmodels: set-up only
    from measures.stats.crossed import pair_components

    outcome = OUTCOMES[outcome_key]
    components, _ = pilot_components(study=pilot, outcome=outcome)
    residuals = components.residual_by_system
    frame = pilot_frame(study=pilot, outcome=outcome)
    pair = frame[frame["system"].isin([system_a.key, system_b.key])]
    try:
        cell = pair_components(pair["value"], pair["participant"], pair["source"], pair["system"])
        cell_var = cell.column_interaction or 0.0
    except ValueError:  # the pilot lacks one of the two systems
        cell_var = 0.0
    return {
        "pilot": pilot.slug,
        "method": components.method,
        "participant": components.participant,
        "interaction": components.interaction or 0.0,
        "cell": cell_var,
        "residual_a": residuals.get(system_a.key, components.residual),
        "residual_b": residuals.get(system_b.key, components.residual),
    }


def _square(study: Study) -> LatinSquare:
    """The study's square as lay_design builds it (sources and systems with a simplification)."""
    from surveys.lay.selectors import lay_design

    return lay_design(study=study).square


def adaptive_allocation_set(
    *,
    study: Study,
    outcome: str,
    system_a: System,
    system_b: System,
    target_width: Any,
    max_participants: Any,
    close_recruitment: bool = False,
    pilot: Study | None = None,
    actor: Any = None,
) -> AdaptiveAllocation:
    """Turn adaptive allocation on (or change it), recorded in the activity log. ValidationError
    naming the field: an outcome that is not a lay outcome, systems of another study or the same
    system twice, a target that is not positive, a pilot without answers for the outcome, or a
    target the planner cannot reach (narrower than the fixed square's projected width at
    `max_participants`, from the pilot's components). The console page and `manage.py
    adaptive_allocation` call it."""
    from measures.stats import adaptive_allocation as allocation

    errors: dict[str, str] = {}
    if outcome not in LAY_OUTCOMES:
        errors["outcome"] = (
            f"Adaptive allocation hands out lay Latin-square rows: choose a lay outcome "
            f"({', '.join(LAY_OUTCOMES)}), not {outcome!r}."
        )
    for field, system in (("system_a", system_a), ("system_b", system_b)):
        if system.study_id != study.pk:
            errors[field] = f"System {system.key!r} belongs to another study."
    if system_a.pk == system_b.pk:
        errors["system_b"] = "Compare two different systems."
    try:
        width = float(target_width)
        if not math.isfinite(width) or width <= 0:
            raise ValueError
    except (TypeError, ValueError):
        errors["target_width"] = f"The target width must be a positive number, got {target_width!r}."
        width = 0.0
    try:
        maximum = int(max_participants)
        if maximum < 2:
            raise ValueError
    except (TypeError, ValueError):
        errors["max_participants"] = f"At least two participants, got {max_participants!r}."
        maximum = 0
    if errors:
        raise ValidationError(errors)
    pilot = pilot or study
    try:
        components = _planner_components(
            pilot=pilot, outcome_key=outcome, system_a=system_a, system_b=system_b
        )
    except ValueError as exc:
        raise ValidationError(
            {"pilot": f"The planner needs the pilot's answers: {exc} Name a pilot study with answers."}
        ) from exc
    square = _square(study)
    reachable = allocation.fixed_design_width(
        participant_var=components["participant"],
        interaction_var=components["interaction"],
        residual_a=components["residual_a"],
        residual_b=components["residual_b"],
        square=square,
        participants=maximum,
        cell_var=components["cell"],
    )
    components["width_at_max"] = reachable if math.isfinite(reachable) else None
    if not width >= reachable:
        reason = (
            f"{reachable:.3g} at best" if math.isfinite(reachable) else "no interval at all (too few of them)"
        )
        raise ValidationError(
            {
                "target_width": (
                    f"The planner cannot reach a width of {width:g}: with {square.n_sources} sources, "
                    f"{square.m} per participant and at most {maximum} participants, the fixed square "
                    f"gives {reason} (pilot {pilot.slug!r}). Widen the target or allow more participants."
                )
            }
        )
    with transaction.atomic():
        option, _ = AdaptiveAllocation.objects.update_or_create(
            study=study,
            defaults={
                "enabled": True,
                "outcome": outcome,
                "system_a": system_a,
                "system_b": system_b,
                "target_width": width,
                "max_participants": maximum,
                "close_recruitment": bool(close_recruitment),
                "components": components,
                "recruitment_closed_at": None,
            },
        )
        activity_record(
            study=study,
            actor=actor,
            verb="adaptive.set",
            obj=option,
            details={
                "outcome": outcome,
                "system_a": system_a.key,
                "system_b": system_b.key,
                "target_width": width,
                "max_participants": maximum,
                "close_recruitment": bool(close_recruitment),
                "pilot": pilot.slug,
                "width_at_max": components["width_at_max"],
            },
        )
    return option


def adaptive_allocation_off(*, study: Study, actor: Any = None) -> bool:
    """Back to the fixed square for newcomers; whether it was on. Recorded when it was."""
    with transaction.atomic():
        option = AdaptiveAllocation.objects.select_for_update().filter(study=study, enabled=True).first()
        if option is None:
            return False
        option.enabled = False
        option.save(update_fields=["enabled", "updated_at"])
        activity_record(study=study, actor=actor, verb="adaptive.off", obj=option)
    return True


# --- Where the study stands ----------------------------------------------------------------------


@dataclass(frozen=True)
class AdaptiveState:
    option: AdaptiveAllocation
    interval: allocation.PrimaryInterval
    counts: np.ndarray  # answers per (source index, system index) of the square
    variances: np.ndarray
    participants: int

    @property
    def can_close(self) -> bool:
        from measures.stats import adaptive_allocation as allocation

        return allocation.can_close(self.interval, target_width=self.option.target_width)


def _coded_frame(*, study: Study, option: AdaptiveAllocation, source_ids, system_ids):
    """The outcome's answers with the square's source and system indices (-1: outside it)."""
    import numpy as np

    from evaluation.analysis.study_frames import lay_answers_frame
    from evaluation.planning.outcome_frames import outcome_frame

    frame = outcome_frame(
        lay_answers=lay_answers_frame(study=study),
        expert_ratings=None,
        outcome=OUTCOMES[option.outcome],
    )
    source_index = {
        key: source_ids.index(pk)
        for pk, key in Source.objects.filter(pk__in=source_ids).values_list("pk", "key")
    }
    system_index = {
        key: system_ids.index(pk)
        for pk, key in System.objects.filter(pk__in=system_ids).values_list("pk", "key")
    }
    source = frame["source"].map(source_index).fillna(-1).to_numpy(np.int64)
    system = frame["system"].map(system_index).fillna(-1).to_numpy(np.int64)
    return frame["value"].to_numpy(np.float64), frame["participant"].to_numpy(), source, system


def adaptive_state(*, study: Study, option: AdaptiveAllocation | None = None) -> AdaptiveState | None:
    """The primary comparison now (estimate, interval, projected width), or None while the
    option was never set. A constant number of queries whatever the study's size."""
    from surveys.lay.selectors import lay_design

    option = option or adaptive_allocation_of(study=study)
    if option is None:
        return None
    design = lay_design(study=study)
    return _state(study=study, option=option, design=design)


def _state(*, study: Study, option: AdaptiveAllocation, design) -> AdaptiveState:
    import numpy as np

    from measures.stats import adaptive_allocation as allocation

    square = design.square
    values, participant, source, system = _coded_frame(
        study=study, option=option, source_ids=list(design.source_ids), system_ids=list(design.system_ids)
    )
    inside = (source >= 0) & (system >= 0)
    values, participant, source, system = values[inside], participant[inside], source[inside], system[inside]
    a = list(design.system_ids).index(option.system_a_id) if option.system_a_id in design.system_ids else -1
    b = list(design.system_ids).index(option.system_b_id) if option.system_b_id in design.system_ids else -1
    components = option.components or {}
    interval = allocation.primary_interval(
        values,
        participant,
        source,
        system,
        a=a,
        b=b,
        participant_var=float(components.get("participant", 0.0)),
        interaction_var=float(components.get("interaction", 0.0)),
        cell_var=float(components.get("cell", 0.0)),
    )
    counts, variances = allocation.cell_variances(
        values, source, system, n_sources=square.n_sources, n_systems=square.n_systems
    )
    return AdaptiveState(
        option=option,
        interval=interval,
        counts=counts,
        variances=variances,
        participants=int(np.unique(participant).size) if participant.size else 0,
    )


def adaptive_row_handout(*, study: Study, design, live_rows: list[int]) -> int | None:
    """The row for a newcomer while the study's adaptive allocation is on (None: it is off, the
    fixed square's `next_row` applies). Raises RecruitmentClosed, recording the closure once,
    when the target is reached and the option closes recruitment. Call under the study's row
    lock (surveys/lay/assignment.py's handout): a constant number of queries."""
    from measures.stats import adaptive_allocation as allocation

    option = AdaptiveAllocation.objects.filter(study=study, enabled=True).first()
    if option is None:
        return None
    if option.recruitment_closed_at is not None:
        raise RecruitmentClosed
    state = _state(study=study, option=option, design=design)
    if option.close_recruitment and state.can_close:
        option.recruitment_closed_at = timezone.now()
        option.save(update_fields=["recruitment_closed_at", "updated_at"])
        interval = state.interval
        activity_record(
            study=study,
            actor=None,
            verb="adaptive.recruitment_closed",
            obj=option,
            details={
                "projected_width": interval.projected_width,
                "interval": [interval.low, interval.high],
                "target_width": option.target_width,
                "participants": state.participants,
            },
        )
        raise RecruitmentClosed
    a = list(design.system_ids).index(option.system_a_id) if option.system_a_id in design.system_ids else None
    b = list(design.system_ids).index(option.system_b_id) if option.system_b_id in design.system_ids else None
    if a is None or b is None:  # a compared system has no simplification yet: nothing to steer by
        return None
    square = design.square
    counts = allocation.expected_counts(square, state.counts, live_rows)
    return allocation.adaptive_row(square, live_rows, counts, state.variances, a=a, b=b)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def adaptive_progress(*, study: Study) -> dict[str, Any] | None:
    """What the progress and console pages show (None: the option was never set): the primary
    comparison's estimate, interval and projected width against the target, and whether the
    study can close."""
    from surveys.lay.errors import StudyNotReady

    option = adaptive_allocation_of(study=study)
    if option is None:
        return None
    shown: dict[str, Any] = {
        "enabled": option.enabled,
        "comparison": f"{option.system_a.key} − {option.system_b.key} on {OUTCOMES[option.outcome].label}",
        "target_width": option.target_width,
        "max_participants": option.max_participants,
        "width_at_max": _rounded((option.components or {}).get("width_at_max")),
        "closed_at": option.recruitment_closed_at,
        "note": "",
    }
    try:
        state = adaptive_state(study=study, option=option)
    except StudyNotReady as exc:
        return {**shown, "note": str(exc)}
    assert state is not None
    interval = state.interval
    return {
        **shown,
        "estimate": _rounded(interval.estimate),
        "low": _rounded(interval.low),
        "high": _rounded(interval.high),
        "width": _rounded(interval.width),
        "why_none": (
            f"needs at least {MIN_PARTICIPANTS} laypeople and {MIN_SOURCES} "
            "sources with answers of both systems"
        ),
        "projected_width": _rounded(interval.projected_width),
        "sources": interval.n_sources,
        "participants": state.participants,
        "can_close": state.can_close,
    }
