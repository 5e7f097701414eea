"""Paired comparison of systems over the sources both were judged on (Wilcoxon + Holm)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order: the k-th smallest of m is
    multiplied by m − k + 1, made non-decreasing, capped at 1 (statsmodels' ``multipletests(...,
    method="holm")``, which tests/measures/stats/test_comparisons.py compares with). Not called
    through statsmodels because its Holm path runs ``gc.collect()`` on every call, which costs
    seconds in a process holding a large study's frames."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1)), 1.0)
    result = np.empty_like(adjusted)
    result[order] = adjusted
    return result


def rank_biserial(differences: np.ndarray) -> float | None:
    """Matched-pairs rank-biserial correlation (Kerby 2014): ``(T+ − T−) / (T+ + T−)``.

    Ranks are of |difference| among the non-zero differences (mid-ranks for ties), i.e. the
    same pairs the Wilcoxon "wilcox" zero method keeps. Positive when the first system scores
    higher. ``None`` when every difference is zero.
    """
    d = np.asarray(differences, dtype=np.float64)
    d = d[d != 0]
    if d.size == 0:
        return None
    ranks = stats.rankdata(np.abs(d))
    positive, negative = ranks[d > 0].sum(), ranks[d < 0].sum()
    return float((positive - negative) / (positive + negative))


def paired_system_comparisons(
    values: pd.DataFrame,
    *,
    source: str = "source",
    system: str = "system",
    value: str = "value",
) -> list[dict[str, Any]]:
    """Wilcoxon signed-rank test for every pair of systems, Holm-corrected over the pairs.

    ``values`` is long: one row per (source, system) judgement; several rows for the same
    (source, system) (several raters) are averaged first, so each source counts once per pair.
    Each pair uses the sources where both systems have a value. Records, in the order of
    ``itertools.combinations`` over the systems as they first appear:
    ``{system_a, system_b, n, statistic, p_value, p_holm, effect_size, mean_diff}`` where
    ``mean_diff`` and ``effect_size`` (matched-pairs rank-biserial) are a − b. A pair with no
    non-zero difference has no test (``statistic``/``p_value``/``p_holm`` None) and is left out of
    the Holm family.
    """
    per_source = (
        values[[source, system, value]]
        .dropna(subset=[value])
        .groupby([source, system], sort=False)[value]
        .mean()
        .unstack(system)
    )
    systems = list(pd.unique(values[system]))
    records: list[dict[str, Any]] = []
    for system_a, system_b in itertools.combinations(systems, 2):
        both = per_source[[system_a, system_b]].dropna()
        a = both[system_a].to_numpy(dtype=np.float64)
        b = both[system_b].to_numpy(dtype=np.float64)
        differences = a - b
        statistic = p_value = None
        if np.any(differences != 0):
            result = stats.wilcoxon(a, b)
            statistic, p_value = float(result.statistic), float(result.pvalue)
        records.append(
            {
                "system_a": system_a,
                "system_b": system_b,
                "n": int(differences.size),
                "statistic": statistic,
                "p_value": p_value,
                "p_holm": None,
                "effect_size": rank_biserial(differences),
                "mean_diff": float(differences.mean()) if differences.size else None,
            }
        )
    tested = [r for r in records if r["p_value"] is not None and not math.isnan(r["p_value"])]
    if tested:
        p_holm = holm([r["p_value"] for r in tested])
        for record, adjusted in zip(tested, p_holm, strict=True):
            record["p_holm"] = float(adjusted)
    return records
