"""Variance components of a crossed participants × sources design with fixed system effects:

    y = mean(system) + u(participant) + v(source) + e,   u ~ N(0, σ²_p), v ~ N(0, σ²_s), e ~ N(0, σ²_e)

Two estimators:

- **REML** with statsmodels' MixedLM, the crossed random effects written as variance components
  of one all-encompassing group (the documented way to fit crossed effects in statsmodels). Used
  when it converges to non-negative components and the data are small enough for its dense
  design matrices (`MIXEDLM_MAX_CELLS`).
- **Method of moments** otherwise (Gao & Owen 2017, "Efficient moment calculations for variance
  components in large unbalanced crossed random effects models", Electron. J. Statist. 11): after
  removing the system means, half the mean squared difference over pairs of answers that share
  the participant only, the source only, or neither, has expectation σ²_s + σ²_e, σ²_p + σ²_e and
  σ²_p + σ²_s + σ²_e; solving gives the three components (negative solutions truncated at 0).
  Computed from group sums in O(n).

Uncertainty: a two-way ("pigeonhole") bootstrap of the moment estimator — participants and sources
resampled independently (Owen 2007, Ann. Appl. Statist. 1) — gives percentile intervals for the
components (inside [0, ∞) and around the reported estimate); the system means get REML standard
errors, or bootstrap ones with the moment method.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from measures.stats.crossed import group_components
from measures.stats.support import NON_NEGATIVE

# statsmodels' MixedLM builds dense (answers × levels) matrices for crossed effects: its cost
# grows with their product (2,400 answers × 140 levels took 26 s on a loaded 2-core machine).
MIXEDLM_MAX_CELLS = 150_000


@dataclass(frozen=True)
class VarianceComponents:
    participant: float
    source: float
    residual: float
    system_means: dict[str, float]
    method: str  # "REML (statsmodels MixedLM)" | "method of moments (Gao & Owen 2017)"
    n_answers: int
    n_participants: int
    n_sources: int
    system_se: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    note: str = ""
    # Moment estimates (measures/stats/crossed.py): the participant × system interaction, the
    # mean over the pilot's pairs of systems (None: no pair with enough participants and sources),
    # and each system's residual variance from its own answers.
    interaction: float | None = None
    residual_by_system: dict[str, float] = field(default_factory=dict)

    @property
    def grand_mean(self) -> float:
        return float(np.mean(list(self.system_means.values())))

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["intervals"] = {k: list(v) for k, v in self.intervals.items()}
        record["interval_support"] = NON_NEGATIVE.record()  # every component's: a variance
        return record


def _codes(values: pd.Series) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64), len(uniques)


def _pair_sums(groups: np.ndarray, n_groups: int, r: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Σ over groups of Σ_{i<j}(r_i − r_j)² and the number of pairs, each answer i counted w_i
    times (copies of an answer are distinct answers of the same group)."""
    n = np.bincount(groups, weights=w, minlength=n_groups)
    s1 = np.bincount(groups, weights=w * r, minlength=n_groups)
    s2 = np.bincount(groups, weights=w * r * r, minlength=n_groups)
    return float(np.sum(n * s2 - s1 * s1)), float(np.sum(n * (n - 1) / 2))


def _moments(
    participant: np.ndarray,
    n_p: int,
    source: np.ndarray,
    n_s: int,
    r: np.ndarray,
    w: np.ndarray,
) -> tuple[float, float, float]:
    cell = participant * n_s + source
    ss_all, pairs_all = _pair_sums(np.zeros_like(participant), 1, r, w)
    ss_p, pairs_p = _pair_sums(participant, n_p, r, w)
    ss_s, pairs_s = _pair_sums(source, n_s, r, w)
    ss_c, pairs_c = _pair_sums(cell, n_p * n_s, r, w)
    # Pairs sharing the participant only, the source only, neither (a pair in the same
    # participant × source cell shares both and is left out).
    only_p = (ss_p - ss_c, pairs_p - pairs_c)
    only_s = (ss_s - ss_c, pairs_s - pairs_c)
    neither = (ss_all - ss_p - ss_s + ss_c, pairs_all - pairs_p - pairs_s + pairs_c)
    if min(only_p[1], only_s[1], neither[1]) <= 0:
        raise ValueError(
            "The components need answers that share a participant but not a source, a source but not "
            "a participant, and neither: at least two participants and two sources, crossed."
        )
    m_p, m_s, m_n = (ss / (2 * pairs) for ss, pairs in (only_p, only_s, neither))
    return max(m_n - m_p, 0.0), max(m_n - m_s, 0.0), max(m_p + m_s - m_n, 0.0)


def moment_components(frame: pd.DataFrame) -> tuple[float, float, float]:
    """(σ²_participant, σ²_source, σ²_residual) by the method of moments (module docstring).

    `frame`: columns participant, source, system, value."""
    participant, n_p = _codes(frame["participant"])
    source, n_s = _codes(frame["source"])
    value = frame["value"].to_numpy(dtype=np.float64)
    residual = value - frame.groupby("system")["value"].transform("mean").to_numpy(dtype=np.float64)
    return _moments(participant, n_p, source, n_s, residual, np.ones_like(residual))


def _bootstrap(frame: pd.DataFrame, n_resamples: int, seed: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Two-way bootstrap replicates: (B, 3) components and per-system means (B,) each."""
    rng = np.random.default_rng(seed)
    participant, n_p = _codes(frame["participant"])
    source, n_s = _codes(frame["source"])
    system, n_k = _codes(frame["system"])
    labels = sorted(pd.unique(frame["system"]))
    value = frame["value"].to_numpy(dtype=np.float64)
    components = np.full((n_resamples, 3), np.nan)
    means = {label: np.full(n_resamples, np.nan) for label in labels}
    for b in range(n_resamples):
        w = (
            np.bincount(rng.integers(0, n_p, n_p), minlength=n_p)[participant]
            * np.bincount(rng.integers(0, n_s, n_s), minlength=n_s)[source]
        ).astype(np.float64)
        total = np.bincount(system, weights=w, minlength=n_k)
        with np.errstate(invalid="ignore", divide="ignore"):
            system_mean = np.bincount(system, weights=w * value, minlength=n_k) / total
        for k, label in enumerate(labels):
            means[label][b] = system_mean[k]
        keep = w > 0
        residual = value - system_mean[system]
        try:
            components[b] = _moments(participant[keep], n_p, source[keep], n_s, residual[keep], w[keep])
        except ValueError:
            continue  # a degenerate resample (one participant or one source drawn)
    return components, means


def _mixedlm(
    frame: pd.DataFrame,
) -> tuple[tuple[float, float, float], dict[str, float], dict[str, float]] | None:
    """REML fit, or None when it fails, does not converge or gives a negative component."""
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    data = frame.assign(
        group=0, participant=frame["participant"].astype(str), source=frame["source"].astype(str)
    )
    model = smf.mixedlm(
        "value ~ 0 + C(system)",
        data,
        groups="group",
        re_formula="0",
        vc_formula={"participant": "0 + C(participant)", "source": "0 + C(source)"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            result = model.fit(reml=True)
        except (ConvergenceWarning, np.linalg.LinAlgError, ValueError):
            return None
    if not result.converged:
        return None
    vc = dict(zip(model.exog_vc.names, np.asarray(result.vcomp, dtype=np.float64), strict=True))
    components = (vc["participant"], vc["source"], float(result.scale))
    if not all(np.isfinite(c) and c >= 0 for c in components):
        return None
    means, se = {}, {}
    for name, estimate in result.fe_params.items():
        label = name.removeprefix("C(system)[").removesuffix("]")
        means[label] = float(estimate)
        se[label] = float(result.bse_fe[name])
    return components, means, se


def system_components(frame: pd.DataFrame) -> tuple[float | None, dict[str, float]]:
    """(participant × system interaction, residual variance per system) of `frame` by the moment
    estimators of the crossed intervals (measures/stats/crossed.py): the interaction of each
    pair of systems from their answers (adjusted for sources), averaged over the pairs; each
    system's residual from its own answers."""
    fitted = group_components(
        frame["value"].to_numpy(np.float64),
        frame["participant"].to_numpy(),
        frame["source"].to_numpy(),
        frame["system"].astype(str).to_numpy(),
    )
    interactions = [pair.interaction for pair in fitted["pairs"].values() if pair.interaction is not None]
    residuals = {str(system): float(c.residual) for system, c in fitted["systems"].items()}
    return (float(np.mean(interactions)) if interactions else None), residuals


def estimate_components(
    frame: pd.DataFrame,
    *,
    method: str = "auto",
    n_resamples: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
) -> VarianceComponents:
    """Variance components and system means of `frame` (participant, source, system, value).

    method: "auto" (REML when it converges and answers × (participants + sources) is at most
    MIXEDLM_MAX_CELLS, else moments), "reml" or "moments"."""
    if method not in ("auto", "reml", "moments"):
        raise ValueError(f"method must be auto, reml or moments, not {method!r}")
    frame = frame.dropna(subset=["value"])
    n_participants, n_sources = frame["participant"].nunique(), frame["source"].nunique()
    if n_participants < 2 or n_sources < 2:
        raise ValueError(
            f"Variance components need at least two participants and two sources with answers "
            f"(the pilot has {n_participants} and {n_sources})."
        )
    replicates, boot_means = _bootstrap(frame, n_resamples, seed)
    tail = (1 - confidence) / 2 * 100
    percentiles = {}
    for i, name in enumerate(("participant", "source", "residual")):
        column = replicates[:, i][~np.isnan(replicates[:, i])]
        if column.size:
            percentiles[name] = (float(np.percentile(column, tail)), float(np.percentile(column, 100 - tail)))
    note = ""
    fitted = None
    small = len(frame) * (n_participants + n_sources) <= MIXEDLM_MAX_CELLS
    if method == "reml" or (method == "auto" and small):
        fitted = _mixedlm(frame)
        if fitted is None:
            if method == "reml":
                raise ValueError("REML (statsmodels MixedLM) did not converge to non-negative components.")
            note = "REML did not converge to non-negative components; the moment estimator was used."
    elif method == "auto":
        note = "The pilot is too large for REML's dense matrices: the moment estimator was used."
    if fitted is not None:
        (p, s, e), means, se = fitted
        used = "REML (statsmodels MixedLM)"
    else:
        p, s, e = moment_components(frame)
        means = {str(k): float(v) for k, v in frame.groupby("system")["value"].mean().items()}
        se = {k: float(np.nanstd(v, ddof=1)) for k, v in boot_means.items()}
        used = "method of moments (Gao & Owen 2017)"
    interaction, residual_by_system = system_components(frame)
    # A variance is at least 0; the bootstrap's percentile interval (of the moment estimator) is
    # kept around the reported estimate (REML's or the moments'), which it may miss.
    intervals: dict[str, tuple[float, float]] = {}
    for name, estimate in (("participant", p), ("source", s), ("residual", e)):
        if name in percentiles:
            low, high = NON_NEGATIVE.bound(float(estimate), *percentiles[name])
            if low is not None and high is not None:
                intervals[name] = (low, high)
    return VarianceComponents(
        interaction=interaction,
        residual_by_system=residual_by_system,
        participant=float(p),
        source=float(s),
        residual=float(e),
        system_means=means,
        system_se=se,
        method=used,
        n_answers=int(len(frame)),
        n_participants=int(n_participants),
        n_sources=int(n_sources),
        intervals=intervals,
        note=note,
    )
