"""Which two systems a participant compares for each source, and on which side. Django-free.

Balance: for the source at fixed index i, the k systems' C(k, 2) pairs (of systems whose texts
differ) are taken in a fixed order and participant p gets pair (p + i) mod C(k, 2), so over any
C(k, 2) consecutive participants every pair is shown once per source, and each participant sees
the pairs in rotation across sources (the Latin-square idea of measures/latin_square.py applied
to pairs). The side of each pair and the order of the sources are drawn from the participant's
seed, so they are random per participant and reproducible."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations


@dataclass(frozen=True)
class Candidate:
    """A simplification that can be shown: its id, its system's key and its text's id."""

    simplification: int
    system: str
    text: int


@dataclass(frozen=True)
class PlannedPair:
    source: int
    left: int  # simplification ids
    right: int


def pairwise_plan(
    *, sources: Sequence[tuple[int, Sequence[Candidate]]], participant_index: int, seed: int
) -> list[PlannedPair]:
    """One pair per source that has two different texts, in the participant's shuffled order.
    `sources` is in the study's fixed source order; `participant_index` counts the study's
    participants before this one (0, 1, …)."""
    if participant_index < 0:
        raise ValueError("participant_index must be >= 0")
    rng = random.Random(seed)
    planned = []
    for i, (source, candidates) in enumerate(sources):
        ordered = sorted(candidates, key=lambda c: (c.system, c.simplification))
        # Two systems with the same text (annotation.models.SimplificationText) have nothing to compare.
        pairs = [(a, b) for a, b in combinations(ordered, 2) if a.text != b.text]
        if not pairs:
            continue
        a, b = pairs[(participant_index + i) % len(pairs)]
        left, right = (a, b) if rng.random() < 0.5 else (b, a)
        planned.append(PlannedPair(source=source, left=left.simplification, right=right.simplification))
    rng.shuffle(planned)
    return planned
