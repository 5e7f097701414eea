"""The protocol presets are the instruments radlay runs today, word for word: every question and
scale label equals annotation/scales.py (and the panel intros and rubric texts equal
annotation/protocol_texts.py), and each appears verbatim in PROTOCOL.md unless the item says, in its
note, that the wording is radlay's. Only this test imports those modules; the package does not."""

import re
from pathlib import Path

import pytest

from annotation import protocol_texts, scales
from instruments.presets import preset_load
from instruments.schema import AppliesTo, Instrument, ItemKind, Scale

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = REPO.parent / "shared" / "PROTOCOL.md"


@pytest.fixture(scope="module")
def protocol_md() -> str:
    if not PROTOCOL.is_file():
        pytest.skip(f"PROTOCOL.md is not available at {PROTOCOL}")
    # The file wraps long sentences; a sentence is verbatim when it matches with spaces collapsed.
    return re.sub(r"\s+", " ", PROTOCOL.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lay() -> Instrument:
    return preset_load("protocol_003_layperson")


@pytest.fixture(scope="module")
def expert() -> Instrument:
    return preset_load("protocol_003_radiologist")


def assert_same_scale(scale: Scale | None, code_scale: scales.Scale) -> None:
    assert scale is not None
    assert [point.label["en"] for point in scale.points] == code_scale.names
    assert [point.code for point in scale.points] == [level.value for level in code_scale.levels]
    assert [point.definition.get("en", "") for point in scale.points] == [
        level.definition for level in code_scale.levels
    ]


def test_lay_questions_and_scales_equal_radlays_code(lay):
    asked = [item.key for item in lay.items if item.kind is ItemKind.ORDINAL]
    assert asked == list(scales.LAY_QUESTIONS)
    for key, code_scale in scales.LAY_SCALES.items():
        item = lay.item(key)
        assert item.wording["en"] == code_scale.question
        assert item.number == scales.LAY_QUESTION_NUMBERS[key]
        assert_same_scale(item.scale, code_scale)
    assert lay.item("most").wording["en"] == scales.PREFERENCE_MOST_QUESTION
    assert lay.item("least").wording["en"] == scales.PREFERENCE_LEAST_QUESTION
    assert lay.item("most").number == scales.PREFERENCE_QUESTION_NUMBERS["most"]
    assert lay.item("least").number == scales.PREFERENCE_QUESTION_NUMBERS["least"]
    for key in ("most_justification", "least_justification"):
        assert lay.item(key).wording["en"] == scales.JUSTIFICATION_QUESTION
    assert {phase.key: phase.intro["en"] for phase in lay.phases} == protocol_texts.LAY_PANEL_INTROS


def test_lay_panel_structure_is_expressed_as_item_placement(lay):
    assert [phase.key for phase in lay.phases] == ["original", "assisted", "preference"]
    by_phase = {
        phase.key: [item.key for item in lay.items if phase.key in item.phases] for phase in lay.phases
    }
    assert by_phase == {
        "original": ["understanding", "confidence", "urgency_confidence", "severity_guess"],
        "assisted": ["understanding", "confidence", "urgency_confidence", "severity_guess", "helpfulness"],
        "preference": ["most", "most_justification", "least", "least_justification"],
    }
    assert lay.item("helpfulness").applies_to is AppliesTo.SIMPLIFICATION
    assert lay.item("most").exclusive_with == "least" and lay.item("least").exclusive_with == "most"
    # Required as the survey page requires them (the urgency question only where a study asks it).
    assert [item.key for item in lay.items if not item.required] == [
        "urgency_confidence",
        "most_justification",
        "least_justification",
    ]


def test_radiologist_rubric_equals_radlays_code(expert):
    for aspect in protocol_texts.EXPERT_ASPECTS:
        item = expert.item(aspect.key)
        assert item.applies_to is AppliesTo.SIMPLIFICATION
        assert item.title["en"] == aspect.title
        assert item.wording["en"] == scales.EXPERT_ASPECTS[aspect.key] == aspect.definition
        assert item.short_wording["en"] == aspect.statement
        assert_same_scale(item.scale, scales.LIKERT)
    severity = expert.item("severity")
    assert severity.wording["en"] == protocol_texts.EXPERT_SEVERITY_QUESTION
    assert_same_scale(severity.scale, scales.SEVERITY)
    simplicity = expert.item("original_simplicity")
    assert simplicity.wording["en"] == scales.ORIGINAL_SIMPLICITY_QUESTION
    assert_same_scale(simplicity.scale, scales.LIKERT)
    assert simplicity.scale is not None and scales.LIKERT.question in simplicity.scale.note
    for key in ("comment", "original_comment"):
        assert expert.item(key).wording["en"] == protocol_texts.EXPERT_JUSTIFICATION_NOTE
    assert expert.description["en"] == protocol_texts.EXPERT_INSTRUCTION
    assert expert.citation.short == protocol_texts.PROTOCOL_CITATION_BLIND
    assert [item.key for item in expert.items if item.applies_to is AppliesTo.SOURCE] == [
        "severity",
        "original_simplicity",
        "original_comment",
    ]


def english_texts(instrument: Instrument):
    """(where, text, item note) for every participant-facing English text of the instrument."""
    for phase in instrument.phases:
        yield f"phases.{phase.key}", phase.intro["en"], ""
    for item in instrument.items:
        yield f"{item.key}.wording", item.wording["en"], item.note
        for point in item.scale.points if item.scale else ():
            yield f"{item.key}.{point.code}", point.label["en"], ""
            if point.definition:
                yield f"{item.key}.{point.code}.definition", point.definition["en"], ""


@pytest.mark.parametrize("name", ["protocol_003_layperson", "protocol_003_radiologist"])
def test_every_text_is_verbatim_in_protocol_md_or_marked_as_radlays(name, protocol_md):
    instrument = preset_load(name)
    not_verbatim = []
    for where, text, note in english_texts(instrument):
        item = instrument.item(where.split(".")[0]) if not where.startswith("phases.") else None
        # The rubric lists an aspect as "Correctness: all information in …": the sentence with its
        # first letter in lower case after the aspect's title.
        as_listed = f"{item.title['en']}: {text[0].lower()}{text[1:]}" if item and item.title else text
        if text not in protocol_md and as_listed not in protocol_md:
            not_verbatim.append(where)
            assert note, (
                f"{where}: {text!r} is not in PROTOCOL.md and its item's note does not say whose it is"
            )
    # Exactly the texts radlay words itself: the radiologist's severity question and the comment
    # prompt (Figure 5's note, which PROTOCOL.md only summarises).
    expected = {
        "protocol_003_layperson": [],
        "protocol_003_radiologist": ["severity.wording", "original_comment.wording", "comment.wording"],
    }
    assert not_verbatim == expected[name]


def test_the_likert_legend_and_severity_table_are_verbatim_in_protocol_md(protocol_md):
    assert scales.LIKERT.question in protocol_md
    for level in scales.SEVERITY.levels:
        assert f"| {level.name} | {level.definition} |" in protocol_md


def test_spanish_covers_every_item_scale_label_and_help_text_and_is_marked_unvalidated():
    for name in ("protocol_003_layperson", "protocol_003_radiologist"):
        instrument = preset_load(name)
        assert instrument.languages == ("en", "es")
        assert instrument.translation_status["es"].value == "unvalidated translation"
        assert instrument.translation_status["en"].value == "source"
        for phase in instrument.phases:
            assert phase.intro["es"].strip()
        for item in instrument.items:
            for texts in (item.wording, item.help, item.title, item.short_wording):
                # Validation guarantees a text given in one language is given in all; check the
                # Spanish is a translation, not the English copied across.
                assert set(texts) in (set(), {"en", "es"}), item.key
                if texts:
                    assert texts["es"] != texts["en"], (item.key, texts)
            for point in item.scale.points if item.scale else ():
                assert set(point.label) == {"en", "es"}
                assert set(point.definition) in (set(), {"en", "es"})
    severity = preset_load("protocol_003_layperson").item("severity_guess").scale
    assert severity is not None
    assert [point.label["es"] for point in severity.points] == [
        "Crítico",
        "Grave",
        "Moderado",
        "Leve",
        "Sano",
    ]
