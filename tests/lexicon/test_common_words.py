"""The one common-word rule (seed 001's top-3000 lemmas) and the Patient agent's check built on it."""

import re

import pytest

from lexicon import common_words
from lexicon.common_words import (
    CommonWords,
    is_common,
    is_known_to_laypeople,
    is_lay_word,
    read_word_list,
    word_candidates,
)
from tests.django_free import assert_imports_without_django

IRREGULAR = ("children", "went", "women", "feet", "teeth")


def test_irregular_forms_are_common_through_the_wordnet_form_table():
    # The two old rules disagreed on exactly these words; the form table lemmatizes them.
    for word in IRREGULAR:
        assert is_common(word), word
        assert is_known_to_laypeople(word), word
    assert common_words.load_common_words().lemmas("teeth") == ("tooth",)


def test_every_common_word_is_known_to_the_patient():
    common = common_words.load_common_words()
    forms = list(common.words) + list(common.forms)
    assert [w for w in forms if common.is_common(w) and not is_known_to_laypeople(w)] == []


def test_is_common_is_the_lemma_in_the_list_and_nothing_else(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("# comment\nchild\nlung\n")
    forms = tmp_path / "forms.txt"
    forms.write_text("# comment\nchildren\tchild\nlungs\tlung\n")
    table = CommonWords(words, forms)
    assert table.is_common("Children") and table.is_common("lungs") and table.is_common("LUNG")
    # No suffix guessing in the metric's rule: a form not in the table is only itself.
    assert not table.is_common("childs") and not table.is_common("lunged")


def test_lay_words_and_regular_derivations_are_known_to_the_patient_only():
    assert "kidney" in read_word_list(common_words.LAY_WORDS_PATH)
    assert is_lay_word("kidneys") and is_known_to_laypeople("kidneys")
    assert not is_common("kidneys")  # CWR counts the top-3000 lemmas only
    assert is_known_to_laypeople("1.2") and is_known_to_laypeople("50%")
    assert not is_known_to_laypeople("hypodensities") and not is_known_to_laypeople("parenchymal")


def test_word_candidates_strip_one_regular_ending():
    assert word_candidates("arteries")[:2] == ["arteries", "artery"]
    assert "big" in word_candidates("bigger")
    assert "mild" in word_candidates("mildly")


def test_shipped_common_word_list():
    lines = common_words.COMMON_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    header = [line for line in lines if line.startswith("#")]
    words = [line for line in lines if line and not line.startswith("#")]
    assert any("MIT" in line for line in header) and any("WordNet" in line for line in header)
    assert len(words) == 3000 == len(set(words))
    assert all(re.fullmatch(r"[a-z]+", word) for word in words)
    assert {"the", "be", "heart", "doctor", "small", "normal"} <= set(words)
    data = common_words.DATA_DIR
    assert (data / "LICENSES.txt").exists() and (data / "build_common_words.py").exists()
    common = CommonWords()
    assert common.words == frozenset(words)
    assert set().union(*common.forms.values()) <= common.words
    assert common.is_common("showed") and common.is_common("children")
    assert not common.is_common("pneumothorax")


@pytest.mark.parametrize("module", ["lexicon", "lexicon.glossary", "lexicon.common_words", "lexicon.facts"])
def test_lexicon_imports_no_django(module):
    assert_imports_without_django(
        module,
        then="from lexicon.glossary import find_terms\n"
        "from lexicon.common_words import is_common\n"
        "assert find_terms('Mild cardiomegaly.') and is_common('went')\n",
    )
