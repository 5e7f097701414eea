"""A pilot study fitted and a follow-up's designs simulated: the computation a PowerPlan stores
(evaluation/planning/plans.py claims the plan and runs this in a task or a command). Reads the pilot's answers
as frames (evaluation/analysis/study_frames.py) and calls the pure computation of evaluation/planning/."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from annotation.models import Participant, Study
from evaluation.analysis.study_frames import expert_ratings_frame, lay_answers_frame
from evaluation.planning.outcome_frames import outcome_frame
from evaluation.planning.outcomes import Outcome, get_outcome
from evaluation.planning.power import PowerSettings, design_axis, power_grid
from evaluation.planning.power_curve import power_curve_svg
from evaluation.planning.variance import VarianceComponents, estimate_components
from evaluation.progress import ABANDONED, COMPLETED, RETURNED, participants_progress


def pilot_dropout_rate(*, study: Study, now=None) -> float | None:
    """Share of the pilot's laypeople who dropped out (status abandoned or returned, as the
    dashboard counts them: evaluation/progress.py) among those who finished one way or the other;
    None when nobody has finished yet."""
    statuses = [
        record["status"]
        for record in participants_progress(study=study, now=now)
        if record["role"] == Participant.Role.LAYPERSON
    ]
    dropped = sum(status in (ABANDONED, RETURNED) for status in statuses)
    finished = dropped + statuses.count(COMPLETED)
    return dropped / finished if finished else None


def pilot_frame(*, study: Study, outcome: Outcome):
    if outcome.design == "expert":
        return outcome_frame(
            lay_answers=None, expert_ratings=expert_ratings_frame(study=study), outcome=outcome
        )
    return outcome_frame(lay_answers=lay_answers_frame(study=study), expert_ratings=None, outcome=outcome)


def pilot_components(*, study: Study, outcome: Outcome, seed: int = 0) -> tuple[VarianceComponents, float]:
    """The pilot's variance components for `outcome` and its mean answer."""
    frame = pilot_frame(study=study, outcome=outcome)
    if frame.empty:
        raise ValueError(f"The study has no answers for {outcome.label} yet: it cannot serve as a pilot.")
    return estimate_components(frame, seed=seed), float(frame["value"].mean())


def plan_settings(
    *, study: Study, parameters: Mapping[str, Any], components: VarianceComponents, pilot_mean: float
) -> PowerSettings:
    """The simulation's settings: what the request gives, the pilot's values for the rest."""
    outcome = get_outcome(parameters["outcome"])
    dropout = parameters.get("dropout")
    if dropout is None:
        dropout = (pilot_dropout_rate(study=study) or 0.0) if outcome.design == "lay" else 0.0
    return PowerSettings(
        outcome=outcome,
        participant_var=components.participant,
        source_var=components.source,
        residual_var=components.residual,
        baseline=parameters.get("baseline") if parameters.get("baseline") is not None else pilot_mean,
        effect=parameters["effect"],
        n_systems=parameters.get("systems") or max(study.systems.count(), 2),
        alpha=parameters["alpha"],
        target=parameters["power"],
        per_participant=parameters.get("per_participant") or study.lay_sources_per_participant,
        dropout=min(float(dropout), 0.9),
        n_simulations=parameters["simulations"],
        seed=parameters["seed"],
        mixed_model=parameters["mixed_simulations"] > 0,
        interaction_var=components.interaction or 0.0,
        # The pilot's systems in study order, cycled over the simulated ones.
        residual_vars=_system_residuals(study=study, components=components),
    )


def _system_residuals(*, study: Study, components: VarianceComponents) -> tuple[float, ...] | None:
    by_system = components.residual_by_system
    order = [key for key in study.systems.values_list("key", flat=True) if key in by_system]
    return tuple(by_system[key] for key in order) or None


def plan_compute(*, study: Study, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Fit the pilot and simulate the grid of designs the request asks for (pure work + reads), as
    JSON-ready plain values."""
    started = time.perf_counter()
    outcome = get_outcome(parameters["outcome"])
    components, pilot_mean = pilot_components(study=study, outcome=outcome, seed=parameters["seed"])
    settings = plan_settings(study=study, parameters=parameters, components=components, pilot_mean=pilot_mean)
    k = settings.n_systems
    step = k if outcome.design == "lay" else 1  # lay designs in whole Latin-square cycles
    points = parameters["points"]
    participants = design_axis(parameters["max_participants"], step=step, minimum=2, points=points)
    sources = design_axis(parameters["max_sources"], step=step, minimum=2, points=points)
    grid = power_grid(settings, participants, sources, mixed_simulations=parameters["mixed_simulations"])
    grid_json = _json_ready(grid.as_dict())
    return _json_ready(
        {
            "pilot": {
                "study": study.slug,
                "components": components.as_dict(),
                "mean": pilot_mean,
                "dropout": pilot_dropout_rate(study=study),
                "systems": study.systems.count(),
                "per_participant": study.lay_sources_per_participant,
            },
            "grid": grid_json,
            "figure_svg": power_curve_svg(grid_json),
            "seconds": round(time.perf_counter() - started, 2),
        }
    )


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
