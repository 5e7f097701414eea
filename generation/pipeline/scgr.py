"""Structured Concept-Grounded Refinement (seed 002, section 3 and Algorithm 1). Django-free.

For one radiology sentence T_exp:
1. Hybrid concept extraction: C_onto = radlay's lay glossary terms (standing in for MedCAT/UMLS CUIs),
   C_ent = regular-expression entities (standing in for SciSpacy): sizes, numbers and counts, sides,
   negation, hedging (lexicon.facts).
2. Knowledge retrieval and drafting: each concept is replaced by its lay rendering (standing in for
   MedlinePlus definitions), giving the noisy lay draft T_draft.
3. Constrained refinement: a prompt built like seed 002's Figure A1 (the Original is the source of
   truth, the Concepts are listed with their lay definitions, the Draft only steers vocabulary, the
   answer is strict JSON) goes to any ChatBackend as agent "generator" with context {"scgr": {...}}.
4. Factuality check: every concept (its term, or one of its lay renderings or accepted paraphrases,
   near-synonyms allowed: "darker spot" keeps "hypodense lesion") and every entity must survive. A
   failing answer is asked for again (the next prompt lists what it broke), `max_attempts` answers in
   all (default 3: the first and up to 2 regenerations); the answer with the fewest violations is kept
   and, if it still has any, flagged with them (Algorithm 1 drops such captions; radlay keeps and flags
   them so that a researcher sees why).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from generation.backends.base import ChatBackend, GenerationParams
from generation.glossary.agents import substitute
from lexicon.facts import Entity, Violation, check_facts, extract_entities
from lexicon.glossary import Glossary, TermMatch, load_glossary

SCGR_PROMPT_VERSION = "scgr-v1"
DEFAULT_MAX_ATTEMPTS = 3

# Seed 002, Figure A1, adapted to sentences of radiology reports (v1). Changing a word makes a new version.
SYSTEM_PROMPT = "\n".join(
    [
        "You are a precise Medical Text Simplifier. Rewrite the radiology sentence for a high school student "
        "using the provided Concepts.",
        "[Critical Instructions]",
        "1. Source of Truth: Trust the Original sentence completely. The Draft is a rough word-for-word "
        "substitution: ignore anything in it that is not in the Original.",
        "2. Keep Every Fact: keep every listed Concept (in its lay words) and every Entity: each number and "
        "size with its unit, each side (left, right, both), each negation (no, without) and each hedge "
        "(probably, likely, possible, suspicious for).",
        "3. Objective Tone: No 'you'/'your'. Use 'the patient' or 'the body'.",
        "4. No Hallucinations: Do not invent findings, causes or advice. Keep unclear terms in parentheses.",
        '5. Strict Format: Return ONLY a JSON object {"simplification": "<the rewritten sentence>"}. '
        'No "Note:" or explanations.',
    ]
)

USER_TEMPLATE = "\n".join(
    [
        'Original (Fact): "{original}"',
        "Concepts: {concepts}",
        "Entities: {entities}",
        'Draft (Ref): "{draft}"',
        "[Structured Output]",
        '{{"simplification": "..."}}',
    ]
)

RETRY_TEMPLATE = "\n".join(
    [
        "The previous answer broke these constraints:",
        "{violations}",
        "Rewrite it from the Original so that every Concept and Entity is kept. "
        'Return ONLY the JSON object {{"simplification": "..."}}.',
    ]
)

_ANSWER_KEYS = ("simplification", "layman_caption", "lay_caption", "caption", "text", "output")


class RefinementFormatError(ValueError):
    """The refiner's answer holds no JSON object with a simplification."""


@dataclass(frozen=True)
class ConceptSet:
    """C = C_onto ∪ C_ent for one sentence."""

    concepts: tuple[TermMatch, ...]
    entities: tuple[Entity, ...]

    def concepts_payload(self) -> list[dict[str, str]]:
        seen: set[str] = set()
        out = []
        for c in self.concepts:
            if c.term not in seen:
                seen.add(c.term)
                out.append({"term": c.surface, "lay": c.plain, "category": c.category})
        return out

    def entities_payload(self) -> list[dict[str, str]]:
        return [{"kind": e.kind, "text": e.text} for e in self.entities]


@dataclass
class SCGRAttempt:
    raw: str
    text: str
    violations: list[Violation]
    format_ok: bool = True


@dataclass
class SCGRResult:
    original: str
    concepts: ConceptSet
    draft: str
    simplification: str
    attempts: list[SCGRAttempt] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    prompt_version: str = SCGR_PROMPT_VERSION
    backend: str = ""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    # Turns in the shape of the self-correction transcript (round = attempt): the messages each
    # attempt added, then its answer with the simplification read from it and its violations.
    transcript: list[dict[str, Any]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.attempts)

    @property
    def cached_calls(self) -> int:
        return sum(1 for turn in self.transcript if turn["role"] == "assistant" and turn["cached"])

    @property
    def flagged(self) -> bool:
        return bool(self.violations)

    @property
    def flag_reason(self) -> str:
        """One line per violation of the kept answer ("" when it passed the factuality check)."""
        return "\n".join(f"{v.label}: {v.expected} ({v.detail})" for v in self.violations)


def extract_concepts(text: str, *, glossary: Glossary | None = None) -> ConceptSet:
    """Step 1: glossary concepts and regex entities of `text`."""
    glossary = glossary or load_glossary()
    return ConceptSet(tuple(glossary.find_terms(text)), tuple(extract_entities(text)))


def lay_draft(text: str, *, glossary: Glossary | None = None) -> str:
    """Step 2: the noisy lay draft — every concept replaced by its lay rendering, nothing else changed."""
    return substitute(text, glossary=glossary)


def build_refinement_messages(original: str, concepts: ConceptSet, draft: str) -> list[dict[str, str]]:
    """Step 3's prompt (Figure A1): system role + the Original, Concepts, Entities and Draft."""
    user = USER_TEMPLATE.format(
        original=original,
        concepts=json.dumps(concepts.concepts_payload(), ensure_ascii=False),
        entities=json.dumps(concepts.entities_payload(), ensure_ascii=False),
        draft=draft,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def retry_message(violations: list[Violation]) -> dict[str, str]:
    lines = "\n".join(f'- {v.label}: "{v.expected}" ({v.detail})' for v in violations)
    return {"role": "user", "content": RETRY_TEMPLATE.format(violations=lines)}


def parse_refinement(answer: str) -> str:
    """The simplification in a refiner's answer: the first JSON object (code fences, prose around it and
    the key names of Figure A1 tolerated) with a non-empty string under one of the known keys."""
    text = re.sub(r"```(?:json|JSON)?", "", answer)
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            for key in _ANSWER_KEYS:
                found = value.get(key)
                if isinstance(found, str) and found.strip():
                    return found.strip()
    raise RefinementFormatError("no JSON object with a simplification in the refiner's answer")


def check_factuality(
    original: str, simplification: str, *, glossary: Glossary | None = None
) -> list[Violation]:
    """Step 4: every concept and entity of the original survives (an empty list means it passes)."""
    return check_facts(original, simplification, glossary=glossary)


def scgr_simplify(
    original: str,
    *,
    backend: ChatBackend,
    params: GenerationParams | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    glossary: Glossary | None = None,
) -> SCGRResult:
    """Run SCGR on one sentence with `backend` as the refiner. BackendError propagates to the caller."""
    if max_attempts < 1:
        raise ValueError("max_attempts must be >= 1")
    glossary = glossary or load_glossary()
    params = params or GenerationParams()
    concepts = extract_concepts(original, glossary=glossary)
    draft = lay_draft(original, glossary=glossary)
    messages = build_refinement_messages(original, concepts, draft)
    result = SCGRResult(
        original=original,
        concepts=concepts,
        draft=draft,
        simplification="",
        backend=backend.name,
        model=backend.model,
    )
    previous_violations: list[str] = []
    recorded = 0  # messages of the conversation already in the transcript
    for attempt in range(1, max_attempts + 1):
        # A fresh dict per call: a backend (or its cache) may keep the context it was given.
        context: dict[str, Any] = {
            "scgr": {
                "original": original,
                "draft": draft,
                "concepts": concepts.concepts_payload(),
                "entities": concepts.entities_payload(),
                "attempt": attempt,
                "previous_violations": list(previous_violations),
            }
        }
        completion = backend.complete(list(messages), agent="generator", params=params, context=context)
        result.prompt_tokens += completion.prompt_tokens
        result.completion_tokens += completion.completion_tokens
        result.cost_usd += completion.cost_usd
        try:
            text, format_ok = parse_refinement(completion.text), True
        except RefinementFormatError:
            text, format_ok = completion.text.strip(), False
        violations = check_factuality(original, text, glossary=glossary) if text else []
        if not format_ok:
            violations = [
                Violation("format", "JSON", "the answer is not the requested JSON object"),
                *violations,
            ]
        result.attempts.append(
            SCGRAttempt(raw=completion.text, text=text, violations=violations, format_ok=format_ok)
        )
        turn = {"round": attempt, "agent": "generator", "prompt": "scgr"}
        result.transcript += [
            {**turn, "role": message["role"], "content": message["content"]}
            for message in messages[recorded:]
            if message["role"] != "assistant"  # already recorded as the previous attempt's answer
        ]
        result.transcript.append(
            {
                **turn,
                "role": "assistant",
                "content": completion.text,
                "cached": completion.cached,
                "simplification": text,
                "format_ok": format_ok,
                "violations": [f"{v.label}: {v.expected} ({v.detail})" for v in violations],
            }
        )
        if not violations:
            break
        recorded = len(messages)
        messages += [{"role": "assistant", "content": completion.text}, retry_message(violations)]
        previous_violations = [f"{v.label}: {v.expected}" for v in violations]
    # The earliest of the answers with the fewest violations.
    best = min(result.attempts, key=lambda a: len(a.violations))
    result.simplification, result.violations = best.text, list(best.violations)
    return result
