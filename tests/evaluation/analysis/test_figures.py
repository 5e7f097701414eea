"""SVG figures: well-formed, inline-safe (unique ids), deterministic, drawing the analysis' counts."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET

import pytest

from evaluation.analysis import figures as figure_svgs
from tests.evaluation.analysis.test_analysis import FAST, make_frames


@pytest.fixture(scope="module")
def analysis():
    from evaluation.analysis.study import study_analysis

    return study_analysis(make_frames(), options=FAST)


def test_every_figure_is_well_formed_svg(analysis):
    figures = figure_svgs.all_svgs(analysis)
    assert {"confidence", "votes", "severity", "expert_correctness", "lay_understanding"} <= set(figures)
    for name, svg in figures.items():
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg"), name
        assert not svg.startswith("<?xml")


def test_ids_do_not_collide_between_figures_on_one_page(analysis):
    figures = figure_svgs.all_svgs(analysis)
    seen: dict[str, str] = {}
    for name, svg in figures.items():
        for element_id in re.findall(r'\bid="([^"]+)"', svg):
            assert element_id not in seen, f"{element_id} in {name} and {seen.get(element_id)}"
            seen[element_id] = name
        # every internal reference points at an id of the same figure
        for ref in re.findall(r"url\(#([^)]+)\)", svg):
            assert seen.get(ref) == name


def test_figures_are_deterministic(analysis):
    first = figure_svgs.confidence_svg(analysis)
    figure_svgs.drawn_forget()  # drawn anew, not the kept drawing
    assert figure_svgs.confidence_svg(analysis) == first


def test_a_snapshot_after_one_new_answer_redraws_only_the_figure_it_changes(analysis, monkeypatch):
    from matplotlib.figure import Figure

    drawn = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: drawn.append(1) or savefig(self, *a, **k))
    figure_svgs.drawn_forget()
    before = figure_svgs.all_svgs(analysis)
    assert len(drawn) == len([svg for svg in before.values() if svg])
    drawn.clear()
    assert figure_svgs.all_svgs(analysis) == before and not drawn  # nothing changed: nothing drawn

    changed = copy.deepcopy(analysis)
    counts = changed["distributions"]["lay"]["understanding"]
    level = next(iter(counts[next(iter(counts))]))
    counts[next(iter(counts))][level] += 1
    after = figure_svgs.all_svgs(changed)
    assert len(drawn) == 1
    assert [name for name in after if after[name] != before[name]] == ["lay_understanding"]
    figure_svgs.drawn_forget()
    assert figure_svgs.all_svgs(changed) == after  # what was kept is what a new drawing gives


def test_the_kept_drawings_are_bounded(monkeypatch):
    monkeypatch.setattr(figure_svgs, "DRAWN_KEPT", 3)
    figure_svgs.drawn_forget()
    for n in range(5):
        figure_svgs.stacked_shares_svg({"a": {"low": n, "high": 1}}, levels=["low", "high"], title="T")
    assert len(figure_svgs._DRAWN) == 3


def test_stacked_shares_label_counts_and_levels():
    svg = figure_svgs.stacked_shares_svg(
        {"a": {"low": 1, "high": 3}, "b": {"low": 0, "high": 0}},
        levels=["low", "high"],
        title="T",
        labels={"a": "System A"},
        prefix="t",
    )
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "System A (n=4)" in texts and "b (n=0)" in texts
    assert "75%" in texts  # 3 of 4 answers "high"
    assert "low" in texts and "high" in texts


def test_votes_figure_names_every_system(analysis):
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", figure_svgs.votes_svg(analysis))
    for label in ("A", "B", "C", "most preferred", "least preferred"):
        assert label in texts


def test_system_means_figure_draws_each_system_and_measure(analysis):
    svg = figure_svgs.system_means_svg(analysis)
    assert svg.startswith("<svg")
    for label in ("A", "B", "C", "Q1 understanding", "Comprehension gain", "Radiologists: correctness"):
        assert f">{label}" in svg or label in svg, label
    # nothing rated: no figure
    empty = {**analysis, "system_means": {}}
    assert figure_svgs.system_means_svg(empty) == ""


def test_figures_carry_no_css_that_the_content_security_policy_would_drop(analysis):
    figures = figure_svgs.all_svgs(analysis)
    for name, svg in figures.items():
        assert not re.search(r"(?<![-\w])style\b", svg), name
        root = ET.fromstring(svg)
        assert root.get("stroke-linejoin") == "round" and root.get("stroke-linecap") == "butt"
    # The stacked bars keep their palette colours as fill attributes (high level: ColorBrewer blue).
    svg = figure_svgs.stacked_shares_svg(
        {"a": {"low": 1, "high": 3}}, levels=["low", "high"], title="T", prefix="colours"
    )
    assert 'fill="#2c7bb6"' in svg and 'fill="#fdae61"' in svg
    fills = {element.get("fill") for element in ET.fromstring(svg).iter()}
    assert {"#2c7bb6", "#fdae61"} <= fills


def test_the_power_curve_carries_no_css_either():
    from evaluation.planning.power_curve import power_curve_svg

    grid = {
        "sources": [10, 20],
        "participants": [5, 10],
        "cells": [
            {"participants": p, "sources": s, "power": p * s / 250, "power_se": 0.01}
            for p in (5, 10)
            for s in (10, 20)
        ],
        "settings": {"target": 0.8, "effect": 0.3, "outcome_label": "mean score"},
    }
    svg = power_curve_svg(grid, prefix="pw")
    assert not re.search(r"(?<![-\w])style\b", svg)
    root = ET.fromstring(svg)
    # The dashed target line keeps its dashes and the two curves their palette colours.
    assert any(element.get("stroke-dasharray") for element in root.iter())
    assert {"#fdae61", "#2c7bb6"} <= {element.get("stroke") for element in root.iter()}
