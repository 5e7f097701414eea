"""The glossary heuristic judge: deterministic, schema-valid answers that follow its stated rules."""

from __future__ import annotations

import json

import pytest

from generation.backends.base import GenerationParams
from judging.heuristic import GlossaryHeuristicJudge, guess_severity
from judging.instrument import TASKS, parse_answer

SENTENCE = "There is a 2 cm hypodense lesion in the right hepatic lobe, likely a cyst."


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("No pneumothorax or pleural effusion.", "Healthy"),
        ("Large right pneumothorax.", "Serious"),
        ("Acute subdural hemorrhage with midline shift.", "Critical"),
        ("Small simple renal cyst.", "Mild"),
        ("The lungs are clear.", "Healthy"),
    ],
)
def test_severity_cues_and_negation(text, level):
    assert guess_severity(text) == level


def test_every_task_gets_a_schema_valid_deterministic_answer():
    judge = GlossaryHeuristicJudge()
    simplification = "There is a 2 cm spot in the right part of the liver, probably a harmless fluid sac."
    for task in TASKS:
        context = {"task": task, "sentence": SENTENCE, "simplification": simplification}
        first = judge.complete([], agent="radiologist", params=GenerationParams(), context=context)
        again = judge.complete(
            [], agent="radiologist", params=GenerationParams(temperature=1.5), context=context
        )
        assert first.text == again.text
        parse_answer(task, first.text)  # raises if the heuristic broke the schema
        assert first.raw["heuristic"] is True and first.cost_usd == 0.0


def test_a_copy_of_the_original_keeps_every_fact_but_is_not_simple():
    judge = GlossaryHeuristicJudge()
    copy = json.loads(
        judge.complete(
            [],
            agent="radiologist",
            params=GenerationParams(),
            context={"task": "radiologist_text", "sentence": SENTENCE, "simplification": SENTENCE},
        ).text
    )
    assert copy["completeness"] == 5 and copy["hallucination"] == 5
    assert copy["simplicity"] < 5
