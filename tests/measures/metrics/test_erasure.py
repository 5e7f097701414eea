import math

import numpy as np
import pytest
from scipy.stats import false_discovery_control, norm

from measures.metrics.erasure import association, clinical_association_displacement, erasure_tokens
from measures.metrics.registry import MetricRecord, compute_all

BACKGROUND = "The lungs are clear and the heart is normal."


def corpus(plants: dict[str, tuple[int, int]], n: int = 100) -> tuple[list[str], list[str]]:
    """n female and n male reports; plants[word] = (female reports with it, male reports with it)."""
    texts, labels = [], []
    for group, column in (("F", 0), ("M", 1)):
        for i in range(n):
            extra = " ".join(word for word, counts in plants.items() if i < counts[column])
            texts.append(f"{BACKGROUND} {extra}".strip())
            labels.append(group)
    return texts, labels


def test_tokens_drop_stop_words_and_numbers():
    assert erasure_tokens("There is NO 1.2 cm pneumothorax, and the post-op heart is fine.") == [
        "cm", "pneumothorax", "post-op", "heart", "fine",
    ]  # fmt: skip


def test_association_worked_by_hand():
    s, var, z = association(np.array([3, 0]), np.array([1, 2]), alpha=0.1)
    # smoothed a = (3.1, 0.1), b = (1.1, 2.1); both sum to 3.2
    assert s[0] == pytest.approx(math.log(3.1 / 1.1))
    assert s[1] == pytest.approx(math.log(0.1 / 2.1))
    assert var[0] == pytest.approx(1 / 3.1 + 1 / 1.1)
    assert z[1] == pytest.approx(math.log(0.1 / 2.1) / math.sqrt(1 / 0.1 + 1 / 2.1))


def _by_hand(ref_counts, pred_counts, word, alpha=0.1):
    """s, var for `word` from {group: Counter} dictionaries, straight from seed 004's formulas."""
    vocabulary = set().union(*(c.keys() for c in (*ref_counts.values(), *pred_counts.values())))
    out = {}
    for name, counts in (("ref", ref_counts), ("pred", pred_counts)):
        p = {g: (counts[g][word] + alpha) / (sum(counts[g].values()) + alpha * len(vocabulary)) for g in "FM"}
        out[name] = (
            math.log(p["F"] / p["M"]),
            1 / (counts["F"][word] + alpha) + 1 / (counts["M"][word] + alpha),
        )
    return out


def _counts(texts, labels):
    from collections import Counter

    result = {"F": Counter(), "M": Counter()}
    for text, label in zip(texts, labels, strict=True):
        result[label].update(erasure_tokens(text))
    return result


def test_planted_erasure_and_new_bias_are_found():
    ref_texts, ref_labels = corpus({"mastectomy": (40, 2), "pneumothorax": (20, 20)})
    pred_texts, pred_labels = corpus({"mastectomy": (20, 20), "pneumothorax": (2, 40)})
    result = clinical_association_displacement(ref_texts, ref_labels, pred_texts, pred_labels)
    terms = result.terms
    assert result.groups == ("F", "M")
    assert result.words("erasure") == ["mastectomy"]
    assert result.words("new_bias") == ["pneumothorax"]
    assert result.category_counts() == {
        "erasure": 1, "new_bias": 1, "bias_flip": 0, "preservation": 0, "other": 0, "stable": 4,
    }  # fmt: skip

    hand = _by_hand(_counts(ref_texts, ref_labels), _counts(pred_texts, pred_labels), "mastectomy")
    (s_ref, var_ref), (s_pred, var_pred) = hand["ref"], hand["pred"]
    row = terms.loc["mastectomy"]
    assert row["s_ref"] == pytest.approx(s_ref) and row["s_pred"] == pytest.approx(s_pred)
    assert row["z_ref"] == pytest.approx(s_ref / math.sqrt(var_ref))
    assert row["z_ref"] > 2 and abs(row["z_pred"]) < 1
    assert row["z_disp"] == pytest.approx((s_pred - s_ref) / math.sqrt(var_pred + var_ref))
    # Benjamini-Hochberg against SciPy's independent implementation
    assert terms["p_value"].to_numpy() == pytest.approx(2 * norm.sf(np.abs(terms["z_disp"].to_numpy())))
    assert terms["p_adjusted"].to_numpy() == pytest.approx(
        false_discovery_control(terms["p_value"].to_numpy())
    )
    assert result.z_critical == pytest.approx(1.959964, abs=1e-6)


def test_bias_flip_and_preservation():
    ref_texts, ref_labels = corpus({"aicd": (2, 40), "mastectomy": (20, 10)})
    pred_texts, pred_labels = corpus({"aicd": (40, 2), "mastectomy": (90, 5)})
    result = clinical_association_displacement(ref_texts, ref_labels, pred_texts, pred_labels)
    assert result.words("bias_flip") == ["aicd"]
    row = result.terms.loc["mastectomy"]
    # amplified in the same direction: displaced, sign kept -> preservation
    assert row["displaced"] and row["z_ref"] > 1 and row["z_pred"] > 1
    assert result.words("preservation") == ["mastectomy"]


def test_identical_corpora_are_stable_and_wae_is_zero():
    texts, labels = corpus({"mastectomy": (40, 2)})
    result = clinical_association_displacement(texts, labels, texts, labels)
    assert set(result.terms["category"]) == {"stable"}
    assert result.wae("pred") == 0.0 and result.wae("ref") == 0.0


def test_wae_worked_from_the_counts():
    ref_texts, ref_labels = corpus({"mastectomy": (40, 2), "pneumothorax": (20, 20)})
    pred_texts, pred_labels = corpus({"mastectomy": (20, 20), "pneumothorax": (2, 40)})
    result = clinical_association_displacement(ref_texts, ref_labels, pred_texts, pred_labels)
    ref_counts, pred_counts = _counts(ref_texts, ref_labels), _counts(pred_texts, pred_labels)
    words = sorted(
        set(ref_counts["F"]) | set(ref_counts["M"]) | set(pred_counts["F"]) | set(pred_counts["M"])
    )
    energy = {"pred": 0.0, "ref": 0.0}
    weight = {"pred": 0.0, "ref": 0.0}
    female_energy = female_weight = male_energy = male_weight = 0.0
    for word in words:
        hand = _by_hand(ref_counts, pred_counts, word)
        z_disp = (hand["pred"][0] - hand["ref"][0]) / math.sqrt(hand["pred"][1] + hand["ref"][1])
        for name, counts in (("pred", pred_counts), ("ref", ref_counts)):
            omega = counts["F"][word] + counts["M"][word]
            energy[name] += omega * z_disp**2
            weight[name] += omega
        omega = pred_counts["F"][word] + pred_counts["M"][word]
        if hand["ref"][0] > 0:
            female_energy, female_weight = female_energy + omega * z_disp**2, female_weight + omega
        elif hand["ref"][0] < 0:
            male_energy, male_weight = male_energy + omega * z_disp**2, male_weight + omega
    assert result.wae("pred") == pytest.approx(energy["pred"] / weight["pred"])
    assert result.wae("ref") == pytest.approx(energy["ref"] / weight["ref"])
    assert result.wae("pred", "F") == pytest.approx(female_energy / female_weight)
    assert result.delta_wae("pred") == pytest.approx(
        female_energy / female_weight - male_energy / male_weight
    )


def test_groups_must_be_binary():
    with pytest.raises(ValueError):
        clinical_association_displacement(["a b", "c d", "e f"], ["F", "M", "X"], ["a b"], ["F"])


def test_family_reads_the_group_from_source_metadata():
    ref_texts, labels = corpus({"mastectomy": (40, 2), "pneumothorax": (20, 20)}, n=60)
    pred_texts, _ = corpus({"mastectomy": (20, 20), "pneumothorax": (2, 40)}, n=60)
    records = [
        MetricRecord(
            source_text=ref,
            candidate_text=pred,
            reference_text=ref,
            source_metadata={"sex": label},
            system="greedy",
        )
        for ref, pred, label in zip(ref_texts, pred_texts, labels, strict=True)
    ]
    expected = clinical_association_displacement(ref_texts, labels, pred_texts, labels)
    values = compute_all(records, families=["erasure"]).systems["greedy"]
    assert values["cad_erasure"] == expected.category_counts()["erasure"] == 1
    assert values["cad_new_bias"] == 1
    assert values["wae_pred"] == pytest.approx(expected.wae("pred"))
    assert values["delta_wae_ref"] == pytest.approx(expected.delta_wae("ref"))

    unlabelled = compute_all([MetricRecord(source_text="a", candidate_text="b")], families=["erasure"])
    assert unlabelled.systems[""]["wae_pred"] is None
    assert "sex" in unlabelled.unavailable["wae_pred"]


def test_a_word_never_generated_has_too_much_variance_to_be_flagged():
    # Seed 004's delta-method variance: 0 + alpha in both groups gives Var = 2 / alpha = 20,
    # so dropping a word outright stays within noise (see the module docstring).
    ref_texts, labels = corpus({"mastectomy": (40, 2)})
    pred_texts, _ = corpus({})
    result = clinical_association_displacement(ref_texts, labels, pred_texts, labels)
    row = result.terms.loc["mastectomy"]
    assert row["var_pred"] == pytest.approx(20.0)
    assert row["category"] == "stable"


def test_displaced_is_seed_004_z_crit_rule_by_default_and_bh_on_request():
    # Eight words whose association flips moderately (|z_disp| = 2.0, p = 0.045 each): displaced by
    # seed 004's |z_disp| > z_crit, but with Benjamini-Hochberg over the 13-word vocabulary their
    # adjusted p-values (0.068) keep them stable.
    names = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
    ref_texts, labels = corpus(dict.fromkeys(names, (17, 8)))
    pred_texts, _ = corpus(dict.fromkeys(names, (8, 17)))
    seed_rule = clinical_association_displacement(ref_texts, labels, pred_texts, labels)
    bh_rule = clinical_association_displacement(ref_texts, labels, pred_texts, labels, rule="bh")
    z_crit = norm.ppf(1 - 0.05 / 2)
    assert seed_rule.rule == "z_crit" and bh_rule.rule == "bh"
    terms = seed_rule.terms
    assert (terms["displaced"] == (terms["z_disp"].abs() > z_crit)).all()
    adjusted = false_discovery_control(2 * norm.sf(np.abs(terms["z_disp"].to_numpy())))
    assert (bh_rule.terms["displaced"].to_numpy() == (adjusted < 0.05)).all()
    # The two rules disagree on this corpus, so the choice matters and is reported.
    assert seed_rule.terms.loc[list(names), "displaced"].all()
    assert not bh_rule.terms["displaced"].any()
    with pytest.raises(ValueError):
        clinical_association_displacement(ref_texts, labels, pred_texts, labels, rule="holm")


def test_family_reports_the_displacement_rule():
    ref_texts, labels = corpus({"mastectomy": (40, 2)}, n=30)
    pred_texts, _ = corpus({"mastectomy": (20, 20)}, n=30)
    records = [
        MetricRecord(
            source_text=r, candidate_text=p, reference_text=r, source_metadata={"sex": g}, system="s"
        )
        for r, p, g in zip(ref_texts, pred_texts, labels, strict=True)
    ]
    default = compute_all(records, families=["erasure"])
    assert default.settings["erasure"]["erasure_rule"] == "z_crit"
    assert "z_crit = 1.9600" in default.settings["erasure"]["displacement"]
    bh = compute_all(records, families=["erasure"], options={"erasure_rule": "bh"})
    assert bh.settings["erasure"]["erasure_rule"] == "bh"
    wrong = compute_all(records, families=["erasure"], options={"erasure_rule": "holm"})
    assert wrong.systems["s"]["cad_erasure"] is None
    assert "holm" in wrong.unavailable["cad_erasure"]
