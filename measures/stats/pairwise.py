"""Ranking systems from pairwise comparisons: Bradley–Terry strengths, Davidson ties, intervals that
resample raters and sources, win rates, the probability each system is best, a length-controlled
variant, and lay most/least preferences turned into derived pairs. Django-free.

Model (Davidson 1970, written on the log scale). With log-strengths ``theta``, a tie parameter
``nu = exp(tau)`` and ``eta = theta_i - theta_j + beta · z`` (``z``: optional covariates of the
comparison, e.g. the normalised length difference of the arena literature's style control):

    P(i beats j) = e^{eta/2} / D,   P(j beats i) = e^{-eta/2} / D,   P(tie) = nu / D,
    D = e^{eta/2} + e^{-eta/2} + nu.

Without ties ``nu = 0`` and this is the Bradley–Terry logistic model ``P(i beats j) = 1/(1+e^{-eta})``
that Chatbot Arena and MedArena fit as a logistic regression without intercept on ±1 columns. The
log-likelihood is concave (a linear term minus a log-sum-exp of linear terms), so a damped Newton
iteration from zero finds its maximum; it is vectorised over bootstrap replicates (each replicate is
a vector of comparison weights). tests/measures/stats/test_pairwise.py checks the fit against
statsmodels' logistic regression and a written-out Davidson likelihood maximised by scipy.

A system that never wins (or never loses) has no finite maximum-likelihood strength. Like the arena
implementations (a weakly regularised logistic regression), the fit adds a Gaussian prior on each
log-strength: a penalty ``prior/2 · sum(theta²)``, by default ``prior = 0.01`` (a prior sd of 10 on
the log scale). When the maximum-likelihood strengths exist, the prior shrinks them towards 0 by
about ``prior · V · theta`` (V their covariance): small against their standard errors, not to a
fixed 1e-3. Measured over 100 simulated studies each (3, 5 and 8 systems, true log-strengths in
±1.5, estimable fits only; tests/measures/stats/test_pairwise.py): with 90 comparisons the default
moved a strength by up to 0.046 on the log scale (0.018 with 3 systems), at most 0.05 of its
standard error; with 400 comparisons by at most 0.005. ``estimable`` reports whether the
maximum-likelihood strengths exist (the directed win graph, ties counting both ways, is strongly
connected; Ford 1957); when it is False the extreme strengths are the prior's, not the data's.
With ``prior=0`` the strengths are centred by a constraint ``sum(theta) = 0`` instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy import sparse, stats
from scipy.sparse.csgraph import connected_components

from measures.stats.crossed import bounded_mean_interval
from measures.stats.interval_methods import MIN_PARTICIPANTS, MIN_SOURCES, TOO_FEW
from measures.stats.support import PROPORTION, REAL

K = TypeVar("K", bound=Hashable)
FloatArray = NDArray[np.float64]

OUTCOMES = ("left", "right", "tie", "neither")
DEFAULT_PRIOR = 0.01
_MAX_STEP = 2.0  # largest change of any parameter in one Newton step (damping)
_MAX_ITERATIONS = 200
_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Comparison:
    """One pairwise judgement: ``outcome`` is ``left`` (left text better), ``right``, ``tie`` or
    ``neither`` (neither acceptable). Lengths (e.g. words) are needed only by the length-controlled
    ranking. ``derived`` marks pairs derived from lay most/least preferences."""

    rater: Hashable
    source: Hashable
    left: Hashable
    right: Hashable
    outcome: str
    left_length: float | None = None
    right_length: float | None = None
    derived: bool = False


@dataclass(frozen=True)
class BradleyTerryFit:
    strengths: dict[Any, float]  # log-strength, centred on zero
    tie_log_nu: float | None  # Davidson's log nu; None when no tie was observed
    covariates: tuple[float, ...]  # coefficients of the covariates (length control)
    estimable: bool  # maximum-likelihood strengths exist (strongly connected win graph)
    converged: bool


# --- the fit ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Terms:
    """Each comparison's contribution (B, m) to the gradient of the log-likelihood and to its
    negative Hessian, by the linear predictor eta and, with ties, by log nu."""

    grad_eta: FloatArray
    hess_eta: FloatArray
    grad_tie: FloatArray
    hess_cross: FloatArray
    hess_tie: FloatArray


def _terms(
    params: FloatArray,
    design: FloatArray,
    result: FloatArray,
    is_tie: FloatArray,
    *,
    n_params: int,
    ties: bool,
) -> _Terms:
    b = params.shape[0]
    eta = params[:, :n_params] @ design.T  # (B, m)
    nu = np.exp(params[:, -1:]) if ties else np.zeros((b, 1))
    # Stable: divide numerator and denominator by e^{|eta|/2}.
    half = np.abs(eta) / 2
    ew, el = np.exp(eta / 2 - half), np.exp(-eta / 2 - half)
    et = nu * np.exp(-half)
    denom = ew + el + et
    pw, pl, pt = ew / denom, el / denom, et / denom
    diff = pw - pl
    return _Terms(
        grad_eta=(result - diff) / 2,
        hess_eta=((pw + pl) - diff**2) / 4,
        grad_tie=is_tie - pt,
        hess_cross=-diff * pt / 2,
        hess_tie=pt * (1 - pt),
    )


def _design(
    first: NDArray[np.intp], second: NDArray[np.intp], covariates: FloatArray, n_systems: int
) -> FloatArray:
    m = first.size
    design = np.zeros((m, n_systems + covariates.shape[1]))
    rows = np.arange(m)
    design[rows, first] += 1.0
    design[rows, second] -= 1.0
    design[:, n_systems:] = covariates
    return design


def _penalty(p: int, n_systems: int, prior: float) -> FloatArray:
    penalty = np.zeros((p, p))
    penalty[:n_systems, :n_systems] = prior * np.eye(n_systems)
    if prior == 0:
        # No prior: fix the centre by a constraint (sum theta = 0) that leaves the likelihood alone.
        penalty[:n_systems, :n_systems] = np.ones((n_systems, n_systems))
    return penalty


def _fit(
    first: NDArray[np.intp],
    second: NDArray[np.intp],
    result: FloatArray,
    covariates: FloatArray,
    weights: FloatArray,
    *,
    n_systems: int,
    prior: float,
    ties: bool,
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Maximise the (penalised) Davidson likelihood for every row of ``weights`` at once.

    Rows of the data: ``first`` vs ``second`` (system codes), ``result`` +1 first won, -1 second
    won, 0 tie; ``covariates`` (m, k). ``weights`` (B, m): how often each row counts in each
    replicate. Returns the parameters (B, n_systems + k [+ 1 for log nu]) and convergence flags.
    """
    k = covariates.shape[1]
    design = _design(first, second, covariates, n_systems)
    p = n_systems + k + (1 if ties else 0)
    b = weights.shape[0]
    params = np.zeros((b, p))
    is_tie = (result == 0).astype(np.float64)
    penalty = _penalty(p, n_systems, prior)
    converged = np.zeros(b, dtype=bool)
    for _ in range(_MAX_ITERATIONS):
        terms = _terms(params, design, result, is_tie, n_params=n_systems + k, ties=ties)
        grad = np.empty((b, p))
        grad[:, : n_systems + k] = (weights * terms.grad_eta) @ design
        hess = np.empty((b, p, p))
        hess[:, : n_systems + k, : n_systems + k] = np.einsum(
            "bm,mp,mq->bpq", weights * terms.hess_eta, design, design
        )
        if ties:
            grad[:, -1] = (weights * terms.grad_tie).sum(axis=1)
            cross = (weights * terms.hess_cross) @ design
            hess[:, -1, : n_systems + k] = cross
            hess[:, : n_systems + k, -1] = cross
            hess[:, -1, -1] = (weights * terms.hess_tie).sum(axis=1)
        grad -= params @ penalty
        hess += penalty
        step = np.linalg.solve(hess + 1e-12 * np.eye(p), grad[..., None])[..., 0]
        size = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, _MAX_STEP / np.maximum(size, 1e-300))
        params += step
        converged = size[:, 0] < _TOLERANCE
        if converged.all():
            break
    return params, converged


def _strongly_connected(
    first: NDArray[np.intp], second: NDArray[np.intp], result: FloatArray, n: int
) -> bool:
    # An edge loser -> winner for each win; a tie links both ways.
    src = np.concatenate([np.where(result > 0, second, first), first[result == 0]])
    dst = np.concatenate([np.where(result > 0, first, second), second[result == 0]])
    graph = sparse.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    count, _ = connected_components(graph, directed=True, connection="strong")
    return bool(count == 1)


def _codes(keys: Sequence[Hashable]) -> tuple[list[Hashable], NDArray[np.intp]]:
    labels = list(dict.fromkeys(keys))
    index = {key: i for i, key in enumerate(labels)}
    return labels, np.array([index[key] for key in keys], dtype=np.intp)


def bradley_terry_model(
    pairs: Iterable[tuple[K, K]],
    *,
    ties: Iterable[tuple[K, K]] | None = None,
    prior: float = DEFAULT_PRIOR,
) -> BradleyTerryFit:
    """Fit Bradley–Terry to ``(winner, loser)`` pairs, with Davidson's tie parameter when ``ties``
    (unordered pairs judged equal) has any. See the module docstring for the prior."""
    if prior < 0:
        raise ValueError("prior must be >= 0")
    wins = list(pairs)
    tied = list(ties or ())
    for pair in (*wins, *tied):
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"a comparison needs two different systems, got {pair!r}")
    if not wins and not tied:
        raise ValueError("bradley_terry needs at least one comparison")
    firsts = [a for a, _ in wins] + [a for a, _ in tied]
    seconds = [b for _, b in wins] + [b for _, b in tied]
    labels, codes = _codes(firsts + seconds)
    first, second = codes[: len(firsts)], codes[len(firsts) :]
    result = np.concatenate([np.ones(len(wins)), np.zeros(len(tied))])
    params, converged = _fit(
        first,
        second,
        result,
        np.zeros((result.size, 0)),
        np.ones((1, result.size)),
        n_systems=len(labels),
        prior=prior,
        ties=bool(tied),
    )
    theta = params[0, : len(labels)]
    theta = theta - theta.mean()
    return BradleyTerryFit(
        strengths={key: float(v) for key, v in zip(labels, theta, strict=True)},
        tie_log_nu=float(params[0, -1]) if tied else None,
        covariates=(),
        estimable=_strongly_connected(first, second, result, len(labels)),
        converged=bool(converged[0]),
    )


def bradley_terry(
    pairs: Iterable[tuple[K, K]],
    *,
    ties: Iterable[tuple[K, K]] | None = None,
    raters: Sequence[Hashable] | None = None,
    sources: Sequence[Hashable] | None = None,
    lengths: Sequence[tuple[float, float]] | None = None,
    confidence: float = 0.95,
    prior: float = DEFAULT_PRIOR,
    seed: int = 0,
) -> dict[K, dict[str, Any]]:
    """Each system's log-strength centred on zero, with its interval, from ``(winner, loser)``
    pairs and optional tie pairs (Davidson).

    ``raters`` and ``sources`` (one id per comparison: the ``pairs`` first, then the ``ties``) let
    the intervals account for both (pairwise_ranking's two-way cluster variance); without them each
    comparison is its own cluster. ``lengths`` (the winner's and the loser's length per comparison,
    in the same order) gives the length-controlled strengths instead (the arena literature's style
    control).

    Returns ``{key: {"strength", "low", "high", "se", "rank", "win_rate", "win_rate_low",
    "win_rate_high", "p_best", "p_vs_next", "reason", "support", "win_rate_support", "wins",
    "losses", "ties", "estimable"}}`` (pairwise_ranking: the intervals are None, with ``reason``,
    below the minimum of raters and sources; each comparison its own rater and source without
    ``raters`` and ``sources``).
    """
    wins = list(pairs)
    tied = list(ties or ())
    fit = bradley_terry_model(wins, ties=tied, prior=prior)  # validates the pairs
    total = len(wins) + len(tied)
    for name, ids in (("raters", raters), ("sources", sources), ("lengths", lengths)):
        if ids is not None and len(ids) != total:
            raise ValueError(f"{name}: {len(ids)} given for {total} comparisons (pairs, then ties)")
    comparisons = [
        Comparison(
            rater=raters[i] if raters is not None else i,
            source=sources[i] if sources is not None else i,
            left=left,
            right=right,
            outcome="left" if i < len(wins) else "tie",
            left_length=lengths[i][0] if lengths is not None else None,
            right_length=lengths[i][1] if lengths is not None else None,
        )
        for i, (left, right) in enumerate([*wins, *tied])
    ]
    ranking = pairwise_ranking(
        comparisons, confidence=confidence, prior=prior, length_control=lengths is not None, seed=seed
    )
    out: dict[K, dict[str, Any]] = {}
    for record in ranking["systems"]:
        key = record["system"]
        out[key] = {
            name: record[name]
            for name in (
                "strength",
                "low",
                "high",
                "se",
                "rank",
                "win_rate",
                "win_rate_low",
                "win_rate_high",
                "p_best",
                "p_vs_next",
                "reason",
                "support",
                "win_rate_support",
            )
        } | {
            "wins": sum(1 for w, _ in wins if w == key),
            "losses": sum(1 for _, loser in wins if loser == key),
            "ties": sum(1 for pair in tied if key in pair),
            "estimable": fit.estimable,
        }
    return out


# --- ranking with intervals ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    systems: list[Hashable]
    first: NDArray[np.intp]
    second: NDArray[np.intp]
    result: FloatArray
    neither: FloatArray
    covariates: FloatArray
    raters: NDArray[np.intp]
    sources: NDArray[np.intp]
    n_raters: int
    n_sources: int


def _prepare(comparisons: Sequence[Comparison], *, length_control: bool) -> _Prepared:
    if not comparisons:
        raise ValueError("pairwise_ranking needs at least one comparison")
    for row, c in enumerate(comparisons):
        if c.outcome not in OUTCOMES:
            raise ValueError(f"comparison {row}: outcome must be one of {OUTCOMES}, got {c.outcome!r}")
        if c.left == c.right:
            raise ValueError(f"comparison {row}: left and right are the same system {c.left!r}")
        if length_control and (
            c.left_length is None or c.right_length is None or c.left_length + c.right_length <= 0
        ):
            raise ValueError(f"comparison {row}: the length-controlled ranking needs both lengths (> 0)")
    systems, codes = _codes([c.left for c in comparisons] + [c.right for c in comparisons])
    n = len(comparisons)
    result = np.array([{"left": 1.0, "right": -1.0}.get(c.outcome, 0.0) for c in comparisons])
    neither = np.array([c.outcome == "neither" for c in comparisons], dtype=np.float64)
    if length_control:
        # Arena style control: the normalised length difference, standardised over the data.
        diff = np.array(
            [
                (float(c.left_length or 0) - float(c.right_length or 0))
                / (float(c.left_length or 0) + float(c.right_length or 0))
                for c in comparisons
            ]
        )
        sd = diff.std()
        covariates = (diff / sd if sd > 0 else diff)[:, None]
    else:
        covariates = np.zeros((n, 0))
    raters, rater_codes = _codes([c.rater for c in comparisons])
    sources, source_codes = _codes([c.source for c in comparisons])
    return _Prepared(
        systems=systems,
        first=codes[:n],
        second=codes[n:],
        result=result,
        neither=neither,
        covariates=covariates,
        raters=rater_codes,
        sources=source_codes,
        n_raters=len(raters),
        n_sources=len(sources),
    )


def _statistics(data: _Prepared, weights: FloatArray, prior: float) -> tuple[FloatArray, FloatArray]:
    """Centred strengths (B, n) and win rates (B, n) for each row of comparison weights."""
    n = len(data.systems)
    ties = bool((data.result == 0).any())
    if data.covariates.shape[1] == 0:
        # Rows that differ only in their weight collapse into one (first, second, result) group.
        key = (data.first * n + data.second) * 3 + (data.result + 1).astype(np.intp)
        groups, inverse = np.unique(key, return_inverse=True)
        collapse = sparse.csr_matrix((np.ones(key.size), (np.arange(key.size), inverse)))
        grouped = np.asarray(collapse.T @ weights.T).T
        result = (groups % 3 - 1).astype(np.float64)
        pair = groups // 3
        params, _ = _fit(
            pair // n,
            pair % n,
            result,
            np.zeros((groups.size, 0)),
            grouped,
            n_systems=n,
            prior=prior,
            ties=ties,
        )
    else:
        params, _ = _fit(
            data.first,
            data.second,
            data.result,
            data.covariates,
            weights,
            n_systems=n,
            prior=prior,
            ties=ties,
        )
    theta = params[:, :n]
    theta = theta - theta.mean(axis=1, keepdims=True)
    score_first = (data.result + 1) / 2  # 1 win, 0.5 tie or neither, 0 loss
    won = np.zeros((data.first.size, n))
    played = np.zeros((data.first.size, n))
    rows = np.arange(data.first.size)
    won[rows, data.first] = score_first
    won[rows, data.second] = 1 - score_first
    played[rows, data.first] = 1
    played[rows, data.second] = 1
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = (weights @ won) / (weights @ played)
    return theta, rates


def _cluster_jackknife(
    data: _Prepared, params: FloatArray, prior: float, codes: NDArray[np.intp], n_clusters: int
) -> tuple[FloatArray, FloatArray]:
    """Delete-one-cluster jackknife variances (CR3, MacKinnon, Nielsen & Webb 2023, without its
    (G − 1)/G factor: pairwise_ranking says why) of the centred strengths (n, n) and of the win
    rates (n,), for one way of clustering (`codes`, one per comparison).

    Strengths: the one-step jackknife. Leaving cluster g out of the penalised log-likelihood, whose
    gradient is zero at the full fit, moves the parameters by ``(H − H_g)⁻¹ (−S_g)`` (one Newton
    step: H the negative Hessian of the whole fit, H_g and S_g cluster g's part of it and of the
    gradient), which the test checks against refitting without each cluster. Win rates are ratios
    of sums and are recomputed exactly. Both are the sums of squares of the leave-one-out values
    around their mean (the jackknife variance without its (G − 1)/G factor).
    """
    n = len(data.systems)
    k = data.covariates.shape[1]
    ties = bool((data.result == 0).any())
    design = _design(data.first, data.second, data.covariates, n)
    m, p = design.shape[0], params.shape[1]
    terms = _terms(
        params, design, data.result, (data.result == 0).astype(np.float64), n_params=n + k, ties=ties
    )
    grad = np.zeros((m, p))
    grad[:, : n + k] = terms.grad_eta[0][:, None] * design
    hess = np.zeros((m, p, p))
    hess[:, : n + k, : n + k] = terms.hess_eta[0][:, None, None] * design[:, :, None] * design[:, None, :]
    if ties:
        grad[:, -1] = terms.grad_tie[0]
        hess[:, -1, : n + k] = terms.hess_cross[0][:, None] * design
        hess[:, : n + k, -1] = terms.hess_cross[0][:, None] * design
        hess[:, -1, -1] = terms.hess_tie[0]
    member = sparse.csr_matrix((np.ones(m), (codes, np.arange(m))), shape=(n_clusters, m))
    cluster_grad = np.asarray(member @ grad)
    cluster_hess = np.asarray(member @ hess.reshape(m, p * p)).reshape(n_clusters, p, p)
    whole = hess.sum(axis=0) + _penalty(p, n, prior)
    left_out = whole[None] - cluster_hess + 1e-12 * np.eye(p)
    moved = np.linalg.solve(left_out, -cluster_grad[..., None])[..., 0][:, :n]
    moved -= moved.mean(axis=1, keepdims=True)
    spread = moved - moved.mean(axis=0)
    strength_var = spread.T @ spread

    score_first = (data.result + 1) / 2  # 1 win, 0.5 tie or neither, 0 loss
    won = np.zeros((m, n))
    played = np.zeros((m, n))
    rows = np.arange(m)
    won[rows, data.first] = score_first
    won[rows, data.second] = 1 - score_first
    played[rows, data.first] = 1
    played[rows, data.second] = 1
    cluster_won, cluster_played = np.asarray(member @ won), np.asarray(member @ played)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = (won.sum(axis=0) - cluster_won) / (played.sum(axis=0) - cluster_played)
    # A cluster holding all of a system's comparisons leaves no rate: that system's jackknife uses
    # the clusters that leave one (nanvar), its variance unknown (nan) when none does.
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = np.isfinite(rates).sum(axis=0)
        rate_var = np.where(kept > 1, np.nansum((rates - np.nanmean(rates, axis=0)) ** 2, axis=0), np.nan)
    return strength_var, rate_var


def two_way_df(n_raters: int, n_sources: int) -> float:
    """Degrees of freedom of the t reference for a two-way cluster variance: the variance sums a
    rater and a source component, each estimated from its own clusters, so (as Welch–Satterthwaite
    counts a sum of two variance estimates) its relative variance is about 2/(R − 1) + 2/(S − 1),
    and df = 1 / (1/(R − 1) + 1/(S − 1)). With one way of clustering trivial (every comparison its
    own rater) this tends to the other way's G − 1."""
    parts = [1 / (g - 1) for g in (n_raters, n_sources) if g > 1]
    return 1 / sum(parts) if parts else 1.0


def pairwise_ranking(
    comparisons: Sequence[Comparison],
    *,
    seed: int = 0,
    confidence: float = 0.95,
    prior: float = DEFAULT_PRIOR,
    length_control: bool = False,
    n_best_draws: int = 10000,
) -> dict[str, Any]:
    """Rank the systems of ``comparisons`` with intervals that account for raters and sources.

    Strengths: the Davidson/Bradley–Terry fit, "neither acceptable" counted as a tie (neither text
    is preferred; its rate is reported separately as ``neither_rate``). With ``length_control`` the
    standardised normalised length difference ``(left − right)/(left + right)`` enters as a
    covariate and the strengths are net of it (``length_coefficient``).

    Uncertainty: the two-way cluster variance of Cameron, Gelbach & Miller (2011),
    ``V_rater + V_source − V_cell``, each term a delete-one-cluster jackknife (raters, sources,
    rater × source cells; negative eigenvalues of the sum clipped to 0) taken as the sum of squares
    of the leave-one-out estimates around their mean, i.e. CR3 without its (G − 1)/G factor.
    Intervals are ``estimate ± t · SE`` with ``two_way_df(raters, sources)`` degrees of freedom.
    Why (measured in docs/analysis/pairwise.md): with the factor the intervals covered 94.4 % at
    12 raters × 25 sources (93.8 % with rater and source effects), and in windows of 200 studies
    as little as 92.3 %: the two-way variance's noise comes from mean-zero cross-products of the
    scores, whose lower tail is heavier than the scaled chi-square behind the t reference, so a
    small variance estimate is likelier than the df say. Without the factor they cover 95–96 %.
    Below MIN_PARTICIPANTS raters or MIN_SOURCES sources there is no interval (``reason``:
    TOO_FEW), as for the means. The p-value of each system against the next-ranked one is the
    two-sided t-test of their difference; ``p_best`` is the share of draws from N(estimate, V)
    (``seed``) in which the system ranks first. Win rates (ties and "neither" count half; support
    [0, 1]) get the Wilson interval with the effective size ``w (1 − w) / Var`` and the same t
    quantile (measures.stats.crossed.bounded_mean_interval), so they never leave [0, 1].

    Returns ``{"systems": [per-system records ranked by strength], "tie_log_nu", "length_coefficient",
    "estimable", "n_comparisons", "n_raters", "n_sources", "df"}``.
    """
    data = _prepare(comparisons, length_control=length_control)
    n = len(data.systems)
    m = data.first.size
    ones = np.ones((1, m))
    ties = bool((data.result == 0).any())
    full, converged = _fit(
        data.first, data.second, data.result, data.covariates, ones, n_systems=n, prior=prior, ties=ties
    )
    theta, rates = _statistics(data, ones, prior)
    cells, cell_codes = _codes(list(zip(data.raters.tolist(), data.sources.tolist(), strict=True)))
    parts = [
        _cluster_jackknife(data, full, prior, codes, count) if count > 1 else (np.zeros((n, n)), np.zeros(n))
        for codes, count in (
            (data.raters, data.n_raters),
            (data.sources, data.n_sources),
            (cell_codes, len(cells)),
        )
    ]
    cov = parts[0][0] + parts[1][0] - parts[2][0]
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    cov = (vectors * np.clip(values, 0, None)) @ vectors.T
    rate_var = np.clip(parts[0][1] + parts[1][1] - parts[2][1], 0, None)
    df = two_way_df(data.n_raters, data.n_sources)
    t = float(stats.t.ppf(0.5 + confidence / 2, df))
    se = np.sqrt(np.diag(cov))
    rng = np.random.default_rng(seed)
    draws = rng.multivariate_normal(theta[0], cov, size=n_best_draws, method="eigh")
    p_best = np.bincount(draws.argmax(axis=1), minlength=n) / n_best_draws
    order = np.argsort(-theta[0], kind="stable")
    neither_counts = np.zeros(n)
    played = np.zeros(n)
    np.add.at(neither_counts, data.first, data.neither)
    np.add.at(neither_counts, data.second, data.neither)
    np.add.at(played, data.first, 1.0)
    np.add.at(played, data.second, 1.0)
    # Below the means' minimum of raters or sources the cluster variance has one or two df: no
    # interval (the strengths' reached ±100 with 8 comparisons by 2 raters).
    enough = data.n_raters >= MIN_PARTICIPANTS and data.n_sources >= MIN_SOURCES
    records: list[dict[str, Any]] = []
    for rank, i in enumerate(order, start=1):
        strength, rate = float(theta[0, i]), float(rates[0, i])
        low = high = rate_low = rate_high = None
        if enough:
            low, high = REAL.bound(strength, strength - t * se[i], strength + t * se[i])
            if np.isfinite(rate_var[i]):
                rate_low, rate_high = PROPORTION.bound(
                    rate,
                    *bounded_mean_interval(
                        rate, float(rate_var[i]), df, int(played[i]), confidence=confidence
                    ),
                )
        record: dict[str, Any] = {
            "system": data.systems[i],
            "rank": rank,
            "strength": strength,
            "se": float(se[i]),
            "low": low,
            "high": high,
            "df": df,
            "win_rate": rate,
            "win_rate_low": rate_low,
            "win_rate_high": rate_high,
            "neither_rate": float(neither_counts[i] / played[i]),
            "comparisons": int(played[i]),
            "p_best": float(p_best[i]),
            "p_vs_next": None,
            "reason": None if enough else TOO_FEW,
            "support": REAL.record(),
            "win_rate_support": PROPORTION.record(),
        }
        if rank < n:
            j = order[rank]
            diff_var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
            diff = theta[0, i] - theta[0, j]
            record["p_vs_next"] = (
                float(2 * stats.t.sf(abs(diff) / np.sqrt(diff_var), df)) if diff_var > 0 else None
            )
        records.append(record)
    return {
        "systems": records,
        "tie_log_nu": float(full[0, n + data.covariates.shape[1]]) if ties else None,
        "length_coefficient": float(full[0, n]) if length_control else None,
        "estimable": _strongly_connected(data.first, data.second, data.result, n),
        "converged": bool(converged[0]),
        "n_comparisons": m,
        "n_raters": data.n_raters,
        "n_sources": data.n_sources,
        "df": df,
    }


# --- lay most/least preferences -----------------------------------------------------------------


def preferences_to_pairs(
    most: Iterable[K],
    least: Iterable[K],
    shown: Iterable[K],
    *,
    rater: Hashable = None,
    source: Hashable = None,
) -> list[Comparison]:
    """Derived pairwise comparisons from one best–worst (most/least preferred) answer.

    As in best–worst scaling (Louviere, Flynn & Marley 2015), the most-preferred texts beat every
    other text shown, and every text shown beats the least-preferred ones; texts marked neither are
    not compared with each other, nor are two texts in the same set. Each pair is a ``Comparison``
    with the winner on the left, outcome ``left`` and ``derived=True``. A text in both ``most``
    and ``least`` is refused here; the study's reader (surveys.compare_two.selectors.
    derived_comparisons) takes it out of both first, so a text ticked both most and least liked
    counts as neither: it beats the least-preferred and loses to the most-preferred texts. The
    pairs of one answer are not independent judgements; the rater and source clustering of
    ``pairwise_ranking``'s variance keeps them together.
    """
    shown_list = list(dict.fromkeys(shown))
    most_set, least_set = list(dict.fromkeys(most)), list(dict.fromkeys(least))
    shown_set = set(shown_list)
    for name, chosen in (("most", most_set), ("least", least_set)):
        missing = [k for k in chosen if k not in shown_set]
        if missing:
            raise ValueError(f"{name}: {missing!r} were not shown")
    both = set(most_set) & set(least_set)
    if both:
        raise ValueError(f"{sorted(map(repr, both))} marked both most and least preferred")
    pairs: list[tuple[K, K]] = [(w, loser) for w in most_set for loser in shown_list if loser not in most_set]
    middle = [k for k in shown_list if k not in most_set and k not in least_set]
    pairs += [(w, loser) for w in middle for loser in least_set]
    return [Comparison(rater, source, w, loser, "left", derived=True) for w, loser in pairs]


# --- what a study's analysis reports ------------------------------------------------------------


def pairwise_summary(
    asked: Sequence[Comparison],
    derived: Sequence[Comparison],
    *,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | None:
    """The rankings a study's analysis shows: from the pairwise answers (``asked``), the same with
    length control when every asked comparison has both lengths, and from the lay most/least
    preferences (``derived``, preferences_to_pairs), each a ``pairwise_ranking`` or None when
    there is nothing to rank. None when both are empty."""
    if not asked and not derived:
        return None
    with_lengths = bool(asked) and all(
        c.left_length is not None and c.right_length is not None and c.left_length + c.right_length > 0
        for c in asked
    )
    return {
        "asked": pairwise_ranking(asked, confidence=confidence, seed=seed) if asked else None,
        "length_controlled": (
            pairwise_ranking(asked, confidence=confidence, seed=seed, length_control=True)
            if with_lengths
            else None
        ),
        "derived": pairwise_ranking(derived, confidence=confidence, seed=seed) if derived else None,
    }
