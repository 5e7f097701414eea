"""The deterministic agents: Generator (plain, CoT, refine), Radiologist, Patient, Processor."""

import pytest

from generation.glossary.agents import (
    PATIENT_OK,
    RADIOLOGIST_OK,
    feedback_points,
    patient_feedback,
    process_feedback,
    radiologist_feedback,
    refine,
    simplify,
    simplify_cot,
    substitute,
    unclear_words,
)
from generation.pipeline.cot_parsing import parse_cot_answer
from lexicon.facts import check_facts

# Sentences written for these tests in the style of abdominal CT and chest reports.
SENTENCES = [
    "There are 3 hypoenhancing splenic lesions.",
    "Small right pleural effusion with adjacent atelectasis.",
    "A 7 mm nodule in the right lower lobe is probably a granuloma.",
    "No pericardial effusion.",
    "Mild bilateral hydronephrosis.",
    "Possible small hepatic hemangioma measuring 1.3 cm.",
    "The common bile duct is not dilated.",
    "Multiple left renal cysts, the largest measuring 2.4 cm.",
    "Ill-defined ground glass opacities in the LLL, suspicious for infection.",
    "Status post cholecystectomy with surgical clips in the gallbladder fossa.",
    "There is a nonobstructing 4 mm stone in the lower pole of the right kidney.",
    "Scattered subcentimeter hypodensities in the liver, too small to characterize. No ascites.",
]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            "There are 3 hypoenhancing splenic lesions.",
            "There are 3 dimly lighting-up abnormal areas in the spleen.",
        ),
        ("No pericardial effusion.", "The scan shows no fluid around the heart."),
        ("The common bile duct is not dilated.", "The main bile duct is not widened."),
        ("Bilateral renal cysts.", "The scan shows fluid-filled sacs in the kidneys on both sides."),
        (
            "There is a nonobstructing 4 mm stone in the lower pole of the right kidney.",
            "There is a 4 millimeter stone without causing a blockage in the bottom end of the right kidney.",
        ),
        ("Status post cholecystectomy.", "This is after surgery to remove the gallbladder."),
        ("The osseous structures are diffusely demineralized.", "The bones are thinned throughout."),
        (
            "There is no intrahepatic or extrahepatic biliary ductal dilatation.",
            "There is no bile duct widening inside the liver or outside the liver.",
        ),
        ("There is an 8 mm cyst.", "There is an 8 millimeter fluid-filled sac."),
    ],
)
def test_generator_templates_read_as_english(sentence, expected):
    assert simplify(sentence) == expected


def test_substitution_alone_is_the_noisy_draft():
    assert (
        substitute("There are 2 hyperenhancing liver lesions.")
        == "There are 2 brightly lighting-up liver abnormal areas."
    )


@pytest.mark.parametrize("sentence", SENTENCES)
def test_generator_output_passes_its_own_radiologist_and_patient(sentence):
    simplification = simplify(sentence)
    assert simplification != sentence
    assert check_facts(sentence, simplification) == []
    assert unclear_words(simplification) == []
    assert radiologist_feedback(sentence, simplification) == RADIOLOGIST_OK
    assert patient_feedback(simplification) == PATIENT_OK


def test_generator_handles_several_sentences():
    out = simplify("Diffuse hepatic steatosis. No focal mass.")
    assert out == "The scan shows widespread fatty liver. The scan shows no lump in one spot."


def test_cot_answer_lists_terms_and_parses_to_the_plain_simplification():
    sentence = "A 7 mm nodule in the right lower lobe is probably a granuloma."
    answer = simplify_cot(sentence)
    assert answer.startswith("Complicated medical terms:\n1. Nodule: in everyday words, small lump.")
    assert "Granuloma: in everyday words, small healed spot of old inflammation." in answer
    parsed = parse_cot_answer(answer)
    assert parsed.ok and parsed.text == simplify(sentence)


def test_radiologist_reports_each_missing_or_changed_fact_on_its_own_line():
    sentence = "A 7 mm nodule in the right lower lobe is probably a granuloma."
    feedback = radiologist_feedback(sentence, "A 9 millimeter spot in the left lower section of the lung.")
    lines = [line for line in feedback.splitlines() if line.startswith("- ")]
    labels = [line.split(":")[0] for line in lines]
    assert labels == [
        "- Missing concept",
        "- Missing concept",
        "- Missing size",
        "- Added size",
        "- Missing side",
        "- Added side",
        "- Missing hedging",
    ]
    assert '"nodule"' in lines[0] and '"granuloma"' in lines[1] and '"7 mm"' in lines[2]


def test_patient_flags_jargon_but_not_explained_or_everyday_words():
    text = "The CT scan shows hepatic steatosis and a splenule (small extra piece of spleen) in the belly."
    assert [w.word for w in unclear_words(text)] == ["CT", "hepatic", "steatosis"]
    hepatic = unclear_words(text)[1]
    assert hepatic.suggestion == "fatty liver"
    feedback = patient_feedback(text)
    assert feedback.count("- Unclear word:") == 3 and '"steatosis"' in feedback
    assert unclear_words("There are several small kidney stones on both sides.") == []


def test_processor_says_no_to_clean_feedback_and_extracts_points_otherwise():
    assert process_feedback(RADIOLOGIST_OK, source_agent="radiologist") == "No."
    assert process_feedback(PATIENT_OK, source_agent="patient") == "No."
    flagged = radiologist_feedback("No pericardial effusion.", "There is fluid around the heart.")
    answer = process_feedback(flagged, source_agent="radiologist")
    assert answer.startswith("Yes.")
    assert answer.splitlines()[1].startswith('- Missing negation: "No"')


def test_processor_reads_model_written_prose_too():
    prose = (
        "The simplification is clear and easy to understand. However, it should mention that the "
        "finding is on the left side. No other changes are needed."
    )
    assert feedback_points(prose) == ["However, it should mention that the finding is on the left side."]
    assert process_feedback("Great job, I understand everything. No changes needed.") == "No."
    assert process_feedback(
        "1. Correctness: accurate.\n2. Simplicity: the word 'hepatic' is too technical, replace it."
    ).startswith("Yes.")


def _round(sentence, draft):
    """One round of the loop with the deterministic agents, as the loop sequences them."""
    rad = process_feedback(radiologist_feedback(sentence, draft), source_agent="radiologist")
    pat = process_feedback(patient_feedback(draft), source_agent="patient")
    return rad, pat


@pytest.mark.parametrize(
    ("sentence", "draft", "expected"),
    [
        # a dropped hedge goes back where the original had it
        (
            "Few stable less than 5 mm hypodensities, too small to characterize, probably simple cysts.",
            "A few unchanged darker areas smaller than 5 millimeters, too small to identify for sure, simple "
            "fluid-filled sacs.",
            "A few unchanged darker areas smaller than 5 millimeters, too small to identify for sure, "
            "probably simple fluid-filled sacs.",
        ),
        # a dropped concept is re-inserted in plain words
        (
            "There are 2 hyperenhancing liver lesions.",
            "There are 2 abnormal areas in the liver.",
            "There are 2 brightly lighting-up abnormal areas in the liver.",
        ),
        # a flipped side and a changed size are put back; the patient's "cm" is spelled out
        (
            "There is a 1.4 cm cyst at the right hepatic dome.",
            "There is a 2 cm fluid-filled sac at the left top of the liver.",
            "There is a 1.4 centimeter fluid-filled sac at the right top of the liver.",
        ),
        # a dropped negation
        (
            "There is no intrahepatic or extrahepatic biliary ductal dilatation.",
            "There is widening of the bile ducts inside and outside the liver.",
            "There is no widening of the bile ducts inside and outside the liver.",
        ),
        # leftover jargon is replaced by its glossary rendering; a partial concept is completed
        (
            "Diffuse hepatic steatosis with some fatty sparing adjacent to the gallbladder fossa.",
            "Widespread hepatic steatosis with some fatty sparing near the gallbladder.",
            "Widespread fatty liver with some fatty sparing near the hollow where the gallbladder sits.",
        ),
    ],
)
def test_loop_corrects_a_flawed_draft_in_round_one(sentence, draft, expected):
    rad, pat = _round(sentence, draft)
    assert "Yes" in (rad[:3], pat[:3])
    refined = refine(sentence, draft, radiologist_feedback=rad, patient_feedback=pat)
    assert refined == expected
    assert _round(sentence, refined) == ("No.", "No.")


def test_refine_rewrites_a_draft_that_lost_too_much():
    sentence = "There is an angiomyolipoma measuring 2 cm along the left renal upper pole."
    draft = "There is a harmless fatty growth of 2 cm in the kidney."
    rad, pat = _round(sentence, draft)
    refined = refine(sentence, draft, radiologist_feedback=rad, patient_feedback=pat)
    assert refined == simplify(sentence)
    assert _round(sentence, refined) == ("No.", "No.")


def test_refine_explains_an_unknown_word_by_its_parts():
    sentence = "Mild splenomegaly."
    draft = "There is mild splenomegaly."
    assert unclear_words(draft)[0].suggestion == "enlarged spleen"  # the glossary knows this one
    refined = refine(
        sentence, "The scan shows mild cholangitis.", patient_feedback='- Unclear word: "cholangitis"'
    )
    assert refined == "The scan shows mild cholangitis (a medical word: bile duct + inflammation)."
    assert unclear_words(refined) == []


def test_refine_with_no_feedback_changes_nothing_and_accepts_a_cot_answer():
    draft = "There are 2 brightly lighting-up abnormal areas in the liver."
    assert (
        refine(
            "There are 2 hyperenhancing liver lesions.",
            draft,
            radiologist_feedback="No.",
            patient_feedback="No.",
        )
        == draft
    )
    cot = simplify_cot("There are 2 hyperenhancing liver lesions.")
    assert (
        refine(
            "There are 2 hyperenhancing liver lesions.",
            cot,
            radiologist_feedback="No.",
            patient_feedback="No.",
        )
        == draft
    )
