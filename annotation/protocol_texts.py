"""The default participant-facing texts, shipped with every new study and shown when a study leaves
its own text empty (Study.expert_instructions, Study.lay_instructions, Study.lay_consent_text,
Study.expert_consent_text). The instructions are the protocol's; the two consent texts are
radlay's own (the paper publishes no consent wording): each is marked where it is defined.

Source of the wording: Yang, Cherian & Vucetic, "Two-Pronged Human Evaluation of ChatGPT
Self-Correction in Radiology Report Simplification", Findings of ACL 2024 (seed 003): the radiologist
rubric is Figure 5 / appendix A.1, the severity levels appendix A.2, the lay panels Figure 1 (wording
collected in PROTOCOL.md). The scales themselves live in annotation/scales.py; this module only
arranges them into instructions, so a scale's wording is written once. Django-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation import scales

PROTOCOL_CITATION = (
    "Yang, Cherian & Vucetic, “Two-Pronged Human Evaluation of ChatGPT Self-Correction in Radiology "
    "Report Simplification”, Findings of ACL 2024."
)
# What raters see: the title names the generator and the method under test, which a blind rater
# should not be told.
PROTOCOL_CITATION_BLIND = "Yang, Cherian & Vucetic, Findings of ACL 2024"

# --- Radiologist (Figure 5 / appendix A.1) ------------------------------------------------------

# The paper says "from ChatGPT"; radlay's systems need not be ChatGPT, and naming the generator
# would hint at the systems the rater must stay blind to, so the default drops those two words.
EXPERT_INSTRUCTION = (
    "Given an original radiology sentence and different simplifications, you are asked to give a 1-5 "
    "Likert scale score for each aspect of each simplification."
)
EXPERT_LIKERT_LEGEND = scales.LIKERT.question
EXPERT_JUSTIFICATION_NOTE = (
    "[Optional] You are asked to provide your optional comments/justifications about your ratings."
)


@dataclass(frozen=True)
class ExpertAspect:
    key: str
    title: str
    definition: str  # the rubric's sentence (appendix A.1)
    statement: str  # the short claim a 1-5 answer agrees or disagrees with, shown on each row


# Statements paraphrase the definitions in the agree/disagree form the scale asks for; for
# Hallucination, agreeing (5) means *no* harmful or misleading content (PROTOCOL.md: the release
# calls this column "No harm").
EXPERT_ASPECTS: tuple[ExpertAspect, ...] = (
    ExpertAspect(
        "correctness",
        "Correctness",
        scales.EXPERT_ASPECTS["correctness"],
        "All information is medically correct.",
    ),
    ExpertAspect(
        "completeness",
        "Completeness",
        scales.EXPERT_ASPECTS["completeness"],
        "It retains all essential information of the original.",
    ),
    ExpertAspect(
        "hallucination",
        "Hallucination",
        scales.EXPERT_ASPECTS["hallucination"],
        "It introduces no harmful or misleading content.",
    ),
    ExpertAspect(
        "structure",
        "Structure",
        scales.EXPERT_ASPECTS["structure"],
        "It clearly describes the body parts, the findings and what they indicate.",
    ),
    ExpertAspect(
        "simplicity",
        "Simplicity",
        scales.EXPERT_ASPECTS["simplicity"],
        "It is simple enough for laypeople to understand.",
    ),
)

EXPERT_SEVERITY_QUESTION = "What is the severity of the medical condition described in the original sentence?"
EXPERT_ORIGINAL_SIMPLICITY_QUESTION = scales.ORIGINAL_SIMPLICITY_QUESTION


def _expert_instructions_text() -> str:
    lines = [EXPERT_INSTRUCTION, EXPERT_LIKERT_LEGEND, ""]
    lines += [f"- {a.title}: {a.definition}" for a in EXPERT_ASPECTS]
    lines += ["", EXPERT_JUSTIFICATION_NOTE, ""]
    lines += [
        "For each original sentence you are also asked for the severity of the described condition "
        "and whether laypeople can understand the original sentence (1-5).",
        "",
        "Severity levels:",
    ]
    lines += [f"- {level.name}: {level.definition}" for level in scales.SEVERITY.levels]
    return "\n".join(lines)


EXPERT_INSTRUCTIONS_DEFAULT = _expert_instructions_text()

# radlay's own wording, not the protocol's (the paper publishes no consent text), shown to a
# radiologist before the first page when the study has no consent text of its own.
EXPERT_CONSENT_DEFAULT = """\
You are invited to take part in a research study on making radiology reports easier for patients \
to understand.

What you will do: for each original radiology sentence you will rate several simplified versions, \
shown under the labels A, B, C… in a random order, on five aspects (1-5), and say how severe the \
described condition is and whether laypeople can understand the original sentence. Comments are \
optional.

Your answers: they are stored under a random code, not your name, and are reported as group \
results or under that code.

Taking part is voluntary. You may stop at any time without giving a reason. If you have questions \
about the study, please contact the research team that invited you.

By choosing "I agree — begin" you confirm that you have read this information and agree to take \
part."""

# --- Layperson (Figure 1) --------------------------------------------------------------------------

LAY_PANEL_INTROS = {
    "original": "Given a radiology sentence, please answer the following questions.",
    "assisted": (
        "Given the same radiology sentence and a simplification, please answer the following questions."
    ),
    "preference": "Given all simplifications, please answer the following questions.",
}

# radlay's own wording, not the protocol's (the paper publishes no consent text). The study's
# duration, ethics approval and contact are shown under it from Study's fields when set.
LAY_CONSENT_DEFAULT = """\
You are invited to take part in a research study on making radiology reports easier for patients \
to understand.

What you will do: you will read short sentences taken from radiology reports, and simpler versions \
of them written by computer programs, and answer a few multiple-choice questions about each \
(how well you understand it, and how serious you think the described condition is). Some \
questions ask you to choose the versions you like most and least and to say why.

Your answers: they are stored under a random code, not your name, and are reported only as \
group results. The sentences are not about you; you do not need any medical knowledge, and there \
are no right or wrong answers to the understanding questions.

Taking part is voluntary. You may stop at any time without giving a reason. If you have questions \
about the study, please contact the research team that invited you.

By choosing "I agree" you confirm that you are at least 18 years old, have read this information, \
and agree to take part."""

LAY_INSTRUCTIONS_DEFAULT = f"""\
For each radiology sentence you will see three short steps.

1. {LAY_PANEL_INTROS["original"]} You will say how well you understand the sentence, whether \
you can guess how severe the described condition is, and make your best guess of its severity.

2. {LAY_PANEL_INTROS["assisted"]} You will answer the same questions again, and say whether \
the simplification improved your understanding. Your answers to step 1 can no longer be changed \
once the simplification is shown.

3. {LAY_PANEL_INTROS["preference"]} Choose the simplifications you like the most and the least \
(you can select more than one) and briefly say why.

Severity levels:
""" + "\n".join(f"- {level.name}: {level.definition}" for level in scales.SEVERITY.levels)


# --- Other languages (annotation/wording.py) -------------------------------------------------------
# The prose the presets do not carry: radlay's default consent texts and the sentences that join the
# instructions, per language. Spanish is radlay's own translation, not yet validated for research
# use (the presets' translation_status says the same of their Spanish wording).
TRANSLATED_PROSE: dict[str, dict[str, str]] = {
    "es": {
        "expert_consent": """\
Le invitamos a participar en un estudio de investigación sobre cómo hacer que los informes de \
radiología sean más fáciles de entender para los pacientes.

Qué hará: para cada frase radiológica original puntuará varias versiones simplificadas, mostradas \
con las etiquetas A, B, C… en orden aleatorio, en cinco aspectos (1-5), e indicará la gravedad de \
la afección descrita y si las personas sin formación médica pueden entender la frase original. Los \
comentarios son opcionales.

Sus respuestas: se guardan con un código aleatorio, no con su nombre, y se comunican como \
resultados de grupo o con ese código.

La participación es voluntaria. Puede dejarlo en cualquier momento sin dar explicaciones. Si tiene \
preguntas sobre el estudio, póngase en contacto con el equipo de investigación que le invitó.

Al elegir "Acepto — empezar" confirma que ha leído esta información y que acepta participar.""",
        "lay_consent": """\
Le invitamos a participar en un estudio de investigación sobre cómo hacer que los informes de \
radiología sean más fáciles de entender para los pacientes.

Qué hará: leerá frases cortas tomadas de informes de radiología, y versiones más sencillas de esas \
frases escritas por programas informáticos, y responderá a unas pocas preguntas de opción múltiple \
sobre cada una (cuánto la entiende y qué gravedad cree que tiene la afección descrita). Algunas \
preguntas le piden que elija las versiones que más y que menos le gustan y que explique por qué.

Sus respuestas: se guardan con un código aleatorio, no con su nombre, y solo se comunican como \
resultados de grupo. Las frases no tratan sobre usted; no necesita ningún conocimiento médico y \
no hay respuestas correctas o incorrectas a las preguntas sobre comprensión.

La participación es voluntaria. Puede dejarlo en cualquier momento sin dar explicaciones. Si tiene \
preguntas sobre el estudio, póngase en contacto con el equipo de investigación que le invitó.

Al elegir "Acepto" confirma que tiene al menos 18 años, que ha leído esta información y que acepta \
participar.""",
        "lay_instructions_head": "Para cada frase de radiología verá tres pasos cortos.",
        "lay_instructions_step1": "Indicará cuánto entiende la frase, si puede adivinar la gravedad "
        "de la afección descrita, y hará su mejor estimación de esa gravedad.",
        "lay_instructions_step2": "Responderá de nuevo a las mismas preguntas e indicará si la "
        "simplificación ha mejorado su comprensión. Sus respuestas del paso 1 ya no se pueden "
        "cambiar una vez que se muestra la simplificación.",
        "lay_instructions_step3": "Elija las simplificaciones que más y que menos le gustan (puede "
        "seleccionar más de una) y explique brevemente por qué.",
        "severity_levels_heading": "Niveles de gravedad:",
        "expert_instructions_original": "Para cada frase original se le pide también la gravedad de "
        "la afección descrita y si las personas sin formación médica pueden entender la frase "
        "original (1-5).",
    },
}
