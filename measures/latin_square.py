"""The Latin square of the lay survey (DESIGN.md "Latin square"; seed 003 section 5.4). Pure
computation, no Django: `surveys.lay.selectors` builds the inputs from the database.

Indices: source i is the rank of Source.position in the study (0..n-1, equal to the position when
positions are contiguous); system j is the rank of System.position. A participant holds a row r in
[0, period).

With every source shown (m = n) row r gets system (r + i) mod k for source i, the classic
cyclic Latin square: over any k consecutive rows each (source, system) pair is seen once and each
participant sees every system floor(n/k) or ceil(n/k) times.

With a subset (m < n sources per participant) the sources are a cyclic window that rotates every k
rows: rows of block b = r // k see the m sources starting at s = (b * m) mod n. The t-th source of
the window gets system (r + s + t) mod k. Within a block each windowed source meets each system
once, and over n / gcd(n, m) blocks every source is in exactly m / gcd(n, m) windows, so over one
period (k * n / gcd(n, m) rows) every pair is seen equally often. Counting t along the window (not
the wrapped source index) keeps every participant's systems consecutive, hence balanced, even when
the window wraps past the last source; when k divides n this is exactly (r + i) mod k again.

Row handout (`next_row`) is greedy on the live pair counts, so rows freed by participants who
dropped out are handed out again first and the counts stay balanced under dropouts: with every
source shown, or with m dividing n, the per-pair counts of completed participants never differ by
more than 1 (tests/measures/test_latin_square.py simulates it). When m does not divide n the
windows overlap, and between two complete periods a pair can lead another by 2 with this
rotation (counts are exact again at every full period); choose `lay_sources_per_participant`
dividing the number of sources to avoid that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from math import gcd

Pair = tuple[int, int]  # (source index, system index)


@dataclass(frozen=True)
class LatinSquare:
    n_sources: int
    n_systems: int
    per_participant: int | None = None  # None (or >= n_sources): every source

    def __post_init__(self) -> None:
        if self.n_sources < 1 or self.n_systems < 1:
            raise ValueError("A Latin square needs at least one source and one system.")
        if self.per_participant is not None and self.per_participant < 1:
            raise ValueError("Each participant must see at least one source.")

    @property
    def m(self) -> int:
        """Sources per participant."""
        if self.per_participant is None:
            return self.n_sources
        return min(self.per_participant, self.n_sources)

    @property
    def period(self) -> int:
        """Rows after which the design repeats; each pair is seen `pair_multiplicity` times per period."""
        return self.n_systems * (self.n_sources // gcd(self.n_sources, self.m))

    @property
    def pair_multiplicity(self) -> int:
        return self.m // gcd(self.n_sources, self.m)

    def _check_row(self, row: int) -> int:
        if row < 0:
            raise ValueError(f"Latin-square rows are non-negative, not {row}.")
        return row % self.period

    def window_start(self, row: int) -> int:
        row = self._check_row(row)
        return ((row // self.n_systems) * self.m) % self.n_sources

    def pairs(self, row: int) -> list[Pair]:
        """(source index, system index) for each source of `row`, in window order (not display order)."""
        return list(_row_pairs(self, self._check_row(row)))

    def sources(self, row: int) -> list[int]:
        return [source for source, _ in self.pairs(row)]

    def assignment(self, row: int, unavailable: Collection[Pair] = ()) -> dict[int, int | None]:
        """Source index -> system index for `row`. A nominal pair in `unavailable` (withheld by the
        safety gate, or no simplification) moves to the next available system in row order
        (j+1, j+2, … mod k); None when every system of that source is unavailable."""
        blocked = set(unavailable)
        result: dict[int, int | None] = {}
        for source, system in self.pairs(row):
            chosen = None
            for step in range(self.n_systems):
                candidate = (system + step) % self.n_systems
                if (source, candidate) not in blocked:
                    chosen = candidate
                    break
            result[source] = chosen
        return result


@lru_cache(maxsize=8192)
def _row_pairs(square: LatinSquare, row: int) -> tuple[Pair, ...]:
    """LatinSquare.pairs of a row within the period, computed once: the sample-size simulations ask
    for the same rows hundreds of thousands of times."""
    start = square.window_start(row)
    n_sources, n_systems = square.n_sources, square.n_systems
    return tuple(((start + t) % n_sources, (row + start + t) % n_systems) for t in range(square.m))


def pair_counts(square: LatinSquare, rows: Iterable[int]) -> Counter[Pair]:
    """How often each nominal (source, system) pair is covered by the given rows (one per participant).
    Every pair of the design is present, with 0 where unseen."""
    counts: Counter[Pair] = Counter(
        {(i, j): 0 for i in range(square.n_sources) for j in range(square.n_systems)}
    )
    for row in rows:
        counts.update(square.pairs(row))
    return counts


def next_row(square: LatinSquare, live_rows: Iterable[int]) -> int:
    """The row to hand to a new participant, given the rows of the live participants (completed or
    still active; not those who abandoned or returned, whose rows are thereby freed).

    Greedy: the row whose pairs are least covered so far (sum of live pair counts), then the row
    held by fewest live participants, then the lowest row. With no dropouts this hands out
    0, 1, 2, … in turn; a row freed by a dropout is the least covered, so it is reused first."""
    live = [square._check_row(r) for r in live_rows]
    coverage = pair_counts(square, live)
    holders = Counter(live)

    def score(row: int) -> tuple[int, int, int]:
        return (sum(coverage[p] for p in square.pairs(row)), holders[row], row)

    return min(range(square.period), key=score)
