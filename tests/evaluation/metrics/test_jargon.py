import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluation.metrics import jargon
from evaluation.metrics.jargon import CommonWords, ascore, common_word_ratio, hit_ratio, word_tokens
from evaluation.metrics.reference import sentence_bleu
from evaluation.metrics.registry import MetricRecord, compute_all

DATA = Path(jargon.__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Match:
    term: str
    plain: str
    start: int
    end: int
    category: str = "finding"


TINY_GLOSSARY = {
    "pleural effusion": "fluid around the lungs",
    "atelectasis": "partly collapsed lung",
    "pneumothorax": "collapsed lung",
    "lungs": "lungs",  # not jargon: rendered as itself
}


def tiny_find_terms(text: str) -> list[Match]:
    found = []
    for term, plain in TINY_GLOSSARY.items():
        for hit in re.finditer(rf"\b{re.escape(term)}\b", text, flags=re.IGNORECASE):
            found.append(Match(term, plain, hit.start(), hit.end()))
    return found


SOURCE = "Small pleural effusion and atelectasis in both lungs."


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        ("A little fluid around the lungs and a partly collapsed lung.", 1.0),
        ("A little fluid around your lungs and some atelectasis.", 0.5),  # content words of the rendering
        ("Small pleural effusion and atelectasis in both lungs.", 0.0),  # copied source
        ("Everything else looks fine.", 1.0),  # both terms gone
        ("Pleural effusion (fluid around the lungs) and atelectasis (partly collapsed lung).", 1.0),
    ],
)
def test_hit_ratio(candidate, expected):
    assert hit_ratio(SOURCE, candidate, find_terms=tiny_find_terms) == expected


def test_hit_counts_distinct_terms_and_is_undefined_without_jargon():
    source = "Atelectasis here, atelectasis there, and a pneumothorax."
    assert hit_ratio(
        source, "Collapsed lung here, atelectasis there.", find_terms=tiny_find_terms
    ) == pytest.approx(1 / 2)
    assert hit_ratio("The lungs are clear.", "Your lungs are clear.", find_terms=tiny_find_terms) is None


def test_word_tokens_drop_numbers_and_expand_negations():
    assert word_tokens("Don't worry: it's a 1.2 cm spot; can't grow.") == [
        "do", "not", "worry", "it", "a", "cm", "spot", "can", "not", "grow",
    ]  # fmt: skip


def test_common_word_ratio_lemmatises_through_the_forms_table(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("# header\nthe\nlung\nbe\nclear\n", encoding="utf-8")
    forms = tmp_path / "forms.txt"
    forms.write_text("# header\nlungs\tlung\nare\tbe\n", encoding="utf-8")
    common = CommonWords(words, forms)
    # the, lungs->lung, are->be, clear common; "today" not: 4 / 5
    assert common_word_ratio("The lungs are clear today.", common_words=common) == pytest.approx(4 / 5)
    assert common_word_ratio("12, 3.5", common_words=common) is None


def test_shipped_common_word_list():
    lines = (DATA / "common_words_3000.txt").read_text(encoding="utf-8").splitlines()
    header = [line for line in lines if line.startswith("#")]
    words = [line for line in lines if line and not line.startswith("#")]
    assert any("MIT" in line for line in header) and any("WordNet" in line for line in header)
    assert len(words) == 3000 == len(set(words))
    assert all(re.fullmatch(r"[a-z]+", word) for word in words)
    assert {"the", "be", "heart", "doctor", "small", "normal"} <= set(words)
    assert (DATA / "LICENSES.txt").exists() and (DATA / "build_common_words.py").exists()
    common = CommonWords()
    assert set().union(*common.forms.values()) <= common.words
    assert common.is_common("showed") and common.is_common("children")
    assert not common.is_common("pneumothorax")


def test_ascore_worked_by_hand():
    # Equal inputs: a weighted harmonic mean returns the common value.
    assert ascore(0.5, 0.5, 0.5) == pytest.approx(0.5)
    # Seed 001's Moses row (BLEU .6889, HIT .6823, CWR .7543), alpha = 2, beta = 1.5.
    expected = (1 + 4 + 2.25) / (4 / 0.6889 + 2.25 / 0.6823 + 1 / 0.7543)
    assert ascore(0.6889, 0.6823, 0.7543) == pytest.approx(expected)
    # A zero is replaced by 1e-8, so the score is tiny but not zero.
    assert ascore(0.0, 1.0, 1.0) == pytest.approx(7.25 / (4 / 1e-8 + 2.25 + 1))


def test_family_with_a_given_glossary():
    candidate = "A little fluid around the lungs and a partly collapsed lung."
    reference = "A small amount of fluid around the lungs and a partly collapsed lung."
    records = [
        MetricRecord(source_text=SOURCE, candidate_text=candidate, reference_text=reference),
        MetricRecord(source_text=SOURCE, candidate_text=SOURCE),
    ]
    report = compute_all(records, families=["jargon"], options={"find_terms": tiny_find_terms})
    first, second = report.texts
    assert first["hit"] == 1.0 and second["hit"] == 0.0
    assert first["cwr"] == common_word_ratio(candidate)
    bleu = sentence_bleu(candidate, [reference]) / 100
    assert first["ascore"] == pytest.approx(ascore(bleu, 1.0, first["cwr"]))
    assert second["ascore"] is None  # no reference, no BLEU
    assert "hit" not in report.unavailable


def test_family_defaults_to_the_project_glossary():
    report = compute_all([MetricRecord(source_text=SOURCE, candidate_text=SOURCE)], families=["jargon"])
    try:
        from generation.glossary.lexicon import find_terms
    except ImportError:
        assert report.texts[0]["hit"] is None
        assert "glossary" in report.unavailable["hit"]
    else:
        assert report.texts[0]["hit"] == hit_ratio(SOURCE, SOURCE, find_terms=find_terms)
