"""Position bias of a pairwise judge asked every comparison in both orders. Django-free.

Each comparison of two texts is asked as (A, B) and as (B, A). A judge without position bias gives
the same verdict about the texts either way; one that prefers whatever comes first answers "A" (or
"left") both times, which names a different text each time — a **flip**.

* **flip share**: of the comparisons answered in both orders, the share whose verdicts (which text
  won, or a tie, or neither acceptable) differ between the orders;
* **first-position win rate**: of all decisive answers (one text preferred), the share that
  preferred the text shown first; 0.5 without bias. Its p-value is the two-sided exact binomial
  test against 0.5 (scipy).

Both intervals are Wilson score intervals (scipy's binomtest), inside [0, 1].
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats

CHOICES = ("left", "right", "tie", "neither")


@dataclass(frozen=True)
class OrderedJudgement:
    """One answer: ``first`` shown as A (left), ``second`` as B (right), ``choice`` among CHOICES."""

    source: Hashable
    first: Hashable
    second: Hashable
    choice: str


def _verdict(j: OrderedJudgement) -> Hashable:
    """What the answer says about the texts, whatever their order: the winner, or tie/neither."""
    if j.choice == "left":
        return ("won", j.first)
    if j.choice == "right":
        return ("won", j.second)
    return j.choice


def _wilson(k: int, n: int, confidence: float) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(max(0.0, interval.low)), float(min(1.0, interval.high))


def position_bias(judgements: Sequence[OrderedJudgement], *, confidence: float = 0.95) -> dict[str, Any]:
    """Flip share and first-position win rate, with Wilson intervals (see the module docstring)."""
    for row, j in enumerate(judgements):
        if j.choice not in CHOICES:
            raise ValueError(f"judgement {row}: choice must be one of {CHOICES}, got {j.choice!r}")
        if j.first == j.second:
            raise ValueError(f"judgement {row}: the two texts are the same")
    orders: dict[tuple[Hashable, frozenset[Hashable]], dict[tuple[Hashable, Hashable], OrderedJudgement]] = {}
    for j in judgements:
        orders.setdefault((j.source, frozenset((j.first, j.second))), {})[(j.first, j.second)] = j
    both = [pair for pair in orders.values() if len(pair) == 2]
    flips = sum(1 for pair in both if len({_verdict(j) for j in pair.values()}) == 2)
    decisive = [j for j in judgements if j.choice in ("left", "right")]
    first_wins = sum(1 for j in decisive if j.choice == "left")
    flip_low, flip_high = _wilson(flips, len(both), confidence)
    rate_low, rate_high = _wilson(first_wins, len(decisive), confidence)
    return {
        "n_judgements": len(judgements),
        "n_pairs_both_orders": len(both),
        "n_pairs_one_order": len(orders) - len(both),
        "flips": flips,
        "flip_share": {
            "estimate": flips / len(both) if both else None,
            "low": flip_low,
            "high": flip_high,
        },
        "n_decisive": len(decisive),
        "first_position_wins": first_wins,
        "first_position_win_rate": {
            "estimate": first_wins / len(decisive) if decisive else None,
            "low": rate_low,
            "high": rate_high,
            "p_value": float(stats.binomtest(first_wins, len(decisive), 0.5).pvalue) if decisive else None,
        },
        "interval": f"{confidence:.0%} Wilson score intervals",
    }
