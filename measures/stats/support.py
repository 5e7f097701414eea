"""The support of an interval's quantity: the range its estimate and both ends cannot leave.

Every function that builds an interval declares the support of its quantity where it builds it
(a count or a rate is at least 0, a proportion lies in [0, 1], a scale's mean in the scale, a
correlation in [−1, 1], a log-strength anywhere) and passes its ends through ``Support.bound``:
the interval then lies inside the support and contains its estimate, whatever the data. The
analysis document carries the support beside each interval (``Support.record``) so that a reader
(and tests/evaluation/analysis/test_interval_bounds.py, which walks every interval of the analysis) can
check it. docs/analysis/intervals.md lists each quantity's support.

Pure Python: the web workers' pages read the records without numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Support:
    """``[low, high]``, either end possibly infinite."""

    low: float = -math.inf
    high: float = math.inf

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ValueError(f"a support needs low <= high, got [{self.low}, {self.high}]")

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def bound(
        self, estimate: float | None, low: float | None, high: float | None
    ) -> tuple[float | None, float | None]:
        """``(low, high)`` clipped to the support and widened to contain ``estimate``; an end that
        is None (not estimable) or not finite where the support is bounded stays or becomes None.
        The interval methods keep inside their support by construction; this is the guard that
        makes it a property of every interval, not of each method's arithmetic."""
        if low is None or high is None or estimate is None or math.isnan(estimate):
            return None, None
        if math.isnan(low) or math.isnan(high):
            return None, None
        estimate = min(max(estimate, self.low), self.high)
        low = min(max(low, self.low), estimate)
        high = max(min(high, self.high), estimate)
        if not (math.isfinite(low) and math.isfinite(high)):
            return None, None
        return float(low), float(high)

    def record(self) -> list[float | None]:
        """``[low, high]`` as JSON holds it: None for an infinite end."""
        return [
            self.low if math.isfinite(self.low) else None,
            self.high if math.isfinite(self.high) else None,
        ]


REAL = Support()
NON_NEGATIVE = Support(0.0, math.inf)
PROPORTION = Support(0.0, 1.0)
CORRELATION = Support(-1.0, 1.0)


def support_of(bounds: tuple[float, float] | None, *, non_negative: bool = False) -> Support:
    """The support of a mean of values in ``bounds`` (None: unbounded, or ``[0, ∞)`` for counts
    and rates with ``non_negative``)."""
    if bounds is None:
        return NON_NEGATIVE if non_negative else REAL
    return Support(float(bounds[0]), float(bounds[1]))


def difference_support(bounds: tuple[float, float] | None) -> Support:
    """The support of a difference of two means of values in ``bounds``: ± its width."""
    if bounds is None:
        return REAL
    span = float(bounds[1]) - float(bounds[0])
    return Support(-span, span)
