"""The judge prompts ask the humans' instrument in the survey's own wording."""

from __future__ import annotations

import pytest

from annotation import scales
from generation.prompts.registry import PromptError, load_prompts
from judging.prompts.registry import available_versions, load_judge_prompts

SENTENCE = "Small left pleural effusion."
SIMPLIFICATION = "A little fluid around the left lung."


def test_the_radiologist_prompt_carries_the_rubric_wording_and_the_persona():
    prompts = load_judge_prompts("judge-v1")
    text = prompts.render("radiologist_text", sentence=SENTENCE, simplification=SIMPLIFICATION)
    for aspect, wording in scales.EXPERT_ASPECTS.items():
        assert f"{aspect}: {wording}" in text
    assert scales.LIKERT.question in text
    persona = load_prompts().templates["radiologist"].text.split("\n\n")[0]
    assert text.startswith(persona)
    assert f"Radiology Sentence: {SENTENCE}\nSimplification: {SIMPLIFICATION}" in text


def test_the_source_and_lay_prompts_carry_the_severity_definitions_and_lay_questions():
    prompts = load_judge_prompts("judge-v1")
    source = prompts.render("radiologist_source", sentence=SENTENCE)
    assert scales.ORIGINAL_SIMPLICITY_QUESTION in source
    lay = prompts.render("lay_assisted", sentence=SENTENCE, simplification=SIMPLIFICATION)
    patient_persona = load_prompts().templates["patient"].text
    assert patient_persona.startswith(lay.split("\n\n")[0])
    for text in (source, lay):
        for level in scales.SEVERITY.levels:
            assert f"{level.name}: {level.definition}" in text
    for scale in (scales.UNDERSTANDING, scales.CONFIDENCE, scales.SEVERITY, scales.HELPFULNESS):
        assert scale.question in lay
        for name in scale.names:
            assert name in lay
    original = prompts.render("lay_original", sentence=SENTENCE)
    assert scales.HELPFULNESS.question not in original and SIMPLIFICATION not in original


def test_rendering_is_strict_and_versions_are_listed():
    prompts = load_judge_prompts("judge-v1")
    assert "judge-v1" in available_versions()
    assert prompts.temperature == 0.8
    with pytest.raises(PromptError):
        prompts.render("radiologist_text", sentence=SENTENCE)
    with pytest.raises(PromptError):
        prompts.render("lay_original", sentence=SENTENCE, simplification=SIMPLIFICATION)
    with pytest.raises(PromptError):
        load_judge_prompts("no-such-version")
    # A value that looks like a placeholder is pasted as is.
    text = prompts.render("radiologist_text", sentence="{simplification}", simplification="x")
    assert "Radiology Sentence: {simplification}\nSimplification: x" in text
