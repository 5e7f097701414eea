"""SCGR (seed 002): concept extraction, draft, Figure A1 prompt, JSON parsing, factuality, retries."""

import json

import pytest

from generation.backends.base import Completion, GenerationParams
from generation.backends.glossary_backend import GlossaryBackend
from generation.glossary.agents import simplify
from generation.pipeline.scgr import (
    SCGR_PROMPT_VERSION,
    RefinementFormatError,
    build_refinement_messages,
    check_factuality,
    extract_concepts,
    lay_draft,
    parse_refinement,
    scgr_simplify,
)

SENTENCE = "Focal perfusion defect in the left hepatic lobe, probably a laceration, measures 1.2 cm in depth."
GOOD = (
    "There is an area with less blood flow in one spot in the left side of the liver, probably a tear, "
    "about 1.2 centimeters deep."
)


class ScriptedBackend:
    """A refiner that answers from a script, recording what it was asked (a test double for an LLM)."""

    name = "scripted"
    model = "script-1"

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def complete(self, messages, *, agent, params, context=None):
        self.calls.append({"messages": messages, "agent": agent, "context": context})
        text = self.answers.pop(0)
        return Completion(text=text, prompt_tokens=10, completion_tokens=5, cost_usd=0.001, model=self.model)


def test_concepts_and_entities_are_extracted():
    concepts = extract_concepts(SENTENCE)
    assert [c.term for c in concepts.concepts] == [
        "focal",
        "perfusion defect",
        "left hepatic lobe",
        "laceration",
    ]
    assert [(e.kind, e.text) for e in concepts.entities] == [
        ("side", "left"),
        ("hedge", "probably"),
        ("size", "1.2 cm"),
    ]


def test_draft_substitutes_concepts_and_nothing_else():
    assert lay_draft(SENTENCE) == (
        "in one spot area with less blood flow in the left side of the liver, probably a "
        "tear, measures 1.2 cm in depth."
    )


def test_prompt_follows_figure_a1():
    concepts = extract_concepts(SENTENCE)
    system, user = build_refinement_messages(SENTENCE, concepts, lay_draft(SENTENCE))
    assert system["role"] == "system" and "Medical Text Simplifier" in system["content"]
    assert "Source of Truth: Trust the Original" in system["content"]
    assert "No 'you'/'your'" in system["content"] and '{"simplification":' in system["content"]
    assert user["content"].startswith(f'Original (Fact): "{SENTENCE}"')
    concepts_line = next(line for line in user["content"].splitlines() if line.startswith("Concepts: "))
    assert {"term": "laceration", "lay": "tear", "category": "finding"} in json.loads(concepts_line[10:])
    assert 'Draft (Ref): "in one spot area' in user["content"]
    assert SCGR_PROMPT_VERSION == "scgr-v1"


@pytest.mark.parametrize(
    "answer",
    [
        '{"simplification": "A tear in the liver."}',
        '```json\n{"simplification": "A tear in the liver."}\n```',
        'Sure! Here is the result:\n```\n{ "simplification" : "A tear in the liver." }\n```\nHope it helps.',
        '{"layman_caption": "A tear in the liver."}',
        'Note {not json} then {"other": 1} and finally {"simplification": "A tear in the liver."}',
    ],
)
def test_parse_refinement_is_robust(answer):
    assert parse_refinement(answer) == "A tear in the liver."


@pytest.mark.parametrize(
    "answer", ["A tear in the liver.", '{"simplification": ""}', '{"note": "x"}', "{broken"]
)
def test_parse_refinement_rejects_answers_without_a_simplification(answer):
    with pytest.raises(RefinementFormatError):
        parse_refinement(answer)


def test_factuality_catches_dropped_hedge_flipped_side_and_changed_size():
    assert check_factuality(SENTENCE, GOOD) == []
    labels = lambda text: [(v.label, v.expected) for v in check_factuality(SENTENCE, text)]  # noqa: E731
    assert labels(GOOD.replace("probably ", "")) == [("Missing hedging", "probably")]
    assert ("Added side", "right") in labels(GOOD.replace("left", "right"))
    assert ("Missing side", "left") in labels(GOOD.replace("left", "right"))
    changed = labels(GOOD.replace("1.2 centimeters", "2 cm"))
    assert ("Missing size", "1.2 cm") in changed and ("Added size", "2 cm") in changed


def test_end_to_end_with_the_glossary_backend():
    result = scgr_simplify(SENTENCE, backend=GlossaryBackend())
    assert result.simplification == simplify(SENTENCE)
    assert not result.flagged and result.flag_reason == "" and len(result.attempts) == 1
    assert result.backend == "glossary" and result.cost_usd == 0.0 and result.prompt_tokens > 0
    assert check_factuality(SENTENCE, result.simplification) == []
    assert "probably" in result.simplification and "1.2 centimeters" in result.simplification


@pytest.mark.parametrize(
    "sentence",
    [
        "Few stable less than 5 mm hypodensities, too small to characterize, probably simple cysts.",
        "There is no intrahepatic or extrahepatic biliary ductal dilatation.",
        "Ill-defined ground glass opacities in the LLL, suspicious for infection.",
        "Multiple left renal cysts, the largest measuring 2.4 cm.",
    ],
)
def test_glossary_refiner_passes_factuality_on_realistic_sentences(sentence):
    result = scgr_simplify(sentence, backend=GlossaryBackend())
    assert not result.flagged, result.flag_reason
    assert result.simplification != sentence


def test_glossary_refiner_reads_the_prompt_when_no_context_is_passed():
    class NoContext(GlossaryBackend):
        def complete(self, messages, *, agent, params, context=None):
            return super().complete(messages, agent=agent, params=params, context=None)

    result = scgr_simplify(SENTENCE, backend=NoContext())
    assert result.simplification == simplify(SENTENCE) and not result.flagged


def test_regenerates_with_the_violations_then_stops_when_faithful():
    backend = ScriptedBackend(
        [
            json.dumps({"simplification": GOOD.replace("probably ", "")}),
            "```json\n" + json.dumps({"simplification": GOOD}) + "\n```",
            "never asked",
        ]
    )
    result = scgr_simplify(SENTENCE, backend=backend, params=GenerationParams(temperature=0.2))
    assert len(backend.calls) == 2 and result.simplification == GOOD and not result.flagged
    retry = backend.calls[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "Missing hedging" in retry[-1]["content"]
    assert backend.calls[1]["context"]["scgr"]["previous_violations"] == ["Missing hedging: probably"]
    assert backend.calls[0]["agent"] == "generator" and backend.calls[0]["context"]["scgr"]["attempt"] == 1
    assert result.cost_usd == pytest.approx(0.002) and result.prompt_tokens == 20


def test_keeps_the_best_of_n_failing_answers_and_flags_it():
    flipped_and_no_hedge = GOOD.replace("left", "right").replace("probably ", "")
    no_hedge = GOOD.replace("probably ", "")
    backend = ScriptedBackend(
        [
            "not json at all",
            json.dumps({"simplification": flipped_and_no_hedge}),
            json.dumps({"simplification": no_hedge}),
        ]
    )
    result = scgr_simplify(SENTENCE, backend=backend, max_attempts=3)
    assert len(result.attempts) == 3
    assert result.attempts[0].format_ok is False
    assert result.simplification == no_hedge and result.flagged
    assert [v.label for v in result.violations] == ["Missing hedging"]
    assert "Missing hedging: probably" in result.flag_reason


def test_max_attempts_is_respected_and_validated():
    backend = ScriptedBackend([json.dumps({"simplification": "Something else."})] * 5)
    result = scgr_simplify(SENTENCE, backend=backend, max_attempts=2)
    assert len(backend.calls) == 2 and result.flagged
    with pytest.raises(ValueError):
        scgr_simplify(SENTENCE, backend=backend, max_attempts=0)


def test_factuality_check_accepts_lay_paraphrases_of_a_concept():
    assert check_factuality("Hypodense lesion in the liver.", "A darker spot in the liver.") == []
    assert [
        v.expected for v in check_factuality("Hypodense lesion in the liver.", "A spot in the liver.")
    ] == ["hypodense"]
