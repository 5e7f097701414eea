"""Krippendorff's alpha with MASI distance: radlay's vectorised path vs NLTK's AnnotationTask.

    python bench/agreement.py [--quick]

Data: each coder (lay participant) marks a non-empty subset of 4 systems per unit (source);
cells are missing at random, some units have a single coder (dropped by both), and each unit
has a "favourite" set so alpha is clearly non-zero. Non-empty sets only, because NLTK's MASI
divides by zero on two empty sets. Both paths start from the same {coder: {unit: frozenset}}
mapping, so the timings include flattening/encoding (fast) and AnnotationTask loading (NLTK).
Prints both times, the speed-up ratio, and asserts the two alphas agree to 1e-9.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measures.stats.agreement import krippendorff_alpha_sets  # noqa: E402

SYSTEMS = ("human", "gpt", "sc", "llama")
LABELS = [frozenset(c) for r in range(1, len(SYSTEMS) + 1) for c in itertools.combinations(SYSTEMS, r)]


def make_annotations(n_coders: int, n_units: int, *, seed: int = 0, missing: float = 0.3) -> dict:
    rng = np.random.default_rng(seed)
    favourite = rng.integers(len(LABELS), size=n_units)
    random_label = rng.integers(len(LABELS), size=(n_coders, n_units))
    codes = np.where(rng.random((n_coders, n_units)) < 0.5, favourite, random_label)
    present = rng.random((n_coders, n_units)) >= missing
    # 5% of units get exactly one coder, the rest keep their random pattern.
    lonely = rng.random(n_units) < 0.05
    present[:, lonely] = False
    present[rng.integers(n_coders, size=lonely.sum()), np.flatnonzero(lonely)] = True
    units = [f"source-{u}" for u in range(n_units)]
    return {
        f"participant-{c}": {units[u]: LABELS[codes[c, u]] for u in np.flatnonzero(present[c])}
        for c in range(n_coders)
    }


def timed(function, repeat: int) -> tuple[float, float]:
    best, value = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return value, best


def run(n_coders: int, n_units: int, *, repeat_nltk: int) -> None:
    data = make_annotations(n_coders, n_units)
    cells = sum(len(per_unit) for per_unit in data.values())
    fast, fast_s = timed(lambda: krippendorff_alpha_sets(data), repeat=3)
    reference, nltk_s = timed(lambda: krippendorff_alpha_sets(data, method="nltk"), repeat=repeat_nltk)
    assert abs(fast - reference) <= 1e-9, (fast, reference)
    print(
        f"{n_coders:>4} coders x {n_units:>6} units ({cells:>9,} annotations): "
        f"alpha={fast:.12f} |diff|={abs(fast - reference):.1e}  "
        f"fast {fast_s:8.3f} s (best of 3)  nltk {nltk_s:8.3f} s (best of {repeat_nltk})  "
        f"speed-up x{nltk_s / fast_s:,.0f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the 50 x 2000 case")
    args = parser.parse_args()
    run(50, 2_000, repeat_nltk=3)
    if not args.quick:
        run(500, 20_000, repeat_nltk=1)


if __name__ == "__main__":
    main()
