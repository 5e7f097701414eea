import pytest

from measures.metrics.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "There is a 1.2 cm nodule in the right upper lobe. No pneumothorax.",
            ["There is a 1.2 cm nodule in the right upper lobe.", "No pneumothorax."],
        ),
        (
            "The mass measures approx. 3 cm. Compare with prior, e.g. CT from 2020. Dr. Smith was notified.",
            [
                "The mass measures approx. 3 cm.",
                "Compare with prior, e.g. CT from 2020.",
                "Dr. Smith was notified.",
            ],
        ),
        (
            "Heart size is stable vs. prior. See image No. 3 for details. No.",
            ["Heart size is stable vs. prior.", "See image No. 3 for details.", "No."],
        ),
        (
            "Mild atelectasis (i.e. partial collapse). Done.",
            ["Mild atelectasis (i.e. partial collapse).", "Done."],
        ),
        ("The pt. was seen today. Stable.", ["The pt. was seen today.", "Stable."]),
        ("1. The lungs are clear. 2. No effusion.", ["1. The lungs are clear.", "2. No effusion."]),
        (
            "Is this serious? No! It is mild... The end",
            ["Is this serious?", "No!", "It is mild...", "The end"],
        ),
        ('He said "It is fine." Then he left.', ['He said "It is fine."', "Then he left."]),
        ("Nodule measuring 4.5 x 3.2 mm.", ["Nodule measuring 4.5 x 3.2 mm."]),
        ("Unknown abbrev. should not split here.", ["Unknown abbrev. should not split here."]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_line_breaks_end_sentences_by_default():
    text = "FINDINGS:\nLungs clear\n- No fluid\n\n- Heart normal"
    assert split_sentences(text) == ["FINDINGS:", "Lungs clear", "- No fluid", "- Heart normal"]


def test_without_newline_splitting_only_paragraphs_break():
    text = "The lungs\nare clear. The heart\nis normal.\n\nNew paragraph"
    assert split_sentences(text, split_on_newlines=False) == [
        "The lungs are clear.",
        "The heart is normal.",
        "New paragraph",
    ]
