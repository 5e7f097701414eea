"""Bootstrap statistics: radlay's vectorised, chunked paths vs straightforward references.

    .venv/bin/python bench/bootstrap.py           # everything (about a minute on 2 cores)
    .venv/bin/python bench/bootstrap.py --quick   # n=160 correlations, smaller mean sample

1. `correlate` (one method at a time, 1000 paired resamples, 95 % percentile interval) on a
   continuous metric against mean Likert answers, n = 160 (a study's simplifications) and
   n = 2000. References, in the same run on the same data:
   - loop: one scipy.stats.pearsonr/spearmanr/kendalltau call per resample, drawn from the same
     seeded index matrix, then the percentile interval (its interval must equal radlay's to 1e-12,
     checked here);
   - scipy.stats.bootstrap with the non-vectorised statistic (what `correlate` did before; its
     resamples differ, so only its time is compared).
2. `bootstrap_mean_ci`, 2000 resamples, on 400 000 values: Likert answers (multinomial path) and
   continuous values (chunked index path): wall time and tracemalloc peak. Reference: resampling
   the whole (resamples × n) index matrix at once, measured on a smaller n (`--reference-n`) and
   scaled linearly in n to 400 000 (both its time and memory are proportional to n).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measures.stats.correlation import correlate  # noqa: E402
from measures.stats.intervals import bootstrap_ci, bootstrap_mean_ci  # noqa: E402

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
RESAMPLES = 1000
MEAN_RESAMPLES = 2000


def best_time(function, repeat: int) -> tuple[object, float]:
    best, value = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - started)
    return value, best


def peak_memory(function) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def study_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    metric = rng.normal(10, 3, size=n)
    answers = np.clip(np.round(3 + 0.3 * (metric[:, np.newaxis] - 10) + rng.normal(size=(n, 3))), 1, 5)
    return metric, answers.mean(axis=1)


def loop_interval(name: str, x: np.ndarray, y: np.ndarray, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    replicates = np.empty(RESAMPLES)
    for b in range(RESAMPLES):
        rows = rng.integers(0, x.size, size=x.size)
        replicates[b] = SCIPY[name](x[rows], y[rows]).statistic
    finite = replicates[~np.isnan(replicates)]
    low, high = np.quantile(finite, [0.025, 0.975])
    return float(low), float(high)


def scipy_bootstrap_interval(name: str, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    def statistic(u: np.ndarray, v: np.ndarray) -> float:
        return float(SCIPY[name](u, v).statistic)

    _, low, high = bootstrap_ci(statistic, x, y, paired=True, n_resamples=RESAMPLES, seed=0)
    return low, high


def bench_correlations(sizes: tuple[int, ...]) -> None:
    print(f"1. correlate: one method, {RESAMPLES} paired resamples (best of repeats, seconds)")
    print(
        f"{'n':>6} {'method':>9} {'radlay':>9} {'loop':>9} {'ratio':>7} {'scipy.bootstrap':>16} {'ratio':>7}"
    )
    warnings.simplefilter("ignore", stats.ConstantInputWarning)
    for n in sizes:
        x, y = study_like(n)
        for name in SCIPY:
            (record,), fast = best_time(
                partial(correlate, x, y, method_names=(name,), n_resamples=RESAMPLES), 5
            )
            (low, high), loop = best_time(partial(loop_interval, name, x, y), 1)
            if abs(record["ci_low"] - low) > 1e-12 or abs(record["ci_high"] - high) > 1e-12:
                raise SystemExit(
                    f"{name} n={n}: radlay {record['ci_low'], record['ci_high']} != loop {low, high}"
                )
            _, old = best_time(partial(scipy_bootstrap_interval, name, x, y), 1)
            ratios = f"{loop:>9.3f} {loop / fast:>6.0f}x {old:>16.3f} {old / fast:>6.0f}x"
            print(f"{n:>6} {name:>9} {fast:>9.4f} {ratios}")
        _, together = best_time(partial(correlate, x, y, n_resamples=RESAMPLES), 3)
        print(f"{n:>6} {'all 3':>9} {together:>9.4f}   (one correlate call, shared resamples)")
    print("   intervals equal the loop reference to 1e-12 (checked).")


def full_array_mean_replicates(values: np.ndarray) -> np.ndarray:
    """The reference: the whole index matrix at once (what scipy.stats.bootstrap does unbatched)."""
    indices = np.random.default_rng(0).integers(0, values.size, size=(MEAN_RESAMPLES, values.size))
    return values[indices].mean(axis=1)


def bench_means(n: int, reference_n: int) -> None:
    print(f"\n2. bootstrap_mean_ci: {MEAN_RESAMPLES} resamples (time: best of repeats; peak: tracemalloc)")
    rng = np.random.default_rng(1)
    samples = {
        "Likert 1-5 (multinomial)": rng.integers(1, 6, size=n).astype(np.float64),
        "continuous (index chunks)": rng.gamma(2.0, 3.0, size=n),
    }
    scale = n / reference_n
    reference = samples["continuous (index chunks)"][:reference_n]
    _, ref_seconds = best_time(partial(full_array_mean_replicates, reference), 1)
    ref_peak = peak_memory(partial(full_array_mean_replicates, reference))
    print(
        f"   reference, whole index matrix, n={reference_n}: {ref_seconds:.2f} s,"
        f" peak {ref_peak / 2**20:.0f} MB"
        f" -> scaled to n={n}: {ref_seconds * scale:.1f} s, {ref_peak * scale / 2**20:.0f} MB"
    )
    for label, values in samples.items():
        repeat = 3 if label.startswith("Likert") else 1
        run = partial(bootstrap_mean_ci, values, n_resamples=MEAN_RESAMPLES)
        _, seconds = best_time(run, repeat)
        peak = peak_memory(run)
        print(
            f"   radlay, {label:<26} n={n}: {seconds:7.3f} s, peak {peak / 2**20:6.1f} MB"
            f"  (vs scaled reference: {ref_seconds * scale / seconds:6.1f}x faster,"
            f" {ref_peak * scale / peak:6.1f}x less memory)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n=160 correlations only, 100 000 mean values")
    parser.add_argument("--mean-n", type=int, default=400_000)
    parser.add_argument("--reference-n", type=int, default=50_000)
    args = parser.parse_args()
    bench_correlations((160,) if args.quick else (160, 2000))
    bench_means(
        100_000 if args.quick else args.mean_n,
        min(args.reference_n, 20_000 if args.quick else args.reference_n),
    )


if __name__ == "__main__":
    main()
