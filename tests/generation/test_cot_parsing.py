# ruff: noqa: E501 - the answers are single long lines, as models write them
"""CoT parsing on answers shaped like the ones ChatGPT gives to the seed-003 CoT prompt."""

import pytest

from generation.pipeline.cot_parsing import clean_simplification, has_cot_shape, parse_cot_answer

HEADING_SAME_LINE = """Complicated medical terms:
1. Hyperenhancing: appearing brighter than the surrounding tissue on a scan after contrast dye.
2. Lesions: abnormal areas of tissue.

Simplification: There are 2 abnormal bright spots in the liver."""

HEADING_NEXT_LINE = """1. Hypodensities - areas that look darker than the tissue around them on a CT scan.
2. Simple cysts - harmless sacs filled with fluid.

Simplified sentence:
There are a few tiny spots, smaller than 5 mm, that are too small to identify for sure but are probably harmless fluid-filled sacs."""

BOLD_FINAL = """Here are the complicated medical terms and their explanations:

- **Parenchyma**: the functional tissue of an organ.
- **Heterogeneously enhancing**: lighting up unevenly after contrast dye is given.

**Final simplification:** The liver tissue lights up unevenly throughout on the scan."""

BOLD_HEADING_OWN_LINE = """**Medical terms explained:**
1. **Laceration** – a tear.
2. **Perfusion defect** – an area that gets less blood flow.

**Simplified sentence:**
"There is a small tear, about 1.2 cm deep, in the back part of the liver, which reduces blood flow there."
"""

MARKDOWN_HEADING = """### Medical terms
* Sequela: a condition that results from an earlier disease or injury.
* Curvilinear: curved.

### Simplified version
There is a curved area in the lower middle part of the liver with less blood flow, probably left over from an old injury or infection."""

INTRO_SENTENCE = """Sure! Let me break it down.

1. Trachea: the windpipe.
2. Bronchus intermedius: a branch of the airway that leads to part of the right lung.
3. Mainstem bronchus: the main airway to each lung.

Finally, here is a simplification of the original sentence that laypeople can understand:

There is mucus in the windpipe and in the main airways, and some small airways in both lungs are blocked."""

FINAL_PARAGRAPH_ONLY = """1. Cholelithiasis: gallstones.
2. Cholecystitis: inflammation of the gallbladder.

There are stones in the gallbladder, but the gallbladder is not inflamed."""

LEAD_IN_PARAGRAPH = """1. Splenomegaly: an enlarged spleen.
2. Mild: slight.

In simpler terms, the spleen is slightly bigger than normal."""

QUOTED_CURLY = """Medical terms:
- Ascites: fluid build-up in the belly.

Simplification: “There is a small amount of fluid in the belly.”"""

RESTATED_TWICE = """Simplification: The kidneys are normal.

1. Renal: related to the kidneys.
2. Hydronephrosis: swelling of a kidney because urine cannot drain.

Simplified sentence: Both kidneys look normal, with no swelling from blocked urine."""

WRAPPED_INLINE = """1. Atelectasis: a part of the lung that has collapsed or is not fully inflated.

Simplification: A small part at the bottom of the left lung is not fully
inflated.

Explanation: This is common and often not serious."""

IN_SIMPLE_TERMS_HEADING = """Terms:
1. Osteophytes - bony growths.

In simple terms: There are small bony growths on the spine."""

NO_SHAPE = """The liver has two spots that look brighter than the rest of the liver on the scan."""

LIST_WITHOUT_ENDING = """1. Hepatomegaly: an enlarged liver.
2. Steatosis: fatty liver."""

TERM_LIST_INTRO_ONLY = """Here are the medical terms and their simplified explanations:
1. Nodular: bumpy.
2. Cirrhosis: scarring of the liver.
    It happens after long-term damage."""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (HEADING_SAME_LINE, "There are 2 abnormal bright spots in the liver."),
        (
            HEADING_NEXT_LINE,
            "There are a few tiny spots, smaller than 5 mm, that are too small to identify for sure but are "
            "probably harmless fluid-filled sacs.",
        ),
        (BOLD_FINAL, "The liver tissue lights up unevenly throughout on the scan."),
        (
            BOLD_HEADING_OWN_LINE,
            "There is a small tear, about 1.2 cm deep, in the back part of the liver, which reduces blood flow there.",
        ),
        (
            MARKDOWN_HEADING,
            "There is a curved area in the lower middle part of the liver with less blood flow, probably left over "
            "from an old injury or infection.",
        ),
        (
            INTRO_SENTENCE,
            "There is mucus in the windpipe and in the main airways, and some small airways in both lungs are blocked.",
        ),
        (FINAL_PARAGRAPH_ONLY, "There are stones in the gallbladder, but the gallbladder is not inflamed."),
        (LEAD_IN_PARAGRAPH, "The spleen is slightly bigger than normal."),
        (QUOTED_CURLY, "There is a small amount of fluid in the belly."),
        (RESTATED_TWICE, "Both kidneys look normal, with no swelling from blocked urine."),
        (WRAPPED_INLINE, "A small part at the bottom of the left lung is not fully inflated."),
        (IN_SIMPLE_TERMS_HEADING, "There are small bony growths on the spine."),
    ],
)
def test_recognised_shapes_give_the_final_simplification(answer, expected):
    parsed = parse_cot_answer(answer)
    assert parsed.ok, parsed.reason
    assert parsed.text == expected
    text, ok, reason = parsed  # unpacks as the (text, ok, reason) triple callers use
    assert (text, ok) == (expected, True) and reason


@pytest.mark.parametrize(
    ("answer", "reason_word"),
    [
        (NO_SHAPE, "no simplification heading"),
        (LIST_WITHOUT_ENDING, "term list"),
        (TERM_LIST_INTRO_ONLY, "term list"),
    ],
)
def test_unrecognised_shapes_return_the_whole_answer_not_ok(answer, reason_word):
    parsed = parse_cot_answer(answer)
    assert parsed.ok is False
    assert parsed.text == answer.strip()
    assert reason_word in parsed.reason
    assert has_cot_shape(answer) is False


def test_empty_answer_is_not_ok():
    assert parse_cot_answer("  \n ") == ("", False, "empty answer")


def test_clean_simplification_removes_framing_only():
    assert clean_simplification('**"In other words, the liver is normal."**') == "The liver is normal."
    # Quotes inside the text and a snake_case-like token survive.
    assert clean_simplification('The "T2_weighted" scan is normal.') == 'The "T2_weighted" scan is normal.'
    assert clean_simplification("Two\nlines,\n\ntwo paragraphs.") == "Two lines,\n\ntwo paragraphs."
