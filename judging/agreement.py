"""How far a judge agrees with the humans of a study. Pure computation: pandas in, plain dicts out.

Inputs (``AgreementInputs``, built from the database by judging.agreement_inputs):

* ``human`` — the radiologists' ratings, long: rater, unit, source, field, value. A unit is a
  simplification (source × system) for the five rubric aspects — a text two systems share was rated
  once and counts for both, on both sides — and a source for ``severity`` and ``original_simplicity``;
* ``judge`` — the judge's answers (medians of its samples), long: unit, source, field, value;
* ``text_systems`` — the system of each rubric unit (unit, system);
* ``lay_judge`` / ``lay_humans`` — severity guesses against the source's reference severity:
  source, phase (original | assisted), system (None in the original phase), guess, reference; an
  assisted answer on a text several systems share has one row per system, as in Table 1.

Per field, the judge is compared with each radiologist and, with two or more, with the radiologists'
mean: Krippendorff's α (ordinal and interval; the ``krippendorff`` package via
measures.stats.agreement), quadratic-weighted Cohen's κ (scikit-learn's formula; values on the half-point
grid of the scale, as a median of an even number of samples or a mean of two raters can fall
between levels), ICC(2,1) (two-way random, absolute agreement, single rater; Shrout & Fleiss),
Spearman's ρ and Kendall's τ-b (scipy). Each has a percentile bootstrap interval that resamples
*sources* (a source's texts move together, since they share the sentence).

System ranking: per rubric aspect, the systems' mean scores by the judge and by the radiologists,
Kendall's τ-b between them, and how many system pairs the judge orders as the humans do.

Lay judge: severity MSE and accuracy before (original only) and after (with a simplification) beside
the laypeople's, overall and per system (measures.stats.severity).

Human ceiling: with two or more radiologists, their own agreement per field (α, mean pairwise κ,
ICC(2,1)), the level a judge cannot be expected to exceed.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judging.agreement_terms import FIELDS, RUBRIC_FIELDS, SCALE, STATISTICS
from measures.stats.agreement import cohen_kappa_pairwise, icc, krippendorff_alpha, two_way_mean_squares
from measures.stats.intervals import percentile_interval
from measures.stats.severity import mse_and_accuracy
from measures.stats.support import CORRELATION, Support

HALF_POINT_CODES = list(range(2 * SCALE[0], 2 * SCALE[1] + 1))  # 1, 1.5, …, 5 as 2, 3, …, 10


@dataclass
class AgreementInputs:
    human: pd.DataFrame
    judge: pd.DataFrame
    text_systems: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["unit", "system"]))
    lay_judge: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["source", "phase", "system", "guess", "reference"])
    )
    lay_humans: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["source", "phase", "system", "guess", "reference"])
    )


# --- the statistics on two aligned vectors ---------------------------------------------------------------


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def alpha(judge: np.ndarray, human: np.ndarray, level: str) -> float:
    data = np.vstack([judge, human]).astype(np.float64)
    domain = None
    if level == "ordinal":
        # Every level of the scale counts in the rank distances, used or not, plus in-between values.
        domain = sorted(set(range(SCALE[0], SCALE[1] + 1)) | set(np.unique(data[~np.isnan(data)]).tolist()))
    return krippendorff_alpha(data, level, value_domain=domain)


def kappa_quadratic(judge: np.ndarray, human: np.ndarray) -> float:
    """Quadratic-weighted Cohen's κ on the half-point grid: values rounded to the nearest half point
    and coded as whole half points 2…10. The closed form of scikit-learn's cohen_kappa_score
    (weights="quadratic", labels = the whole grid), in numpy because the bootstrap calls it
    thousands of times and scikit-learn's input checks cost ~50× the arithmetic; the tests hold
    the two equal."""
    a = np.rint(np.asarray(judge, dtype=np.float64) * 2).astype(np.int64) - HALF_POINT_CODES[0]
    b = np.rint(np.asarray(human, dtype=np.float64) * 2).astype(np.int64) - HALF_POINT_CODES[0]
    k = len(HALF_POINT_CODES)
    if a.size == 0 or a.min() < 0 or b.min() < 0 or a.max() >= k or b.max() >= k:
        return math.nan
    observed = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(np.float64)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / a.size
    levels = np.arange(k)
    weights = (levels[:, None] - levels[None, :]) ** 2
    denominator = (weights * expected).sum()
    return float(1 - (weights * observed).sum() / denominator) if denominator > 0 else math.nan


def icc2_1(judge: np.ndarray, human: np.ndarray) -> float:
    """ICC(2,1) of two raters over n units (the two-way ANOVA of Shrout & Fleiss, vectorised)."""
    x = np.column_stack([judge, human]).astype(np.float64)
    n, k = x.shape
    if n < 2:
        return math.nan
    bms, jms, ems = two_way_mean_squares(x)
    denominator = bms + (k - 1) * ems + k * (jms - ems) / n
    return float((bms - ems) / denominator) if denominator > 0 else math.nan


def spearman(judge: np.ndarray, human: np.ndarray) -> float:
    return float(stats.spearmanr(judge, human).statistic)


def kendall(judge: np.ndarray, human: np.ndarray) -> float:
    return float(stats.kendalltau(judge, human).statistic)


STATISTIC_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "alpha_ordinal": lambda j, h: alpha(j, h, "ordinal"),
    "alpha_interval": lambda j, h: alpha(j, h, "interval"),
    "kappa_quadratic": kappa_quadratic,
    "icc": icc2_1,
    "spearman": spearman,
    "kendall": kendall,
}


# Each statistic's support (measures/stats/support.py): α and the ICC are at most 1 with no fixed
# lower end; weighted κ and the rank correlations lie in [−1, 1].
STATISTIC_SUPPORTS: dict[str, Support] = {
    "alpha_ordinal": Support(-math.inf, 1.0),
    "alpha_interval": Support(-math.inf, 1.0),
    "kappa_quadratic": CORRELATION,
    "icc": Support(-math.inf, 1.0),
    "spearman": CORRELATION,
    "kendall": CORRELATION,
}


def paired_agreement(
    judge: Sequence[float],
    human: Sequence[float],
    sources: Sequence[Any],
    *,
    n_resamples: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Every statistic of STATISTICS on the aligned vectors, with an interval from resampling the
    distinct `sources` with replacement (all units of a drawn source come along), kept inside the
    statistic's support and around its estimate (STATISTIC_SUPPORTS)."""
    j, h = np.asarray(judge, dtype=np.float64), np.asarray(human, dtype=np.float64)
    source_codes, source_index = np.unique(np.asarray(sources, dtype=object).astype(str), return_inverse=True)
    units_of = [np.flatnonzero(source_index == s) for s in range(source_codes.size)]
    out: dict[str, Any] = {"n": int(j.size), "n_sources": int(source_codes.size)}
    rng = np.random.default_rng(seed)
    draws = [
        np.concatenate([units_of[s] for s in rng.integers(0, source_codes.size, source_codes.size)])
        for _ in range(n_resamples if source_codes.size >= 2 else 0)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, function in STATISTIC_FUNCTIONS.items():
            estimate = _finite(function(j, h)) if j.size >= 2 else None
            low = high = None
            if estimate is not None and draws:
                replicates = np.array([function(j[idx], h[idx]) for idx in draws], dtype=np.float64)
                low, high = percentile_interval(replicates, confidence)
            support = STATISTIC_SUPPORTS[name]
            low, high = support.bound(estimate, low, high)
            out[name] = {"estimate": estimate, "low": low, "high": high, "support": support.record()}
    return out


# --- per field: judge vs each radiologist and vs their mean ----------------------------------------------


def _aligned(judge: pd.DataFrame, human: pd.Series) -> pd.DataFrame:
    """judge (unit, source, value) joined with human values indexed by unit."""
    frame = judge.set_index("unit")[["source", "value"]].join(human.rename("human"), how="inner")
    return frame.dropna(subset=["value", "human"])


def field_agreement(data: AgreementInputs, *, n_resamples: int = 500, seed: int = 0) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    raters = sorted(data.human["rater"].astype(str).unique()) if len(data.human) else []
    for name in FIELDS:
        judge = data.judge[data.judge["field"] == name]
        human = data.human[data.human["field"] == name]
        if judge.empty or human.empty:
            continue
        comparisons: list[tuple[str, pd.Series]] = [
            (f"radiologist {rater}", human[human["rater"].astype(str) == rater].set_index("unit")["value"])
            for rater in raters
        ]
        if len(raters) >= 2:
            comparisons.append(("radiologists' mean", human.groupby("unit")["value"].mean()))
        for label, values in comparisons:
            frame = _aligned(judge, values)
            if frame.empty:
                continue
            result = paired_agreement(
                frame["value"].to_numpy(),
                frame["human"].to_numpy(),
                frame["source"].to_numpy(),
                n_resamples=n_resamples,
                seed=seed,
            )
            rows.append(
                {"field": name, "comparison": label, "is_mean": label == "radiologists' mean", **result}
            )
    return rows


def human_ceiling(data: AgreementInputs) -> list[dict[str, Any]]:
    """The radiologists' agreement among themselves per field (empty with fewer than two)."""
    rows: list[dict[str, Any]] = []
    if data.human.empty or data.human["rater"].nunique() < 2:
        return rows
    with warnings.catch_warnings():
        # A constant field (everyone rated 5) makes ICC and κ 0/0: reported as undefined.
        warnings.simplefilter("ignore")
        for name in FIELDS:
            row = _ceiling_row(data.human[data.human["field"] == name], name)
            if row is not None:
                rows.append(row)
    return rows


def _ceiling_row(human: pd.DataFrame, name: str) -> dict[str, Any] | None:
    if human["rater"].nunique() < 2:
        return None
    grid = human.pivot_table(index="rater", columns="unit", values="value", aggfunc="first")
    matrix = grid.to_numpy(dtype=np.float64)
    ratings = {rater: grid.loc[rater].dropna().to_dict() for rater in grid.index}
    try:
        icc_value = icc(human.rename(columns={"value": "score"}), unit="unit", rater="rater").icc2_1
    except ValueError:
        icc_value = math.nan
    return {
        "field": name,
        "n_raters": int(grid.shape[0]),
        "n_units": int(grid.shape[1]),
        "alpha_ordinal": _finite(krippendorff_alpha(matrix, "ordinal", value_domain=list(range(1, 6)))),
        "alpha_interval": _finite(krippendorff_alpha(matrix, "interval")),
        "kappa_quadratic": cohen_kappa_pairwise(ratings, "quadratic", labels=[1, 2, 3, 4, 5]).mean,
        "icc": _finite(icc_value),
    }


# --- system ranking ----------------------------------------------------------------------------------------


def system_ranking(data: AgreementInputs) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if data.text_systems.empty:
        return rows
    for name in RUBRIC_FIELDS:
        judge = data.judge[data.judge["field"] == name][["unit", "value"]].merge(data.text_systems, on="unit")
        human = data.human[data.human["field"] == name][["unit", "value"]].merge(data.text_systems, on="unit")
        judge_means = judge.groupby("system")["value"].mean()
        human_means = human.groupby("system")["value"].mean()
        systems = sorted(set(judge_means.index) & set(human_means.index))
        if len(systems) < 2:
            continue
        j = judge_means.loc[systems].to_numpy()
        h = human_means.loc[systems].to_numpy()
        pairs = list(itertools.combinations(range(len(systems)), 2))
        same = sum(1 for a, b in pairs if np.sign(j[a] - j[b]) == np.sign(h[a] - h[b]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tau = _finite(stats.kendalltau(j, h).statistic)
        rows.append(
            {
                "field": name,
                "systems": [
                    {"system": s, "judge_mean": float(j[i]), "human_mean": float(h[i])}
                    for i, s in enumerate(systems)
                ],
                "kendall_tau": tau,
                "pairs_same": same,
                "pairs_total": len(pairs),
            }
        )
    return rows


# --- lay judge ---------------------------------------------------------------------------------------------


def _severity_block(frame: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for phase in ("original", "assisted"):
        rows = frame[frame["phase"] == phase]
        mse, accuracy, n = mse_and_accuracy(list(rows["guess"]), list(rows["reference"]))
        by_system = {}
        if phase == "assisted":
            for system, group in rows.groupby("system"):
                s_mse, s_accuracy, s_n = mse_and_accuracy(list(group["guess"]), list(group["reference"]))
                by_system[str(system)] = {"mse": s_mse, "accuracy": s_accuracy, "n": s_n}
        out[phase] = {"mse": mse, "accuracy": accuracy, "n": n, "by_system": by_system}
    return out


def lay_severity(data: AgreementInputs) -> dict[str, Any]:
    if data.lay_judge.empty:
        return {}
    return {"judge": _severity_block(data.lay_judge), "laypeople": _severity_block(data.lay_humans)}


# --- everything, and the leaderboard summary ------------------------------------------------


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """One line per judge for the leaderboard: the rubric aspects' mean of each statistic against the
    radiologists' mean (or the single radiologist), the mean system-ranking τ, lay accuracy after."""
    rows = [r for r in result.get("per_field", []) if r["field"] in RUBRIC_FIELDS]
    several = any(r["is_mean"] for r in rows)
    rows = [r for r in rows if r["is_mean"] == several]
    out: dict[str, Any] = {
        "against": "radiologists' mean" if several else "the radiologist",
        "n": sum(r["n"] for r in rows),
    }
    for name in STATISTICS:
        values = [r[name]["estimate"] for r in rows if r[name]["estimate"] is not None]
        out[name] = float(np.mean(values)) if values else None
    taus = [r["kendall_tau"] for r in result.get("system_ranking", []) if r["kendall_tau"] is not None]
    out["ranking_tau"] = float(np.mean(taus)) if taus else None
    out["pairs_same"] = sum(r["pairs_same"] for r in result.get("system_ranking", []))
    out["pairs_total"] = sum(r["pairs_total"] for r in result.get("system_ranking", []))
    lay = result.get("lay_severity") or {}
    out["lay_accuracy_after"] = (lay.get("judge") or {}).get("assisted", {}).get("accuracy")
    return out


def judge_agreement(data: AgreementInputs, *, n_resamples: int = 500, seed: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = {
        "per_field": field_agreement(data, n_resamples=n_resamples, seed=seed),
        "human_ceiling": human_ceiling(data),
        "system_ranking": system_ranking(data),
        "lay_severity": lay_severity(data),
        "n_radiologists": int(data.human["rater"].nunique()) if len(data.human) else 0,
        "n_judge_answers": int(len(data.judge)),
    }
    result["summary"] = summary(result)
    return result
