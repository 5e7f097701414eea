import csv
import re
from collections import Counter

import pytest

from generation.controls import CATEGORIES, KINDS, SEVERITIES, plant_control, plant_controls
from lexicon.facts import check_facts, extract_entities
from tests.django_free import assert_imports_without_django

SOURCE = (
    "No evidence of fracture. 3 mm hypodense lesion in the left kidney, too small to characterize. "
    "Small pleural effusion."
)
TEXT = (
    "There is no evidence of a broken bone. There is a 3 mm darker spot in the left kidney. "
    "There is a small amount of fluid around the lung."
)


def _entities(text, kind):
    return [e for e in extract_entities(text) if e.kind == kind]


def _claims_hold(control, original, source):
    """The change is one contiguous edit at the offsets given, and it does what its kind says,
    checked with lexicon/facts.py (independent of how the control chose the place)."""
    assert control.text != original
    assert control.start == control.original_start
    assert control.text[: control.start] == original[: control.original_start]
    assert control.text[control.end :] == original[control.original_end :]
    assert control.category in CATEGORIES and control.severity in SEVERITIES
    if control.kind == "negation":
        assert len(_entities(control.text, "negation")) != len(_entities(original, "negation"))
    elif control.kind == "laterality":
        before = Counter(e.value for e in _entities(original, "side"))
        after = Counter(e.value for e in _entities(control.text, "side"))
        assert (after["left"] - before["left"], after["right"] - before["right"]) in ((1, -1), (-1, 1))
        assert control.text[control.start : control.end].lower() in ("left", "right")
    elif control.kind == "size":
        assert sorted(e.value for e in _entities(control.text, "size")) != sorted(
            e.value for e in _entities(original, "size")
        )
        old = float(original[control.original_start : control.original_end])
        assert float(control.text[control.start : control.end]) in (2 * old, 3 * old)
    elif control.kind == "reassurance":
        assert re.search(r"worry|normal|concern", control.text[control.start : control.end])
    elif control.kind == "omission":
        assert control.start == control.end
        missing = {
            v.expected for v in check_facts(source, control.text) if v.kind == "concept" and not v.added
        }
        kept = {v.expected for v in check_facts(source, original) if v.kind == "concept" and not v.added}
        assert missing - kept, "dropping the text lost no finding of the source"


def test_each_kind_changes_what_it_claims():
    controls = {c.kind: c for c in plant_controls(TEXT, source=SOURCE, seed=3)}
    assert set(controls) == set(KINDS)
    for control in controls.values():
        _claims_hold(control, TEXT, SOURCE)
    assert controls["negation"].text.startswith("There is evidence of a broken bone.")
    assert TEXT[controls["negation"].original_start : controls["negation"].original_end] == "no "
    assert "right kidney" in controls["laterality"].text
    assert controls["omission"].category == "omitted_finding"
    assert controls["reassurance"].category == "wrong_severity_or_false_reassurance"


def test_negation_is_inserted_when_the_text_has_none_and_capitalisation_is_kept():
    inserted = plant_control("The kidney is enlarged.", source="Enlarged kidney.", kind="negation")
    assert inserted.text == "The kidney is not enlarged."
    assert inserted.text[inserted.start : inserted.end] == "not "
    removed = plant_control("No fluid is seen.", source="No effusion.", kind="negation")
    assert removed.text == "Fluid is seen."
    without = plant_control("The cyst is without blood flow.", source="Avascular cyst.", kind="negation")
    assert without.text == "The cyst is with blood flow."


def test_kinds_that_do_not_apply_return_none():
    text = "The liver looks healthy."
    assert plant_control(text, source="Normal liver.", kind="laterality") is None
    assert plant_control(text, source="Normal liver.", kind="size") is None
    assert plant_control(text, source="Normal liver.", kind="omission") is None
    assert plant_control("Looks fine", source="Normal.", kind="negation") is None
    with pytest.raises(ValueError, match="kind"):
        plant_control(text, source="x", kind="typo")


def test_deterministic_for_text_and_seed():
    for seed in range(5):
        assert plant_controls(TEXT, source=SOURCE, seed=seed) == plant_controls(
            TEXT, source=SOURCE, seed=seed
        )
    texts = {plant_control(TEXT, source=SOURCE, kind="reassurance", seed=s).text for s in range(20)}
    assert len(texts) > 1  # the seed does choose among the places and wordings


@pytest.mark.release
def test_controls_on_the_release_sentences(release_dir):
    path = release_dir / "Original_setences_with_generated_simplifications.csv"
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 40
    applied = Counter()
    for row in rows:
        source = row["Original Sentence"]
        for column in ("Plain_BS", "Plain_SC", "CoT_BS", "CoT_SC"):
            text = row[column].strip()
            for seed in (0, 1):
                for control in plant_controls(text, source=source, seed=seed):
                    _claims_hold(control, text, source)
                    applied[control.kind] += seed == 0
    # Every kind applies somewhere in the 160 simplifications (negation and reassurance nearly always).
    print(dict(applied))
    assert set(applied) == set(KINDS), applied
    assert applied["reassurance"] == 160 and applied["omission"] >= 30


@pytest.mark.parametrize(
    "module",
    [
        "generation.controls",
        "measures.stats.pairwise",
        "measures.stats.rater_reliability",
        "measures.stats.span_agreement",
    ],
)
def test_the_cores_import_no_django(module):
    assert_imports_without_django(module)


def test_the_planted_categories_are_the_clinical_typology():
    from instruments.presets import preset_load

    item = preset_load("clinical_error_spans").item("error_spans")
    assert tuple(option.key for option in item.options) == CATEGORIES
    assert tuple(option.key for option in item.severities) == SEVERITIES
