"""The prompt set reproduces seed 003's prompts word for word (typed here from appendix A.3 and
Figures 6-7, independently of v1.yaml)."""

import pytest

from generation.prompts.registry import (
    REQUIRED_PROMPTS,
    PromptError,
    available_versions,
    load_prompts,
    prompt_set_from_dict,
)

SENTENCE = "There are 2 hyperenhancing liver lesions."
SIMPLIFICATION = "There are two abnormal bright spots in the liver."

RADIOLOGIST_EXPECTED = (
    "You are an experienced radiologist, specialized in evaluating the quality of simplified radiology "
    "sentences. Your role is to analyze a given sentence, comparing it to its simplified version and "
    "assessing "
    "the quality and simplicity of the simplification.\n\n"
    "Your assessment should be based on five key criteria:\n\n"
    "Correctness: It's crucial that the simplification correctly reflects the content of the original "
    "radiology sentence.\n\n"
    "Completeness: The simplification must retain all the essential information of the original radiology "
    "sentence.\n\n"
    "Hallucination: The simplified sentence should not introduce any harmful or misleading interpretations "
    "that are not present in the original radiology sentence.\n\n"
    "Structure: The simplification must include clear descriptions of the 1) body parts, 2) the findings "
    "(such as masses, injuries, stones, swelling), and 3) what these findings indicate (for instance, benign "
    "conditions, unclear diagnoses, indications of severity).\n\n"
    "Simplicity: Do you think the Simplification is simple enough for laypeople without medical "
    "knowledge?\n\n"
    "Radiology Sentence: There are 2 hyperenhancing liver lesions.\n"
    "Simplification: There are two abnormal bright spots in the liver.\n\n"
    "Please provide your feedback."
)

PATIENT_EXPECTED = (
    "You are a person who does not have any medical knowledge. You've never taken a medical-related course "
    "or class and struggle to grasp medical concepts. Your task is to evaluate the clarity and "
    "comprehensibility of simplified medical information, providing feedback on whether you understand all "
    "the words and concepts presented. However, you must not comment on the factuality of the information "
    "nor attempt to further simplify the sentence yourself. Your perspective is vital to ensure the "
    "simplification does not contain any complicated medical terms that you cannot understand.\n\n"
    "Simplification: There are two abnormal bright spots in the liver.\n\n"
    "Please provide your feedback."
)


@pytest.fixture
def prompts():
    return load_prompts("seed003-v1")


def test_default_version_is_the_papers(prompts):
    assert load_prompts() is prompts
    assert prompts.version == "seed003-v1"
    assert "seed003-v1" in available_versions()
    assert set(REQUIRED_PROMPTS) <= set(prompts.templates)


def test_plain_prompt_keeps_one_final_period(prompts):
    assert (
        prompts.render("plain", sentence=SENTENCE)
        == "Simplify the sentence: There are 2 hyperenhancing liver lesions."
    )
    # A sentence without its own period gets the template's.
    assert prompts.render("plain", sentence="Liver is normal") == "Simplify the sentence: Liver is normal."
    # Whitespace around the sentence (CSV cells) is not sent.
    assert (
        prompts.render("plain", sentence="  Liver is normal.\r\n")
        == "Simplify the sentence: Liver is normal."
    )


def test_cot_prompt(prompts):
    assert prompts.render("cot", sentence=SENTENCE) == (
        "Sentence: There are 2 hyperenhancing liver lesions.\n"
        "Can you list all the complicated medical terms and provide explanations that are understandable by "
        "laypeople? Finally, write a simplification of the original sentence that laypeople can understand."
    )


def test_personas_are_figures_6_and_7(prompts):
    assert (
        prompts.render("radiologist", sentence=SENTENCE, simplification=SIMPLIFICATION)
        == RADIOLOGIST_EXPECTED
    )
    assert prompts.render("patient", simplification=SIMPLIFICATION) == PATIENT_EXPECTED


def test_processor_and_refine_prompts(prompts):
    assert prompts.render("processor", feedback="The word 'lesion' is unclear.") == (
        "Feedback: The word 'lesion' is unclear.\n\n"
        "Are there any critical comments or improvement suggestions in Feedback? If so, extract them "
        "starting "
        'with "Yes". Otherwise, say "No".'
    )
    assert prompts.render("refine", radiologist_feedback="Mention the number.", patient_feedback="No") == (
        "Radiologist's feedback: Mention the number.\n\n"
        "Patient's feedback: No\n\n"
        "Can you improve your simplification while keeping it concise?"
    )


def test_paper_placeholders_reproduce_the_appendix_text(prompts):
    # Substituting the paper's own placeholders gives the appendix's prompt, period included.
    rendered = prompts.templates["plain"].text.replace("{sentence}", prompts.placeholders["sentence"])
    assert rendered == "Simplify the sentence: <RADIOLOGY SENTENCE>."
    assert (
        prompts.placeholders["radiologist_feedback"]
        == prompts.placeholders["patient_feedback"]
        == ("<PROCESSED FEEDBACK>")
    )


def test_render_is_strict_about_fields(prompts):
    with pytest.raises(PromptError, match="missing"):
        prompts.render("radiologist", sentence=SENTENCE)
    with pytest.raises(PromptError, match="unexpected"):
        prompts.render("patient", simplification=SIMPLIFICATION, sentence=SENTENCE)
    with pytest.raises(PromptError, match="no prompt"):
        prompts.render("summary", sentence=SENTENCE)


def test_values_are_not_re_expanded(prompts):
    # A simplification that happens to contain "{sentence}" is sent as written.
    text = prompts.render("patient", simplification="Odd {sentence} text.")
    assert "Simplification: Odd {sentence} text." in text


def test_keep_mode_pastes_verbatim_and_digest_changes(prompts):
    data = {
        "version": "x",
        "prompts": {name: t.text for name, t in prompts.templates.items()},
        "sentence_final_punctuation": "keep",
    }
    verbatim = prompt_set_from_dict(data)
    assert (
        verbatim.render("plain", sentence=SENTENCE)
        == "Simplify the sentence: There are 2 hyperenhancing liver lesions.."
    )
    assert verbatim.digest != prompts.digest
    assert prompts.as_dict()["digest"] == prompts.digest


def test_malformed_sets_are_refused():
    with pytest.raises(PromptError, match="lacks prompts"):
        prompt_set_from_dict({"version": "x", "prompts": {"plain": "Simplify the sentence: {sentence}."}})
    with pytest.raises(PromptError, match="unknown prompt version"):
        load_prompts("no-such-version")
