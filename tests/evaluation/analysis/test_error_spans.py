"""The error-span analysis (evaluation/analysis/error_spans.py), checked against hand computations: the
two-way ANOVA interval of a complete raters × sources table, statsmodels' Wilson interval, the
krippendorff package's α and overlap F1 counted by hand."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evaluation.analysis.error_spans import (
    SPAN_COLUMNS,
    judge_span_agreement,
    span_analysis,
    span_frame,
    spans_of,
)
from measures.stats.span_agreement import Span
from tests.django_free import assert_imports_without_django

CATEGORIES = ["omitted_finding", "unexplained_jargon"]
SEVERITIES = ["minor", "could_mislead", "could_harm"]
RATERS = ["R1", "R2", "R3"]
SOURCES = [f"s{i}" for i in range(6)]


def _spans(count: int, category: str = "unexplained_jargon", severity: str = "minor") -> tuple[Span, ...]:
    return tuple(Span(4 * k, 4 * k + 3, category, severity) for k in range(count))


def _frame() -> pd.DataFrame:
    """3 raters × 6 sources × 2 systems; system "a"'s text of source i has 10 + i words; the count
    of spans rater r marks on source i of system "a" is COUNTS[r][i]."""
    rows = []
    for r, rater in enumerate(RATERS):
        for i, source in enumerate(SOURCES):
            count = COUNTS[r][i]
            spans = _spans(count)
            if rater == "R1" and i in (1, 4):
                spans = (*spans, Span(40, 45, "omitted_finding", "could_harm"))
            rows.append((rater, "radiologist", source, 100 + i, ("a",), 10 + i, spans))
            b_spans = (Span(0, 3, "omitted_finding", "could_harm"),) if (r + i) % 3 == 0 else ()
            rows.append((rater, "radiologist", source, 200 + i, ("b",), 20, b_spans))
    return pd.DataFrame(rows, columns=list(SPAN_COLUMNS))


COUNTS = [[0, 2, 1, 3, 1, 0], [1, 2, 0, 2, 2, 1], [0, 3, 1, 4, 1, 0]]


@pytest.mark.heavy
def test_is_django_free():
    assert_imports_without_django("evaluation.analysis.error_spans")


def _anova_interval(table: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95 % interval of a complete raters × sources table under the two-way random model:
    Var(mean) = (MS_rows + MS_columns − MS_residual) / (R·C), Satterthwaite's df."""
    r, c = table.shape
    grand = table.mean()
    ms_r = c * np.sum((table.mean(axis=1) - grand) ** 2) / (r - 1)
    ms_c = r * np.sum((table.mean(axis=0) - grand) ** 2) / (c - 1)
    resid = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + grand
    ms_e = np.sum(resid**2) / ((r - 1) * (c - 1))
    var = (ms_r + ms_c - ms_e) / (r * c)
    df = (ms_r + ms_c - ms_e) ** 2 / (ms_r**2 / (r - 1) + ms_c**2 / (c - 1) + ms_e**2 / ((r - 1) * (c - 1)))
    half = stats.t.ppf(0.975, df) * math.sqrt(var)
    return grand, grand - half, grand + half


def _rate_interval(table: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95 % interval of a count or rate: the Poisson score interval, i.e. the rates λ
    with (m − λ)² = t² · λ / n_eff, n_eff = m / Var(mean) (the two roots of that quadratic), with
    the two-way ANOVA variance and Satterthwaite df of `_anova_interval`."""
    grand, low, _ = _anova_interval(table)
    t_se = grand - low
    r, c = table.shape
    ms_r = c * np.sum((table.mean(axis=1) - grand) ** 2) / (r - 1)
    ms_c = r * np.sum((table.mean(axis=0) - grand) ** 2) / (c - 1)
    resid = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + grand
    ms_e = np.sum(resid**2) / ((r - 1) * (c - 1))
    var = (ms_r + ms_c - ms_e) / (r * c)
    q2 = (t_se / math.sqrt(var)) ** 2
    n_eff = grand / var
    roots = np.sort(np.roots([n_eff, -(2 * n_eff * grand + q2), n_eff * grand**2]).real)
    return grand, float(roots[0]), float(roots[1])


def test_rates_per_text_and_per_100_words_have_the_crossed_count_interval():
    result = span_analysis(_frame(), categories=CATEGORIES, severities=SEVERITIES, systems=["a", "b"])
    jargon = np.array(COUNTS, dtype=float)
    total = jargon.copy()
    total[0, [1, 4]] += 1
    mean, low, high = _rate_interval(total)
    per_text = result["rates"]["a"]["per_text"]
    assert per_text["mean"] == pytest.approx(mean)
    assert (per_text["low"], per_text["high"]) == (pytest.approx(low), pytest.approx(high))
    words = np.array([10 + i for i in range(6)], dtype=float)
    mean, low, high = _rate_interval(100 * jargon / words)
    by_category = result["rates"]["a"]["by_category"]["unexplained_jargon"]["per_100_words"]
    assert by_category["mean"] == pytest.approx(mean)
    assert (by_category["low"], by_category["high"]) == (pytest.approx(low), pytest.approx(high))
    harm = result["rates"]["a"]["by_severity"]["could_harm"]["per_text"]
    assert harm["mean"] == pytest.approx(2 / 18)
    # Rare: the t interval went below 0 here; the count interval never does.
    assert 0 <= harm["low"] <= harm["mean"] <= harm["high"] and harm["support"] == [0.0, None]
    # A category nobody marked on b: above 0, not the zero-width [0, 0].
    none = result["rates"]["b"]["by_category"]["unexplained_jargon"]["per_text"]
    assert none["mean"] == none["low"] == 0 and none["high"] > 0
    assert result["n"] == {"answers": 36, "raters": 3, "texts": 12, "spans": int(total.sum()) + 6}


def test_the_could_harm_share_counts_a_text_when_any_rater_marked_it():
    result = span_analysis(_frame(), categories=CATEGORIES, severities=SEVERITIES, systems=["a", "b"])
    assert (
        result["harm_severity"] == "could_harm" and "at least one rater" in result["definitions"]["any_rater"]
    )
    a, b = result["harm"]["a"]["any_rater"], result["harm"]["b"]["any_rater"]
    # a: R1 marked could_harm on sources 1 and 4; b: (r + i) % 3 == 0 for some rater on every source.
    assert (a["texts_harmed"], a["texts"]) == (2, 6) and a["share"] == pytest.approx(2 / 6)
    assert (b["texts_harmed"], b["texts"]) == (6, 6)
    low, high = proportion_confint(2, 6, alpha=0.05, method="wilson")
    assert (a["low"], a["high"]) == (pytest.approx(low), pytest.approx(high))
    averaged = result["harm"]["b"]["rater_averaged"]
    assert averaged["mean"] == pytest.approx(6 / 18)
    assert 0 <= averaged["low"] <= 6 / 18 <= averaged["high"] <= 1


def test_rater_agreement_is_overlap_f1_by_hand_and_alpha_from_krippendorff():
    frame = pd.DataFrame(
        [
            ("A", "radiologist", "s1", 1, ("x",), 10, (Span(0, 5, "j"), Span(10, 12, "o"))),
            ("B", "radiologist", "s1", 1, ("x",), 10, (Span(3, 8, "j"),)),
            ("A", "radiologist", "s2", 2, ("x",), 10, ()),
            ("B", "radiologist", "s2", 2, ("x",), 10, (Span(0, 2, "o"), Span(5, 6, "o"))),
            ("A", "radiologist", "s3", 3, ("x",), 10, (Span(1, 2, "j"),)),
            ("B", "radiologist", "s3", 3, ("x",), 10, (Span(1, 2, "o"),)),
        ],
        columns=list(SPAN_COLUMNS),
    )
    result = span_analysis(frame, categories=["j", "o"], severities=["minor"], systems=["x"])
    (pair,) = result["agreement"]["pairs"]
    # j: A's 2 spans, 1 overlaps B's; B's 1 span overlaps A's -> P 1/2, R 1 -> F1 2/3.
    assert pair["f1"]["j"] == pytest.approx(2 / 3)
    # o: A 1 span (text 1), B 3 (texts 2, 3); none overlaps in its category -> F1 0.
    assert pair["f1"]["o"] == 0.0
    # all (a match still needs the same category): A's 3 spans, 1 matched; B's 4, 1 matched.
    assert pair["f1"]["all"] == pytest.approx(2 * (1 / 3) * (1 / 4) / (1 / 3 + 1 / 4))
    expected = krippendorff.alpha(reliability_data=[[2, 0, 1], [1, 2, 1]], level_of_measurement="interval")
    assert result["agreement"]["count_alpha"]["all"] == pytest.approx(expected)
    expected_o = krippendorff.alpha(reliability_data=[[1, 0, 0], [0, 2, 1]], level_of_measurement="interval")
    assert result["agreement"]["count_alpha"]["o"] == pytest.approx(expected_o)


def test_judge_against_each_rater_and_the_pooled_raters():
    judge = {1: [Span(0, 4, "j")], 2: [], 3: [Span(5, 9, "o"), Span(0, 2, "j")]}
    raters = {
        "R1": {1: [Span(2, 6, "j")], 2: [Span(0, 1, "o")], 3: []},
        "R2": {1: [], 2: [], 3: [Span(6, 7, "o")]},
    }
    result = judge_span_agreement(judge, raters, categories=["j", "o"])
    r1, r2 = result["raters"]
    # vs R1: judge's 3 spans, 1 matched; R1's 2, 1 matched -> F1 = 2·(1/3)(1/2)/(5/6) = 0.4
    assert r1["f1"]["all"] == pytest.approx(0.4)
    assert r1["count_alpha"]["all"] == pytest.approx(
        krippendorff.alpha(reliability_data=[[1, 0, 2], [1, 1, 0]], level_of_measurement="interval")
    )
    assert r2["f1"]["o"] == pytest.approx(1.0)
    # Pooled: R1 ∪ R2 per text; judge's 3 spans: 2 matched (text 1 j, text 3 o); raters' 3 spans:
    # 2 matched (R1 text 1, R2 text 3) -> P = R = 2/3.
    pooled = result["pooled"]
    assert pooled["precision"] == pytest.approx(2 / 3) and pooled["recall"] == pytest.approx(2 / 3)
    assert pooled["count_alpha"]["all"] == pytest.approx(
        krippendorff.alpha(reliability_data=[[1, 0, 2], [0.5, 0.5, 0.5]], level_of_measurement="interval")
    )


def test_a_text_seen_without_marks_counts_zero_and_judges_are_left_out():
    answers = pd.DataFrame(
        {
            "participant": ["A", "A", "judge 1"],
            "role": ["radiologist", "radiologist", "judge:1"],
            "instrument": ["k", "k", "k"],
            "item": ["error_spans"] * 3,
            "source": ["s1", "s2", "s1"],
            "text_id": [1.0, 2.0, 1.0],
            "systems": [("x",), ("x",), ("x",)],
            "value": [[{"start": 0, "end": 3, "category": "j", "severity": "minor"}], None, []],
        }
    )
    frame = span_frame(answers, {1: "one two three", 2: "four five"}, instrument="k", item="error_spans")
    assert list(frame["words"]) == [3, 2, 3] and [len(s) for s in frame["spans"]] == [1, 0, 0]
    assert spans_of(None) == ()
    result = span_analysis(frame, categories=["j"], severities=["minor"], systems=["x"])
    assert result["n"]["answers"] == 2 and result["rates"]["x"]["per_text"]["mean"] == pytest.approx(0.5)
