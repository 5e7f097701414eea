"""Is this rater paying attention? Scores on real items vs planted degraded copies (Appraise's "BAD
references", WMT), per rater. Django-free.

- ``mann_whitney_greater``: one-sided Mann–Whitney U test that real scores exceed planted ones
  (normal approximation with tie and continuity corrections, scipy's ``method="asymptotic"``).
- caught: a planted item is caught when the rater scored it at least ``min_drop`` points below the
  real item it was degraded from (same rater), or — with error spans — when one of the rater's spans
  overlaps the planted span by at least one character (``planted_span_found``).
- ``unreliable``: at least ``min_planted`` planted items and p ≥ ``alpha`` (Appraise's rule: the
  rater did not score degraded items significantly lower). With fewer planted items the flag is
  ``None`` (not yet decidable), never False.
- ``z_scores``: each rater's real-item scores minus that rater's mean, over their standard deviation
  (population sd, as WMT's z-normalisation); planted items are left out so they never enter a
  study's tables.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# numpy and scipy are imported where they are used: a web worker imports this module at start-up for
# its constants and ControlScore (the progress page), and must not load the scientific stack then
# (tests/test_web_imports.py).

DEFAULT_ALPHA = 0.05
DEFAULT_MIN_PLANTED = 10


@dataclass(frozen=True)
class ControlScore:
    """One score: ``pair`` links a planted item to the real item it was degraded from."""

    rater: Hashable
    pair: Hashable
    planted: bool
    score: float


def mann_whitney_greater(real: Sequence[float], planted: Sequence[float]) -> tuple[float, float]:
    """(U of ``real``, one-sided p that real > planted) by the tie-corrected normal approximation
    with continuity correction."""
    import numpy as np
    from scipy import stats

    x, y = np.asarray(real, dtype=np.float64), np.asarray(planted, dtype=np.float64)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        raise ValueError("the Mann–Whitney test needs real and planted scores")
    ranks = stats.rankdata(np.concatenate([x, y]))
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    n = n1 + n2
    _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
    variance = n1 * n2 / 12 * ((n + 1) - float((counts**3 - counts).sum()) / (n * (n - 1)))
    if variance <= 0:
        return u, 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return u, float(stats.norm.sf(z))


def planted_span_found(planted: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when any of the rater's (start, end) spans shares at least one character with the
    planted span. A zero-width planted span (a deletion) is found by a span touching its point."""
    start, end = planted
    if start == end:
        return any(s <= start <= e for s, e in spans)
    return any(s < end and e > start for s, e in spans)


def rater_reliability(
    scores: Iterable[ControlScore],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_planted: int = DEFAULT_MIN_PLANTED,
    min_drop: float = 1.0,
) -> dict[Hashable, dict[str, Any]]:
    """Per rater: ``n_real``, ``n_planted``, means, ``u``, ``p_value``, ``caught`` (share of planted
    items scored ≥ ``min_drop`` below their real counterpart, over those whose counterpart the rater
    also scored; None when none) and ``unreliable`` (see the module docstring)."""
    by_rater: dict[Hashable, list[ControlScore]] = defaultdict(list)
    for row, item in enumerate(scores):
        if not math.isfinite(item.score):
            raise ValueError(f"score {row}: not a number ({item.score!r})")
        by_rater[item.rater].append(item)
    out: dict[Hashable, dict[str, Any]] = {}
    for rater, items in by_rater.items():
        real = {i.pair: i.score for i in items if not i.planted}
        planted = [i for i in items if i.planted]
        record: dict[str, Any] = {
            "n_real": len(real),
            "n_planted": len(planted),
            "mean_real": statistics.fmean(real.values()) if real else None,
            "mean_planted": statistics.fmean(i.score for i in planted) if planted else None,
            "u": None,
            "p_value": None,
            "caught": None,
            "unreliable": None,
        }
        if real and planted:
            u, p = mann_whitney_greater(list(real.values()), [i.score for i in planted])
            record["u"], record["p_value"] = u, p
            paired = [i for i in planted if i.pair in real]
            if paired:
                record["caught"] = sum(real[i.pair] - i.score >= min_drop for i in paired) / len(paired)
            if len(planted) >= min_planted:
                record["unreliable"] = p >= alpha
        out[rater] = record
    return out


def z_scores(scores: Iterable[ControlScore]) -> dict[tuple[Hashable, Hashable], float | None]:
    """``{(rater, pair): z}`` for real items; None for a rater whose scores do not vary."""
    by_rater: dict[Hashable, list[ControlScore]] = defaultdict(list)
    for item in scores:
        if not item.planted:
            by_rater[item.rater].append(item)
    out: dict[tuple[Hashable, Hashable], float | None] = {}
    for rater, items in by_rater.items():
        values = [i.score for i in items]
        mean, sd = statistics.fmean(values), statistics.pstdev(values)  # population sd, as WMT
        for item in items:
            out[(rater, item.pair)] = (item.score - mean) / sd if sd > 0 else None
    return out
