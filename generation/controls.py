"""Planted controls: deterministic degraded copies of a simplification, each with the span and the
clinical error category of the one change planted in it (Appraise's "BAD references", made
clinical). Pure: no Django; the lexicon says where a change can go.

Kinds (each returns None where it does not apply to the text):

- ``negation``: remove a negation ("no evidence of" -> "evidence of", "is not" -> "is", "without" ->
  "with"); where the text has none, insert "not" after the first "is/are/was/were".
- ``omission``: drop a sentence — or, in a one-sentence text, a comma clause — that renders a finding
  of the source (a glossary concept of category "finding"), only when the finding is then gone from
  the text (``lexicon.facts.concept_present``).
- ``laterality``: swap left and right.
- ``size``: multiply the number of a size with a unit by 2 or 3 ("3 mm" -> "6 mm").
- ``reassurance``: insert a false reassurance sentence ("This is nothing to worry about.").

Every change is one contiguous edit, so ``text == original[:original_start] + text[start:end] +
original[original_end:]`` and ``start == original_start``; a deletion has ``start == end`` (the
point where the text was removed). Choices among candidates come from ``random.Random`` seeded
with the kind and the seed: the same (text, source, kind, seed) always gives the same control.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from lexicon.facts import concept_present, extract_entities
from lexicon.glossary import load_glossary

# The keys of the clinical typology (instruments/presets/clinical_error_spans.yaml; a test holds the
# equality), so a planted error and a rater's span name a category the same way.
CATEGORIES = (
    "omitted_finding",
    "wrong_finding_or_location",
    "wrong_severity_or_false_reassurance",
    "hallucinated_content",
    "unexplained_jargon",
)
SEVERITIES = ("minor", "could_mislead", "could_harm")
KINDS = ("negation", "omission", "laterality", "size", "reassurance")

_CATEGORY = {
    "negation": ("wrong_finding_or_location", "could_harm"),
    "omission": ("omitted_finding", "could_harm"),
    "laterality": ("wrong_finding_or_location", "could_harm"),
    "size": ("wrong_severity_or_false_reassurance", "could_mislead"),
    "reassurance": ("wrong_severity_or_false_reassurance", "could_harm"),
}
_REASSURANCES = (
    "This is nothing to worry about.",
    "This is completely normal and needs no follow-up.",
    "There is no reason for concern.",
)
_REMOVABLE_NEGATION = re.compile(r"\b(?:no|not)\s+", re.IGNORECASE)
_COPULA = re.compile(r"\b(?:is|are|was|were)\s+(?!not\b|no\b)(?=\w)", re.IGNORECASE)
# A sentence ends at . ! ? followed by whitespace or the end ("1.2 cm" stays inside).
_SENTENCE = re.compile(r"(?:[^.!?]|[.!?](?!\s|$))+(?:[.!?]+|$)\s*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class PlantedControl:
    kind: str
    text: str  # the degraded simplification
    start: int  # the planted change in ``text`` (start == end for a deletion)
    end: int
    original_start: int  # the part of the original simplification it replaced
    original_end: int
    category: str
    severity: str


def _control(kind: str, original: str, start: int, end: int, replacement: str) -> PlantedControl:
    category, severity = _CATEGORY[kind]
    return PlantedControl(
        kind=kind,
        text=original[:start] + replacement + original[end:],
        start=start,
        end=start + len(replacement),
        original_start=start,
        original_end=end,
        category=category,
        severity=severity,
    )


def _same_case(word: str, template: str) -> str:
    return word.capitalize() if template[:1].isupper() else word


def _negation(text: str, rng: random.Random) -> PlantedControl | None:
    candidates: list[tuple[int, int, str]] = []
    for entity in extract_entities(text):
        if entity.kind != "negation":
            continue
        if entity.text.lower() == "without":
            candidates.append((entity.start, entity.end, _same_case("with", entity.text)))
        m = _REMOVABLE_NEGATION.match(text, entity.start)
        if m:
            candidates.append((m.start(), m.end(), ""))
    if not candidates:
        copula = _COPULA.search(text)
        if copula is None:
            return None
        return _control("negation", text, copula.end(), copula.end(), "not ")
    start, end, replacement = rng.choice(candidates)
    if not replacement and start == 0:
        # "No fluid is seen." -> "Fluid is seen.": keep the sentence capitalised.
        return _control("negation", text, start, end + 1, text[end].upper())
    return _control("negation", text, start, end, replacement)


def _laterality(text: str, rng: random.Random) -> PlantedControl | None:
    sides = [e for e in extract_entities(text) if e.kind == "side" and e.value in ("left", "right")]
    if not sides:
        return None
    side = rng.choice(sides)
    word = text[side.start : side.start + len(side.value)]
    swapped = "right" if side.value == "left" else "left"
    return _control("laterality", text, side.start, side.start + len(word), _same_case(swapped, word))


def _size(text: str, rng: random.Random) -> PlantedControl | None:
    sizes = [e for e in extract_entities(text) if e.kind == "size"]
    if not sizes:
        return None
    size = rng.choice(sizes)
    number = _NUMBER.search(text, size.start, size.end)
    if number is None:
        return None
    factor = rng.choice((2, 3))
    value = float(number.group()) * factor
    decimals = len(number.group().split(".")[1]) if "." in number.group() else 0
    new = f"{value:.{decimals}f}"
    return _control("size", text, number.start(), number.end(), new)


def _reassurance(text: str, rng: random.Random) -> PlantedControl | None:
    if not text.strip():
        return None
    sentence = rng.choice(_REASSURANCES)
    ends = [m.end() for m in _SENTENCE.finditer(text) if m.group().strip()]
    at = rng.choice(ends)
    before = text[:at]
    if at == len(text.rstrip()) or at == len(text):
        at = len(text.rstrip())
        before = text[:at]
        joiner = "" if before.endswith((".", "!", "?")) else "."
        return _control("reassurance", text, at, at, f"{joiner} {sentence}")
    return _control("reassurance", text, at, at, sentence + (" " if not before.endswith(" ") else " "))


def _omission(text: str, source: str, rng: random.Random) -> PlantedControl | None:
    glossary = load_glossary()
    findings = [glossary.get(m.term) for m in glossary.find_terms(source) if m.category == "finding"]
    entries = [e for e in findings if e is not None]
    if not entries:
        return None
    pieces = [(m.start(), m.end()) for m in _SENTENCE.finditer(text) if m.group().strip()]
    if len(pieces) < 2:
        # One sentence: its comma clauses after the first, each removed with its leading comma.
        commas = [m.start() for m in re.finditer(r",\s", text)]
        bounds = [*commas, len(text.rstrip(" .!?"))]
        pieces = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    candidates = []
    for start, end in pieces:
        rest = text[:start] + text[end:]
        lost = [e for e in entries if concept_present(e, text[start:end]) and not concept_present(e, rest)]
        if lost and rest.strip(" .,"):
            candidates.append((start, end))
    if not candidates:
        return None
    start, end = rng.choice(candidates)
    return _control("omission", text, start, end, "")


def plant_control(simplification: str, *, source: str, kind: str, seed: int = 0) -> PlantedControl | None:
    """One degraded copy of ``simplification`` of the given ``kind``, or None where that kind of
    degradation does not apply. ``source`` (the radiology sentence) tells which findings matter."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rng = random.Random(f"{kind}:{seed}")
    if kind == "negation":
        return _negation(simplification, rng)
    if kind == "laterality":
        return _laterality(simplification, rng)
    if kind == "size":
        return _size(simplification, rng)
    if kind == "reassurance":
        return _reassurance(simplification, rng)
    return _omission(simplification, source, rng)


def plant_controls(simplification: str, *, source: str, seed: int = 0) -> list[PlantedControl]:
    """Every kind of degraded copy that applies, in ``KINDS`` order."""
    controls = (plant_control(simplification, source=source, kind=kind, seed=seed) for kind in KINDS)
    return [c for c in controls if c is not None]
