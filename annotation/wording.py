"""The protocol's participant-facing wording in a language: the one lookup every survey page and
page builder uses for a question, a scale's level and definition, a panel's intro, a rubric aspect,
and the default consent and instruction texts. Django-free.

English is annotation/scales.py and annotation/protocol_texts.py, byte for byte (the texts
tests compare with PROTOCOL.md). Other languages come from the protocol presets' translations
(instruments/presets/protocol_003_*.yaml, read with `preset_load`), and the prose the presets do
not carry (consent, the instructions' joining sentences) from protocol_texts.TRANSLATED_PROSE. A
language the presets do not offer falls back to English, as Django's catalogues do for a missing
message. Making a study's own instrument the source of wording changes this module only.

Keys:
    question:<name>                 a lay question (scales.LAY_QUESTIONS, "most", "least",
                                    "justification")
    level:<scale>:<level name>      a scale level's label (scale: severity, understanding,
    definition:<scale>:<level name> confidence, urgency_confidence, helpfulness, likert); the level
                                    name is the stored answer, whatever the language shown
    intro:<panel>                   a lay panel's intro (original, assisted, preference)
    aspect_title:<aspect>, aspect_definition:<aspect>, aspect_statement:<aspect>
    expert_instruction, expert_likert_legend, expert_justification_note,
    expert_severity_question, expert_original_simplicity_question, severity_levels_heading,
    lay_consent, lay_instructions, expert_consent, expert_instructions
"""

from __future__ import annotations

from functools import cache

from annotation import protocol_texts, scales
from instruments.presets import preset_load
from instruments.schema import Instrument

ENGLISH = "en"
LAY_PRESET = "protocol_003_layperson"
EXPERT_PRESET = "protocol_003_radiologist"
SCALES: dict[str, scales.Scale] = {
    "severity": scales.SEVERITY,
    "understanding": scales.UNDERSTANDING,
    "confidence": scales.CONFIDENCE,
    "urgency_confidence": scales.URGENCY_CONFIDENCE,
    "helpfulness": scales.HELPFULNESS,
    "likert": scales.LIKERT,
}
# The preset item whose points translate each scale (matched by code = the level's value).
_SCALE_ITEMS = {
    "severity": (LAY_PRESET, "severity_guess"),
    "understanding": (LAY_PRESET, "understanding"),
    "confidence": (LAY_PRESET, "confidence"),
    "urgency_confidence": (LAY_PRESET, "urgency_confidence"),
    "helpfulness": (LAY_PRESET, "helpfulness"),
    "likert": (EXPERT_PRESET, "correctness"),
}


def protocol_wording(key: str, language: str) -> str:
    """The text of `key` (see the module's docstring) as participants of a study in `language` see
    it; KeyError for a key the protocol does not have."""
    return _table(_base(language))[key]


@cache
def protocol_languages() -> tuple[str, ...]:
    """The languages the protocol's wording is offered in (every one the presets translate)."""
    return tuple(sorted({ENGLISH, *_presets()[LAY_PRESET].languages}))


def translation_status(language: str) -> str:
    """How far the protocol's wording in `language` may be trusted, as the presets record it
    ("source", "unvalidated translation", "validated"); "missing" for a language they do not offer
    (participants then see English wording)."""
    statuses = {str(preset.translation_status.get(language, "missing")) for preset in _presets().values()}
    for status in ("missing", "unvalidated translation", "validated", "source"):
        if status in statuses:
            return status
    return "missing"


def severity_levels(language: str) -> list[tuple[str, str, str]]:
    """The severity scale as shown: (stored level name, label, definition) per level, in order."""
    return [
        (
            level.name,
            protocol_wording(f"level:severity:{level.name}", language),
            protocol_wording(f"definition:severity:{level.name}", language),
        )
        for level in scales.SEVERITY.levels
    ]


@cache
def expert_aspects(language: str) -> tuple[protocol_texts.ExpertAspect, ...]:
    """The radiologist rubric's aspects (protocol_texts.EXPERT_ASPECTS) worded in `language`."""
    return tuple(
        protocol_texts.ExpertAspect(
            aspect.key,
            protocol_wording(f"aspect_title:{aspect.key}", language),
            protocol_wording(f"aspect_definition:{aspect.key}", language),
            protocol_wording(f"aspect_statement:{aspect.key}", language),
        )
        for aspect in protocol_texts.EXPERT_ASPECTS
    )


@cache
def _base(language: str) -> str:
    # Cached: the survey pages look up a few dozen texts per request.
    base = (language or ENGLISH).split("-")[0].lower()
    return base if base in protocol_languages() else ENGLISH


@cache
def _presets() -> dict[str, Instrument]:
    return {name: preset_load(name) for name in (LAY_PRESET, EXPERT_PRESET)}


@cache
def _table(language: str) -> dict[str, str]:
    if language == ENGLISH:
        return _english()
    return _translated(language)


def _english() -> dict[str, str]:
    texts = protocol_texts
    table = {f"question:{name}": scales.LAY_SCALES[name].question for name in scales.LAY_QUESTIONS}
    table |= {
        "question:most": scales.PREFERENCE_MOST_QUESTION,
        "question:least": scales.PREFERENCE_LEAST_QUESTION,
        "question:justification": scales.JUSTIFICATION_QUESTION,
    }
    for scale_key, scale in SCALES.items():
        for level in scale.levels:
            table[f"level:{scale_key}:{level.name}"] = level.name
            table[f"definition:{scale_key}:{level.name}"] = level.definition
    table |= {f"intro:{panel}": intro for panel, intro in texts.LAY_PANEL_INTROS.items()}
    for aspect in texts.EXPERT_ASPECTS:
        table[f"aspect_title:{aspect.key}"] = aspect.title
        table[f"aspect_definition:{aspect.key}"] = aspect.definition
        table[f"aspect_statement:{aspect.key}"] = aspect.statement
    return table | {
        "expert_instruction": texts.EXPERT_INSTRUCTION,
        "expert_likert_legend": texts.EXPERT_LIKERT_LEGEND,
        "expert_justification_note": texts.EXPERT_JUSTIFICATION_NOTE,
        "expert_severity_question": texts.EXPERT_SEVERITY_QUESTION,
        "expert_original_simplicity_question": texts.EXPERT_ORIGINAL_SIMPLICITY_QUESTION,
        "severity_levels_heading": "Severity levels:",
        "lay_consent": texts.LAY_CONSENT_DEFAULT,
        "lay_instructions": texts.LAY_INSTRUCTIONS_DEFAULT,
        "expert_consent": texts.EXPERT_CONSENT_DEFAULT,
        "expert_instructions": texts.EXPERT_INSTRUCTIONS_DEFAULT,
    }


def _translated(language: str) -> dict[str, str]:
    presets = _presets()
    lay, expert = presets[LAY_PRESET], presets[EXPERT_PRESET]
    prose = protocol_texts.TRANSLATED_PROSE[language]
    table = {f"question:{name}": lay.item(name).wording[language] for name in scales.LAY_QUESTIONS}
    table |= {
        "question:most": lay.item("most").wording[language],
        "question:least": lay.item("least").wording[language],
        "question:justification": lay.item("most_justification").wording[language],
    }
    for scale_key, scale in SCALES.items():
        preset, item_key = _SCALE_ITEMS[scale_key]
        item_scale = presets[preset].item(item_key).scale
        assert item_scale is not None, f"{preset}.{item_key} has no scale"
        points = {point.code: point for point in item_scale.points}
        for level in scale.levels:
            point = points[level.value]
            table[f"level:{scale_key}:{level.name}"] = point.label[language]
            table[f"definition:{scale_key}:{level.name}"] = point.definition.get(language, "")
    table |= {f"intro:{phase.key}": phase.intro[language] for phase in lay.phases}
    for aspect in protocol_texts.EXPERT_ASPECTS:
        item = expert.item(aspect.key)
        table[f"aspect_title:{aspect.key}"] = item.title[language]
        table[f"aspect_definition:{aspect.key}"] = item.wording[language]
        table[f"aspect_statement:{aspect.key}"] = item.short_wording[language]
    likert = ", ".join(
        f"{level.value} - {table[f'level:likert:{level.name}']}" for level in scales.LIKERT.levels
    )
    table |= {
        "expert_instruction": expert.description[language],
        "expert_likert_legend": f"{likert}.",
        "expert_justification_note": expert.item("comment").wording[language],
        "expert_severity_question": expert.item("severity").wording[language],
        "expert_original_simplicity_question": expert.item("original_simplicity").wording[language],
        "severity_levels_heading": prose["severity_levels_heading"],
        "lay_consent": prose["lay_consent"],
        "expert_consent": prose["expert_consent"],
    }
    table["lay_instructions"] = _lay_instructions(table, prose)
    table["expert_instructions"] = _expert_instructions(table, prose)
    return table


def _severity_list(table: dict[str, str]) -> list[str]:
    return [
        f"- {table[f'level:severity:{level.name}']}: {table[f'definition:severity:{level.name}']}"
        for level in scales.SEVERITY.levels
    ]


def _lay_instructions(table: dict[str, str], prose: dict[str, str]) -> str:
    """protocol_texts.LAY_INSTRUCTIONS_DEFAULT's arrangement, in the table's language."""
    lines = [
        prose["lay_instructions_head"],
        "",
        f"1. {table['intro:original']} {prose['lay_instructions_step1']}",
        "",
        f"2. {table['intro:assisted']} {prose['lay_instructions_step2']}",
        "",
        f"3. {table['intro:preference']} {prose['lay_instructions_step3']}",
        "",
        table["severity_levels_heading"],
        *_severity_list(table),
    ]
    return "\n".join(lines)


def _expert_instructions(table: dict[str, str], prose: dict[str, str]) -> str:
    """protocol_texts.EXPERT_INSTRUCTIONS_DEFAULT's arrangement, in the table's language."""
    lines = [table["expert_instruction"], table["expert_likert_legend"], ""]
    lines += [
        f"- {table[f'aspect_title:{a.key}']}: {table[f'aspect_definition:{a.key}']}"
        for a in protocol_texts.EXPERT_ASPECTS
    ]
    lines += ["", table["expert_justification_note"], "", prose["expert_instructions_original"], ""]
    lines += [table["severity_levels_heading"], *_severity_list(table)]
    return "\n".join(lines)
