import csv
import math
import re
import warnings
from pathlib import Path

import pyphen
import pytest
from django.conf import settings

from measures.metrics import readability
from measures.metrics.readability import readability_scores, share_at_or_below_grade
from measures.metrics.registry import MetricRecord, compute_all, metric_definitions

with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    import textstat

TEXTSTAT = {
    "fkgl": "flesch_kincaid_grade",
    "gunning_fog": "gunning_fog",
    "ari": "automated_readability_index",
    "smog": "smog_index",
    "coleman_liau": "coleman_liau_index",
    "dale_chall": "dale_chall_readability_score",
    "flesch_reading_ease": "flesch_reading_ease",
}
LONG_TEXT = (
    "There is a small left pleural effusion with adjacent compressive atelectasis. "
    "No pneumothorax is identified. The cardiomediastinal silhouette is within normal limits. "
    "Degenerative changes of the thoracic spine are noted."
)


def test_textstat_is_the_pinned_offline_version():
    from importlib.metadata import version

    assert version("textstat") == "0.7.3"


def test_scores_equal_textstats_own_functions():
    scores = readability_scores(LONG_TEXT)
    assert set(scores) == set(TEXTSTAT)
    for name, function in TEXTSTAT.items():
        assert scores[name] == getattr(textstat, function)(LONG_TEXT), name


def test_smog_is_none_below_three_sentences_not_textstats_zero():
    text = "The heart is enlarged. The lungs are clear."
    assert textstat.smog_index(text) == 0.0
    scores = readability_scores(text)
    assert scores["smog"] is None
    assert scores["fkgl"] == textstat.flesch_kincaid_grade(text)


def test_empty_text_has_no_scores():
    assert readability_scores("  ") == dict.fromkeys(TEXTSTAT)


def _release_file() -> Path:
    path = Path(settings.RADLAY_RELEASE_DIR) / "Original_setences_with_generated_simplifications.csv"
    if not path.exists():
        pytest.skip("the authors' release is not available (RADLAY_RELEASE_DIR)")
    return path


@pytest.mark.release
def test_release_sentence_scores_equal_textstat():
    with _release_file().open(encoding="utf-8-sig", newline="") as handle:
        row = next(csv.DictReader(handle))
    for text in (row["Original Sentence"].strip(), row["Plain_SC"].strip()):
        scores = readability_scores(text)
        for name, function in TEXTSTAT.items():
            if name == "smog" and textstat.sentence_count(text) < readability.SMOG_MIN_SENTENCES:
                assert scores[name] is None
            else:
                assert scores[name] == getattr(textstat, function)(text), (name, text)


def test_share_at_or_below_grade():
    assert share_at_or_below_grade([5.0, 8.0, 9.0, None]) == pytest.approx(2 / 3)
    assert share_at_or_below_grade([5.0, 8.0, 9.0], grade=5) == pytest.approx(1 / 3)
    assert share_at_or_below_grade([None, None]) is None


def test_family_scores_the_candidate_and_shares_per_system():
    easy = "The heart is big."
    hard = LONG_TEXT
    report = compute_all(
        [
            MetricRecord(source_text=hard, candidate_text=easy, system="a"),
            MetricRecord(source_text=hard, candidate_text=hard, system="a"),
        ],
        families=["readability"],
    )
    assert report.texts[0]["fkgl"] == textstat.flesch_kincaid_grade(easy)
    assert report.texts[1]["fkgl"] == textstat.flesch_kincaid_grade(hard)
    expected = sum(textstat.flesch_kincaid_grade(t) <= 8 for t in (easy, hard)) / 2
    assert report.systems["a"]["fkgl_share_at_or_below_grade"] == expected


# --- the stated formulas (readability.FORMULAS) against textstat -----------------------------------
# The counts below are this test's own, written from textstat 0.7.3's definitions with pyphen and
# textstat's shipped Dale–Chall list read directly; the formulas are the module's table. Their
# result must equal textstat's score exactly, so the Methods text cannot drift from the computation.

_PYPHEN = pyphen.Pyphen(lang="en_US")
_EASY_WORDS = {
    line.strip()
    for line in (Path(textstat.__file__).parent / "resources" / "en" / "easy_words.txt")
    .read_text(encoding="utf-8")
    .splitlines()
}


def _unpunctuated(text: str) -> str:
    return re.sub(r"[^\w\s]", "", text)


def _words(text: str) -> int:
    return len(_unpunctuated(text).split())


def _syllables(word: str) -> int:
    return sum(len(_PYPHEN.positions(w)) + 1 for w in _unpunctuated(word.lower()).split())


def _sentences(text: str) -> int:
    runs = re.findall(r"\b[^.!?]+[.!?]*", text)
    return max(1, sum(_words(run) > 2 for run in runs))


def _distinct_words(text: str) -> set[str]:
    return set(re.findall(r"[\w\='‘’]+", text.lower()))


def _round(value: float, decimals: int) -> float:
    """Half away from zero, as textstat's _legacy_round."""
    scale = 10**decimals
    return math.floor(value * scale + math.copysign(0.5, value)) / scale


def _raw_quantities(text: str) -> dict[str, float]:
    words, sentences = _words(text), _sentences(text)
    complex_words = [w for w in _distinct_words(text) if w not in _EASY_WORDS and _syllables(w) >= 3]
    difficult = [w for w in _distinct_words(text) if w not in _EASY_WORDS]
    polysyllables = sum(_syllables(token) >= 3 for token in text.split())
    return {
        "words_per_sentence": words / sentences,
        "syllables_per_word": _syllables(text) / words,
        "characters_per_word": len(re.sub(r"\s", "", text)) / words,
        "words_per_sentence_ari": words / sentences,
        "complex_word_percent": 100 * len(complex_words) / words,
        "polysyllable_root": math.sqrt(30 * polysyllables / sentences),
        # L and S: the ratio is rounded first, then scaled to 100 words.
        "letters_per_100_words": len(_unpunctuated(re.sub(r"\s", "", text))) / words,
        "sentences_per_100_words": sentences / words,
        "difficult_word_percent": 100 * len(difficult) / words,
    }


def _stated(name: str, text: str) -> float:
    """The formula of the module's table evaluated on this test's counts."""
    formula = readability.FORMULAS[name]
    quantities = {}
    for key, value in _raw_quantities(text).items():
        decimals = readability.QUANTITIES[key].decimals
        value = value if decimals is None else _round(value, decimals)
        # "per 100 words": the rounded ratio scaled (textstat rounds the product to 2 decimals).
        quantities[key] = _round(100 * value, 2) if key.endswith("_per_100_words") else value
    total = sum(c * (1.0 if key is None else quantities[key]) for c, key in formula.terms)
    total *= formula.factor
    if formula.bonus and quantities[formula.bonus_when] > formula.bonus_above:
        total += formula.bonus
    return _round(total, formula.decimals)


SAMPLE_TEXTS = [
    LONG_TEXT,
    "The heart is enlarged. The lungs are clear. There is no fluid.",
    # A complex word repeated: Gunning Fog counts it once.
    "The radiologist saw an abnormality. The radiologist called it an abnormality of the radiologist's "
    "liver, and everywhere else it was fine.",
    "A CT scan (detailed X-ray pictures) of the chest shows a 1.2 cm nodule; it's likely benign!",
    "Don't worry: the follow-up imaging in six months will tell us more. Is it growing? Probably not.",
    "Scattered densely sclerotic bone islands are seen in the pelvis, likely benign.",
]


@pytest.mark.parametrize("name", list(readability.FORMULAS))
@pytest.mark.parametrize("text", SAMPLE_TEXTS)
def test_the_stated_formula_is_textstats(name, text):
    if name == "smog" and _sentences(text) < readability.SMOG_MIN_SENTENCES:
        assert readability_scores(text)["smog"] is None
        return
    assert _stated(name, text) == getattr(textstat, TEXTSTAT[name])(text)


@pytest.mark.release
def test_the_stated_formulas_on_the_release_texts():
    with _release_file().open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    texts = [text.strip() for row in rows for text in row.values()]
    assert len(texts) == 200
    for text in texts:
        for name in readability.FORMULAS:
            if name == "smog" and _sentences(text) < readability.SMOG_MIN_SENTENCES:
                continue
            assert _stated(name, text) == getattr(textstat, TEXTSTAT[name])(text), (name, text)


def test_gunning_fog_counts_distinct_complex_words():
    text = SAMPLE_TEXTS[2]
    words = _words(text)
    occurrences = sum(
        _syllables(w) >= 3 and w.lower() not in _EASY_WORDS for w in _unpunctuated(text).split()
    )
    distinct = len({w for w in _distinct_words(text) if w not in _EASY_WORDS and _syllables(w) >= 3})
    assert (occurrences, distinct) == (5, 3)  # radiologist ×2, abnormality ×2, radiologists
    wps = _round(words / _sentences(text), 1)
    assert textstat.gunning_fog(text) == _round(0.4 * (wps + 100 * distinct / words), 2)
    assert textstat.gunning_fog(text) != _round(0.4 * (wps + 100 * occurrences / words), 2)
    assert "distinct" in readability.formula_definition("gunning_fog")
    assert "Dale–Chall easy-word list" in readability.formula_definition("gunning_fog")


def test_the_definitions_are_written_from_the_table():
    texts = metric_definitions(["readability"])
    assert texts["coleman_liau"] == readability.formula_definition("coleman_liau")
    assert "0.058 × L − 0.296 × S − 15.8" in texts["coleman_liau"]
    assert "0.0588" not in texts["coleman_liau"]
    assert "0.39 × words/sentence + 11.8 × syllables/word − 15.59" in texts["fkgl"]
    assert "206.835 − 1.015 × words/sentence − 84.6 × syllables/word" in texts["flesch_reading_ease"]
    assert "0.4 × (words/sentence + complex-word %)" in texts["gunning_fog"]
    assert "+ 3.6365 when difficult-word % > 5" in texts["dale_chall"]


def test_the_documented_formulas_are_the_tables():
    doc = (Path(settings.BASE_DIR) / "docs" / "analysis" / "metric-conventions.md").read_text(
        encoding="utf-8"
    )
    for name in readability.FORMULAS:
        assert readability.formula_text(name) in doc, name
