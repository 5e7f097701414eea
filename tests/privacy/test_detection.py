"""The detector on hand-labelled radiology text (written here, not by the bench's generator), and
the span arithmetic. Django-free."""

import pytest

from privacy.detection.engine import detect
from privacy.detection.spans import Span, merge_overlaps, redact

REPORT = (
    "Patient: Yusuf Demir    MRN: 00917342    DOB: 11/23/1929    Age: 96\n"
    "Accession #: RAD-2024-0019921    Exam date: 9 January 2024\n"
    "Ordering physician: Dr. Anneliese Vogt    Pager: (734) 936-4000\n"
    "Address: 88 Willow Lane, Ann Arbor, MI 48109. SSN: 301-44-8812.\n"
    "FINDINGS: Small Baker cyst. A 7 mm nonobstructing calculus in the left kidney. "
    "Trace fluid in Morison pouch. No Hill-Sachs lesion.\n"
    "Mr. Demir was told by phone. Key images at https://pacs.example.org/s/4471 (10.12.8.77).\n"
    "Pacemaker serial PXQ8812040.\n"
    "Dictated by: Siddharth Venkatesan, MD\n"
)
EXPECTED = {
    "Yusuf Demir": "NAME",
    "00917342": "MRN",
    "11/23/1929": "DATE",
    "96": "AGE",
    "RAD-2024-0019921": "ACCESSION",
    "9 January 2024": "DATE",
    "Anneliese Vogt": "NAME",
    "(734) 936-4000": "PHONE",
    "301-44-8812": "SSN",
    "Demir": "NAME",
    "https://pacs.example.org/s/4471": "URL",
    "10.12.8.77": "IP",
    "PXQ8812040": "ID",
    "Siddharth Venkatesan": "NAME",
}
MEDICAL = ["Baker cyst", "7 mm", "calculus", "left kidney", "Morison pouch", "Hill-Sachs", "Pacemaker"]


@pytest.fixture(scope="module")
def found():
    return {REPORT[s.start : s.end]: s.kind for s in detect(REPORT)}


def test_every_identifier_is_found_with_its_kind(found):
    for value, kind in EXPECTED.items():
        assert found.get(value) == kind, (value, found)


def test_the_address_is_hidden_and_medical_words_are_not(found):
    hidden = redact(REPORT, [(s.start, s.end, "#") for s in detect(REPORT)])
    assert "Willow" not in hidden and "48109" not in hidden
    for words in MEDICAL:
        assert words in hidden, words


@pytest.mark.parametrize(
    "text",
    [
        "No acute intracranial hemorrhage.",
        "Degenerative change at L4-L5 and C5-6; BI-RADS 4.",
        "Mass measures 3.2 x 2.1 cm, previously 2.9 x 2.0 cm.",
        "Findings compatible with Crohn disease; Graves disease in the history.",
        "Right Upper Lobe Mass With Hilar Adenopathy.",
        "Pain score 5/10 and ejection fraction 55%.",
    ],
)
def test_plain_medical_text_has_no_finding(text):
    assert detect(text) == []


def test_overlapping_spans_merge_to_cover_both_and_keep_the_surer_kind():
    merged = merge_overlaps([Span(0, 8, "PHONE", 0.4), Span(2, 12, "SSN", 1.0), Span(20, 25, "DATE", 0.7)])
    assert merged == [Span(0, 12, "SSN", 1.0), Span(20, 25, "DATE", 0.7)]


def test_redact_replaces_spans_and_refuses_overlaps():
    assert redact("Seen by Ann Lee on 3/4/2021.", [(8, 15, "[NAME]"), (19, 27, "[DATE]")]) == (
        "Seen by [NAME] on [DATE]."
    )
    with pytest.raises(ValueError, match="overlapping"):
        redact("abcdef", [(0, 3, "x"), (2, 4, "y")])
