"""The Latin square as a pure function (measures/latin_square.py): the classic cyclic design,
the rotated subsets, the skipping of unavailable pairs, and the balance of the row handout under
random dropouts with backfill (simulated)."""

from __future__ import annotations

import random
from collections import Counter
from math import ceil, floor

import pytest

from measures.latin_square import LatinSquare, next_row, pair_counts


def _hand_out(square: LatinSquare, n: int) -> list[int]:
    rows: list[int] = []
    for _ in range(n):
        rows.append(next_row(square, rows))
    return rows


def test_row_gets_system_r_plus_i_mod_k():
    # Worked example, k = 3 systems, n = 3 sources.
    square = LatinSquare(n_sources=3, n_systems=3)
    assert square.pairs(0) == [(0, 0), (1, 1), (2, 2)]
    assert square.pairs(1) == [(0, 1), (1, 2), (2, 0)]
    assert square.pairs(2) == [(0, 2), (1, 0), (2, 1)]
    # Every system once per source over the k rows, and once per row: a Latin square.
    grid = [[system for _, system in square.pairs(r)] for r in range(3)]
    assert all(sorted(row) == [0, 1, 2] for row in grid)
    assert all(sorted(col) == [0, 1, 2] for col in zip(*grid, strict=True))


@pytest.mark.parametrize("n_sources", [1, 3, 4, 5, 7, 40])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_full_design_formula_and_balance(n_sources, k):
    square = LatinSquare(n_sources=n_sources, n_systems=k)
    assert square.period == k
    for r in range(2 * k):
        assert square.pairs(r) == [(i, (r + i) % k) for i in range(n_sources)]
    for multiple in (1, 2, 3):
        n_participants = multiple * k
        rows = _hand_out(square, n_participants)
        counts = pair_counts(square, rows)
        assert set(counts.values()) == {n_participants // k}, counts
        for row in rows:
            seen = Counter(system for _, system in square.pairs(row))
            for system in range(k):
                assert floor(n_sources / k) <= seen[system] <= ceil(n_sources / k)


@pytest.mark.parametrize(
    ("n_sources", "k", "m"), [(40, 4, 10), (10, 4, 4), (7, 3, 4), (9, 4, 6), (6, 4, 3), (5, 4, 4), (12, 5, 7)]
)
def test_subset_design_is_balanced_over_each_period(n_sources, k, m):
    square = LatinSquare(n_sources=n_sources, n_systems=k, per_participant=m)
    rows = _hand_out(square, 2 * square.period)
    assert sorted(rows) == sorted(list(range(square.period)) * 2)  # no dropouts: every row in turn
    counts = pair_counts(square, rows)
    assert set(counts.values()) == {2 * square.pair_multiplicity}
    sources = Counter(source for r in rows for source in square.sources(r))
    assert len(set(sources.values())) == 1 and set(sources) == set(range(n_sources))
    for r in rows:
        chosen = square.sources(r)
        assert len(chosen) == len(set(chosen)) == m
        seen = Counter(system for _, system in square.pairs(r))
        assert all(floor(m / k) <= seen[j] <= ceil(m / k) for j in range(k))


def test_subset_rotates_with_the_row_and_matches_formula_when_k_divides_n():
    square = LatinSquare(n_sources=8, n_systems=4, per_participant=4)
    assert square.sources(0) == square.sources(3) == [0, 1, 2, 3]
    assert square.sources(4) == [4, 5, 6, 7]
    for r in range(square.period):
        assert all(system == (r + source) % 4 for source, system in square.pairs(r))


def test_per_participant_larger_than_sources_means_all():
    assert LatinSquare(n_sources=3, n_systems=2, per_participant=10).pairs(1) == LatinSquare(3, 2).pairs(1)


def test_unavailable_pair_moves_to_next_system_in_row_order():
    square = LatinSquare(n_sources=3, n_systems=4)
    # Row 1: nominal systems 1, 2, 3.
    assert square.assignment(1) == {0: 1, 1: 2, 2: 3}
    assert square.assignment(1, unavailable={(1, 2)}) == {0: 1, 1: 3, 2: 3}
    assert square.assignment(1, unavailable={(2, 3)}) == {0: 1, 1: 2, 2: 0}  # wraps around
    assert square.assignment(1, unavailable={(1, 2), (1, 3)}) == {0: 1, 1: 0, 2: 3}
    everything = {(0, j) for j in range(4)}
    assert square.assignment(1, unavailable=everything)[0] is None


def test_freed_row_is_handed_out_first():
    square = LatinSquare(n_sources=4, n_systems=4)
    assert next_row(square, [0, 1, 3]) == 2  # the participant on row 2 dropped out
    assert next_row(square, [0, 1, 2, 3, 0, 2]) == 1
    assert next_row(square, []) == 0


def test_invalid_designs_and_rows_are_refused():
    with pytest.raises(ValueError):
        LatinSquare(n_sources=0, n_systems=2)
    with pytest.raises(ValueError):
        LatinSquare(n_sources=2, n_systems=0)
    with pytest.raises(ValueError):
        LatinSquare(n_sources=2, n_systems=2, per_participant=0)
    with pytest.raises(ValueError):
        LatinSquare(n_sources=2, n_systems=2).pairs(-1)


def _simulate(square: LatinSquare, target: int, p_drop: float, seed: int, max_active: int = 5) -> list[int]:
    """Recruitment as on Prolific: places are open while completed + active < target; an active
    participant either completes or drops out (abandons/returns), which frees the place and the
    row. Rows are handed out from the live (completed + active) participants."""
    rng = random.Random(seed)
    completed: list[int] = []
    active: list[int] = []
    while len(completed) < target or active:
        can_join = len(completed) + len(active) < target and len(active) < max_active
        if can_join and (not active or rng.random() < 0.5):
            active.append(next_row(square, completed + active))
            continue
        row = active.pop(rng.randrange(len(active)))
        if rng.random() >= p_drop:
            completed.append(row)
    return completed


@pytest.mark.parametrize(
    ("n_sources", "k", "m"),
    [
        (4, 4, None),
        (5, 4, None),
        (40, 4, None),
        (7, 3, None),
        (6, 2, None),
        (40, 4, 10),
        (6, 4, 3),
        (12, 4, 4),
    ],
)
def test_random_dropouts_with_backfill_stay_balanced(n_sources, k, m):
    square = LatinSquare(n_sources=n_sources, n_systems=k, per_participant=m)
    for seed in range(25):
        for target in (3, square.period, 2 * square.period + 1, 17):
            completed = _simulate(square, target, p_drop=0.35, seed=seed)
            assert len(completed) == target
            counts = pair_counts(square, completed).values()
            assert max(counts) - min(counts) <= 1, (seed, target, sorted(Counter(completed).items()))


def test_without_backfill_dropouts_would_unbalance():
    # The reference the handout is measured against: naive round-robin ignoring dropouts.
    square = LatinSquare(n_sources=4, n_systems=4)
    handed = list(range(8))  # two full rounds …
    dropped = {1, 5}  # … and both holders of row 1 dropped out
    completed = [r % 4 for i, r in enumerate(handed) if i not in dropped]
    counts = pair_counts(square, completed).values()
    assert max(counts) - min(counts) == 2
    backfilled = completed + [next_row(square, completed)]
    assert next_row(square, completed) == 1
    assert max(pair_counts(square, backfilled).values()) - min(pair_counts(square, backfilled).values()) == 1
