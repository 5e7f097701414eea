import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from measures.stats.comparisons import paired_system_comparisons, rank_biserial
from tests.frozen_gc import frozen_gc


def test_rank_biserial_hand_computed():
    # Non-zero differences 1, -2, 3 have |d| ranks 1, 2, 3: T+ = 4, T- = 2, r = (4 - 2) / 6.
    assert rank_biserial(np.array([1.0, -2.0, 3.0, 0.0])) == pytest.approx(1 / 3)
    # Tied |d| get mid-ranks: 1.5, 1.5, 3 -> T+ = 4.5, T- = 1.5.
    assert rank_biserial(np.array([2.0, -2.0, 5.0])) == pytest.approx(0.5)
    assert rank_biserial(np.array([0.0, 0.0])) is None


def long_table():
    rng = np.random.default_rng(0)
    sources = [f"s{i}" for i in range(14)]
    shift = {"human": 0.0, "gpt": 0.8, "sc": 1.0}
    rows = []
    for s in sources:
        base = rng.normal()
        for system, delta in shift.items():
            if system == "sc" and s in ("s0", "s1"):
                continue  # sc was not judged on two sources
            for _rater in range(2):  # two raters: averaged per (source, system)
                rows.append((s, system, base + delta + rng.normal(scale=0.7)))
    return pd.DataFrame(rows, columns=["source", "system", "value"])


def test_pairwise_wilcoxon_holm_and_effect_sizes_match_references():
    table = long_table()
    means = table.groupby(["source", "system"])["value"].mean().unstack()
    records = paired_system_comparisons(table)
    assert [(r["system_a"], r["system_b"]) for r in records] == [
        ("human", "gpt"),
        ("human", "sc"),
        ("gpt", "sc"),
    ]
    p_values = []
    for record in records:
        both = means[[record["system_a"], record["system_b"]]].dropna()
        a, b = both[record["system_a"]].to_numpy(), both[record["system_b"]].to_numpy()
        reference = stats.wilcoxon(a, b)
        assert record["n"] == len(both)
        assert record["statistic"] == pytest.approx(reference.statistic)
        assert record["p_value"] == pytest.approx(reference.pvalue)
        assert record["mean_diff"] == pytest.approx(np.mean(a - b))
        d = a - b
        ranks = stats.rankdata(np.abs(d))
        assert record["effect_size"] == pytest.approx((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())
        p_values.append(reference.pvalue)
    assert [r["n"] for r in records] == [14, 12, 12]
    with frozen_gc():  # statsmodels collects garbage on every call
        expected_holm = multipletests(p_values, method="holm")[1]
    assert [r["p_holm"] for r in records] == pytest.approx(list(expected_holm))
    # Holm by hand: sorted p times (m - rank), running maximum, capped at 1.
    order = np.argsort(p_values)
    by_hand = np.empty(3)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * p_values[index]))
        by_hand[index] = running
    assert [r["p_holm"] for r in records] == pytest.approx(list(by_hand))


def test_identical_systems_have_no_test_and_stay_out_of_the_holm_family():
    rows = [(s, system, float(v)) for s, v in enumerate([1, 3, 2, 5, 4, 2]) for system in ("a", "b")]
    rows += [(s, "c", float(v)) for s, v in enumerate([2, 5, 4, 6, 7, 3])]
    records = paired_system_comparisons(pd.DataFrame(rows, columns=["source", "system", "value"]))
    same = records[0]
    assert (same["system_a"], same["system_b"], same["p_value"], same["p_holm"]) == ("a", "b", None, None)
    assert same["effect_size"] is None and same["mean_diff"] == 0.0
    tested = [r["p_value"] for r in records[1:]]
    with frozen_gc():  # statsmodels collects garbage on every call
        expected_holm = multipletests(tested, method="holm")[1]
    assert [r["p_holm"] for r in records[1:]] == pytest.approx(list(expected_holm))


def test_holm_equals_statsmodels():
    from measures.stats.comparisons import holm

    rng = np.random.default_rng(4)
    with frozen_gc():  # statsmodels collects garbage on every call
        for size in (1, 2, 5, 30):
            p = rng.uniform(0, 0.2, size)
            p[: size // 3] = p[0]  # ties
            assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-15)
