"""Power planning (evaluation/planning/power.py): the vectorised simulator against a per-study loop,
and the wall time of a full 20 × 20 grid.

    .venv/bin/python bench/plan_power.py            # the 20 × 20 grid, 1,000 simulations per design
    .venv/bin/python bench/plan_power.py --quick    # 6 × 6 grid, 200 simulations

1. Analysis step, on the same 200 simulated studies (80 participants × 100 sources, 4 systems, the
   release's understanding components): radlay's vectorised Wilcoxon (normal approximation, tie
   correction) + Holm over all pairs, against a loop calling scipy.stats.wilcoxon(method="approx")
   and statsmodels' multipletests once per simulated study. Both must reach the same decision for
   every study (checked here); the figure is the loop's time over radlay's.
2. The whole grid: 20 participant counts (4 … 100) × 20 source counts (4 … 100), 1,000 simulated
   studies per design, the paired test on all of them and the mixed model on 200: wall time, and
   time per design.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.planning import power  # noqa: E402
from evaluation.planning.outcomes import OUTCOMES  # noqa: E402

# The 2024 release's understanding (panel 2): REML components and mean (tests/evaluation/planning).
RELEASE = {"participant_var": 0.080, "source_var": 0.099, "residual_var": 0.441, "baseline": 3.159}


def settings(n_simulations: int) -> power.PowerSettings:
    return power.PowerSettings(
        outcome=OUTCOMES["understanding"],
        effect=0.25,
        n_systems=4,
        n_simulations=n_simulations,
        seed=1,
        **RELEASE,
    )


def analysis_step(n_studies: int) -> None:
    st = settings(n_studies)
    baseline, shifted = power.latent_means(st)
    y, part, src, sys_ = power.simulate_answers(
        st, 80, 100, system_means=[baseline, shifted, baseline, baseline], n_studies=n_studies, seed=2
    )
    k, n_src = 4, 100
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    counts = np.bincount(src * k + sys_, minlength=n_src * k)

    def cell_means() -> np.ndarray:
        sums = np.stack([np.bincount(src * k + sys_, weights=row, minlength=n_src * k) for row in y])
        return (sums / counts).reshape(n_studies, n_src, k)

    means = cell_means()
    started = time.perf_counter()
    d = np.stack([means[:, :, a] - means[:, :, b] for a, b in pairs], axis=1).reshape(-1, n_src)
    ours = power.holm(power._wilcoxon_p(d).reshape(n_studies, -1)) < 0.05
    ours_s = time.perf_counter() - started

    started = time.perf_counter()
    loop = np.zeros_like(ours)
    for i in range(n_studies):
        pvalues = []
        for a, b in pairs:
            diff = np.round(means[i, :, a] - means[i, :, b], 9)
            pvalues.append(
                stats.wilcoxon(diff, zero_method="wilcox", correction=False, method="approx").pvalue
            )
        loop[i] = multipletests(pvalues, method="holm")[1] < 0.05
    loop_s = time.perf_counter() - started
    same = bool(np.array_equal(ours, loop))
    print(f"1. analysis of {n_studies} simulated studies (80 × 100, 4 systems, 6 pairs)")
    print(
        f"   radlay vectorised {ours_s:.3f} s, scipy/statsmodels loop {loop_s:.3f} s: ×{loop_s / ours_s:.1f}"
    )
    print(f"   same decision for every study and pair: {same}")
    if not same:
        raise SystemExit("the vectorised test disagrees with scipy")


def grid(points: int, n_simulations: int, mixed: int, top: int) -> None:
    st = settings(n_simulations)
    axis = power.design_axis(top, step=4, minimum=4, points=points)
    started = time.perf_counter()
    result = power.power_grid(st, axis, axis, mixed_simulations=mixed)
    seconds = time.perf_counter() - started
    cells = len(result.cells)
    smallest = result.smallest()
    print(f"2. grid of {len(axis)} × {len(axis)} designs ({axis[0]} … {axis[-1]} participants and sources),")
    print(f"   {n_simulations} simulated studies each (mixed model on {mixed}): {seconds:.1f} s in all,")
    print(f"   {seconds / cells:.2f} s per design")
    if smallest:
        print(
            f"   smallest design with 80 % power for +0.25 understanding: {smallest.participants} "
            f"participants × {smallest.sources} sources "
            f"(power {smallest.power:.3f} ± {smallest.power_se:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 × 6 grid, 200 simulations")
    args = parser.parse_args()
    analysis_step(200)
    if args.quick:
        grid(points=6, n_simulations=200, mixed=50, top=100)
    else:
        grid(points=20, n_simulations=1000, mixed=200, top=100)


if __name__ == "__main__":
    main()
