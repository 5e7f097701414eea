"""The self-correction loop, driven through the openai client against the scripted HTTP server."""

import pytest

from generation.backends.base import GenerationParams
from generation.backends.openai_backend import ModelPrice, OpenAIBackend
from generation.pipeline.self_correction import (
    generate_baseline,
    generate_baselines,
    processed_feedback,
    processor_decision,
    run_self_correction,
)
from generation.prompts.registry import load_prompts
from tests.generation.scripted_llm_server import Answer, count_tokens

SENTENCE = "There are 2 hyperenhancing liver lesions."
BS = "There are two liver lesions that show enhanced activity."
SC1 = "There are two abnormal areas in the liver."
SC2 = "There are two abnormal areas in the liver that need further evaluation."
RAD_FB_1 = "The simplification keeps 'lesions', which laypeople may not know."
PAT_FB_1 = "I do not know what 'lesions' or 'enhanced activity' means."
RAD_FB_2 = "Better, but it should say the areas need more checks."
PAT_FB_2 = "I understand it now."

PLAIN_PROMPT = "Simplify the sentence: There are 2 hyperenhancing liver lesions."


def radiologist_prompt(simplification):
    return load_prompts().render("radiologist", sentence=SENTENCE, simplification=simplification)


def patient_prompt(simplification):
    return load_prompts().render("patient", simplification=simplification)


def user(content):
    return {"role": "user", "content": content}


def assistant(content):
    return {"role": "assistant", "content": content}


def test_each_agent_receives_the_papers_prompts_and_the_generator_remembers(scripted_llm, openai_backend):
    scripted_llm.script("generator", [BS, "\n" + SC1, SC2])
    scripted_llm.script("radiologist", [RAD_FB_1, RAD_FB_2, "Good."])
    scripted_llm.script("patient", [PAT_FB_1, PAT_FB_2, "Clear."])
    scripted_llm.script(
        "processor",
        [
            "Yes, replace 'lesions' with a lay word.",
            "Yes: explain 'lesions' and 'enhanced activity'.",
            "Yes. Say that the areas need further evaluation.",
            "No, the patient understands.",
            "No.",
            "**No**",
        ],
    )

    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")

    generator = scripted_llm.chat_requests("generator")
    radiologist = scripted_llm.chat_requests("radiologist")
    patient = scripted_llm.chat_requests("patient")
    processor = scripted_llm.chat_requests("processor")
    assert [len(generator), len(radiologist), len(patient), len(processor)] == [3, 3, 3, 6]

    refine_1 = (
        "Radiologist's feedback: Replace 'lesions' with a lay word.\n\n"
        "Patient's feedback: Explain 'lesions' and 'enhanced activity'.\n\n"
        "Can you improve your simplification while keeping it concise?"
    )
    refine_2 = (
        "Radiologist's feedback: Say that the areas need further evaluation.\n\n"
        "Patient's feedback: No, the patient understands.\n\n"
        "Can you improve your simplification while keeping it concise?"
    )
    # The Generator's conversation grows turn by turn (it keeps its raw answers, leading newline too).
    assert generator[0].messages == [user(PLAIN_PROMPT)]
    assert generator[1].messages == [user(PLAIN_PROMPT), assistant(BS), user(refine_1)]
    assert generator[2].messages == [
        user(PLAIN_PROMPT),
        assistant(BS),
        user(refine_1),
        assistant("\n" + SC1),
        user(refine_2),
    ]
    # Radiologist and Patient start afresh each round and see the current simplification.
    assert [r.messages for r in radiologist] == [[user(radiologist_prompt(s))] for s in (BS, SC1, SC2)]
    assert [r.messages for r in patient] == [[user(patient_prompt(s))] for s in (BS, SC1, SC2)]
    # The Processor gets each feedback on its own, radiologist first.
    feedback_order = [RAD_FB_1, PAT_FB_1, RAD_FB_2, PAT_FB_2, "Good.", "Clear."]
    assert [r.messages for r in processor] == [
        [user(load_prompts().render("processor", feedback=fb))] for fb in feedback_order
    ]
    # Every call samples at the paper's temperature.
    assert {r.params["temperature"] for r in scripted_llm.chat_requests()} == {0.8}
    assert {r.params["model"] for r in scripted_llm.chat_requests()} == {"gpt-3.5-turbo"}

    assert result.bs_text == BS
    assert result.sc_text == SC2
    assert (result.rounds, result.refinements, result.stopped_by, result.reached_cap) == (
        3,
        2,
        "processor_no",
        False,
    )
    assert not result.flagged


def test_transcript_tokens_and_cost(scripted_llm, openai_backend):
    scripted_llm.script("processor", ["Yes, explain more.", "No", "No", "No"])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")

    requests = scripted_llm.chat_requests()
    expected_prompt = sum(count_tokens(m["content"]) for r in requests for m in r.messages)
    expected_completion = sum(count_tokens(r.answer) for r in requests)
    assert result.calls == len(requests) == 10
    assert (result.prompt_tokens, result.completion_tokens) == (expected_prompt, expected_completion)
    # gpt-3.5-turbo: $0.50 / $1.50 per million tokens.
    assert result.cost_usd == pytest.approx((expected_prompt * 0.5 + expected_completion * 1.5) / 1e6)
    assert result.cost_known

    # One user + one assistant entry per call, in call order, with the agent, round and usage.
    assert len(result.transcript) == 2 * len(requests)
    answers = [e for e in result.transcript if e["role"] == "assistant"]
    assert [(e["round"], e["agent"]) for e in answers] == [
        (0, "generator"),
        (1, "radiologist"),
        (1, "patient"),
        (1, "processor"),
        (1, "processor"),
        (1, "generator"),
        (2, "radiologist"),
        (2, "patient"),
        (2, "processor"),
        (2, "processor"),
    ][: len(answers)]
    assert [e["content"] for e in answers] == [r.answer for r in requests]
    assert [e["completion_tokens"] for e in answers] == [count_tokens(r.answer) for r in requests]
    assert [e["feedback_of"] for e in answers if e["agent"] == "processor"] == ["radiologist", "patient"] * 2
    prompts_sent = [e["content"] for e in result.transcript if e["role"] == "user"]
    assert prompts_sent == [r.messages[-1]["content"] for r in requests]
    assert set(result.transcript[0]) >= {
        "round",
        "agent",
        "role",
        "content",
        "prompt_tokens",
        "completion_tokens",
        "cached",
    }
    assert result.prompt_version == "seed003-v1" and result.params["temperature"] == 0.8


def test_no_from_both_processors_ends_the_loop_after_one_round(scripted_llm, openai_backend):
    scripted_llm.script("generator", [BS])
    scripted_llm.script("processor", ["No.", "No, the feedback is positive."])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")
    assert len(scripted_llm.chat_requests("generator")) == 1
    assert (result.rounds, result.refinements, result.stopped_by) == (1, 0, "processor_no")
    assert result.sc_text == result.bs_text == BS


def test_one_yes_is_enough_to_go_on(scripted_llm, openai_backend):
    scripted_llm.script("processor", ["No", "Yes, what does 'liver' mean?", "No", "No"])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")
    assert (result.rounds, result.refinements) == (2, 1)
    refine = scripted_llm.chat_requests("generator")[1].messages[-1]["content"]
    assert refine.startswith("Radiologist's feedback: No\n\nPatient's feedback: What does 'liver' mean?\n\n")


def test_an_answer_that_is_neither_yes_nor_no_goes_on_and_is_flagged(scripted_llm, openai_backend):
    # "Notably" starts with the letters N-o but is not a "No".
    scripted_llm.script("processor", ["Notably, 'lesions' should be explained.", "No", "No", "No"])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")
    assert result.refinements == 1
    assert (
        "Radiologist's feedback: Notably, 'lesions' should be explained."
        in (scripted_llm.chat_requests("generator")[1].messages[-1]["content"])
    )
    assert result.flagged and "neither Yes nor No" in result.flag_reason


def test_round_cap(scripted_llm, openai_backend):
    scripted_llm.set_fallback("processor", "Yes, make it simpler.")
    scripted_llm.script("generator", ["draft 0", "draft 1", "draft 2", "draft 3"])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain", max_rounds=3)
    assert len(scripted_llm.chat_requests("generator")) == 4
    assert len(scripted_llm.chat_requests("radiologist")) == 3
    assert (result.rounds, result.refinements, result.stopped_by, result.reached_cap) == (
        3,
        3,
        "round_cap",
        True,
    )
    assert result.sc_text == "draft 3"
    assert not result.flagged  # reaching the cap is recorded, not a defect


def test_default_cap_is_five_rounds(scripted_llm, openai_backend):
    scripted_llm.set_fallback("processor", "Yes, shorter.")
    result = run_self_correction(SENTENCE, backend=openai_backend, family="plain")
    assert (result.rounds, result.max_rounds, result.reached_cap) == (5, 5, True)
    assert len(scripted_llm.chat_requests("generator")) == 6


COT_ANSWER = """1. Hyperenhancing: looks brighter than the tissue around it on the scan.
2. Lesions: abnormal areas.

Simplification: There are 2 abnormal bright spots in the liver."""


def test_cot_answers_are_parsed_and_the_agents_see_only_the_simplification(scripted_llm, openai_backend):
    refined_cot = (
        "1. Liver: an organ.\n\nSimplified sentence: The liver shows 2 spots that look brighter than normal."
    )
    scripted_llm.script("generator", [COT_ANSWER, refined_cot, "  The liver has 2 bright spots.  "])
    scripted_llm.script("processor", ["Yes, add more.", "No", "Yes, shorter.", "No", "No", "No"])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="cot")

    generator = scripted_llm.chat_requests("generator")
    assert generator[0].messages == [user(load_prompts().render("cot", sentence=SENTENCE))]
    assert generator[1].messages[1] == assistant(COT_ANSWER)  # its memory keeps the whole answer
    radiologist = scripted_llm.chat_requests("radiologist")
    assert radiologist[0].messages == [
        user(radiologist_prompt("There are 2 abnormal bright spots in the liver."))
    ]
    assert radiologist[1].messages == [
        user(radiologist_prompt("The liver shows 2 spots that look brighter than normal."))
    ]
    assert result.bs_text == "There are 2 abnormal bright spots in the liver."
    assert result.bs_raw == COT_ANSWER
    # A refined answer without the CoT shape is taken whole.
    assert result.sc_text == "The liver has 2 bright spots."
    assert not result.flagged


def test_an_unparsable_first_cot_answer_is_used_whole_and_flagged(scripted_llm, openai_backend):
    scripted_llm.script("generator", ["The liver has two bright spots."])
    result = run_self_correction(SENTENCE, backend=openai_backend, family="cot")
    assert result.bs_text == "The liver has two bright spots."
    assert result.flagged and "CoT answer not parsed" in result.flag_reason


def test_baseline_makes_one_generator_call(scripted_llm, openai_backend):
    scripted_llm.script("generator", [COT_ANSWER])
    result = generate_baseline(
        SENTENCE, backend=openai_backend, family="cot", params=GenerationParams(temperature=0.8, seed=7)
    )
    assert [r.agent for r in scripted_llm.chat_requests()] == ["generator"]
    assert scripted_llm.chat_requests()[0].params["seed"] == 7
    assert result.text == "There are 2 abnormal bright spots in the liver."
    assert result.raw_output == COT_ANSWER
    assert result.calls == 1 and not result.flagged


def test_baselines_for_several_sentences(scripted_llm, openai_backend):
    scripted_llm.set_fallback("generator", lambda request: "Lay: " + request.messages[0]["content"][23:])
    results = generate_baselines(["Liver is normal.", "Spleen is enlarged."], backend=openai_backend)
    assert [r.text for r in results] == ["Lay: Liver is normal.", "Lay: Spleen is enlarged."]


def test_an_empty_answer_is_retried_and_a_truncated_one_flagged(scripted_llm, openai_backend, sleeps):
    scripted_llm.script("generator", ["", Answer("There are two liver", finish_reason="length")])
    result = generate_baseline(SENTENCE, backend=openai_backend)
    assert len(sleeps) == 1 and len(scripted_llm.chat_requests()) == 2  # the empty answer was asked again
    assert result.text == "There are two liver"
    assert result.flag_reasons == ["generator answer in round 0 was cut off at max_tokens"]


def test_unknown_model_has_unknown_cost(scripted_llm):
    backend = OpenAIBackend(
        model="local-llama", base_url=scripted_llm.base_url, api_key="k", prices={"gpt-x": ModelPrice(1, 1)}
    )
    result = run_self_correction(SENTENCE, backend=backend, family="plain")
    assert result.cost_usd == 0.0 and result.cost_known is False


def test_bad_arguments():
    with pytest.raises(ValueError, match="family"):
        run_self_correction(SENTENCE, backend=None, family="fancy")
    with pytest.raises(ValueError, match="max_rounds"):
        run_self_correction(SENTENCE, backend=None, max_rounds=-1)


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("No", "no"),
        ("No.", "no"),
        ("no, nothing to add", "no"),
        ("**No**", "no"),
        ('"No."', "no"),
        ("None.", "no"),
        ("Yes, explain X.", "yes"),
        ("**Yes**: explain X", "yes"),
        ("Notably X", "unclear"),
        ("Nothing critical.", "unclear"),
        ("The feedback says X.", "unclear"),
    ],
)
def test_processor_decision(answer, decision):
    assert processor_decision(answer) == decision


def test_processed_feedback_drops_only_the_yes_marker():
    assert processed_feedback("Yes, explain 'lesion'.") == "Explain 'lesion'."
    assert processed_feedback("Yes.\n- Explain 'lesion'.\n- Shorter.") == "- Explain 'lesion'.\n- Shorter."
    assert processed_feedback("Yes") == "Yes"
    assert processed_feedback(" No. ") == "No."
