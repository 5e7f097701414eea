import os
from fractions import Fraction
from pathlib import Path

import pytest
import sacrebleu

from measures.metrics import reference
from measures.metrics.reference import (
    corpus_bleu,
    corpus_sari,
    meteor,
    meteor_unavailable_reason,
    rouge_scores,
    sari,
    sentence_bleu,
)
from measures.metrics.registry import MetricRecord, compute_all


def test_sari_single_reference_worked_by_hand():
    # source "a b c", output = reference = "a d c".
    # n=1: keep {a, c}: P = R = 1, F = 1; delete {b}, not in the reference: P = 1; add {d}: F = 1.
    # n=2: nothing kept (source ab, bc; output ad, dc): F = 0; both deletions right: P = 1;
    #      additions ad, dc are the reference's: F = 1.
    # n=3: keep F = 0, delete P = 1 (abc), add F = 1 (adc).  n=4: no 4-grams: 0, 0, 0.
    keep, delete, add = Fraction(1, 4), Fraction(3, 4), Fraction(3, 4)
    score = sari("a b c", "a d c", ["a d c"])
    assert score.keep_f1 == pytest.approx(float(100 * keep))
    assert score.delete_precision == pytest.approx(float(100 * delete))
    assert score.add_f1 == pytest.approx(float(100 * add))
    assert score.sari == pytest.approx(float(100 * (keep + delete + add) / 3))  # 58.33


def test_sari_two_references_fractional_keep_worked_by_hand():
    # source "a b c", output "a b", references "a b" and "a c" (r = 2).
    # n=1: source x2 = {a:2, b:2, c:2}, output x2 = {a:2, b:2}, references together {a:2, b:1, c:1}.
    #   kept {a:2, b:2}, kept correctly {a:2, b:1}, kept by references {a:2, b:1, c:1}
    #   keep P = (2/2 + 1/2) / 2 = 3/4, keep R = (2/2 + 1/1) / 3 = 2/3, F = 12/17
    #   deleted {c:2}, beyond the references {c:1}: delete P = (1/2) / 1 = 1/2; add: nothing, 0.
    # n=2: source x2 {ab:2, bc:2}, output x2 {ab:2}, references {ab:1, ac:1}
    #   keep P = (1/2) / 1, R = (1/1) / 1, F = 2/3; delete {bc:2} all beyond the references: P = 1;
    #   add: output adds nothing, references add "a c": P = 0, R = 0, F = 0.
    # n=3: keep 0 (nothing kept, references have no trigram); delete "a b c": P = 1; add 0.  n=4: 0.
    keep = (Fraction(12, 17) + Fraction(2, 3)) / 4
    delete = (Fraction(1, 2) + 1 + 1) / 4
    score = sari("a b c", "a b", ["a b", "a c"])
    assert score.keep_f1 == pytest.approx(float(100 * keep))
    assert score.delete_precision == pytest.approx(float(100 * delete))
    assert score.add_f1 == 0
    assert score.sari == pytest.approx(float(100 * (keep + delete) / 3))


def test_sari_lowercases_and_tokenises_punctuation():
    assert sari("A b c.", "a D c .", ["a d C."]).sari == pytest.approx(
        sari("a b c .", "a d c .", ["a d c ."]).sari
    )


def test_sari_copying_the_source_earns_no_deletion_or_addition_credit():
    score = sari("the pt has cardiomegaly", "the pt has cardiomegaly", ["the patient has a big heart"])
    assert score.delete_precision == 0 and score.add_f1 == 0
    assert score.keep_f1 > 0


def test_sentence_sari_equals_xu_et_al_published_values():
    # The three sentence-level examples EASSE's test suite lists (from Xu et al.'s SARI.py).
    source = "About 95 species are currently accepted ."
    references = [
        "About 95 species are currently known .",
        "About 95 species are now accepted .",
        "95 species are now accepted .",
    ]
    assert sari(source, "About 95 you now get in .", references).sari == pytest.approx(
        26.82782411698074, abs=1e-9
    )
    assert sari(source, "About 95 species are now agreed .", references).sari == pytest.approx(
        58.89995423074248, abs=1e-9
    )
    assert sari(source, "About 95 species are currently agreed .", references).sari == pytest.approx(
        50.71608864657479, abs=1e-9
    )


def test_corpus_sari_pools_ngram_statistics_worked_by_hand():
    # EASSE's corpus SARI: per order, sums over sentences of the weighted counts, then one F1.
    # Sentence 1: "a b c" -> "a d c", reference "a d c" (r = 1).
    # Sentence 2: "a b c" -> "a b", references "a b", "a c" (r = 2: source and output counts x2).
    # n=1 keep: correct 2 + 3, system 2 + 4, reference 2 + 4 -> F1 5/6;
    #     delete: correct 1 + 1, system 1 + 2, reference 1 + 2 -> 2/3; add: 1/1, 1/1 -> 1.
    # n=2 keep: correct 0 + 1, system 0 + 2, reference 0 + 1 -> P 1/2, R 1, F1 2/3;
    #     delete: correct 2 + 2, system 2 + 2, reference 2 + 3 -> P 1, R 4/5, F1 8/9;
    #     add: correct 2, system 2, reference 2 + 1 -> P 1, R 2/3, F1 4/5.
    # n=3 keep: nothing -> 0; delete: 3/3, 3/3 -> 1; add: 1/1, 1/1 -> 1.  n=4: no 4-grams -> 0.
    keep = (Fraction(5, 6) + Fraction(2, 3)) / 4
    delete = (Fraction(2, 3) + Fraction(8, 9) + 1) / 4
    add = (1 + Fraction(4, 5) + 1) / 4
    expected = float(100 * (keep + delete + add) / 3)  # 57.13
    sources, candidates, references = ["a b c", "a b c"], ["a d c", "a b"], [["a d c"], ["a b", "a c"]]
    assert corpus_sari(sources, candidates, references) == pytest.approx(expected, abs=1e-12)
    # Not the mean of sentence SARIs (45.30 here), which is what radlay reported before.
    mean = (sari("a b c", "a d c", ["a d c"]).sari + sari("a b c", "a b", ["a b", "a c"]).sari) / 2
    assert abs(corpus_sari(sources, candidates, references) - mean) > 10


def test_corpus_sari_lowercases_and_tokenises_with_13a():
    assert corpus_sari(["A b, c."], ["a D c ."], [["a d C."]]) == pytest.approx(
        corpus_sari(["a b , c ."], ["a d c ."], [["a d c ."]])
    )
    with pytest.raises(ValueError):
        corpus_sari(["a"], ["a"], [[]])
    with pytest.raises(ValueError):
        corpus_sari([], [], [])


EASSE_DATA = os.environ.get("RADLAY_EASSE_DATA_DIR", "")


@pytest.mark.skipif(
    not (EASSE_DATA and Path(EASSE_DATA, "ACCESS").is_file()),
    reason="RADLAY_EASSE_DATA_DIR does not hold EASSE's TurkCorpus test set and ACCESS output",
)
def test_corpus_sari_equals_easse_on_turkcorpus_access():
    # EASSE's tests/test_sari.py: ACCESS on the TurkCorpus test set (359 sentences x 8 references)
    # scores 41.381013 (the MUSS paper's figure). Copy EASSE's easse/resources/data files ACCESS,
    # test.truecase.detok.orig and test.truecase.detok.simp.0-7 (its "turkcorpus_test") into
    # RADLAY_EASSE_DATA_DIR to run it; EASSE is not on PyPI, so the suite cannot fetch them.
    folder = Path(EASSE_DATA)

    def lines(name):
        return (folder / name).read_text(encoding="utf-8").splitlines()

    sources = lines("test.truecase.detok.orig")
    streams = [lines(f"test.truecase.detok.simp.{k}") for k in range(8)]
    assert len(sources) == 359 and all(len(stream) == 359 for stream in streams)
    references = [list(refs) for refs in zip(*streams, strict=True)]
    assert corpus_sari(sources, lines("ACCESS"), references) == pytest.approx(41.381013, abs=1e-6)


def test_bleu_wraps_sacrebleu_and_transposes_references():
    candidates = ["the lungs are clear", "there is no fluid"]
    references = [
        ["the lungs look clear", "lungs are clear"],
        ["no fluid is seen", "there is no fluid at all"],
    ]
    expected = sacrebleu.corpus_bleu(
        candidates, [[r[0] for r in references], [r[1] for r in references]]
    ).score
    assert corpus_bleu(candidates, references) == pytest.approx(expected)
    assert sentence_bleu("the lungs are clear today", ["the lungs are clear today"]) == pytest.approx(100)
    with pytest.raises(ValueError):
        corpus_bleu(candidates, [["one"], ["one", "two"]])


def test_rouge_worked_by_hand():
    scores = rouge_scores("the lungs are clear", "the lungs look clear")
    # unigrams: 3 of 4 shared both ways; bigrams: only "the lungs" (1 of 3); LCS "the lungs clear" = 3.
    assert scores["rouge1"] == pytest.approx(0.75)
    assert scores["rouge2"] == pytest.approx(1 / 3)
    assert scores["rouge_l"] == pytest.approx(0.75)


def test_meteor_is_none_with_a_reason_when_wordnet_is_missing_never_zero():
    reason = meteor_unavailable_reason()
    value = meteor("the lungs are clear", ["the lungs look clear"])
    if reason is None:  # WordNet installed: NLTK's own value
        from nltk.translate.meteor_score import meteor_score

        assert value == pytest.approx(
            meteor_score([["the", "lungs", "look", "clear"]], ["the", "lungs", "are", "clear"])
        )
    else:
        assert value is None
        assert "WordNet" in reason


def test_family_only_scores_records_with_a_reference():
    records = [
        MetricRecord(source_text="a b c", candidate_text="a d c", reference_text="a d c", system="s"),
        MetricRecord(source_text="a b c", candidate_text="a d c", system="s"),
    ]
    report = compute_all(records, families=["reference"])
    assert report.texts[0]["sentence_sari"] == pytest.approx(sari("a b c", "a d c", ["a d c"]).sari)
    assert report.texts[0]["bleu"] == pytest.approx(sentence_bleu("a d c", ["a d c"]))
    assert all(value is None for value in report.texts[1].values())
    assert report.systems["s"]["corpus_sari"] == pytest.approx(corpus_sari(["a b c"], ["a d c"], [["a d c"]]))
    if reference.meteor_unavailable_reason():
        assert report.texts[0]["meteor"] is None
        assert report.unavailable["meteor"] == reference.meteor_unavailable_reason()

    skipped = compute_all(records, families=["reference"], reference_available=False)
    assert all(value is None for row in skipped.texts for value in row.values())
    assert "reference" in skipped.unavailable["sentence_sari"]
