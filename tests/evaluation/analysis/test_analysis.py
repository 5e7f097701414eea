"""evaluation/analysis/protocol.py on small hand-made frames: every expected figure is worked out by hand
here or computed with an independent library (scipy, krippendorff, sklearn, nltk, textstat)."""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import masi_distance
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from evaluation.analysis import protocol
from evaluation.analysis.correlations import correlations, human_measures_per_simplification
from evaluation.analysis.document import join_details, split_details
from evaluation.analysis.intervals import comparisons, confidence_intervals
from evaluation.analysis.metric_tables import (
    _metric_tables_computed,
    metric_tables,
    metrics_summary,
    readability_table,
)
from evaluation.analysis.study import study_analysis
from measures.stats.interval_methods import TOO_FEW
from tests.evaluation.document_keys import ANALYSIS_KEYS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import textstat

SYSTEMS = ["a", "b", "c"]
ASPECTS = ["correctness", "completeness", "hallucination", "structure", "simplicity"]
QUESTIONS = ["understanding", "confidence", "urgency_confidence", "severity_guess", "helpfulness"]
TEXTS = {
    # (source, system) -> (text id, text); s1's a and b share text 10.
    ("s1", "a"): (10, "The liver has a small fluid-filled sac. It is harmless."),
    ("s1", "b"): (10, "The liver has a small fluid-filled sac. It is harmless."),
    ("s1", "c"): (11, "A tiny cyst is seen in the liver, which is probably nothing to worry about at all."),
    ("s2", "a"): (20, "The kidneys are smaller than normal and have several simple cysts."),
    ("s2", "b"): (21, "Both kidneys have shrunk. There are some harmless cysts."),
    ("s2", "c"): (22, "Both of your kidneys look smaller than usual and contain several harmless cysts."),
}
TEXT_SYSTEMS = {10: ("a", "b"), 11: ("c",), 20: ("a",), 21: ("b",), 22: ("c",)}
REFERENCE = {"s1": 4.0, "s2": 2.0}


def lay_row(answer_id, item_id, participant, source, phase, text_id, u, c, g, h=np.nan):
    return {
        "answer_id": answer_id,
        "item_id": item_id,
        "participant": participant,
        "source": source,
        "phase": phase,
        "assigned_system": TEXT_SYSTEMS[text_id][0],
        "text_id": text_id,
        "systems": TEXT_SYSTEMS[text_id],
        "understanding": u,
        "confidence": c,
        "urgency_confidence": np.nan,
        "severity_guess": g,
        "helpfulness": h,
        "reference_severity": REFERENCE[source],
        "time_spent_ms": 0,
    }


def make_frames(*, radiologists: int = 1, preferences: list | None = None) -> protocol.StudyFrames:
    systems = pd.DataFrame(
        {
            "system": SYSTEMS,
            "label": [s.upper() for s in SYSTEMS],
            "position": [0, 1, 2],
            "is_reference": [False] * 3,
        }
    )
    sources = pd.DataFrame(
        {
            "source": ["s1", "s2"],
            "position": [0, 1],
            "text": [
                "Few subcentimeter hypodensities in the liver, too small to characterize.",
                "Atrophic kidneys bilaterally with multiple simple cysts.",
            ],
            "reference_severity": ["Mild", "Serious"],
            "metadata": [{}, {}],
            "reference_severity_value": [4.0, 2.0],
        }
    )
    simplifications = pd.DataFrame(
        [
            {
                "simplification_id": i,
                "source": src,
                "system": sys,
                "text_id": tid,
                "text": text,
                "flagged": False,
            }
            for i, ((src, sys), (tid, text)) in enumerate(TEXTS.items())
        ]
    )
    # Radiologist R1 rated every distinct text; R2 (optional) rated them too, slightly differently.
    base = {
        10: [5, 4, 5, 4, 3],
        11: [4, 4, 5, 5, 5],
        20: [5, 5, 5, 3, 2],
        21: [3, 4, 4, 4, 4],
        22: [5, 5, 4, 5, 5],
    }
    other = {
        10: [4, 4, 5, 4, 4],
        11: [4, 3, 5, 5, 4],
        20: [5, 4, 5, 3, 2],
        21: [2, 4, 3, 4, 5],
        22: [5, 5, 5, 4, 5],
    }
    rating_rows = []
    rating_id = 0
    for rater, scores in (("R1", base), ("R2", other))[:radiologists]:
        for text_id, values in scores.items():
            rating_id += 1
            source = "s1" if text_id < 20 else "s2"
            for system in TEXT_SYSTEMS[text_id]:
                rating_rows.append(
                    {
                        "rating_id": rating_id,
                        "participant": rater,
                        "text_id": text_id,
                        "source": source,
                        **dict(zip(ASPECTS, map(float, values), strict=True)),
                        "time_spent_ms": 0,
                        "system": system,
                    }
                )
    expert_ratings = pd.DataFrame(rating_rows)
    expert_judgements = pd.DataFrame(
        {
            "participant": ["R1", "R1"],
            "source": ["s1", "s2"],
            "severity": ["Mild", "Serious"],
            "simplicity": [2.0, 1.0],
            "severity_value": [4.0, 2.0],
        }
    )
    lay = pd.DataFrame(
        [
            # L1 saw text 10 (a+b) for s1 and text 21 (b) for s2; L2 saw 11 (c) and 20 (a).
            lay_row(1, 1, "L1", "s1", "original", 10, 1, 1, 5),
            lay_row(2, 1, "L1", "s1", "assisted", 10, 3, 2, 4, 2),
            lay_row(3, 2, "L1", "s2", "original", 21, 2, 2, 3),
            lay_row(4, 2, "L1", "s2", "assisted", 21, 4, 3, 2, 1),
            lay_row(5, 3, "L2", "s1", "original", 11, 1, 1, 4),
            lay_row(6, 3, "L2", "s1", "assisted", 11, 2, 3, 3, 0),
            lay_row(7, 4, "L2", "s2", "original", 20, 2, 3, 2),
            lay_row(8, 4, "L2", "s2", "assisted", 20, 3, 2, 2, -1),
        ]
    )
    prefs = (
        preferences
        if preferences is not None
        else [
            ("L1", "s1", {10}, {11}),
            ("L1", "s2", {22}, {20}),
            ("L2", "s1", {11}, {10}),
            ("L2", "s2", {22, 21}, {20}),
        ]
    )
    lay_preferences = pd.DataFrame(
        [
            {
                "preference_id": i,
                "item_id": i,
                "participant": p,
                "source": s,
                "most_texts": frozenset(m),
                "least_texts": frozenset(lst),
                "most": frozenset(x for t in m for x in TEXT_SYSTEMS[t]),
                "least": frozenset(x for t in lst for x in TEXT_SYSTEMS[t]),
            }
            for i, (p, s, m, lst) in enumerate(prefs)
        ],
        columns=[
            "preference_id",
            "item_id",
            "participant",
            "source",
            "most_texts",
            "least_texts",
            "most",
            "least",
        ],
    )
    return protocol.StudyFrames(
        study="hand",
        systems=systems,
        sources=sources,
        simplifications=simplifications,
        expert_ratings=expert_ratings,
        expert_judgements=expert_judgements,
        lay_answers=lay,
        lay_preferences=lay_preferences,
    )


FAST = protocol.AnalysisOptions(
    n_resamples=200, correlation_resamples=50, metric_families=("readability",), correlation_metrics=("fkgl",)
)


def test_lay_table_credits_a_shared_text_to_both_systems_and_uses_panel_one_for_the_original():
    table = protocol.lay_table(make_frames())
    # original: all four panel-1 answers. understanding 1,2,1,2; confidence 1,2,1,3;
    # guesses 5,3,4,2 vs references 4,2,4,2 -> squared errors 1,1,0,0; hits 0,0,1,1.
    assert table["original"]["understanding"] == pytest.approx(1.5)
    assert table["original"]["confidence"] == pytest.approx(7 / 4)
    assert table["original"]["severity_mse"] == pytest.approx(0.5)
    assert table["original"]["severity_accuracy"] == pytest.approx(0.5)
    assert table["original"]["helpfulness"] is None
    assert table["original"]["n"] == 4
    # a: text 10 (L1 s1: u3 c2 g4 ref4 h2) and text 20 (L2 s2: u3 c2 g2 ref2 h-1)
    assert table["a"] == pytest.approx(
        {
            "understanding": 3.0,
            "confidence": 2.0,
            "severity_mse": 0.0,
            "severity_accuracy": 1.0,
            "helpfulness": 0.5,
            "urgency_confidence": None,
            "n": 2,
            "n_severity": 2,
        },
        nan_ok=True,
    )
    # b: text 10 (shared, same answer) and text 21 (L1 s2: u4 c3 g2 ref2 h1)
    assert table["b"]["understanding"] == pytest.approx(3.5)
    assert table["b"]["helpfulness"] == pytest.approx(1.5)
    assert table["b"]["n"] == 2
    # c: text 11 only (L2 s1: u2 c3 g3 ref4 h0)
    assert table["c"]["severity_mse"] == pytest.approx(1.0)
    assert table["c"]["severity_accuracy"] == 0.0
    assert table["c"]["n"] == 1


def test_table_two_counts_each_answer_of_both_panels_once():
    table = protocol.confidence_vs_accuracy(make_frames())
    # confidence 1: answers 1 (g5 r4), 5 (g4 r4) -> mse 0.5, acc 0.5
    # confidence 2: answers 2 (g4 r4), 3 (g3 r2), 8 (g2 r2) -> mse 1/3, acc 2/3
    # confidence 3: answers 4 (g2 r2), 6 (g3 r4), 7 (g2 r2) -> mse 1/3, acc 2/3
    assert table["Not at all"] == pytest.approx({"mse": 0.5, "accuracy": 0.5, "n": 2})
    assert table["With low confidence"] == pytest.approx({"mse": 1 / 3, "accuracy": 2 / 3, "n": 3})
    assert table["With high confidence"] == pytest.approx({"mse": 1 / 3, "accuracy": 2 / 3, "n": 3})


def test_expert_table_credits_shared_ratings_and_the_original_simplicity():
    frames = make_frames()
    table = protocol.expert_table(frames)
    assert table["a"]["correctness"] == pytest.approx((5 + 5) / 2)  # texts 10 and 20
    assert table["b"]["correctness"] == pytest.approx((5 + 3) / 2)  # texts 10 and 21
    assert table["c"]["simplicity"] == pytest.approx((5 + 5) / 2)
    assert table["b"]["n"] == 2
    assert protocol.expert_original_table(frames) == {"simplicity": 1.5, "n": 2}


def test_preference_wins_ties_credit_every_tied_system():
    wins, details = protocol.preference_wins(make_frames())
    # most: s1 votes a1 b1 c1 (L1 chose shared 10, L2 chose 11) -> three-way tie; s2: c2 b1 -> c.
    assert wins["most"] == {"a": 1, "b": 1, "c": 2}
    # least: s1 a1 b1 c1 -> tie; s2 a2 -> a.
    assert wins["least"] == {"a": 2, "b": 1, "c": 1}
    assert details["most"]["votes"] == {"a": 1, "b": 2, "c": 3}


def test_a_source_without_votes_has_no_winner():
    frames = make_frames(preferences=[("L1", "s1", {11}, set())])
    wins, _ = protocol.preference_wins(frames)
    assert wins["most"] == {"a": 0, "b": 0, "c": 1}
    assert wins["least"] == {"a": 0, "b": 0, "c": 0}


def test_severity_distribution_lists_every_level():
    assert protocol.severity_distribution(make_frames()) == {
        "Critical": 0,
        "Serious": 1,
        "Moderate": 0,
        "Mild": 1,
        "Healthy": 0,
    }


def test_vote_distribution_counts_sources_by_number_of_votes():
    votes = protocol.distributions(make_frames())["votes"]
    # most, c: s1 one vote, s2 two votes
    assert votes["most"]["c"] == {"0": 0, "1": 1, "2": 1}
    assert votes["least"]["a"] == {"0": 0, "1": 1, "2": 1}


def test_preference_alpha_matches_nltk_on_the_credited_system_sets():
    frames = make_frames(
        preferences=[
            ("L1", "s1", {10}, {11}),
            ("L1", "s2", {22}, {20}),
            ("L2", "s1", {11, 10}, {10}),
            ("L2", "s2", {22}, {21}),
            ("L3", "s1", {11}, {10}),
            ("L3", "s2", {21, 22}, {20}),
        ]
    )
    result = protocol.agreement(frames)["preference_alpha_masi"]
    most = [
        ("L1", "s1", frozenset("ab")),
        ("L1", "s2", frozenset("c")),
        ("L2", "s1", frozenset("abc")),
        ("L2", "s2", frozenset("c")),
        ("L3", "s1", frozenset("c")),
        ("L3", "s2", frozenset("bc")),
    ]
    expected = AnnotationTask(data=most, distance=masi_distance).alpha()
    assert result["most"] == pytest.approx(expected)
    assert result["n_coders"] == 3


def test_preference_alpha_skips_empty_selections_and_keeps_the_last_answer_per_cell():
    # Rows out of participant order, an empty (skipped) selection and a repeated (participant,
    # source) answer whose last value counts: the nested {participant: {source: set}} rule.
    frames = make_frames(
        preferences=[
            ("L2", "s1", {11, 10}, {10}),
            ("L1", "s1", {10}, {11}),
            ("L3", "s1", set(), {10}),
            ("L2", "s2", {20}, {21}),
            ("L1", "s2", {22}, {20}),
            ("L3", "s2", {21, 22}, {20}),
            ("L2", "s2", {22}, {21}),
        ]
    )
    most = [
        ("L2", "s1", frozenset("abc")),
        ("L2", "s2", frozenset("c")),
        ("L1", "s1", frozenset("ab")),
        ("L1", "s2", frozenset("c")),
        ("L3", "s2", frozenset("bc")),
    ]
    expected = AnnotationTask(data=most, distance=masi_distance).alpha()
    assert protocol.agreement(frames)["preference_alpha_masi"]["most"] == pytest.approx(expected, abs=1e-12)


def test_credit_systems_equals_pandas_explode():
    frame = pd.DataFrame(
        {
            "value": [1.0, 2.0, 3.0, 4.0, 5.0],
            "systems": [("a", "b"), (), ("c",), ("a", "b"), ("b",)],
        },
        index=[10, 11, 12, 13, 14],
    )
    expected = (
        frame.assign(system=frame["systems"].map(list))
        .explode("system", ignore_index=True)
        .dropna(subset=["system"])
    )
    credited = protocol.credit_systems(frame)
    pd.testing.assert_frame_equal(credited, expected)
    assert list(credited["system"]) == ["a", "b", "c", "a", "b", "b"]
    assert list(credited.index) == [0, 1, 3, 4, 5, 6]
    empty = frame.iloc[:0]
    expected = empty.assign(system=empty["systems"].map(list)).explode("system", ignore_index=True)
    pd.testing.assert_frame_equal(protocol.credit_systems(empty), expected.dropna(subset=["system"]))


def test_metric_tables_are_reused_for_the_same_texts_and_recomputed_when_one_changes(monkeypatch):
    frames = make_frames()
    first = metric_tables(frames, FAST)
    calls = []
    computed = _metric_tables_computed
    monkeypatch.setattr(
        "evaluation.analysis.metric_tables._metric_tables_computed",
        lambda *a: calls.append(1) or computed(*a),
    )
    again = metric_tables(frames, FAST)
    assert calls == []
    pd.testing.assert_frame_equal(again["per_text"], first["per_text"])
    again["per_text"].loc[0, "fkgl"] = -1.0  # a caller's copy: the cached table stays as it was
    assert metric_tables(frames, FAST)["per_text"].loc[0, "fkgl"] == first["per_text"].loc[0, "fkgl"]
    assert calls == []

    simplifications = frames.simplifications.copy()
    simplifications.loc[5, "text"] = "Both of your kidneys are small. They have a few harmless cysts."
    changed = protocol.StudyFrames(**{**frames.__dict__, "simplifications": simplifications})
    fkgl = metric_tables(changed, FAST)["per_text"]["fkgl"]
    assert calls == [1]
    assert fkgl.iloc[5] == pytest.approx(textstat.flesch_kincaid_grade(simplifications.loc[5, "text"]))


def test_two_radiologists_agreement_matches_krippendorff_and_sklearn():
    frames = make_frames(radiologists=2)
    expert = protocol.agreement(frames)["expert"]
    assert expert["n_raters"] == 2
    r1 = [5, 4, 5, 3, 5]  # correctness of texts 10, 11, 20, 21, 22
    r2 = [4, 4, 5, 2, 5]
    assert expert["correctness"]["alpha_interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=[r1, r2], level_of_measurement="interval")
    )
    assert expert["correctness"]["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=[r1, r2], level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
    )
    assert expert["correctness"]["kappa_quadratic_mean"] == pytest.approx(
        cohen_kappa_score(r1, r2, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    # ICC(3,1) by hand from the two-way ANOVA of the 5×2 grid.
    x = np.array([r1, r2], dtype=float).T
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(0) - grand) ** 2).sum()
    ss_err = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    bms, ems = ss_rows / (n - 1), ss_err / ((n - 1) * (k - 1))
    assert expert["correctness"]["icc"]["icc3_1"] == pytest.approx((bms - ems) / (bms + (k - 1) * ems))


def test_reliability_grid_is_the_pivot_table_of_first_values():
    frame = pd.DataFrame(
        {
            "participant": ["L2", "L1", "L2", "L1", "L3", "L1"],
            "source": ["s2", "s1", "s1", "s3", "s3", "s1"],
            "value": [3.0, 1.0, np.nan, 4.0, 2.0, 5.0],
        }
    )
    grid, coders = protocol._reliability(frame, "source", "participant", "value")
    expected = frame.dropna(subset=["value"]).pivot_table(
        index="participant", columns="source", values="value", aggfunc="first"
    )
    np.testing.assert_array_equal(grid, expected.to_numpy())
    assert list(coders) == ["L1", "L2", "L3"]


def test_per_simplification_records_are_the_rows_with_none_for_undefined_values():
    frames = make_frames()
    metrics = metric_tables(frames, FAST)
    records = metrics_summary(metrics, frames)["per_simplification"]
    per_text = metrics["per_text"]
    assert len(records) == len(per_text) == 6
    assert records[0] == {
        "source": "s1",
        "text_id": 10,
        "system": "a",
        "fkgl": textstat.flesch_kincaid_grade(TEXTS[("s1", "a")][1]),
        **{
            name: None if np.isnan(per_text.loc[0, name]) else float(per_text.loc[0, name])
            for name in metrics["text_metrics"]
            if name != "fkgl"
        },
    }
    assert records[0]["smog"] is None  # under three sentences
    assert type(records[0]["text_id"]) is int and type(records[0]["fkgl"]) is float


def test_one_radiologist_has_no_inter_rater_agreement():
    assert "correctness" not in protocol.agreement(make_frames())["expert"]


def test_lay_severity_alpha_is_ordinal_alpha_of_panel_one_guesses():
    lay = protocol.agreement(make_frames())["lay"]
    # coders L1, L2; units s1, s2; panel-1 guesses L1: 5, 3; L2: 4, 2.
    expected = krippendorff.alpha(
        reliability_data=[[5, 3], [4, 2]], level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert lay["severity_guess_alpha_ordinal"] == pytest.approx(expected)


def test_comprehension_gain_is_panel_two_minus_panel_one_per_item():
    frames = make_frames()
    # Three sources so that a pair of systems has differences to test.
    result = comparisons(frames)["understanding_gain"]
    by_pair = {(r["system_a"], r["system_b"]): r for r in result}
    # gains: L1 s1 (text 10: a,b) 3-1 = 2; L1 s2 (b) 4-2 = 2; L2 s1 (c) 2-1 = 1; L2 s2 (a) 3-2 = 1.
    # a: s1 2, s2 1; b: s1 2, s2 2; c: s1 1 -> a vs b on s1, s2: differences 0, -1.
    assert by_pair[("a", "b")]["n"] == 2
    assert by_pair[("a", "b")]["mean_diff"] == pytest.approx(-0.5)
    assert by_pair[("a", "c")]["n"] == 1
    assert by_pair[("a", "c")]["mean_diff"] == pytest.approx(1.0)


def test_human_measures_per_simplification():
    human = human_measures_per_simplification(make_frames()).set_index(["source", "system"])
    assert human.loc[("s1", "b"), "understanding"] == 3  # the shared text's answer
    assert human.loc[("s2", "c"), "preference_share"] == pytest.approx(1.0)  # both voters chose 22
    assert human.loc[("s2", "b"), "preference_share"] == pytest.approx(0.5)
    assert human.loc[("s2", "a"), "least_preference_share"] == pytest.approx(1.0)
    assert math.isnan(human.loc[("s2", "c"), "understanding"])  # nobody saw text 22 in panel 2
    assert human.loc[("s1", "a"), "severity_accuracy"] == 1.0


def test_readability_per_text_is_textstat_and_averaged_per_system():
    frames = make_frames()
    metrics = metric_tables(frames, FAST)
    table = readability_table(metrics, frames)
    expected_b = np.mean(
        [
            textstat.flesch_kincaid_grade(TEXTS[("s1", "b")][1]),
            textstat.flesch_kincaid_grade(TEXTS[("s2", "b")][1]),
        ]
    )
    assert table["b"]["fkgl"] == pytest.approx(expected_b)
    expected_original = np.mean([textstat.gunning_fog(t) for t in frames.sources["text"]])
    assert table["original"]["gunning_fog"] == pytest.approx(expected_original)


def test_item_level_correlation_matches_scipy():
    frames = make_frames()
    metrics = metric_tables(frames, FAST)
    records = correlations(frames, metrics, FAST)
    record = next(
        r
        for r in records
        if r["level"] == "item"
        and r["metric"] == "fkgl"
        and r["measure"] == "correctness"
        and r["method"] == "spearman"
    )
    order = list(TEXTS)
    correctness = {10: 5, 11: 4, 20: 5, 21: 3, 22: 5}
    x = [textstat.flesch_kincaid_grade(TEXTS[k][1]) for k in order]
    y = [correctness[TEXTS[k][0]] for k in order]
    assert record["r"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert record["n"] == 6
    assert record["ci_low"] <= record["r"] <= record["ci_high"]
    system = next(
        r
        for r in records
        if r["level"] == "system"
        and r["metric"] == "fkgl"
        and r["measure"] == "understanding"
        and r["method"] == "pearson"
    )
    fkgl = {s: np.mean([x[i] for i, k in enumerate(order) if k[1] == s]) for s in SYSTEMS}
    # per-system understanding = mean over its simplifications' item means (c: only s1 = 2).
    understanding = {"a": np.mean([3, 3]), "b": np.mean([3, 4]), "c": 2.0}
    assert system["r"] == pytest.approx(
        stats.pearsonr([fkgl[s] for s in SYSTEMS], [understanding[s] for s in SYSTEMS]).statistic
    )


def test_confidence_interval_brackets_each_mean():
    frames = make_frames()
    metrics = metric_tables(frames, FAST)
    intervals = confidence_intervals(frames, metrics, FAST)
    lay_original = intervals["lay"]["original"]["understanding"]
    assert lay_original["mean"] == pytest.approx(1.5)
    assert lay_original["n"] == 4
    # Two laypeople on two sources: the crossed t interval would be 1.5 ± t(0.975, 1) · 0.5 =
    # [-4.85, 7.85] on a 1–4 scale; below 3 participants and 5 sources radlay gives the estimate
    # with the reason instead of an interval (docs/analysis/intervals.md, minimum design).
    assert lay_original["low"] is None and lay_original["high"] is None
    assert lay_original["reason"] == TOO_FEW
    assert "Wilson" in lay_original["method"]
    assert lay_original["participants"] == 2 and lay_original["sources"] == 2
    readability = intervals["readability"]["original"]["fkgl"]
    assert readability["low"] <= readability["mean"] <= readability["high"]


def test_study_analysis_has_the_interface_keys_and_is_json_ready():
    import json

    analysis = study_analysis(make_frames(), options=FAST)
    for key in ANALYSIS_KEYS:
        assert key in analysis
    assert analysis["systems"] == SYSTEMS  # keys in study order, a plain list
    assert list(analysis["system_details"]) == SYSTEMS
    assert list(analysis["lay"]) == ["original", *SYSTEMS]
    json.dumps(analysis, allow_nan=False)
    assert {"per_system", "per_simplification"} <= set(analysis["metrics"])
    assert len(analysis["metrics"]["per_simplification"]) == len(TEXTS)


def test_system_means_and_differences_agree_with_table1():
    analysis = study_analysis(make_frames(), options=FAST)
    for system in SYSTEMS:
        for measure in ("understanding", "confidence", "helpfulness", "severity_accuracy"):
            assert analysis["system_means"][measure][system]["mean"] == pytest.approx(
                analysis["lay"][system][measure]
            )
        assert analysis["system_means"]["expert_correctness"][system]["mean"] == pytest.approx(
            analysis["expert"][system]["correctness"]
        )
    differences = analysis["confidence_intervals"]["differences"]["understanding"]
    assert [(d["system_a"], d["system_b"]) for d in differences] == [("a", "b"), ("a", "c"), ("b", "c")]
    for d in differences:
        expected = (
            analysis["lay"][d["system_a"]]["understanding"] - analysis["lay"][d["system_b"]]["understanding"]
        )
        assert d["difference"] == pytest.approx(expected)


def test_details_split_off_and_join_back():
    analysis = json.loads(json.dumps(study_analysis(make_frames(), options=FAST)))
    summary, details = split_details(analysis)
    assert "correlations" not in summary and "per_simplification" not in summary["metrics"]
    assert all("winners" not in side for side in summary["preference_details"].values())
    assert join_details(summary, details) == analysis
