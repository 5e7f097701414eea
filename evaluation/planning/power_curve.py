"""The power curve of a plan (server-rendered SVG, like evaluation/analysis/figures.py). Pure: no
Django."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from evaluation.analysis.figures import _RC, _palette, _svg, matplotlib

CURVES = 5  # source counts drawn as curves; the table has them all


def power_curve_svg(grid: Mapping[str, Any], *, prefix: str = "power") -> str:
    """Power of the paired test against the number of participants, one curve per number of
    sources (up to CURVES of them, spread over the grid), with ±2 Monte Carlo standard errors
    and the target as a dashed line."""
    sources = grid["sources"]
    if len(sources) > CURVES:
        step = (len(sources) - 1) / (CURVES - 1)
        sources = [sources[round(i * step)] for i in range(CURVES)]
    cells = {(c["participants"], c["sources"]): c for c in grid["cells"]}
    target = grid["settings"]["target"]
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(7.0, 3.6), layout="constrained")
        axes = figure.subplots()
        for colour, n_sources in zip(_palette(len(sources)), sources, strict=True):
            xs = [p for p in grid["participants"] if (p, n_sources) in cells]
            ys = [cells[(p, n_sources)]["power"] for p in xs]
            errors = [2 * cells[(p, n_sources)]["power_se"] for p in xs]
            axes.errorbar(
                xs,
                ys,
                yerr=errors,
                color=colour,
                marker="o",
                markersize=3,
                capsize=2,
                label=f"{n_sources} sources",
            )
        axes.axhline(target, color="#444444", linestyle="--", linewidth=1)
        axes.text(
            grid["participants"][0], target, f" target {target:.0%}", va="bottom", fontsize=8, color="#444444"
        )
        axes.set_ylim(0, 1.02)
        axes.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        axes.set_xlabel("participants who complete")
        axes.set_ylabel("power")
        axes.set_title(
            f"Power to detect a difference of {grid['settings']['effect']:g} "
            f"({grid['settings']['outcome_label']})",
            loc="left",
            fontsize=10,
        )
        axes.legend(frameon=False, fontsize=8, loc="lower right")
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return _svg(figure, prefix)
