"""Server-rendered SVG figures from the analysis dict (matplotlib's object API with the SVG
backend: no pyplot state, no browser JavaScript, no CDN). Each function returns an SVG string
ready to inline in HTML: the XML prolog is dropped and element ids are prefixed per figure so
several figures can share one page.

Pure computation: no Django.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a GUI backend on a server

from matplotlib.figure import Figure  # noqa: E402

from annotation import scales  # noqa: E402
from evaluation.analysis.document import system_label  # noqa: E402

# Deterministic output (same analysis → same bytes) and real text instead of glyph paths.
_RC = {"svg.hashsalt": "radlay", "svg.fonttype": "none", "font.size": 9, "font.family": "sans-serif"}
# Colour-blind-safe sequential palettes (ColorBrewer), low → high.
_SEQUENTIAL = {
    2: ["#fdae61", "#2c7bb6"],
    3: ["#d7191c", "#fdae61", "#2c7bb6"],
    4: ["#d7191c", "#fdae61", "#abd9e9", "#2c7bb6"],
    5: ["#d7191c", "#fdae61", "#ffffbf", "#abd9e9", "#2c7bb6"],
}
_ID = re.compile(r'\bid="([^"]+)"')
# The pages' Content-Security-Policy (style-src 'self') drops style="" attributes and <style>
# elements, so the figures carry their styling as SVG presentation attributes instead: every
# property matplotlib's SVG backend writes into a style attribute has one of the same name.
_PRESENTATION = frozenset(
    {
        "fill",
        "fill-opacity",
        "font-family",
        "font-size",
        "font-stretch",
        "font-style",
        "font-variant",
        "font-weight",
        "opacity",
        "stop-color",
        "stop-opacity",
        "stroke",
        "stroke-dasharray",
        "stroke-dashoffset",
        "stroke-linecap",
        "stroke-linejoin",
        "stroke-opacity",
        "stroke-width",
        "text-anchor",
    }
)
_STYLE_ATTRIBUTE = re.compile(r'\bstyle="([^"]*)"')
# matplotlib's default for the whole figure; these two properties inherit from the root <svg>.
_DEFAULT_STYLE = re.compile(
    r'\s*<style type="text/css">\*\{stroke-linejoin: round; stroke-linecap: butt\}</style>'
)


# Drawings kept by what they draw: a snapshot recomputed after one new answer redraws only the
# figures whose data changed (a layperson's answer leaves every radiologist figure as it was).
# The output is deterministic (_RC), so a kept drawing is the bytes a new one would be.
_DRAWN: OrderedDict[tuple[str, str], str] = OrderedDict()
DRAWN_KEPT = 64  # about 30 KB each


def _drawn_once(draw: Callable[..., str]) -> Callable[..., str]:
    """`draw` (JSON-able arguments → SVG) is run once per distinct arguments among the last
    DRAWN_KEPT drawings of this process; order matters (a mapping's order is its drawing order)."""

    @functools.wraps(draw)
    def kept(*args: Any, **kwargs: Any) -> str:
        key = (draw.__name__, json.dumps([args, kwargs], default=repr))
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
            return _DRAWN[key]
        svg = _DRAWN[key] = draw(*args, **kwargs)
        while len(_DRAWN) > DRAWN_KEPT:
            _DRAWN.popitem(last=False)
        return svg

    return kept


def drawn_forget() -> None:
    """Forget every kept drawing (the next call draws anew)."""
    _DRAWN.clear()


def _palette(n: int) -> list[str]:
    if n in _SEQUENTIAL:
        return _SEQUENTIAL[n]
    cmap = matplotlib.colormaps["viridis"]
    return [matplotlib.colors.to_hex(cmap(i / max(n - 1, 1))) for i in range(n)]


def _svg(figure: Figure, prefix: str) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    ids = set(_ID.findall(text))
    for old in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{old}"
        text = (
            text.replace(f'id="{old}"', f'id="{new}"')
            .replace(f"#{old})", f"#{new})")
            .replace(f'href="#{old}"', f'href="#{new}"')
        )
    return _without_css(text).replace(
        "<svg ",
        f'<svg role="img" aria-label="{prefix}" stroke-linejoin="round" stroke-linecap="butt" ',
        1,
    )


def _presentation_attributes(match: re.Match[str]) -> str:
    # matplotlib joins the declarations with "; " and XML-escapes the whole attribute, so the
    # values can go into attributes of their own as they are.
    attributes = []
    for declaration in match.group(1).split("; "):
        name, _, value = declaration.partition(":")
        name, value = name.strip(), value.strip().rstrip(";")
        if name not in _PRESENTATION:
            raise ValueError(
                f"matplotlib wrote the style property {name!r}, which has no SVG presentation attribute"
            )
        attributes.append(f'{name}="{value}"')
    return " ".join(attributes)


def _without_css(text: str) -> str:
    text, defaults = _DEFAULT_STYLE.subn("", text)
    if defaults != 1 or "<style" in text:
        raise ValueError("matplotlib's SVG has a <style> element other than its usual default")
    return _STYLE_ATTRIBUTE.sub(_presentation_attributes, text)


@_drawn_once
def stacked_shares_svg(
    counts: Mapping[str, Mapping[str, int]],
    *,
    levels: Sequence[str],
    title: str,
    labels: Mapping[str, str] | None = None,
    prefix: str = "fig",
    xlabel: str = "share of answers",
) -> str:
    """Horizontal 100% stacked bars: one bar per row of `counts` (row → level → count), one
    segment per level in `levels` order. Rows with no answers are drawn empty and marked n = 0."""
    rows = list(counts)
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(7.0, 0.42 * max(len(rows), 1) + 1.4), layout="constrained")
        axes = figure.subplots()
        colours = _palette(len(levels))
        left = [0.0] * len(rows)
        totals = [sum(counts[row].get(level, 0) for level in levels) for row in rows]
        for index, level in enumerate(levels):
            shares = [
                counts[row].get(level, 0) / total if total else 0.0
                for row, total in zip(rows, totals, strict=True)
            ]
            axes.barh(
                range(len(rows)), shares, left=left, color=colours[index], edgecolor="white", label=level
            )
            for y, (share, start) in enumerate(zip(shares, left, strict=True)):
                if share >= 0.08:
                    axes.text(
                        start + share / 2,
                        y,
                        f"{share:.0%}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="black" if colours[index] in ("#ffffbf", "#abd9e9", "#fdae61") else "white",
                    )
            left = [a + b for a, b in zip(left, shares, strict=True)]
        names = [(labels or {}).get(row, row) for row in rows]
        axes.set_yticks(
            range(len(rows)), [f"{name} (n={total})" for name, total in zip(names, totals, strict=True)]
        )
        axes.invert_yaxis()
        axes.set_xlim(0, 1)
        axes.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        axes.set_xlabel(xlabel)
        axes.set_title(title, loc="left", fontsize=10)
        figure.legend(ncol=min(len(levels), 5), loc="outside lower center", frameon=False, fontsize=8)
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return _svg(figure, prefix)


def confidence_svg(analysis: Mapping[str, Any]) -> str:
    """Figure 3: the distribution of Q2 confidence for the original and each system."""
    counts = analysis["distributions"]["confidence"]
    return stacked_shares_svg(
        counts,
        levels=scales.CONFIDENCE.names,
        title="Q2 confidence (panel 1 = original, panel 2 = each system)",
        labels={key: system_label(analysis, key) for key in counts},
        prefix="fig3-confidence",
    )


def votes_svg(analysis: Mapping[str, Any]) -> str:
    """Figure 4: per system, how many sources got 0, 1, 2, … voters choosing it as most (left) and
    least (right) preferred, as horizontal stacked bars (the protocol's Figure 4)."""
    votes = analysis["distributions"]["votes"]
    systems = list(votes.get("most", {}))
    return _votes_drawing(votes, {s: system_label(analysis, s) for s in systems})


@_drawn_once
def _votes_drawing(votes: Mapping[str, Mapping[str, Mapping[str, int]]], labels: Mapping[str, str]) -> str:
    with matplotlib.rc_context(_RC):
        systems = list(votes.get("most", {}))
        figure = Figure(figsize=(8.0, 0.45 * max(len(systems), 1) + 1.8), layout="constrained")
        panels = figure.subplots(1, 2, sharey=True)
        for axes, side in zip(panels, ("most", "least"), strict=True):
            per_system = votes.get(side, {})
            ks = sorted({int(k) for counts in per_system.values() for k in counts})
            colours = _palette(len(ks)) if ks else []
            left = [0] * len(systems)
            for index, k in enumerate(ks):
                widths = [per_system[s].get(str(k), 0) for s in systems]
                axes.barh(
                    range(len(systems)),
                    widths,
                    left=left,
                    color=colours[index],
                    edgecolor="white",
                    label=f"{k}",
                )
                left = [a + b for a, b in zip(left, widths, strict=True)]
            axes.set_yticks(range(len(systems)), [labels[s] for s in systems])
            axes.set_title(f"{side} preferred", loc="left", fontsize=10)
            axes.set_xlabel("sources")
            for spine in ("top", "right"):
                axes.spines[spine].set_visible(False)
        panels[0].invert_yaxis()
        handles, names = panels[0].get_legend_handles_labels()
        figure.legend(
            handles,
            names,
            title="voters per source",
            ncol=min(len(names), 10),
            loc="outside lower center",
            frameon=False,
            fontsize=8,
            title_fontsize=8,
        )
    return _svg(figure, "fig4-votes")


def severity_svg(analysis: Mapping[str, Any]) -> str:
    """Bar chart of the reference severities of the sources."""
    return _severity_drawing(analysis["severity_distribution"])


@_drawn_once
def _severity_drawing(distribution: Mapping[str, int]) -> str:
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(5.0, 2.4), layout="constrained")
        axes = figure.subplots()
        names = list(distribution)
        bars = axes.bar(names, [distribution[n] for n in names], color=_palette(len(names)))
        axes.bar_label(bars, fontsize=8)
        axes.set_ylabel("sources")
        axes.set_title("Reference severity (radiologist)", loc="left", fontsize=10)
        for spine in ("top", "right"):
            axes.spines[spine].set_visible(False)
    return _svg(figure, "severity")


def likert_svgs(analysis: Mapping[str, Any]) -> dict[str, str]:
    """One stacked-share figure per radiologist aspect and per lay question."""
    figures = {}
    for aspect, counts in analysis["distributions"]["expert"].items():
        if not any(sum(c.values()) for c in counts.values()):
            continue
        figures[f"expert_{aspect}"] = stacked_shares_svg(
            counts,
            levels=scales.LIKERT.names,
            title=f"Radiologists: {aspect}",
            labels={k: system_label(analysis, k) for k in counts},
            prefix=f"likert-expert-{aspect}",
        )
    for question, counts in analysis["distributions"]["lay"].items():
        if not any(sum(c.values()) for c in counts.values()):
            continue
        figures[f"lay_{question}"] = stacked_shares_svg(
            counts,
            levels=scales.LAY_SCALES[question].names,
            title=f"Laypeople: {question.replace('_', ' ')}",
            labels={k: system_label(analysis, k) for k in counts},
            prefix=f"likert-lay-{question}",
        )
    return figures


# The per-system means drawn with their intervals, in the order of Table 1, with their panel titles.
MEANS_PANELS: dict[str, str] = {
    "understanding": "Q1 understanding (1–4)",
    "understanding_gain": "Comprehension gain (panel 2 − panel 1)",
    "severity_accuracy": "Q3 severity accuracy",
    **{f"expert_{aspect}": f"Radiologists: {aspect} (1–5)" for aspect in scales.EXPERT_ASPECTS},
}


def system_means_svg(analysis: Mapping[str, Any]) -> str:
    """Per-system means with their crossed-design intervals (analysis["system_means"]): one small
    panel per measure, a point and a horizontal interval per system. Empty when nothing is rated."""
    means = analysis.get("system_means", {})
    panels = [
        (name, title)
        for name, title in MEANS_PANELS.items()
        if any(record.get("mean") is not None for record in means.get(name, {}).values())
    ]
    if not panels:
        return ""
    systems = list(analysis["systems"])
    drawn = {name: means.get(name, {}) for name, _ in panels}
    return _means_drawing(drawn, panels, systems, [system_label(analysis, s) for s in systems])


@_drawn_once
def _means_drawing(
    means: Mapping[str, Mapping[str, Mapping[str, Any]]],
    panels: Sequence[tuple[str, str]],
    systems: Sequence[str],
    labels: Sequence[str],
) -> str:
    columns = 2
    rows = -(-len(panels) // columns)
    with matplotlib.rc_context(_RC):
        height = max(len(systems), 1) * 0.28 + 0.9
        figure = Figure(figsize=(7.0, rows * height + 0.3), layout="constrained")
        grid = figure.subplots(rows, columns, squeeze=False)
        for index, (name, title) in enumerate(panels):
            axes = grid[index // columns][index % columns]
            for position, system in enumerate(systems):
                record = means.get(name, {}).get(system, {})
                if record.get("mean") is None:
                    continue
                y = len(systems) - 1 - position
                if record.get("low") is not None and record.get("high") is not None:
                    axes.hlines(y, record["low"], record["high"], color="#2c7bb6", linewidth=2)
                axes.plot([record["mean"]], [y], "o", color="#d7191c", markersize=4)
            axes.set_yticks(range(len(systems)), labels[::-1])
            axes.set_ylim(-0.6, len(systems) - 0.4)
            axes.set_title(title, fontsize=9)
            axes.grid(axis="x", color="#dddddd", linewidth=0.5)
        for index in range(len(panels), rows * columns):
            grid[index // columns][index % columns].set_visible(False)
    return _svg(figure, "system-means")


def all_svgs(analysis: Mapping[str, Any]) -> dict[str, str]:
    """Every figure of the dashboard and report, by name."""
    return {
        "system_means": system_means_svg(analysis),
        "confidence": confidence_svg(analysis),
        "votes": votes_svg(analysis),
        "severity": severity_svg(analysis),
        **likert_svgs(analysis),
    }
