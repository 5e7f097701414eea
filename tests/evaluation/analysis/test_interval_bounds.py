"""Every interval radlay reports lies inside its quantity's support and contains its estimate
(docs/analysis/intervals.md): a property over random small designs, walking EVERY interval of the
analysis output — the protocol's tables (a study saved through the survey's services and analysed
as the snapshot task does, with the pairwise ranking derived from the lay preferences), instrument
items, error spans, planted controls, the pairwise rankings, judge–human agreement and the
planner's variance components.

The walker knows the shapes an interval takes in the documents (``SHAPES``); a key named like an
interval's end that is not one of them fails the test, so a new interval producer cannot slip past
it without declaring its support.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import participant_services, scales
from annotation.models import Participant, SimplificationText
from evaluation import services as evaluation_services
from evaluation.analysis.error_spans import SPAN_COLUMNS, span_analysis
from evaluation.analysis.instrument_items import ANSWER_COLUMNS, instrument_items_analysis
from evaluation.planning.variance import estimate_components
from instruments.validation import instrument_from_yaml
from judging.agreement import paired_agreement
from measures.stats.pairwise import Comparison, pairwise_summary
from measures.stats.rater_reliability import ControlScore, rater_reliability
from measures.stats.span_agreement import Span
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study, lay_item_of
from tests.evaluation.analysis.test_partial_answers import FAST, PANEL_ONE, PANEL_TWO

# The low end's key -> (the high end's key, the support's key, the keys an estimate may have).
SHAPES = {
    "low": ("high", "support", ("mean", "difference", "estimate", "share", "strength", "coefficient")),
    "plain_low": ("plain_high", "plain_support", ("plain_strength",)),
    "ci_low": ("ci_high", "support", ("r",)),
    "win_rate_low": ("win_rate_high", "win_rate_support", ("win_rate",)),
}
PRESETS = Path(__file__).resolve().parents[3] / "instruments" / "presets"


def intervals(node, path: str = "$"):
    """(path, estimate, low, high, support) of every interval in a JSON-like document."""
    if isinstance(node, dict):
        if "interval_support" in node:  # the planner's variance components
            for name, (low, high) in node["intervals"].items():
                yield f"{path}.intervals.{name}", node[name], low, high, node["interval_support"]
        for key in node:
            if isinstance(key, str) and (key == "low" or key.endswith("_low")):
                assert key in SHAPES, f"{path}.{key}: an interval of a shape the walker does not know"
        for low_key, (high_key, support_key, estimate_keys) in SHAPES.items():
            if low_key in node:
                assert high_key in node, f"{path}: {low_key} without {high_key}"
                assert support_key in node, f"{path}: an interval without its support ({support_key})"
                (estimate_key,) = [k for k in estimate_keys if k in node]
                yield path, node[estimate_key], node[low_key], node[high_key], node[support_key]
        for key, value in node.items():
            yield from intervals(value, f"{path}.{key}")
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from intervals(value, f"{path}[{i}]")


def check(document) -> int:
    """Assert the bounds of every interval of `document`; the number with both ends."""
    computed = 0
    for path, estimate, low, high, support in intervals(document):
        lowest = -math.inf if support[0] is None else support[0]
        highest = math.inf if support[1] is None else support[1]
        assert lowest <= highest, path
        if estimate is not None:
            assert lowest <= estimate <= highest, f"{path}: estimate {estimate} outside {support}"
        if low is None or high is None:
            assert low is None and high is None, f"{path}: one end only [{low}, {high}]"
            continue
        computed += 1
        assert estimate is not None, f"{path}: an interval without its estimate"
        assert all(math.isfinite(v) for v in (low, high)), f"{path}: [{low}, {high}]"
        assert low <= estimate + 1e-12 and estimate <= high + 1e-12, (
            f"{path}: {estimate} not in [{low}, {high}]"
        )
        assert lowest <= low and high <= highest, f"{path}: [{low}, {high}] outside {support}"
    return computed


# --- random small designs of every producer (pure computation) ------------------------------------

designs = st.fixed_dictionaries(
    {
        "raters": st.integers(1, 5),
        "sources": st.integers(2, 7),
        "systems": st.integers(1, 3),
        "seed": st.integers(0, 2**16),
        "answered": st.floats(0.3, 1.0),
        "skew": st.sampled_from([0.02, 0.2, 1.0, 3.0]),  # how often spans/counts occur, how lopsided
    }
)


def _cells(design):
    """(rater, source, system) of every answer the design keeps: each rater sees every source's
    text of each system, a share `answered` of them answered."""
    rng = np.random.default_rng(design["seed"])
    cells = [
        (r, s, k)
        for r in range(design["raters"])
        for s in range(design["sources"])
        for k in range(design["systems"])
        if rng.random() < design["answered"]
    ]
    return rng, cells


def _instrument_answers(design, instruments) -> pd.DataFrame:
    rng, cells = _cells(design)
    rows = []
    for key, version in instruments:
        instrument = instruments[(key, version)]
        for item in instrument.items:
            for r, s, k in cells:
                if item.kind.value == "ordinal":
                    value = int(rng.integers(1, 6)) if design["skew"] >= 0.2 else 5
                elif item.kind.value == "count":
                    value = int(rng.poisson(design["skew"]))
                else:
                    continue
                role = "judge:run1" if r == design["raters"] - 1 and design["raters"] > 2 else "radiologist"
                rows.append(
                    (f"P{r}", role, "en", key, version, "s", item.key, f"s{s}")
                    + (float(100 * s + k), float(1000 + s), (f"sys{k}",), value, float(value))
                )
    return pd.DataFrame(rows, columns=list(ANSWER_COLUMNS))


def _span_frame(design) -> pd.DataFrame:
    rng, cells = _cells(design)
    categories, severities = ["omitted_finding", "unexplained_jargon"], ["minor", "could_harm"]
    rows = []
    for r, s, k in cells:
        spans = tuple(
            Span(4 * j, 4 * j + 3, str(rng.choice(categories)), str(rng.choice(severities)))
            for j in range(int(rng.poisson(design["skew"])))
        )
        rows.append(
            (f"P{r}", "radiologist", f"s{s}", 100 * s + k, (f"sys{k}",), int(rng.integers(5, 40)), spans)
        )
    return pd.DataFrame(rows, columns=list(SPAN_COLUMNS))


def _comparisons(design) -> list[Comparison]:
    rng, _ = _cells(design)
    systems = [f"sys{k}" for k in range(max(design["systems"], 2) + 1)]
    out = []
    for r in range(design["raters"]):
        for s in range(design["sources"]):
            i, j = rng.choice(len(systems), 2, replace=False)
            u = rng.random()
            # skew 0.02: the first system always wins (a system that never wins; rates at 0 and 1)
            outcome = (
                ("left" if i < j else "right")
                if design["skew"] < 0.1
                else "tie"
                if u < 0.1
                else "neither"
                if u < 0.15
                else ("left" if rng.random() < 0.5 else "right")
            )
            lengths = (float(rng.integers(10, 60)), float(rng.integers(10, 60)))
            out.append(Comparison(r, s, systems[i], systems[j], outcome, *lengths))
    return out


def _producers(design) -> dict:
    """Each pure producer's output for one random design."""
    instruments = {
        (name, 1): instrument_from_yaml((PRESETS / f"{name}.yaml").read_text())
        for name in ("medlaybench_002", "layman_rrg_000_expert")
    }
    answers = _instrument_answers(design, instruments)
    outputs: dict = {
        "instrument_items": instrument_items_analysis(
            answers,
            instruments,
            systems=[f"sys{k}" for k in range(design["systems"])],
            correlations=False,
        )
    }
    spans = _span_frame(design)
    if len(spans):
        outputs["error_spans"] = span_analysis(
            spans,
            categories=["omitted_finding", "unexplained_jargon"],
            severities=["minor", "could_harm"],
        )
    comparisons = _comparisons(design)
    outputs["pairwise"] = pairwise_summary(comparisons, comparisons[: len(comparisons) // 2])
    rng = np.random.default_rng(design["seed"] + 1)
    n = design["sources"] * 2
    human = rng.integers(1, 6, n).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, n) * (design["skew"] > 0.1), 1, 5)
    outputs["judges"] = paired_agreement(judge, human, [i // 2 for i in range(n)], n_resamples=50)
    controls = [
        ControlScore(rater=r, pair=(s, k), planted=planted, score=float(rng.integers(1, 6)))
        for r in range(design["raters"])
        for s in range(design["sources"])
        for k in range(2)
        for planted in (False, True)
    ]
    outputs["controls"] = rater_reliability(controls, min_planted=2)
    _, cells = _cells(design)
    frame = pd.DataFrame(
        [(f"P{r}", f"s{s}", f"sys{k}", float(rng.integers(1, 6))) for r, s, k in cells],
        columns=["participant", "source", "system", "value"],
    )
    if frame["participant"].nunique() >= 2 and frame["source"].nunique() >= 2:
        try:
            outputs["planner"] = estimate_components(frame, method="moments", n_resamples=30).as_dict()
        except ValueError as error:  # a design whose components the moments cannot separate
            assert "at least two participants" in str(error)
    return outputs


# About 1–3 s an example on two busy cores (the pairwise rankings and the judge bootstrap most).
@pytest.mark.heavy
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(design=designs)
def test_every_interval_of_every_producer_is_inside_its_support(design):
    check(_producers(design))


@pytest.mark.heavy
def test_the_walker_sees_computed_intervals_of_every_producer():
    # A design large enough for every interval: the property above is not vacuous.
    design = {"raters": 5, "sources": 7, "systems": 2, "seed": 3, "answered": 1.0, "skew": 1.0}
    outputs = _producers(design)
    for section in ("instrument_items", "error_spans", "pairwise", "judges", "planner"):
        assert check(outputs[section]) > 0, section
    assert check(outputs["controls"]) == 0  # the controls report no interval
    # A category nobody marked, a count item, a win rate at 0: inside their supports, not [0, 0].
    rare = _producers({**design, "skew": 0.02})
    check(rare)
    for section in ("instrument_items", "error_spans", "pairwise"):
        assert not any(low == high == 0 for _, _, low, high, _ in intervals(rare[section])), section


def test_the_walker_refuses_an_interval_without_its_support():
    with pytest.raises(AssertionError, match="without its support"):
        check({"x": {"mean": 0.5, "low": -1.0, "high": 2.0}})
    with pytest.raises(AssertionError, match="does not know"):
        check({"x": {"value": 0.5, "lower_low": 0.0}})
    with pytest.raises(AssertionError, match="outside"):
        check({"x": {"mean": 0.5, "low": -0.1, "high": 0.9, "support": [0.0, 1.0]}})


# --- the protocol's analysis of a saved study -------------------------------------------------------


def _answers(data, questions) -> dict[str, str]:
    return {q: data.draw(st.sampled_from(scales.LAY_SCALES[q].names)) for q in questions}


@pytest.mark.heavy
@pytest.mark.django_db
@settings(
    max_examples=3,  # about 9 s an example on two busy cores
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_interval_of_a_protocol_study_is_inside_its_support(data):
    n_sources = data.draw(st.integers(5, 6))
    with transaction.atomic():
        study = build_study(slug="bounds", n_sources=n_sources, systems=("a", "b"))
        sources = list(study.sources.order_by("position"))
        systems = list(study.systems.order_by("position"))
        for p in range(3):
            person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
            for i, source in enumerate(sources):
                item = lay_item_of(person, source, systems[(p + i) % 2], position=i)
                lay_answers.lay_answer_save(item=item, phase="original", answers=_answers(data, PANEL_ONE))
                lay_answers.lay_item_lock_original(item=item)
                lay_answers.lay_answer_save(item=item, phase="assisted", answers=_answers(data, PANEL_TWO))
                order = list(item.preference_order)
                most = data.draw(st.lists(st.sampled_from(order), max_size=1))
                least = data.draw(st.lists(st.sampled_from(order), max_size=1))
                lay_answers.lay_preference_save(item=item, most=most, least=least)
        for _ in range(3):
            radiologist = participant_services.participant_create(
                study=study, role=Participant.Role.RADIOLOGIST
            )
            for i, source in enumerate(sources):
                expert_answers.expert_item_create(participant=radiologist, source=source, position=i)
                for text in SimplificationText.objects.filter(source=source).order_by("pk"):
                    scores = {a: data.draw(st.integers(1, 5)) for a in scales.EXPERT_ASPECTS}
                    expert_answers.expert_rating_save(participant=radiologist, shown_text=text, scores=scores)
                expert_answers.expert_source_judgement_save(
                    participant=radiologist,
                    source=source,
                    severity=data.draw(st.sampled_from(scales.SEVERITY.names)),
                    simplicity=data.draw(st.integers(1, 5)),
                )
        analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
        transaction.set_rollback(True)
    assert check(analysis) > 0
    # Three radiologists' ratings: the adjudication section's shares have their intervals.
    assert check(analysis["adjudication"]) > 0
