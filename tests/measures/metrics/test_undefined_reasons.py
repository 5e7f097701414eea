"""A metric that comes out empty for every text says why (SMOG below three sentences, AScore without a
reference), as the metrics that cannot be computed do; a metric with values has no such reason."""

from measures.metrics.registry import MetricRecord, compute_all

ONE_SENTENCE = MetricRecord(
    source_text="Small hypodense hepatic lesion, likely a cyst.",
    candidate_text="There is a small spot in the liver that is probably a harmless fluid sac.",
    system="a",
)
THREE_SENTENCES = MetricRecord(
    source_text="Small hypodense hepatic lesion. No ascites. Normal spleen.",
    candidate_text="There is a small spot in the liver. There is no fluid in the belly. "
    "The spleen looks normal.",
    reference_text="A small spot is in the liver. No belly fluid. The spleen is normal.",
    system="a",
)


def test_smog_of_single_sentences_says_why():
    report = compute_all([ONE_SENTENCE], families=["readability"])
    assert report.texts[0]["smog"] is None
    assert "three sentences" in report.unavailable["smog"] or "3 sentences" in report.unavailable["smog"]
    assert "fkgl" not in report.unavailable


def test_smog_with_values_has_no_reason():
    report = compute_all([THREE_SENTENCES], families=["readability"])
    assert report.texts[0]["smog"] is not None
    assert "smog" not in report.unavailable


def test_ascore_without_a_reference_says_why():
    report = compute_all([ONE_SENTENCE], families=["jargon"])
    assert report.texts[0]["ascore_item"] is None and report.systems["a"]["ascore"] is None
    assert "needs a reference simplification" in report.unavailable["ascore"]
    assert "needs a reference simplification" in report.unavailable["ascore_item"]


def test_ascore_with_a_reference_has_no_reason():
    report = compute_all([THREE_SENTENCES], families=["jargon"])  # the project glossary finds the terms
    assert report.texts[0]["ascore_item"] is not None and report.systems["a"]["ascore"] is not None
    assert "ascore" not in report.unavailable and "ascore_item" not in report.unavailable
