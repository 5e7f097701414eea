"""Adaptive allocation against the fixed Latin square, by simulation on the planner's model
(evaluation/planning/sequential.py): participants each policy needs to reach the target width of
the primary comparison, and the coverage of its closing 95 % interval.

    .venv/bin/python bench/adaptive_allocation.py            # 1,000 simulated studies per scenario
    .venv/bin/python bench/adaptive_allocation.py --quick    # 200

Fixed and adaptive studies of one seed share their simulated sources and participants (common
random numbers), so "saved" is a paired difference, with its standard error. Scenarios:

1. release: the 2024 release's understanding components (8 laypeople × 40 sentences), two
   systems 0.25 apart, 24 sentences shown 8 per layperson, target width 0.5.
2. unequal residuals: the same with the release's spread of residual variances per system
   (0.80 for the plainest system, 0.22 for the best).
3. near the ceiling: severity accuracy (a share) at 0.85, sources varying widely (some always
   right, whose answers do not vary), 2 sentences per layperson: the setting where allocating by
   the cells' spreads has the most to gain.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.planning.outcomes import OUTCOMES  # noqa: E402
from evaluation.planning.power import PowerSettings  # noqa: E402
from evaluation.planning.sequential import simulate_sequential  # noqa: E402

RELEASE = {
    "participant_var": 0.08,
    "source_var": 0.10,
    "residual_var": 0.44,
    "interaction_var": 0.08,
    "baseline": 3.16,
}

SCENARIOS = {
    "release": (
        PowerSettings(outcome=OUTCOMES["understanding"], **RELEASE, effect=0.25, per_participant=8),
        {"n_sources": 24, "target_width": 0.5, "max_participants": 120},
    ),
    "unequal residuals": (
        PowerSettings(
            outcome=OUTCOMES["understanding"],
            **RELEASE,
            effect=0.25,
            per_participant=8,
            residual_vars=(0.80, 0.22),
        ),
        {"n_sources": 24, "target_width": 0.5, "max_participants": 120},
    ),
    "near the ceiling": (
        PowerSettings(
            outcome=OUTCOMES["severity_accuracy"],
            participant_var=0.0,
            source_var=0.10,
            residual_var=0.0,
            baseline=0.85,
            effect=0.08,
            per_participant=2,
        ),
        {"n_sources": 24, "target_width": 0.25, "max_participants": 400},
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 simulated studies per scenario")
    parser.add_argument("--studies", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n_studies = args.studies or (200 if args.quick else 1000)
    print(f"{n_studies} simulated studies per scenario, seed {args.seed}")
    header = (
        f"{'scenario':<20} {'fixed':>7} {'adaptive':>9} {'saved (± se)':>15} {'ratio':>6} "
        f"{'cover fixed':>12} {'cover adapt':>12} {'width f/a':>11} {'s':>5}"
    )
    print(header)
    for name, (settings, design) in SCENARIOS.items():
        started = time.perf_counter()
        runs = simulate_sequential(settings, n_studies=n_studies, seed=args.seed, **design)
        fixed, adaptive = runs["fixed"], runs["adaptive"]
        saved = fixed.participants - adaptive.participants
        se = saved.std(ddof=1) / np.sqrt(saved.size)
        print(
            f"{name:<20} {fixed.mean_participants:>7.2f} {adaptive.mean_participants:>9.2f} "
            f"{saved.mean():>7.2f} ± {se:<5.2f} {adaptive.mean_participants / fixed.mean_participants:>6.3f} "
            f"{fixed.coverage:>7.3f}±{fixed.coverage_se:.3f} "
            f"{adaptive.coverage:>7.3f}±{adaptive.coverage_se:.3f} "
            f"{np.nanmean(fixed.widths):>5.3f}/{np.nanmean(adaptive.widths):<5.3f} "
            f"{time.perf_counter() - started:>5.0f}"
        )
        if not (fixed.reached.all() and adaptive.reached.all()):
            print(
                f"  not reached by the maximum: fixed {int((~fixed.reached).sum())}, "
                f"adaptive {int((~adaptive.reached).sum())}"
            )


if __name__ == "__main__":
    main()
