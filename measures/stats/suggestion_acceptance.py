"""Do raters check AI suggestions or accept them? Acceptance of true and planted-wrong span
suggestions, and span rates on assisted and unassisted pages. Django-free.

A suggestion's fate is "accepted" (kept as suggested), "edited" (kept with its span, category or
severity changed), "deleted", or "pending" (left undecided; not counted). A suggestion counts as
**kept** when accepted or edited: the rater left a mark there. For true (judge) and planted
suggestions, per rater and overall: the share kept and the share accepted unchanged, each with a
Wilson score interval (scipy's binomtest; inside [0, 1]). A good rater keeps true suggestions and
deletes planted ones; a planted suggestion kept is an error the rater took over from the model.

Span rates: the mean number of marks per page on assisted pages and on unassisted ones (a team can
randomise assistance per page), each with a percentile bootstrap interval over pages (≥ 0, as a mean
of counts is), and their difference with its own.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from measures.stats.intervals import percentile_interval

FATES = ("accepted", "edited", "deleted", "pending")
ORIGINS = ("judge", "planted")


@dataclass(frozen=True)
class SuggestionFate:
    rater: Hashable
    origin: str  # judge | planted
    fate: str


@dataclass(frozen=True)
class Page:
    rater: Hashable
    assisted: bool
    marks: int


def _share(k: int, n: int, confidence: float) -> dict[str, Any]:
    if n == 0:
        return {"estimate": None, "low": None, "high": None, "k": 0, "n": 0}
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return {
        "estimate": k / n,
        "low": float(max(0.0, interval.low)),
        "high": float(min(1.0, interval.high)),
        "k": k,
        "n": n,
    }


def _acceptance(fates: Sequence[SuggestionFate], confidence: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for origin in ORIGINS:
        decided = [f for f in fates if f.origin == origin and f.fate != "pending"]
        kept = sum(1 for f in decided if f.fate in ("accepted", "edited"))
        unchanged = sum(1 for f in decided if f.fate == "accepted")
        out[origin] = {
            "kept": _share(kept, len(decided), confidence),
            "accepted_unchanged": _share(unchanged, len(decided), confidence),
            "pending": sum(1 for f in fates if f.origin == origin and f.fate == "pending"),
        }
    return out


def suggestion_acceptance(fates: Sequence[SuggestionFate], *, confidence: float = 0.95) -> dict[str, Any]:
    """Overall and per rater: the shares of true and planted suggestions kept and accepted unchanged."""
    for row, f in enumerate(fates):
        if f.origin not in ORIGINS:
            raise ValueError(f"suggestion {row}: origin must be one of {ORIGINS}, got {f.origin!r}")
        if f.fate not in FATES:
            raise ValueError(f"suggestion {row}: fate must be one of {FATES}, got {f.fate!r}")
    raters = list(dict.fromkeys(f.rater for f in fates))
    return {
        "overall": _acceptance(fates, confidence),
        "raters": [
            {"rater": rater, **_acceptance([f for f in fates if f.rater == rater], confidence)}
            for rater in raters
        ],
        "interval": f"{confidence:.0%} Wilson score intervals",
    }


def span_rates(
    pages: Sequence[Page], *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Marks per page, assisted and unassisted, and their difference (assisted − unassisted)."""
    rng = np.random.default_rng(seed)
    groups = {
        name: np.array([p.marks for p in pages if p.assisted is flag], dtype=np.float64)
        for name, flag in (("assisted", True), ("unassisted", False))
    }
    out: dict[str, Any] = {}
    replicates: dict[str, np.ndarray] = {}
    for name, counts in groups.items():
        if counts.size == 0:
            out[name] = {"estimate": None, "low": None, "high": None, "pages": 0}
            continue
        draws = counts[rng.integers(0, counts.size, (n_resamples, counts.size))].mean(axis=1)
        replicates[name] = draws
        low, high = percentile_interval(draws, confidence)
        out[name] = {"estimate": float(counts.mean()), "low": low, "high": high, "pages": int(counts.size)}
    if len(replicates) == 2:
        low, high = percentile_interval(replicates["assisted"] - replicates["unassisted"], confidence)
        out["difference"] = {
            "estimate": out["assisted"]["estimate"] - out["unassisted"]["estimate"],
            "low": low,
            "high": high,
        }
    else:
        out["difference"] = {"estimate": None, "low": None, "high": None}
    out["interval"] = f"{confidence:.0%} percentile bootstrap over pages ({n_resamples} resamples)"
    return out
