"""Adaptive allocation against the fixed Latin square, by simulation on the planner's model
(evaluation/planning/sequential.py): participants each policy needs to reach the target width of
the primary comparison, and the coverage of its closing 95 % interval.

    .venv/bin/python bench/adaptive_allocation.py            # 1,000 simulated studies per scenario
    .venv/bin/python bench/adaptive_allocation.py --quick    # 200

Fixed and adaptive studies of one seed share their simulated sources and participants (common
random numbers), so "saved" is a paired difference, with its standard error.

The second table is the comparison a team faces: a FIXED design planned up front (the fewest
participants at which the target width is reached in at least --assurance of the planner's
simulated studies, default the planner's 80 %; planned on draws independent of the evaluated
ones), recruited in full and read once, against the adaptive design that monitors and stops.
Per scenario: the planned N, the share of fixed studies that reach the target at N, the adaptive
design's mean / median / 90th percentile of participants, and each design's closing coverage.

Scenarios:

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
from evaluation.planning.sequential import plan_fixed, simulate_fixed, simulate_sequential  # noqa: E402

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
    parser.add_argument(
        "--assurance", type=float, default=None, help="share of planned fixed studies that reach the target"
    )
    args = parser.parse_args()
    n_studies = args.studies or (200 if args.quick else 1000)
    print(f"{n_studies} simulated studies per scenario, seed {args.seed}")
    header = (
        f"{'scenario':<20} {'fixed':>7} {'adaptive':>9} {'saved (± se)':>15} {'ratio':>6} "
        f"{'cover fixed':>12} {'cover adapt':>12} {'width f/a':>11} {'s':>5}"
    )
    print(header)
    planned = {}
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
        started = time.perf_counter()
        plan = plan_fixed(settings, n_studies=n_studies, seed=args.seed, assurance=args.assurance, **design)
        fixed_design = None
        if plan.participants is not None:
            fixed_design = simulate_fixed(
                settings,
                participants=plan.participants,
                n_studies=n_studies,
                seed=args.seed,
                n_sources=design["n_sources"],
                target_width=design["target_width"],
            )
        planned[name] = (plan, fixed_design, adaptive, time.perf_counter() - started)

    print()
    print("planned fixed design (assurance below) against the adaptive design that stops:")
    print(
        f"{'scenario':<20} {'fixed N':>7} {'plan share':>10} {'reach':>11} {'adapt mean':>10} "
        f"{'median':>6} {'p90':>5} {'saved (± se)':>14} {'cover fixed':>12} {'cover adapt':>12} {'s':>4}"
    )
    for name, (plan, fixed_design, adaptive, seconds) in planned.items():
        if fixed_design is None:
            print(f"{name:<20} not reached by the maximum at assurance {plan.assurance:.2f}")
            continue
        assert plan.participants is not None
        saved = plan.participants - adaptive.participants
        se = saved.std(ddof=1) / np.sqrt(saved.size)
        reach = fixed_design.reached.mean()
        reach_se = np.sqrt(reach * (1 - reach) / fixed_design.reached.size)
        print(
            f"{name:<20} {plan.participants:>7d} {plan.share:>4.3f}/{plan.assurance:.2f} "
            f"{reach:>5.3f}±{reach_se:.3f} {adaptive.mean_participants:>10.2f} "
            f"{np.median(adaptive.participants):>6.1f} {np.percentile(adaptive.participants, 90):>5.1f} "
            f"{saved.mean():>6.2f} ± {se:<5.2f} "
            f"{fixed_design.coverage:>7.3f}±{fixed_design.coverage_se:.3f} "
            f"{adaptive.coverage:>7.3f}±{adaptive.coverage_se:.3f} {seconds:>4.0f}"
        )


if __name__ == "__main__":
    main()
