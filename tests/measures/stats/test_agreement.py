import itertools
import math
import random

import krippendorff
import numpy as np
import pandas as pd
import pytest
from nltk.metrics.distance import masi_distance as nltk_masi_distance
from sklearn.metrics import cohen_kappa_score

from measures.stats import agreement
from measures.stats.agreement import (
    cohen_kappa_pairwise,
    cohen_kappa_pairwise_grid,
    icc,
    krippendorff_alpha,
    krippendorff_alpha_set_cells,
    krippendorff_alpha_sets,
    masi_distance,
    masi_distance_matrix,
)

SYSTEMS = "abcd"
ALL_SETS = [frozenset(c) for r in range(len(SYSTEMS) + 1) for c in itertools.combinations(SYSTEMS, r)]
NON_EMPTY_SETS = [s for s in ALL_SETS if s]


# --- MASI -------------------------------------------------------------------------------------


def test_masi_distance_equals_nltk_on_every_pair_of_non_empty_sets():
    sets = [frozenset(c) for r in range(1, 6) for c in itertools.combinations("abcde", r)]
    for a, b in itertools.product(sets, sets):
        assert masi_distance(a, b) == nltk_masi_distance(a, b), (a, b)


def test_masi_distance_hand_values():
    assert masi_distance({1, 2}, {1, 2}) == 0
    assert masi_distance({1, 2}, {1, 2, 3, 4}) == pytest.approx(1 - (2 / 4) * (2 / 3))  # subset
    assert masi_distance({1, 2}, {2, 3}) == pytest.approx(1 - (1 / 3) * (1 / 3))  # overlap
    assert masi_distance({1}, {2}) == 1  # disjoint
    assert masi_distance(set(), {1}) == 1
    assert masi_distance(frozenset(), frozenset()) == 0  # NLTK divides by zero here


def test_masi_distance_matrix_equals_scalar_distance_including_empty_set():
    matrix = masi_distance_matrix(ALL_SETS)
    for (i, a), (j, b) in itertools.product(enumerate(ALL_SETS), enumerate(ALL_SETS)):
        assert matrix[i, j] == masi_distance(a, b)


# --- Krippendorff's alpha with MASI -------------------------------------------------------------


def textbook_alpha(triples, distance):
    """Krippendorff (2011) coincidence-matrix alpha in plain Python, independent of the module."""
    by_unit = {}
    for _coder, unit, value in triples:
        by_unit.setdefault(unit, []).append(value)
    coincidence = {}
    for values in by_unit.values():
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            key = (values[i], values[j])
            coincidence[key] = coincidence.get(key, 0.0) + 1.0 / (m - 1)
    n_c = {}
    for (c, _k), o in coincidence.items():
        n_c[c] = n_c.get(c, 0.0) + o
    n = sum(n_c.values())
    observed = sum(o * distance(c, k) for (c, k), o in coincidence.items()) / n
    expected = sum(n_c[c] * n_c[k] * distance(c, k) for c in n_c for k in n_c) / (n * (n - 1))
    return 1 - observed / expected


def random_annotations(seed, n_coders=7, n_units=30, labels=NON_EMPTY_SETS):
    """coder -> unit -> set, with missing cells, single-coder units and unannotated units."""
    rng = random.Random(seed)
    data = {coder: {} for coder in range(n_coders)}
    for unit in range(n_units):
        kind = rng.random()
        if kind < 0.15:
            coders = [rng.randrange(n_coders)]  # one coder only: must be dropped
        elif kind < 0.2:
            coders = []
        else:
            coders = [c for c in range(n_coders) if rng.random() < 0.6]
        # A skewed label distribution so alpha is away from 0 and the test is sensitive.
        favourite = rng.choice(labels)
        for coder in coders:
            data[coder][f"src-{unit}"] = favourite if rng.random() < 0.5 else rng.choice(labels)
    return data


def triples_of(data):
    return [(c, u, v) for c, per_unit in data.items() for u, v in per_unit.items()]


def kripp_package_alpha(data):
    """The krippendorff package's coincidence computation with MASI as a custom metric."""
    values = sorted({v for per_unit in data.values() for v in per_unit.values()}, key=sorted)
    index = {v: i for i, v in enumerate(values)}
    units = sorted({u for per_unit in data.values() for u in per_unit})
    unit_index = {u: i for i, u in enumerate(units)}
    counts = np.zeros((len(units), len(values)))
    for per_unit in data.values():
        for u, v in per_unit.items():
            counts[unit_index[u], index[v]] += 1
    distances = np.array([[masi_distance(a, b) for b in values] for a in values])

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):
        return distances[v1, v2]

    return krippendorff.alpha(
        value_counts=counts, value_domain=np.arange(len(values)), level_of_measurement=metric
    )


def test_masi_alpha_hand_worked_example():
    # Units coded by A and B:  u1 {a}|{a} d=0;  u2 {a,b}|{a} subset, J=1/2, d=1-1/2*2/3=2/3;
    # u3 {b}|{c} disjoint d=1.  u4 has one coder and is dropped.
    # Values n: {a}=3, {a,b}=1, {b}=1, {c}=1; n=6.
    # D_o = (2*0 + 2*2/3 + 2*1) / 6 = 5/9.
    # D_e = 2*(3*2/3 + 3*1 + 3*1 + 2/3 + 1 + 1) / (6*5) = (64/3)/30 = 32/45.
    # alpha = 1 - (5/9)/(32/45) = 7/32.
    data = {
        "A": {"u1": {"a"}, "u2": {"a", "b"}, "u3": {"b"}, "u4": {"c"}},
        "B": {"u1": {"a"}, "u2": {"a"}, "u3": {"c"}},
    }
    assert krippendorff_alpha_sets(data) == pytest.approx(7 / 32, abs=1e-12)
    assert krippendorff_alpha_sets(data, method="nltk") == pytest.approx(7 / 32, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_fast_masi_alpha_equals_nltk_and_independent_implementations(seed):
    data = random_annotations(seed)
    fast = krippendorff_alpha_sets(data)
    assert fast == pytest.approx(krippendorff_alpha_sets(data, method="nltk"), abs=1e-9)
    assert fast == pytest.approx(textbook_alpha(triples_of(data), masi_distance), abs=1e-9)
    assert fast == pytest.approx(kripp_package_alpha(data), abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_masi_alpha_of_aligned_cells_equals_nltk(seed):
    data = random_annotations(seed)
    units = [unit for per_unit in data.values() for unit in per_unit]
    labels = [label for per_unit in data.values() for label in per_unit.values()]
    expected = krippendorff_alpha_sets(data, method="nltk")
    assert krippendorff_alpha_set_cells(units, labels) == pytest.approx(expected, abs=1e-9)


def test_masi_alpha_of_aligned_cells_hand_worked_example_with_a_missing_cell():
    # test_masi_alpha_hand_worked_example's data, plus a missing answer (None) that counts for nothing.
    units = ["u1", "u2", "u3", "u4", "u1", "u2", "u3", "u4"]
    labels = [{"a"}, {"a", "b"}, {"b"}, {"c"}, {"a"}, {"a"}, {"c"}, None]
    assert krippendorff_alpha_set_cells(units, labels) == pytest.approx(7 / 32, abs=1e-12)
    with pytest.raises(ValueError, match="aligned"):
        krippendorff_alpha_set_cells(units, labels[:-1])
    assert math.isnan(krippendorff_alpha_set_cells([], []))


def test_sparse_count_table_gives_the_same_alpha(monkeypatch):
    # Large label alphabets switch the units×values counts to a sparse matrix.
    data = random_annotations(4)
    monkeypatch.setattr(agreement, "_DENSE_COUNTS_LIMIT", 0)
    assert krippendorff_alpha_sets(data) == pytest.approx(
        krippendorff_alpha_sets(data, method="nltk"), abs=1e-9
    )


def test_single_coder_units_do_not_change_alpha():
    data = random_annotations(11)
    before = krippendorff_alpha_sets(data)
    data[0]["only-one-coder"] = frozenset("abcd")
    data[3]["another-lonely-unit"] = frozenset("d")
    assert krippendorff_alpha_sets(data) == pytest.approx(before, abs=1e-12)


def test_fast_masi_alpha_with_empty_sets_matches_textbook():
    data = random_annotations(5, labels=ALL_SETS)  # NLTK cannot compare two empty sets
    assert any(v == frozenset() for per_unit in data.values() for v in per_unit.values())
    expected = textbook_alpha(triples_of(data), masi_distance)
    assert krippendorff_alpha_sets(data) == pytest.approx(expected, abs=1e-9)


def test_table_inputs_give_the_same_alpha_as_the_mapping():
    data = random_annotations(3)
    expected = krippendorff_alpha_sets(data)
    frame = pd.DataFrame({coder: pd.Series(per_unit, dtype=object) for coder, per_unit in data.items()})
    assert frame.isna().any().any()  # NaN marks missing cells
    assert krippendorff_alpha_sets(frame) == pytest.approx(expected, abs=1e-12)
    rows = [[None if pd.isna(cell) else set(cell) for cell in row] for row in frame.itertuples(index=False)]
    assert krippendorff_alpha_sets(rows) == pytest.approx(expected, abs=1e-12)
    assert krippendorff_alpha_sets(rows, method="nltk") == pytest.approx(expected, abs=1e-9)
    per_coder_list = [data[coder] for coder in sorted(data)]
    assert krippendorff_alpha_sets(per_coder_list) == pytest.approx(expected, abs=1e-12)


def test_degenerate_masi_alpha_is_nan_where_nltk_returns_one():
    same = {"A": {1: {"a"}, 2: {"b"}}, "B": {1: {"a"}}}  # the only pairable unit agrees: no variation
    assert math.isnan(krippendorff_alpha_sets(same))
    assert krippendorff_alpha_sets(same, method="nltk") == 1
    assert math.isnan(krippendorff_alpha_sets({"A": {1: {"a"}}, "B": {2: {"b"}}}))
    assert math.isnan(krippendorff_alpha_sets({}))


def test_masi_alpha_rejects_strings():
    with pytest.raises(TypeError):
        krippendorff_alpha_sets({"A": {1: "ab"}, "B": {1: "a"}})


# --- Krippendorff's alpha on scalar ratings -----------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, missing values. Published: nominal .743, ordinal .815, interval .849, ratio .797.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_alpha_reproduces_published_values(level, published):
    assert round(krippendorff_alpha(np.array(KRIPPENDORFF_2011), level), 3) == published


def test_krippendorff_alpha_undefined_is_nan():
    assert math.isnan(krippendorff_alpha([[1, np.nan], [np.nan, 2]], "interval"))  # nothing pairable
    assert math.isnan(krippendorff_alpha([[3, 3, 1], [3, 3, np.nan]], "ordinal"))  # no variation


# --- Cohen's kappa ------------------------------------------------------------------------------


def test_unweighted_kappa_hand_computed():
    # p_o = 4/6, p_e = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = (2/3 - 1/2) / (1/2) = 1/3
    a = dict(enumerate([1, 1, 0, 0, 1, 0]))
    b = dict(enumerate([1, 0, 0, 0, 1, 1]))
    result = cohen_kappa_pairwise({"a": a, "b": b}, weights=None)
    assert result.pairs[0]["kappa"] == pytest.approx(1 / 3)
    assert result.mean == pytest.approx(1 / 3)


def test_pairwise_kappa_uses_shared_units_and_matches_sklearn():
    ratings = {
        "r1": {"s1": 1, "s2": 2, "s3": 3, "s4": 5, "s5": 4, "s6": 2},
        "r2": {"s1": 2, "s2": 2, "s3": 4, "s4": 5, "s7": 1, "s6": None},
        "r3": {"s2": 1, "s3": 3, "s4": 4, "s5": 4, "s7": 2, "s6": 3},
        "r4": {"s8": 3},
    }
    result = cohen_kappa_pairwise(ratings, labels=[1, 2, 3, 4, 5])
    by_pair = {(p["rater_a"], p["rater_b"]): p for p in result.pairs}
    expected_r1_r2 = cohen_kappa_score(
        [1, 2, 3, 5], [2, 2, 4, 5], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    expected_r1_r3 = cohen_kappa_score(
        [2, 3, 5, 4, 2], [1, 3, 4, 4, 3], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    expected_r2_r3 = cohen_kappa_score(
        [2, 4, 5, 1], [1, 3, 4, 2], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    assert by_pair["r1", "r2"] == {
        "rater_a": "r1",
        "rater_b": "r2",
        "n": 4,
        "kappa": pytest.approx(expected_r1_r2),
    }
    assert by_pair["r1", "r3"]["n"] == 5
    assert by_pair["r1", "r3"]["kappa"] == pytest.approx(expected_r1_r3)
    assert by_pair["r2", "r3"]["kappa"] == pytest.approx(expected_r2_r3)
    assert by_pair["r1", "r4"] == {"rater_a": "r1", "rater_b": "r4", "n": 0, "kappa": None}
    assert len(result.pairs) == 6
    assert result.mean == pytest.approx(np.mean([expected_r1_r2, expected_r1_r3, expected_r2_r3]))


def test_pairwise_kappa_of_a_grid_uses_shared_units_and_matches_sklearn():
    # The ratings of the test above as a raters × units grid (s1 … s8), NaN = not rated.
    nan = np.nan
    grid = [
        [1, 2, 3, 5, 4, 2, nan, nan],
        [2, 2, 4, 5, nan, nan, 1, nan],
        [nan, 1, 3, 4, 4, 3, 2, nan],
        [nan, nan, nan, nan, nan, nan, nan, 3],
    ]
    result = cohen_kappa_pairwise_grid(grid, ["r1", "r2", "r3", "r4"], labels=[1, 2, 3, 4, 5])
    by_pair = {(p["rater_a"], p["rater_b"]): p for p in result.pairs}
    expected_r1_r2 = cohen_kappa_score(
        [1, 2, 3, 5], [2, 2, 4, 5], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    expected_r2_r3 = cohen_kappa_score(
        [2, 4, 5, 1], [1, 3, 4, 2], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    assert [pair for pair in by_pair] == [
        ("r1", "r2"),
        ("r1", "r3"),
        ("r1", "r4"),
        ("r2", "r3"),
        ("r2", "r4"),
        ("r3", "r4"),
    ]
    assert by_pair["r1", "r2"] == {
        "rater_a": "r1",
        "rater_b": "r2",
        "n": 4,
        "kappa": pytest.approx(expected_r1_r2),
    }
    assert by_pair["r2", "r3"]["kappa"] == pytest.approx(expected_r2_r3)
    assert by_pair["r1", "r4"] == {"rater_a": "r1", "rater_b": "r4", "n": 0, "kappa": None}
    with pytest.raises(ValueError, match="one row per rater"):
        cohen_kappa_pairwise_grid(grid, ["r1", "r2"])


# --- ICC ----------------------------------------------------------------------------------------

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges. Published (Table 4): ICC(2,1)=.29,
# ICC(3,1)=.71, ICC(2,4)=.62, ICC(3,4)=.91; Table 3: BMS=11.24, JMS=32.49, EMS=1.02.
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def shrout_fleiss_long():
    rows = [
        (f"t{t}", f"j{j}", score) for t, scores in enumerate(SHROUT_FLEISS) for j, score in enumerate(scores)
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "score"]).sample(frac=1, random_state=0)


def test_icc_reproduces_shrout_fleiss():
    result = icc(shrout_fleiss_long())
    assert (round(result.icc2_1, 2), round(result.icc3_1, 2)) == (0.29, 0.71)
    assert (round(result.icc2_k, 2), round(result.icc3_k, 2)) == (0.62, 0.91)
    assert (round(result.ms_units, 2), round(result.ms_raters, 2), round(result.ms_error, 2)) == (
        11.24,
        32.49,
        1.02,
    )
    assert (result.n_units, result.n_raters) == (6, 4)


def test_icc_of_exact_agreement_is_one_not_a_rounding_error_above():
    # Two units scored 0.7 and 0.1 by both raters: the error sum of squares taken as
    # total - units - raters came out a rounding error below zero and ICC(3,1) 1.0000000000000002.
    frame = pd.DataFrame(
        [("u1", "r1", 0.7), ("u1", "r2", 0.7), ("u2", "r1", 0.1), ("u2", "r2", 0.1)],
        columns=["unit", "rater", "score"],
    )
    result = icc(frame)
    assert result.ms_error >= 0
    assert max(result.icc2_1, result.icc3_1, result.icc2_k, result.icc3_k) <= 1.0
    assert result.icc3_1 == pytest.approx(1.0)


def test_icc_drops_incompletely_rated_units_and_rejects_duplicates():
    frame = shrout_fleiss_long()
    extra = pd.DataFrame([("t-extra", "j0", 3), ("t-extra", "j1", 9)], columns=["unit", "rater", "score"])
    assert icc(pd.concat([frame, extra])) == icc(frame)
    with pytest.raises(ValueError):
        icc(pd.concat([frame, frame.head(1)]))


def test_icc_matches_pingouin_when_installed():
    pingouin = pytest.importorskip("pingouin")
    frame = shrout_fleiss_long()
    table = pingouin.intraclass_corr(frame, targets="unit", raters="rater", ratings="score").set_index("Type")
    # pingouin < 0.7 names the rows ICC2/ICC3/ICC2k/ICC3k, 0.7 names them ICC(A,1)/ICC(C,1)/...
    names = (
        ("ICC2", "ICC3", "ICC2k", "ICC3k")
        if "ICC2" in table.index
        else ("ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)")
    )
    expected = [table.loc[name, "ICC"] for name in names]
    result = icc(frame)
    assert [result.icc2_1, result.icc3_1, result.icc2_k, result.icc3_k] == pytest.approx(expected)
