"""Style-controlled Bradley–Terry and Davidson rankings: do the systems' strengths survive once the
texts' length and reading grade are accounted for? Django-free.

The model is measures.stats.pairwise's (Davidson 1970 on the log scale; Bradley–Terry without ties),
with named covariates of the pair, each the left text's value minus the right text's:

    eta = theta_left − theta_right + Σ_j beta_j · (z_j,left − z_j,right)

(LMArena's style control; MedArena's check that clinician rankings survive it). Simplified reports
are systematically longer than their originals, so length is the confound to rule out: a positive
``beta_words`` says raters prefer the longer text whatever system wrote it, and the strengths are
then the systems' merit net of it. The conventions are pairwise's: strengths are log-strengths
centred on zero, "neither acceptable" counts as a tie, ties bring Davidson's ``log nu``, and a
weak Gaussian prior on the strengths (``prior``) keeps a system that never wins finite — with
``prior = 0`` (the default here) the fit is the plain maximum-likelihood one, which for
Bradley–Terry is a logistic regression without intercept on the ±1 system columns and the
covariate differences (tests/measures/stats/test_style_bt.py checks it against statsmodels' Logit
on the same design matrix to 1e-6, and Davidson against a written-out likelihood maximised by
scipy).

Intervals are Wald intervals from the observed information (model-based, ``estimate ± z · SE``); a
covariate and a strength are on the log-odds scale, unbounded.

A covariate is **not estimable** when its differences are all zero (every pair's texts equally
long) or it is a combination of the system columns (each system's texts always differ by the
same amount): it is left out of the fit and reported with the reason, never a crash.

Robustness: the most influential comparisons (Cook's distance on the parameters, from the one-step
leave-one-out change of the fit) are dropped — the top ``drop_share`` — and the model refitted; so
is the most influential rater (refitted without each rater in turn). Each reports the ranking it
gives and whether it differs from the full fit's.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse, stats
from scipy.sparse.csgraph import connected_components

from measures.stats.pairwise import DEFAULT_PRIOR, OUTCOMES, Comparison
from measures.stats.support import REAL

FloatArray = NDArray[np.float64]
_MAX_ITERATIONS = 200
_MAX_STEP = 2.0
_TOLERANCE = 1e-12
DROP_SHARE = 0.05


@dataclass(frozen=True)
class StyleFit:
    systems: list[Hashable]
    strengths: FloatArray  # centred log-strengths
    strength_cov: FloatArray
    covariates: list[str]  # the estimable covariates, in the order of `coefficients`
    coefficients: FloatArray
    coefficient_se: FloatArray
    tie_log_nu: float | None
    converged: bool
    log_likelihood: float
    params: FloatArray
    information: FloatArray  # negative Hessian of the penalised log-likelihood at the fit
    design: FloatArray
    result: FloatArray


def _probabilities(eta: FloatArray, log_nu: float | None) -> tuple[FloatArray, FloatArray, FloatArray]:
    nu = 0.0 if log_nu is None else math.exp(log_nu)
    half = np.abs(eta) / 2
    ew, el = np.exp(eta / 2 - half), np.exp(-eta / 2 - half)
    et = nu * np.exp(-half)
    denom = ew + el + et
    return ew / denom, el / denom, et / denom


def _parts(
    params: FloatArray, design: FloatArray, result: FloatArray, ties: bool
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per comparison: its log-likelihood, its gradient (m, p) and its negative Hessian (m, p, p)."""
    q = design.shape[1]
    eta = design @ params[:q]
    pw, pl, pt = _probabilities(eta, float(params[q]) if ties else None)
    is_tie = (result == 0).astype(np.float64)
    won = (result > 0).astype(np.float64)
    lost = (result < 0).astype(np.float64)
    with np.errstate(divide="ignore"):
        loglik = won * np.log(pw) + lost * np.log(pl) + (is_tie * np.log(pt) if ties else 0.0)
    diff = pw - pl
    m, p = design.shape[0], q + (1 if ties else 0)
    grad = np.zeros((m, p))
    grad[:, :q] = ((result - diff) / 2)[:, None] * design
    hess = np.zeros((m, p, p))
    hess[:, :q, :q] = (((pw + pl) - diff**2) / 4)[:, None, None] * design[:, :, None] * design[:, None, :]
    if ties:
        grad[:, q] = is_tie - pt
        cross = (-diff * pt / 2)[:, None] * design
        hess[:, q, :q] = cross
        hess[:, :q, q] = cross
        hess[:, q, q] = pt * (1 - pt)
    return loglik, grad, hess


def _penalty(p: int, n: int, prior: float) -> FloatArray:
    penalty = np.zeros((p, p))
    # prior/2 · Σ theta² ; with no prior the centre is fixed by (Σ theta)² / 2, which the likelihood
    # does not see (pairwise's convention).
    penalty[:n, :n] = prior * np.eye(n) if prior > 0 else np.ones((n, n))
    return penalty


def _newton(
    design: FloatArray, result: FloatArray, weights: FloatArray, *, n: int, prior: float, ties: bool
) -> tuple[FloatArray, bool]:
    p = design.shape[1] + (1 if ties else 0)
    params = np.zeros(p)
    penalty = _penalty(p, n, prior)
    converged = False
    for _ in range(_MAX_ITERATIONS):
        _, grad, hess = _parts(params, design, result, ties)
        g = weights @ grad - penalty @ params
        h = np.einsum("m,mpq->pq", weights, hess) + penalty
        step = np.linalg.solve(h + 1e-12 * np.eye(p), g)
        size = float(np.abs(step).max())
        step *= min(1.0, _MAX_STEP / max(size, 1e-300))
        params = params + step
        if size < _TOLERANCE:
            converged = True
            break
    return params, converged


def _outcome(c: Comparison) -> float:
    return {"left": 1.0, "right": -1.0}.get(c.outcome, 0.0)


def _check(comparisons: Sequence[Comparison], covariates: Mapping[str, Sequence[float]]) -> None:
    if not comparisons:
        raise ValueError("the style-controlled ranking needs at least one comparison")
    for row, c in enumerate(comparisons):
        if c.outcome not in OUTCOMES:
            raise ValueError(f"comparison {row}: outcome must be one of {OUTCOMES}, got {c.outcome!r}")
        if c.left == c.right:
            raise ValueError(f"comparison {row}: left and right are the same system {c.left!r}")
    for name, values in covariates.items():
        if len(values) != len(comparisons):
            raise ValueError(f"covariate {name}: {len(values)} values for {len(comparisons)} comparisons")
        if not all(math.isfinite(float(v)) for v in values):
            raise ValueError(f"covariate {name}: every difference must be a finite number")


def _system_design(comparisons: Sequence[Comparison]) -> tuple[list[Hashable], FloatArray]:
    systems = list(dict.fromkeys([c.left for c in comparisons] + [c.right for c in comparisons]))
    index = {s: i for i, s in enumerate(systems)}
    design = np.zeros((len(comparisons), len(systems)))
    rows = np.arange(len(comparisons))
    design[rows, [index[c.left] for c in comparisons]] += 1.0
    design[rows, [index[c.right] for c in comparisons]] -= 1.0
    return systems, design


def estimable_covariates(
    system_design: FloatArray, covariates: Mapping[str, Sequence[float]]
) -> tuple[list[str], dict[str, str]]:
    """(the covariates that can be estimated, in order; {name: why not} for the others)."""
    kept: list[str] = []
    reasons: dict[str, str] = {}
    base = system_design
    rank = np.linalg.matrix_rank(base)
    for name, values in covariates.items():
        column = np.asarray(values, dtype=np.float64)
        if not np.any(column != 0):
            reasons[name] = (
                "not estimable: every compared pair has the same value (no difference to learn from)"
            )
            continue
        widened = np.column_stack([base, column])
        new_rank = np.linalg.matrix_rank(widened)
        if new_rank <= rank:
            reasons[name] = "not estimable: its differences are a combination of the systems' own (collinear)"
            continue
        base, rank = widened, new_rank
        kept.append(name)
    return kept, reasons


def style_fit(
    comparisons: Sequence[Comparison],
    covariates: Mapping[str, Sequence[float]] | None = None,
    *,
    prior: float = 0.0,
    weights: Sequence[float] | None = None,
) -> StyleFit:
    """The maximum-likelihood (or, with ``prior``, penalised) fit with the estimable covariates."""
    covariates = dict(covariates or {})
    _check(comparisons, covariates)
    if prior < 0:
        raise ValueError("prior must be >= 0")
    systems, system_design = _system_design(comparisons)
    kept, _ = estimable_covariates(system_design, covariates)
    n = len(systems)
    design = np.column_stack([system_design, *[np.asarray(covariates[k], dtype=np.float64) for k in kept]])
    result = np.array([_outcome(c) for c in comparisons])
    ties = bool((result == 0).any())
    w = np.ones(len(comparisons)) if weights is None else np.asarray(weights, dtype=np.float64)
    params, converged = _newton(design, result, w, n=n, prior=prior, ties=ties)
    loglik, _, hess = _parts(params, design, result, ties)
    penalty = _penalty(params.size, n, prior)
    information = np.einsum("m,mpq->pq", w, hess) + penalty
    cov = np.linalg.inv(information + 1e-12 * np.eye(params.size))
    centre = np.eye(n) - np.ones((n, n)) / n
    theta = centre @ params[:n]
    strength_cov = centre @ cov[:n, :n] @ centre.T
    k = len(kept)
    return StyleFit(
        systems=systems,
        strengths=theta,
        strength_cov=strength_cov,
        covariates=kept,
        coefficients=params[n : n + k],
        coefficient_se=np.sqrt(np.clip(np.diag(cov)[n : n + k], 0, None)),
        tie_log_nu=float(params[n + k]) if ties else None,
        converged=converged,
        log_likelihood=float(w @ loglik),
        params=params,
        information=information,
        design=design,
        result=result,
    )


def strongly_connected(comparisons: Sequence[Comparison]) -> bool:
    """Whether maximum-likelihood strengths exist (Ford 1957): an edge loser → winner per win, both
    ways for a tie or "neither"."""
    systems, _ = _system_design(comparisons)
    index = {s: i for i, s in enumerate(systems)}
    src, dst = [], []
    for c in comparisons:
        a, b = index[c.left], index[c.right]
        value = _outcome(c)
        if value >= 0:
            src.append(b)
            dst.append(a)
        if value <= 0:
            src.append(a)
            dst.append(b)
    graph = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(len(systems), len(systems)))
    count, _ = connected_components(graph, directed=True, connection="strong")
    return bool(count == 1)


def _ranking(systems: Sequence[Hashable], strengths: FloatArray) -> list[Hashable]:
    return [systems[i] for i in np.argsort(-strengths, kind="stable")]


def _influence(fit: StyleFit) -> FloatArray:
    """Cook's distance of each comparison: the one-step change of the parameters when it is left
    out, ``d_i = (H − H_i)⁻¹ (−g_i)``, measured as ``d_iᵀ H d_i``."""
    ties = fit.tie_log_nu is not None
    _, grad, hess = _parts(fit.params, fit.design, fit.result, ties)
    p = fit.params.size
    left_out = fit.information[None] - hess + 1e-9 * np.eye(p)
    moved = np.linalg.solve(left_out, -grad[..., None])[..., 0]
    distances: FloatArray = np.einsum("mp,pq,mq->m", moved, fit.information, moved)
    return distances


def _robust_record(
    systems: Sequence[Hashable], full: list[Hashable], refit: StyleFit | None, dropped: Any
) -> dict[str, Any]:
    if refit is None:
        return {"dropped": dropped, "ranking": None, "changed": None, "kendall_tau": None}
    order = _ranking(refit.systems, refit.strengths)
    same = [s for s in full if s in order]
    tau = stats.kendalltau([same.index(s) for s in same], [order.index(s) for s in same]).statistic
    return {
        "dropped": dropped,
        "ranking": [str(s) for s in order],
        "changed": order != full,
        "kendall_tau": float(tau) if tau == tau else None,
    }


def robustness(
    comparisons: Sequence[Comparison],
    covariates: Mapping[str, Sequence[float]],
    fit: StyleFit,
    *,
    drop_share: float = DROP_SHARE,
    prior: float = 0.0,
) -> dict[str, Any]:
    """The ranking without the most influential comparisons, and without the most influential
    rater (see the module docstring)."""
    full = _ranking(fit.systems, fit.strengths)
    influence = _influence(fit)
    count = max(1, math.ceil(drop_share * len(comparisons)))
    dropped = set(np.argsort(-influence, kind="stable")[:count].tolist())
    keep = [i for i in range(len(comparisons)) if i not in dropped]
    refit = _refit(comparisons, covariates, keep, prior)
    out = {
        "comparisons": _robust_record(fit.systems, full, refit, count)
        | {"share": drop_share, "rule": "largest Cook's distance (one-step leave-one-out)"}
    }
    raters = list(dict.fromkeys(c.rater for c in comparisons))
    best: tuple[float, Hashable, StyleFit | None] | None = None
    if len(raters) > 1:
        base = fit.params
        for rater in raters:
            kept = [i for i, c in enumerate(comparisons) if c.rater != rater]
            candidate = _refit(comparisons, covariates, kept, prior)
            if candidate is None or candidate.params.size != base.size:
                continue
            delta = candidate.params - base
            distance = float(delta @ fit.information @ delta)
            if best is None or distance > best[0]:
                best = (distance, rater, candidate)
    out["rater"] = (
        _robust_record(fit.systems, full, best[2], str(best[1])) | {"cooks_distance": best[0]}
        if best is not None
        else {"dropped": None, "ranking": None, "changed": None, "kendall_tau": None}
    )
    return out


def _refit(
    comparisons: Sequence[Comparison],
    covariates: Mapping[str, Sequence[float]],
    keep: list[int],
    prior: float,
) -> StyleFit | None:
    subset = [comparisons[i] for i in keep]
    if not subset:
        return None
    systems = {c.left for c in subset} | {c.right for c in subset}
    if len(systems) < len({c.left for c in comparisons} | {c.right for c in comparisons}):
        return None  # a system lost all its comparisons: no ranking of the same systems
    return style_fit(subset, {k: [v[i] for i in keep] for k, v in covariates.items()}, prior=prior)


def style_controlled_ranking(
    comparisons: Sequence[Comparison],
    covariates: Mapping[str, Sequence[float]],
    *,
    labels: Mapping[str, str] | None = None,
    confidence: float = 0.95,
    prior: float | None = None,
    drop_share: float = DROP_SHARE,
) -> dict[str, Any]:
    """The plain fit and the style-controlled fit side by side, each system's strength with its
    Wald interval and rank in both, the covariates' coefficients with intervals (or why they are
    not estimable), and the robustness checks of the style-controlled fit. ``prior`` None: the
    maximum-likelihood fit when it exists (the win graph, ties both ways, is strongly connected),
    else pairwise's weak prior (``estimable`` False)."""
    labels = dict(labels or {})
    if prior is None:
        prior = 0.0 if strongly_connected(comparisons) else DEFAULT_PRIOR
    plain = style_fit(comparisons, {}, prior=prior)
    styled = style_fit(comparisons, covariates, prior=prior)
    _, reasons = estimable_covariates(_system_design(comparisons)[1], covariates)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    plain_rank = {s: r for r, s in enumerate(_ranking(plain.systems, plain.strengths), start=1)}
    se = np.sqrt(np.clip(np.diag(styled.strength_cov), 0, None))
    plain_se = np.sqrt(np.clip(np.diag(plain.strength_cov), 0, None))
    systems = []
    for rank, i in enumerate(np.argsort(-styled.strengths, kind="stable"), start=1):
        key = styled.systems[i]
        j = plain.systems.index(key)
        systems.append(
            {
                "system": key,
                "rank": rank,
                "strength": float(styled.strengths[i]),
                "se": float(se[i]),
                "low": float(styled.strengths[i] - z * se[i]),
                "high": float(styled.strengths[i] + z * se[i]),
                "support": REAL.record(),
                "plain_rank": plain_rank[key],
                "plain_strength": float(plain.strengths[j]),
                "plain_low": float(plain.strengths[j] - z * plain_se[j]),
                "plain_high": float(plain.strengths[j] + z * plain_se[j]),
                "plain_support": REAL.record(),
            }
        )
    coefficients = []
    for name in covariates:
        record: dict[str, Any] = {"name": name, "label": labels.get(name, name)}
        if name in styled.covariates:
            k = styled.covariates.index(name)
            b, s = float(styled.coefficients[k]), float(styled.coefficient_se[k])
            record |= {
                "estimable": True,
                "coefficient": b,
                "se": s,
                "low": b - z * s,
                "high": b + z * s,
                "support": REAL.record(),
                "p_value": float(2 * stats.norm.sf(abs(b) / s)) if s > 0 else None,
                "reason": None,
            }
        else:
            record |= {
                "estimable": False,
                "coefficient": None,
                "se": None,
                "low": None,
                "high": None,
                "support": REAL.record(),
                "p_value": None,
                "reason": reasons.get(name, "not estimable"),
            }
        coefficients.append(record)
    return {
        "model": "davidson" if styled.tie_log_nu is not None else "bradley_terry",
        "systems": systems,
        "covariates": coefficients,
        "tie_log_nu": styled.tie_log_nu,
        "converged": styled.converged and plain.converged,
        "ranking_changed": [s["system"] for s in systems] != _ranking(plain.systems, plain.strengths),
        "prior": prior,
        "estimable": prior == 0.0,
        "n_comparisons": len(comparisons),
        "n_raters": len({c.rater for c in comparisons}),
        "interval": f"{confidence:.0%} Wald intervals from the observed information",
        "robustness": robustness(comparisons, covariates, styled, drop_share=drop_share, prior=prior),
    }
