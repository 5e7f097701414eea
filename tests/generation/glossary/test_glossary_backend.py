"""GlossaryBackend: the offline backend that plays the four agents."""

import json

import pytest

from generation.backends.base import BackendError, ChatBackend, GenerationParams
from generation.backends.glossary_backend import GlossaryBackend, context_from_prompt
from generation.glossary.agents import (
    PATIENT_OK,
    RADIOLOGIST_OK,
    patient_feedback,
    radiologist_feedback,
    refine,
    simplify,
    simplify_cot,
)
from generation.prompts.registry import load_prompts

SENTENCE = "A 7 mm nodule in the right lower lobe is probably a granuloma."
PARAMS = GenerationParams()


@pytest.fixture
def backend():
    return GlossaryBackend()


def _user(text):
    return [{"role": "user", "content": text}]


def test_implements_the_backend_interface(backend):
    assert isinstance(backend, ChatBackend)
    assert backend.name == "glossary" and backend.model == "radlay-glossary-v1"
    assert GlossaryBackend(model="custom").model == "custom"


def test_generator_from_context_and_word_counts(backend):
    messages = _user("Simplify the sentence: " + SENTENCE)
    completion = backend.complete(
        messages,
        agent="generator",
        params=PARAMS,
        context={"sentence": SENTENCE, "family": "plain", "step": "initial"},
    )
    assert completion.text == simplify(SENTENCE)
    assert completion.prompt_tokens == len(messages[0]["content"].split())
    assert completion.completion_tokens == len(completion.text.split())
    assert completion.cost_usd == 0.0 and completion.model == "radlay-glossary-v1"
    assert completion.raw["context_from"] == "context"
    cot = backend.complete(
        messages,
        agent="generator",
        params=PARAMS,
        context={"sentence": SENTENCE, "family": "cot", "step": "initial"},
    )
    assert cot.text == simplify_cot(SENTENCE)


def test_deterministic_whatever_the_temperature(backend):
    ctx = {"sentence": SENTENCE, "family": "plain", "step": "initial"}
    hot = backend.complete(
        _user("x"), agent="generator", params=GenerationParams(temperature=1.5, seed=7), context=ctx
    )
    assert hot.text == backend.complete(_user("x"), agent="generator", params=PARAMS, context=ctx).text


def test_every_agent_from_the_briefs_context_shape(backend):
    draft = "A 7 millimeter small lump in the right lower section of the lung is a healed spot."
    rad = backend.complete(
        _user("x"),
        agent="radiologist",
        params=PARAMS,
        context={"sentence": SENTENCE, "simplification": draft},
    ).text
    assert rad == radiologist_feedback(SENTENCE, draft)
    pat = backend.complete(_user("x"), agent="patient", params=PARAMS, context={"simplification": draft}).text
    assert pat == patient_feedback(draft) == PATIENT_OK
    processed = backend.complete(
        _user("x"), agent="processor", params=PARAMS, context={"feedback": rad, "source_agent": "radiologist"}
    ).text
    assert processed.startswith("Yes. The radiologist asks")
    refined = backend.complete(
        _user("x"),
        agent="generator",
        params=PARAMS,
        context={
            "sentence": SENTENCE,
            "family": "plain",
            "step": "refine",
            "previous": draft,
            "feedback": {"radiologist": processed, "patient": "No."},
        },
    ).text
    assert refined == refine(SENTENCE, draft, radiologist_feedback=processed, patient_feedback="No.")
    assert radiologist_feedback(SENTENCE, refined) == RADIOLOGIST_OK


def test_the_loops_context_shape_is_read_too(backend):
    draft = "A 7 millimeter small lump in the right lower section of the lung is a healed spot."
    processed = backend.complete(
        _user("x"),
        agent="processor",
        params=PARAMS,
        context={
            "prompt": "processor",
            "feedback": radiologist_feedback(SENTENCE, draft),
            "feedback_of": "radiologist",
            "round": 1,
        },
    ).text
    assert processed.startswith("Yes. The radiologist asks")
    refined = backend.complete(
        _user("x"),
        agent="generator",
        params=PARAMS,
        context={
            "prompt": "refine",
            "sentence": SENTENCE,
            "simplification": draft,
            "radiologist_feedback": processed,
            "patient_feedback": "No.",
            "round": 1,
        },
    ).text
    assert refined == refine(SENTENCE, draft, radiologist_feedback=processed, patient_feedback="No.")
    first = backend.complete(
        _user("x"),
        agent="generator",
        params=PARAMS,
        context={"prompt": "cot", "sentence": SENTENCE, "round": 0},
    ).text
    assert first == simplify_cot(SENTENCE)


def test_without_context_the_rendered_seed003_prompts_are_read(backend):
    prompts = load_prompts()
    plain = _user(prompts.render("plain", sentence=SENTENCE))
    first = backend.complete(plain, agent="generator", params=PARAMS)
    assert first.text == simplify(SENTENCE) and first.raw["context_from"] == "prompt"
    cot = backend.complete(_user(prompts.render("cot", sentence=SENTENCE)), agent="generator", params=PARAMS)
    assert cot.text == simplify_cot(SENTENCE)

    draft = "A 7 mm small lump in the left lower section of the lung is probably a healed spot."
    rad = backend.complete(
        _user(prompts.render("radiologist", sentence=SENTENCE, simplification=draft)),
        agent="radiologist",
        params=PARAMS,
    ).text
    assert rad == radiologist_feedback(SENTENCE, draft) != RADIOLOGIST_OK
    pat = backend.complete(
        _user(prompts.render("patient", simplification=draft)), agent="patient", params=PARAMS
    ).text
    assert pat == patient_feedback(draft)
    processed = backend.complete(
        _user(prompts.render("processor", feedback=rad)), agent="processor", params=PARAMS
    ).text
    assert processed.startswith("Yes.")
    memory = plain + [
        {"role": "assistant", "content": draft},
        {
            "role": "user",
            "content": prompts.render("refine", radiologist_feedback=processed, patient_feedback="No."),
        },
    ]
    refined = backend.complete(memory, agent="generator", params=PARAMS).text
    assert refined == refine(SENTENCE, draft, radiologist_feedback=processed, patient_feedback="No.")
    assert "right lower section" in refined and "left" not in refined


def test_context_from_prompt_recovers_the_fields():
    prompts = load_prompts()
    ctx = context_from_prompt(
        _user(prompts.render("processor", feedback="Looks fine.\nNo changes.")), "processor"
    )
    assert ctx == {"feedback": "Looks fine.\nNo changes.", "source_agent": None}
    ctx = context_from_prompt(_user(prompts.render("cot", sentence=SENTENCE)), "generator")
    assert ctx["sentence"] == SENTENCE and ctx["family"] == "cot" and ctx["step"] == "initial"


def test_unreadable_prompt_or_unknown_agent_is_a_permanent_error(backend):
    with pytest.raises(BackendError) as err:
        backend.complete(_user("Tell me a joke."), agent="radiologist", params=PARAMS)
    assert err.value.transient is False
    with pytest.raises(BackendError):
        backend.complete(_user("x"), agent="surgeon", params=PARAMS, context={"sentence": SENTENCE})
    with pytest.raises(BackendError, match="lacks"):
        backend.complete(_user("x"), agent="radiologist", params=PARAMS, context={"sentence": SENTENCE})


def test_scgr_context_gets_the_json_shape(backend):
    answer = backend.complete(
        _user("x"), agent="generator", params=PARAMS, context={"scgr": {"original": SENTENCE}}
    ).text
    assert json.loads(answer) == {"simplification": simplify(SENTENCE)}


def test_runs_the_self_correction_loop(backend):
    from generation.pipeline.self_correction import run_self_correction

    result = run_self_correction(
        "There is a 1.4 cm cyst at the right hepatic dome.", backend=backend, family="cot"
    )
    assert result.bs_text == "There is a 1.4 centimeter fluid-filled sac at the right top of the liver."
    assert result.sc_text == result.bs_text and result.stopped_by == "processor_no" and result.rounds == 1
