"""Concepts and entities a simplification must keep (Radiologist agent and SCGR factuality)."""

from lexicon.facts import (
    check_facts,
    extract_entities,
    phrase_count,
    phrase_stems,
    rendering_present,
    stem_counts,
)
from lexicon.glossary import load_glossary

SOURCE = "Few stable less than 5 mm hypodensities in the left hepatic lobe, probably simple cysts."
GOOD = (
    "A few unchanged darker areas smaller than 5 millimeters in the left side of the liver, probably "
    "simple fluid-filled sacs."
)


def _kinds(violations):
    return sorted((v.label, v.expected) for v in violations)


def test_entities_are_normalised():
    values = {
        (e.kind, e.value)
        for e in extract_entities(
            "A 1.2 x 2.3 cm cyst, two nodules, segment VI, L4, less than 5 mm, bilaterally, no mass, "
            "cannot be excluded, suspicious for, several."
        )
    }
    assert {
        ("size", "12x23mm"),
        ("number", "2"),
        ("number", "6"),
        ("number", "L4"),
        ("size", "<5mm"),
        ("side", "both"),
        ("negation", "negation"),
        ("hedge", "possible"),
        ("hedge", "suspicious"),
        ("quantity", "multiple"),
    } <= values
    # "cannot" inside the hedge is not a negation of its own.
    assert sum(e.kind == "negation" for e in extract_entities("Infection cannot be excluded.")) == 0
    # "left over" is a verb phrase, not a side.
    assert not [e for e in extract_entities("a scar left over from an injury") if e.kind == "side"]


def test_faithful_simplification_passes():
    assert check_facts(SOURCE, GOOD) == []


def test_dropped_probably_is_caught():
    assert _kinds(check_facts(SOURCE, GOOD.replace("probably ", ""))) == [("Missing hedging", "probably")]


def test_equivalent_hedge_is_accepted_but_another_strength_is_not():
    assert check_facts(SOURCE, GOOD.replace("probably", "likely")) == []
    assert _kinds(check_facts(SOURCE, GOOD.replace("probably", "possibly"))) == [
        ("Missing hedging", "probably")
    ]


def test_flipped_side_is_caught_both_ways():
    violations = check_facts(SOURCE, GOOD.replace("left", "right"))
    labels = _kinds(violations)
    assert ("Missing side", "left") in labels and ("Added side", "right") in labels
    added = next(v for v in violations if v.added)
    assert added.replaces == "left"


def test_changed_size_is_caught_and_units_are_normalised():
    src = "There is a 1.2 cm cyst in the right kidney."
    assert check_facts(src, "There is a 12 mm fluid-filled sac in the right kidney.") == []
    assert check_facts(src, "There is a 1.2 centimeter fluid-filled sac in the right kidney.") == []
    violations = check_facts(src, "There is a 2 cm fluid-filled sac in the right kidney.")
    assert _kinds(violations) == [("Added size", "2 cm"), ("Missing size", "1.2 cm")]
    # "less than 5 mm" is not "5 mm".
    assert _kinds(check_facts(SOURCE, GOOD.replace("smaller than 5", "5"))) == [
        ("Added size", "5 millimeters"),
        ("Missing size", "less than 5 mm"),
    ]


def test_numbers_counts_and_quantities():
    src = "There are 2 hyperenhancing liver lesions and multiple cysts."
    ok = "There are two brightly lighting-up abnormal areas in the liver and several fluid-filled sacs."
    assert check_facts(src, ok) == []
    assert ("Missing number", "2") in _kinds(check_facts(src, ok.replace("two", "three")))
    assert ("Missing quantity", "multiple") in _kinds(check_facts(src, ok.replace("several", "a few")))


def test_dropped_and_added_negation():
    src = "There is no pericardial effusion."
    assert check_facts(src, "There is no fluid around the heart.") == []
    assert _kinds(check_facts(src, "There is fluid around the heart.")) == [("Missing negation", "no")]
    assert _kinds(check_facts("There is a renal cyst.", "There is no fluid-filled sac in the kidney.")) == [
        ("Added negation", "no")
    ]


def test_negation_brought_by_a_rendering_is_neither_kept_nor_added():
    src = "Multiple nonobstructing left renal calculi."
    assert check_facts(src, "Multiple left kidney stones without causing a blockage.") == []
    # "without" of the rendering does not stand in for a dropped "no".
    src2 = "No nonobstructing renal calculi."
    assert ("Missing negation", "No") in _kinds(
        check_facts(src2, "Kidney stones without causing a blockage.")
    )


def test_missing_concept_is_reported_with_its_plain_words():
    violations = check_facts(
        "There are 2 hyperenhancing liver lesions.", "There are 2 abnormal areas in the liver."
    )
    assert _kinds(violations) == [("Missing concept", "hyperenhancing")]
    assert violations[0].plain == "brightly lighting-up"


def test_concept_kept_by_term_or_by_plain_words_in_any_order():
    src = "Small right pleural effusion."
    assert check_facts(src, "Small right pleural effusion.") == []
    assert check_facts(src, "A small amount of fluid around the right lung.") == []
    assert ("Missing concept", "pleural effusion") in _kinds(check_facts(src, "A small right lung problem."))


def test_bilateral_is_kept_by_both_sides_or_left_and_right():
    src = "Bilateral renal cysts."
    assert check_facts(src, "Fluid-filled sacs in both kidneys.") == []
    assert check_facts(src, "Fluid-filled sacs in the left and right kidney.") == []
    assert ("Missing side", "Bilateral") in _kinds(check_facts(src, "Fluid-filled sacs in the left kidney."))


def test_lay_paraphrases_and_near_synonyms_keep_a_concept():
    # SCGR's concept check: a faithful paraphrase is not a missing concept.
    source = "Hypodense lesion in the liver."
    assert _kinds(check_facts(source, "A darker spot in the liver.")) == []
    assert _kinds(check_facts(source, "A darker area in the liver.")) == []
    # Without a rendering the concepts are missing, and a rendering of another concept does not count.
    assert _kinds(check_facts(source, "Something in the liver.")) == [
        ("Missing concept", "hypodense"),
        ("Missing concept", "lesion"),
    ]
    assert _kinds(check_facts("Small pleural effusion.", "A small amount of air.")) == [
        ("Missing concept", "pleural effusion")
    ]


def test_rendering_present_ignores_the_term_itself():
    glossary = load_glossary()
    entry = glossary.get("pleural effusion")
    assert rendering_present(entry, "Some fluid around the lungs.")
    assert rendering_present(entry, "Some fluid in the chest.")  # an accepted paraphrase
    assert not rendering_present(entry, "A pleural effusion.")


def test_phrase_count_counts_a_phrase_as_a_bag_of_its_content_words():
    counts = stem_counts("The liver is normal and the spleen looks normal; two fatty livers.")
    assert counts["normal"] == 2 and counts["liver"] == 2
    assert phrase_count("normal", counts) == 2
    assert phrase_count("fatty liver", counts) == 1  # "fatty" once
    assert phrase_count("liver fatty", counts) == 1  # order not read
    assert phrase_count("fat in the liver", counts) == 0  # "fat" is not "fatty"
    # Near-synonyms count: "lumps" and "bump" are both the "lump" group of lay_synonyms.txt.
    assert phrase_count("lump", stem_counts("Two lumps and a bump.")) == 2
    # A word the phrase needs twice is needed twice per occurrence.
    assert phrase_count("side to side", stem_counts("side to side, one side")) == 1
    assert phrase_stems("Darker-looking spots") == {"darker", "spot"}
