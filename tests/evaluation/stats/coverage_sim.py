"""Simulated Latin-square studies for the coverage tests of evaluation/stats/crossed.py."""

from __future__ import annotations

import numpy as np
from scipy import stats

from evaluation.stats.crossed import group_intervals_batch

EFFECTS = np.array([0.0, 0.3, -0.2, 0.1])
SD_PARTICIPANT, SD_SOURCE, SD_RESIDUAL = 0.5, 0.5, 0.6


def latin_square(n_participants: int, n_sources: int, n_systems: int = 4):
    rows = np.repeat(np.arange(n_participants), n_sources)
    columns = np.tile(np.arange(n_sources), n_participants)
    return rows, columns, (rows + columns) % n_systems


def latent(rng, reps, rows, columns, systems, *, residual_sd=SD_RESIDUAL, interaction_var=0.0):
    n_p, n_s, n_k = rows.max() + 1, columns.max() + 1, systems.max() + 1
    u = rng.normal(0, SD_PARTICIPANT, (reps, n_p))[:, rows]
    v = rng.normal(0, SD_SOURCE, (reps, n_s))[:, columns]
    sd = np.broadcast_to(np.asarray(residual_sd, dtype=np.float64), (n_k,))[systems]
    e = rng.normal(0, 1, (reps, rows.size)) * sd
    y = u + v + e
    if interaction_var:
        y += rng.normal(0, np.sqrt(interaction_var), (reps, n_p * n_k))[:, rows * n_k + systems]
    return y


def total_sd(residual_sd, interaction_var=0.0):
    return np.sqrt(SD_PARTICIPANT**2 + SD_SOURCE**2 + np.asarray(residual_sd) ** 2 + interaction_var)


def rounded_mean(mu, sd, levels):
    """E[clip(round(X))] for X ~ N(mu, sd²) on the integer levels."""
    cuts = np.concatenate([[-np.inf], np.asarray(levels[:-1]) + 0.5, [np.inf]])
    p = np.diff(stats.norm.cdf((cuts - mu) / sd))
    return p


def coverage(values, rows, columns, systems, true_means, bounds=None):
    """(share of system means covered, share of differences covered, widths ok)."""
    means, differences = group_intervals_batch(values, rows, columns, systems, bounds=bounds)
    mean_hits = [(ci.low <= true_means[k] <= ci.high) for k, cis in means.items() for ci in cis]
    diff_hits = [
        (ci.low <= true_means[a] - true_means[b] <= ci.high)
        for (a, b), cis in differences.items()
        for ci in cis
    ]
    return float(np.mean(mean_hits)), float(np.mean(diff_hits))
