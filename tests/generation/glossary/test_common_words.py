"""The common-word list behind the Patient check."""

import pytest

from generation.glossary import common_words
from generation.glossary.common_words import is_common, read_word_list, word_candidates


@pytest.fixture
def fresh_cache():
    common_words._load.cache_clear()
    yield
    common_words._load.cache_clear()


def test_prefers_the_shared_metrics_list_when_present(tmp_path, monkeypatch, fresh_cache):
    shared = tmp_path / "common_words_3000.txt"
    shared.write_text("# a comment\nzebra\nQuokka\n\n")
    monkeypatch.setattr(common_words, "SHARED_COMMON_WORDS", shared)
    monkeypatch.setattr(common_words, "REPO_ROOT", tmp_path)
    words = common_words.load_common_words()
    assert {"zebra", "quokka"} <= words
    assert "kidney" in words  # the lay words are always added
    assert common_words.common_words_source().startswith("common_words_3000.txt")


def test_falls_back_to_textstat_and_the_shipped_list(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setattr(common_words, "SHARED_COMMON_WORDS", tmp_path / "absent.txt")
    words = common_words.load_common_words()
    assert "textstat" in common_words.common_words_source()
    assert "zebra" not in words or "zebra" in common_words._textstat_easy_words()
    assert {"the", "show", "scan", "kidney"} <= words
    assert "parenchyma" not in words


def test_shipped_fallback_list_is_everyday_english():
    words = read_word_list(common_words.FALLBACK_COMMON_WORDS)
    assert 250 <= len(words) and {"the", "probably", "several", "without"} <= words
    assert not words & {"lesion", "hepatic", "parenchyma", "atelectasis"}


def test_inflections_are_recognised():
    assert word_candidates("arteries")[:2] == ["arteries", "artery"]
    assert "bigg" in word_candidates("bigger") and "big" in word_candidates("bigger")
    assert is_common("shows") and is_common("stones") and is_common("widened")
    assert is_common("1.2") and is_common("50%")
    assert not is_common("hypodensities") and not is_common("parenchymal")
