"""Sequential studies simulated on the planner's model: participants arrive one by one, each gets
a Latin-square row (fixed: `latin_square.next_row`; adaptive: measures/stats/adaptive_allocation's
`adaptive_row`), answers it in full, and the study closes as soon as the primary interval is at
most the target width (or at `max_participants`). Pure computation, no Django.

The answers come from the planner's generative model (evaluation/planning/power.py): latent
mean(system) + u(participant) + v(source) + w(participant × system) + e with each system's own
residual variance, scaled and rounded/clipped onto the outcome's scale exactly as the planner
draws them; system 1 is `effect` above system 0 on the observed scale, so the primary
comparison's true value is `settings.effect` (`true_difference` where the systems' residual
variances differ). Fixed and adaptive studies of one seed share their
sources' and participants' effects (common random numbers), so their difference in
participants is measured on the same simulated populations.

`plan_fixed` and `simulate_fixed` give the design a team would otherwise run: the fewest
participants at which the planner's simulated studies reach the target width with a given
assurance (the planner's target power by default), recruited up front and read once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from evaluation.planning.power import (
    PowerSettings,
    _answers,
    _residual_vars,
    expected_answer,
    latent_means,
    latent_scale,
)
from measures.latin_square import LatinSquare, next_row
from measures.stats.adaptive_allocation import (
    PrimaryInterval,
    adaptive_row,
    can_close,
    cell_variances,
    expected_counts,
    primary_interval,
)
from measures.stats.interval_methods import MIN_SOURCES

POLICIES = ("fixed", "adaptive")
A, B = 1, 0  # the shifted system against its baseline


@dataclass(frozen=True)
class SequentialRun:
    """One policy over `n_studies` simulated studies."""

    policy: str
    participants: np.ndarray  # participants each study took (max_participants when not reached)
    reached: np.ndarray  # bool: the study reached the target before max_participants
    covered: np.ndarray  # bool: its closing interval covers the true difference
    widths: np.ndarray

    @property
    def coverage(self) -> float:
        return float(self.covered.mean())

    @property
    def coverage_se(self) -> float:
        q = self.coverage
        return math.sqrt(q * (1 - q) / self.covered.size)

    @property
    def mean_participants(self) -> float:
        return float(self.participants.mean())


def true_difference(settings: PowerSettings) -> float:
    """The primary comparison's true value: expected answer of system A less that of B, each
    with its own residual variance (the planner's `effect` exactly when the residuals are equal;
    rounding and clipping move a system's expected answer with its spread)."""
    scale = latent_scale(settings)
    baseline, shifted = latent_means(settings)
    residuals = _residual_vars(settings)

    def expected(mean: float, system: int) -> float:
        single = dataclasses.replace(settings, residual_var=float(residuals[system]), residual_vars=None)
        return expected_answer(single, mean, scale)

    return expected(shifted, A) - expected(baseline, B)


@dataclass(frozen=True)
class _Model:
    """What every simulated study of one setting shares: the latent scale, the systems' latent
    means and the true difference (solved for once: root finding, slow)."""

    scale: float
    means: np.ndarray
    truth: float
    cell_var: float

    @classmethod
    def of(cls, settings: PowerSettings) -> _Model:
        baseline, shifted = latent_means(settings)
        means = np.full(settings.n_systems, baseline)
        means[A] = shifted
        return cls(latent_scale(settings), means, true_difference(settings), source_system_var(settings))


def source_system_var(settings: PowerSettings) -> float:
    """The source × system component the model's rounding and clipping create (σ²_c of the crossed
    difference model): half the variance, over sources, of a source's true difference of
    expected answers, by Gauss–Hermite quadrature over the source effect. What a pilot's crossed
    fit estimates and the stopping rule's projection takes from it."""
    scale = latent_scale(settings)
    baseline, shifted = latent_means(settings)
    residuals = _residual_vars(settings)
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    v = nodes * scale * math.sqrt(settings.source_var)

    def expected(mean: float, system: int) -> np.ndarray:
        within = dataclasses.replace(
            settings, source_var=0.0, residual_var=float(residuals[system]), residual_vars=None
        )
        return np.array([expected_answer(within, mean + shift, scale) for shift in v])

    difference = expected(shifted, A) - expected(baseline, B)
    mean = float(weights @ difference)
    return float(weights @ (difference - mean) ** 2) / 2


def _looks(
    settings: PowerSettings,
    square: LatinSquare,
    model: _Model,
    *,
    policy: str,
    max_participants: int,
    seed: int,
) -> Iterator[tuple[int, PrimaryInterval]]:
    """One simulated study, newcomer by newcomer: (participants so far, primary interval) after
    every block of the square (k rows) and at `max_participants`."""
    k, n_sources = settings.n_systems, square.n_sources
    scale, means = model.scale, model.means
    population = np.random.default_rng(seed)
    v = population.standard_normal(n_sources) * scale * math.sqrt(settings.source_var)
    u = population.standard_normal(max_participants) * scale * math.sqrt(settings.participant_var)
    w = population.standard_normal((max_participants, k)) * scale * math.sqrt(settings.interaction_var)
    noise = np.random.default_rng([seed, POLICIES.index(policy)])
    rows: list[int] = []
    values: list[np.ndarray] = []
    participants: list[np.ndarray] = []
    sources: list[np.ndarray] = []
    systems: list[np.ndarray] = []
    batch = k  # the stopping rule is read after every block of the square (k rows)
    for p in range(max_participants):
        if policy == "adaptive" and values:
            y, s, j = np.concatenate(values), np.concatenate(sources), np.concatenate(systems)
            answered, variances = cell_variances(y, s, j, n_sources=n_sources, n_systems=k)
            counts = expected_counts(square, answered, rows)
            row = adaptive_row(square, rows, counts, variances, a=A, b=B)
        else:
            row = next_row(square, rows)
        rows.append(row)
        pairs = np.array(square.pairs(row), dtype=np.int64)
        s, j = pairs[:, 0], pairs[:, 1]
        latent = u[p] + v[s] + means[j] + w[p, j]
        values.append(_answers(settings, latent, noise, scale, j))
        sources.append(s)
        systems.append(j)
        participants.append(np.full(len(s), p))
        if (p + 1) % batch and p + 1 < max_participants:
            continue
        yield (
            len(rows),
            primary_interval(
                np.concatenate(values),
                np.concatenate(participants),
                np.concatenate(sources),
                np.concatenate(systems),
                a=A,
                b=B,
                participant_var=settings.participant_var,
                interaction_var=settings.interaction_var,
                cell_var=model.cell_var,
            ),
        )


def _study(
    settings: PowerSettings,
    square: LatinSquare,
    model: _Model,
    *,
    policy: str,
    target_width: float,
    max_participants: int,
    min_sources: int,
    seed: int,
) -> tuple[int, bool, bool, float]:
    look = None
    for look in _looks(settings, square, model, policy=policy, max_participants=max_participants, seed=seed):
        if can_close(look[1], target_width=target_width, min_sources=min_sources):
            break
    assert look is not None
    n, interval = look
    reached = can_close(interval, target_width=target_width, min_sources=min_sources)
    return n, reached, interval.covers(model.truth), float(interval.width or math.nan)


def _square(
    settings: PowerSettings, n_sources: int, target_width: float, max_participants: int
) -> LatinSquare:
    if target_width <= 0:
        raise ValueError("The target width must be positive.")
    if max_participants < 2 or n_sources < 2:
        raise ValueError("A sequential study needs at least two participants and two sources.")
    return LatinSquare(
        n_sources=n_sources, n_systems=settings.n_systems, per_participant=settings.per_participant
    )


def simulate_sequential(
    settings: PowerSettings,
    n_sources: int,
    *,
    target_width: float,
    max_participants: int,
    n_studies: int,
    seed: int = 0,
    min_sources: int = MIN_SOURCES,
    policies: tuple[str, ...] = POLICIES,
) -> dict[str, SequentialRun]:
    """Each policy on the same `n_studies` simulated populations (module docstring)."""
    square = _square(settings, n_sources, target_width, max_participants)
    seeds = np.random.SeedSequence(seed).generate_state(n_studies)
    model = _Model.of(settings)
    runs = {}
    for policy in policies:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
        results = [
            _study(
                settings,
                square,
                model,
                policy=policy,
                target_width=target_width,
                max_participants=max_participants,
                min_sources=min_sources,
                seed=int(study_seed),
            )
            for study_seed in seeds
        ]
        participants, reached, covered, widths = (np.array(column) for column in zip(*results, strict=True))
        runs[policy] = SequentialRun(policy, participants, reached.astype(bool), covered.astype(bool), widths)
    return runs


@dataclass(frozen=True)
class FixedPlan:
    """The fixed design a team would recruit up front: the fewest participants (whole blocks of
    the square, the looks of the sequential rule) at which at least `assurance` of the planner's
    simulated studies reach the target width; None when `max_participants` does not."""

    participants: int | None
    assurance: float
    share: float  # share of the planning studies that reach the target at `participants`
    n_studies: int


def plan_fixed(
    settings: PowerSettings,
    n_sources: int,
    *,
    target_width: float,
    max_participants: int,
    n_studies: int,
    seed: int = 0,
    assurance: float | None = None,
    min_sources: int = MIN_SOURCES,
) -> FixedPlan:
    """Plan a fixed design by simulation on the same generative model: the fixed square's studies,
    on planning draws independent of `simulate_sequential`'s with the same seed, all read at
    each block; "reaches the target" is the stopping rule's own criterion (`can_close`) read once
    at the planned size. `assurance` defaults to the planner's target power (`settings.target`,
    0.8): the share of studies that must reach the target width."""
    level = settings.target if assurance is None else assurance
    if not 0 < level < 1:
        raise ValueError("The assurance must lie between 0 and 1.")
    square = _square(settings, n_sources, target_width, max_participants)
    model = _Model.of(settings)
    planning = np.random.SeedSequence(seed).spawn(1)[0].generate_state(n_studies)
    studies = [
        _looks(settings, square, model, policy="fixed", max_participants=max_participants, seed=int(s))
        for s in planning
    ]
    share = 0.0
    while True:
        looks = [look for study in studies if (look := next(study, None)) is not None]
        if not looks:  # every study has run to max_participants (they all look at the same sizes)
            return FixedPlan(None, level, share, n_studies)
        n = looks[0][0]
        share = float(
            np.mean([can_close(i, target_width=target_width, min_sources=min_sources) for _, i in looks])
        )
        if share >= level:
            return FixedPlan(n, level, share, n_studies)


def simulate_fixed(
    settings: PowerSettings,
    n_sources: int,
    *,
    participants: int,
    target_width: float,
    n_studies: int,
    seed: int = 0,
    min_sources: int = MIN_SOURCES,
) -> SequentialRun:
    """The fixed design of `participants` on the same simulated populations (and the same answers)
    as `simulate_sequential`'s with this seed: every study reads its interval once, at the end;
    `reached` is whether that interval meets the target."""
    square = _square(settings, n_sources, target_width, participants)
    model = _Model.of(settings)
    seeds = np.random.SeedSequence(seed).generate_state(n_studies)
    results = []
    for study_seed in seeds:
        *_, (n, interval) = _looks(
            settings, square, model, policy="fixed", max_participants=participants, seed=int(study_seed)
        )
        results.append(
            (
                n,
                can_close(interval, target_width=target_width, min_sources=min_sources),
                interval.covers(model.truth),
                float(interval.width or math.nan),
            )
        )
    n_taken, reached, covered, widths = (np.array(column) for column in zip(*results, strict=True))
    return SequentialRun("planned fixed", n_taken, reached.astype(bool), covered.astype(bool), widths)
