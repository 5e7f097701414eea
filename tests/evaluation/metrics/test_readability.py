import csv
import warnings
from pathlib import Path

import pytest
from django.conf import settings

from evaluation.metrics import readability
from evaluation.metrics.readability import readability_scores, share_at_or_below_grade
from evaluation.metrics.registry import MetricRecord, compute_all

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
