"""What a simplification must keep from its radiology sentence, and the check that it did. Django-free.

Two kinds of facts (seed 002, section 3.2: C = C_onto ∪ C_ent):
- concepts: glossary terms found in the sentence (the concept dictionary stands in for UMLS CUIs);
  a concept survives when the simplification has the term (any spelling) or the content words of
  one of its lay renderings (plain, plural or an accepted paraphrase, near-synonyms allowed:
  "darker spot" keeps "hypodense lesion");
- entities (regular expressions, standing in for SciSpacy): sizes ("1.2 cm", "less than 5 mm",
  "2 x 3 cm", unit-normalised so "12 mm" = "1.2 centimeters"), numbers ("2", "two", segment "VI" = 6,
  levels "L4"), vague quantities ("few", "multiple"), sides (left / right / bilateral = both sides),
  negation ("no", "without", "negative for") and hedging ("probably", "possible", "suspicious for",
  "consistent with", each with its lay equivalents).

`check_facts(source, simplification)` lists every missing fact and every side, negation, size or
number the simplification adds (read outside the plain renderings of the source's own concepts, so
"avascular" -> "without blood supply" is not an added negation). Used by the deterministic
Radiologist agent and by SCGR's factuality check.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lexicon.glossary import GLOSS, Glossary, GlossaryEntry, TermMatch, load_glossary

SYNONYMS_PATH = Path(__file__).resolve().parent / "data" / "lay_synonyms.txt"

ENTITY_KINDS = ("size", "number", "quantity", "side", "negation", "hedge")

# Wording rather than findings: their absence changes no medical fact. Hedge-like and side entries
# are checked as hedging and side entities instead, which know their lay equivalents ("both kidneys").
NON_ESSENTIAL_TERMS = frozenset(
    {
        "approximately",
        "aspect",
        "representative",
        "visualized",
        "appreciated",
        "demonstrated",
        "terminates",
        "grossly",
        "discrete",
        "contour",
        "evidence of",
        "no evidence of",
        "without evidence of",
        "suspicious for",
        "consistent with",
        "suggestive of",
        "cannot be excluded",
        "questionable",
        "presumed",
        "partially visualized",
        "simple",
        "adjacent to",
        "adjacent",
        "bilateral",
        "bilaterally",
    }
)

_STOP = frozenset(
    """a an the of in on at to for with and or by from is are be been being that which it its this
these those as into onto than then there here""".split()
)

_NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7, "VIII": 8, "IX": 9, "X": 10}
_UNIT_MM = {
    "mm": 1.0,
    "millimeter": 1.0,
    "millimetre": 1.0,
    "cm": 10.0,
    "centimeter": 10.0,
    "centimetre": 10.0,
}

_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"(mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?)"
_BOUND = (
    r"(?:(less than|smaller than|under|below|up to|<|greater than|more than|larger than|bigger than|"
    r"over|>)\s*)?"
)
_SIZE_RE = re.compile(rf"{_BOUND}({_NUM}(?:\s*(?:x|×|by)\s*{_NUM})*)\s*{_UNIT}(?![A-Za-z])", re.IGNORECASE)
_LOWER_BOUNDS = ("less than", "smaller than", "under", "below", "up to", "<")

_NUMBER_RE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]|\.\d)"
    r"|\b(" + "|".join(_NUMBER_WORDS) + r")\b"
    r"|\b([CTLS]\d{1,2})\b"
    r"|(?<=segment )(?-i:(VIII|VII|VI|IV|IX|V|III|II|I|X))\b",
    re.IGNORECASE,
)

_QUANTITY_CLASSES: dict[str, tuple[str, ...]] = {
    "few": ("a few", "few", "a couple of", "couple of", "a handful of", "some"),
    "multiple": ("multiple", "several", "many", "numerous", "various", "more than one", "a number of"),
    "single": ("single", "solitary", "a single", "only one"),
}
_SIDE_PATTERNS: dict[str, str] = {
    "both": r"\bbilateral(?:ly)?\b|\bboth\b|\bon each side\b",
    "left": r"\bleft(?!\s+(?:over|behind|untreated|alone)\b)(?:-sided)?\b",
    "right": r"\bright(?!\s+(?:away|now)\b)(?:-sided)?\b",
}
_NEGATION_RE = re.compile(
    r"\b(?:no|not|without|none|nor|neither|never|absent|absence of|negative for|free of)\b|n['’]t\b",
    re.IGNORECASE,
)
_HEDGE_CLASSES: dict[str, tuple[str, ...]] = {
    "probable": (
        "most likely",
        "probably",
        "probable",
        "likely",
        "presumably",
        "presumed",
        "thought to be",
        "favored",
        "favoured",
    ),
    "possible": (
        "cannot be excluded",
        "can not be excluded",
        "cannot be ruled out",
        "can not be ruled out",
        "not excluded",
        "not ruled out",
        "can be seen with",
        "possibly",
        "possible",
        "may",
        "might",
        "could",
        "questionable",
        "perhaps",
        "maybe",
        "potentially",
        "potential",
    ),
    "suspicious": (
        "suspicious for",
        "suspicious of",
        "concerning for",
        "worrisome for",
        "suggestive of",
        "suggests",
        "suggesting",
        "raising concern for",
        "raises concern for",
        "concern for",
        "pointing to",
        "points to",
        "worrying for",
    ),
    "consistent": (
        "consistent with",
        "compatible with",
        "in keeping with",
        "matching",
        "matches",
        "fits with",
        "in line with",
        "typical of",
        "characteristic of",
        "reflecting",
        "reflects",
        "representing",
        "represents",
    ),
}


def _alternation(phrases: tuple[str, ...]) -> str:
    ordered = sorted(phrases, key=len, reverse=True)
    return r"\b(?:" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered) + r")\b"


_QUANTITY_RES = {k: re.compile(_alternation(v), re.IGNORECASE) for k, v in _QUANTITY_CLASSES.items()}
_SIDE_RES = {k: re.compile(v, re.IGNORECASE) for k, v in _SIDE_PATTERNS.items()}
_HEDGE_RES = {k: re.compile(_alternation(v), re.IGNORECASE) for k, v in _HEDGE_CLASSES.items()}


@dataclass(frozen=True)
class Entity:
    kind: str  # one of ENTITY_KINDS
    text: str  # as written
    value: str  # normalised key compared across texts ("<5mm", "12mm", "2", "L4", "left", "probable"…)
    start: int
    end: int


@dataclass(frozen=True)
class Violation:
    """One fact the simplification lost (or added)."""

    kind: str  # "concept" or an entity kind
    expected: str  # the source's wording (or the added wording when `added`)
    detail: str
    added: bool = False
    plain: str = ""  # for concepts: the plain rendering to re-insert
    replaces: str = ""  # for an added side/size/number: the source value it probably stands for

    @property
    def label(self) -> str:
        kind = "hedging" if self.kind == "hedge" else self.kind
        return f"{'Added' if self.added else 'Missing'} {kind}"


def _fmt_mm(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _size_value(numbers: str, unit: str, bound: str | None) -> str:
    unit_key = unit.lower().rstrip("s")
    factor = _UNIT_MM.get(unit_key, 1.0)
    values = [float(n) * factor for n in re.findall(_NUM, numbers)]
    prefix = "" if not bound else ("<" if bound.lower() in _LOWER_BOUNDS else ">")
    return prefix + "x".join(_fmt_mm(v) for v in values) + "mm"


def _overlaps(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < e and end > s for s, e in spans)


def extract_entities(text: str) -> list[Entity]:
    """Sizes, numbers, quantities, sides, negations and hedges in `text`, in text order."""
    entities: list[Entity] = []
    for m in _SIZE_RE.finditer(text):
        entities.append(
            Entity("size", m.group(0), _size_value(m.group(2), m.group(3), m.group(1)), m.start(), m.end())
        )
    size_spans = [(e.start, e.end) for e in entities]
    for m in _NUMBER_RE.finditer(text):
        if _overlaps(m.start(), m.end(), size_spans):
            continue
        digits, word, level, roman = m.groups()
        if digits:
            value = _fmt_mm(float(digits))
        elif word:
            value = str(_NUMBER_WORDS[word.lower()])
        elif level:
            value = level.upper()
        else:
            value = str(_ROMAN[roman])
        entities.append(Entity("number", m.group(0), value, m.start(), m.end()))
    for kind, classes in (("quantity", _QUANTITY_RES), ("side", _SIDE_RES)):
        for key, regex in classes.items():
            for m in regex.finditer(text):
                entities.append(Entity(kind, m.group(0), key, m.start(), m.end()))
    hedge_spans: list[tuple[int, int]] = []
    for key, regex in _HEDGE_RES.items():
        for m in regex.finditer(text):
            if not _overlaps(m.start(), m.end(), hedge_spans):
                entities.append(Entity("hedge", m.group(0), key, m.start(), m.end()))
                hedge_spans.append((m.start(), m.end()))
    for m in _NEGATION_RE.finditer(text):
        # "cannot be excluded" is hedging, not a negated finding.
        if not _overlaps(m.start(), m.end(), hedge_spans):
            entities.append(Entity("negation", m.group(0), "negation", m.start(), m.end()))
    entities.sort(key=lambda e: (e.start, e.end))
    return entities


def _stem(word: str) -> str:
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("es") and re.search(r"(s|x|z|ch|sh)es$", w):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def content_stems(text: str) -> set[str]:
    words = _words(text)
    content = [w for w in words if w not in _STOP] or words
    return {_stem(w) for w in content}


# Words a rendering may carry that say nothing of the concept ("darker-looking" = "darker").
_FILLER = frozenset({"looking", "appearing", "seeming"})


@lru_cache(maxsize=1)
def _synonyms() -> dict[str, str]:
    """Each near-synonym's stem -> the stem of the first word of its group (data/lay_synonyms.txt)."""
    canonical: dict[str, str] = {}
    for line in SYNONYMS_PATH.read_text(encoding="utf-8").splitlines():
        words = line.split("#", 1)[0].split()
        for word in words:
            canonical.setdefault(_stem(word), _stem(words[0]))
    return canonical


# A study's texts repeat a few thousand words: HIT reads each word once per jargon term.
@lru_cache(maxsize=1 << 16)
def _canonical(word: str) -> str:
    stem = _stem(word)
    return _synonyms().get(stem, stem)


def _canonical_stems(words: list[str]) -> set[str]:
    return {_canonical(w) for w in words}


def _content_words(phrase: str) -> list[str]:
    """The words of a lay phrase that carry its meaning: stop words and fillers aside (all its
    words when it has nothing else)."""
    words = _words(phrase)
    return [w for w in words if w not in _STOP and w not in _FILLER] or words


def rendering_present(entry: GlossaryEntry, text: str) -> bool:
    """True when `text` says the entry in lay words: the content words of one of its lay renderings
    (plain, plural or an accepted paraphrase; near-synonyms count, the parenthesised gloss is
    optional) all appear in it. The term itself does not count."""
    stems = _canonical_stems(_words(text))
    for rendering in entry.lay_renderings():
        content = _content_words(GLOSS.sub("", rendering))
        if content and _canonical_stems(content) <= stems:
            return True
    return False


def stem_counts(text: str) -> Counter[str]:
    """How often each word of `text` occurs, words read as their stems with near-synonyms merged
    (data/lay_synonyms.txt): what `phrase_count` counts in."""
    return Counter(_canonical(w) for w in _words(text))


def phrase_stems(phrase: str) -> set[str]:
    """The stems of a lay phrase's content words, as written (near-synonyms not merged)."""
    return {_stem(w) for w in _content_words(phrase)}


def phrase_count(phrase: str, counts: Counter[str]) -> int:
    """How many times `counts` (stem_counts of a text) holds a lay phrase: as a bag of its content
    words, near-synonyms counting, word order and the words between them not read."""
    return min((counts[stem] // times for stem, times in _needed(phrase)), default=0)


@lru_cache(maxsize=4096)
def _needed(phrase: str) -> tuple[tuple[str, int], ...]:
    return tuple(Counter(_canonical(w) for w in _content_words(phrase)).items())


def concept_present(
    entry: GlossaryEntry,
    text: str,
    *,
    matches: list[TermMatch] | None = None,
    glossary: Glossary | None = None,
) -> bool:
    """True when `text` keeps the concept: its term (any spelling) or one of its lay renderings."""
    glossary = glossary or load_glossary()
    matches = glossary.find_terms(text) if matches is None else matches
    if any(m.term == entry.term for m in matches):
        return True
    return rendering_present(entry, text)


def _mask(text: str, phrases: list[str]) -> str:
    """Blank out the given phrases (the source concepts' plain renderings) in `text`."""
    for phrase in sorted(set(phrases), key=len, reverse=True):
        if phrase.strip():
            text = re.sub(re.escape(phrase), lambda m: " " * len(m.group(0)), text, flags=re.IGNORECASE)
    return text


def _by_kind(entities: list[Entity], kind: str) -> list[Entity]:
    return [e for e in entities if e.kind == kind]


def _introduced_by(entry: GlossaryEntry) -> list[str]:
    """The entry's renderings that carry a side, negation, size or number its term does not have
    ("avascular" -> "without blood supply"): text there is the glossary's, not an added fact."""
    term_facts = {(e.kind, e.value) for e in extract_entities(entry.term)}
    out = []
    for rendering in (entry.plain, entry.rendering(plural=True)):
        if {(e.kind, e.value) for e in extract_entities(rendering)} - term_facts:
            out.append(rendering)
    return out


def check_facts(source: str, simplification: str, *, glossary: Glossary | None = None) -> list[Violation]:
    """Every concept and entity of `source` that `simplification` lost, and the sides, negations, sizes
    and numbers it added. An empty list means the simplification keeps the facts."""
    glossary = glossary or load_glossary()
    violations: list[Violation] = []
    out_matches = glossary.find_terms(simplification)
    seen_terms: set[str] = set()
    masked_phrases: list[str] = []
    for match in glossary.find_terms(source):
        entry = glossary.get(match.term)
        if entry is None:
            continue
        masked_phrases += _introduced_by(entry)
        if match.term in seen_terms or match.term in NON_ESSENTIAL_TERMS:
            continue
        seen_terms.add(match.term)
        if not concept_present(entry, simplification, matches=out_matches, glossary=glossary):
            violations.append(
                Violation(
                    "concept",
                    match.term,
                    f'"{match.surface}" (in plain words: "{match.plain}") is not in the simplification',
                    plain=match.plain,
                )
            )

    src = extract_entities(source)
    out = extract_entities(simplification)
    # Negations and added facts are read outside the glossary renderings that bring their own
    # negation or side ("not blocking" neither keeps a dropped "no" nor adds one).
    out_own = extract_entities(_mask(simplification, masked_phrases))

    src_sizes = _by_kind(src, "size")
    out_size_values = {e.value for e in _by_kind(out, "size")}
    missing_sizes = [e for e in src_sizes if e.value not in out_size_values]
    src_size_values = {e.value for e in src_sizes}
    added_sizes = [e for e in _by_kind(out_own, "size") if e.value not in src_size_values]
    violations += [Violation("size", e.text, f'the size "{e.text}" is not kept') for e in missing_sizes]
    violations += _added("size", added_sizes, missing_sizes)

    src_numbers = _by_kind(src, "number")
    out_number_values = {e.value for e in _by_kind(out, "number")}
    missing_numbers = [e for e in _unique_values(src_numbers) if e.value not in out_number_values]
    src_number_values = {e.value for e in src_numbers} | {
        _fmt_mm(float(v)) for e in src_sizes for v in re.findall(_NUM, e.text)
    }
    added_numbers = [
        e for e in _unique_values(_by_kind(out_own, "number")) if e.value not in src_number_values
    ]
    violations += [Violation("number", e.text, f'the number "{e.text}" is not kept') for e in missing_numbers]
    violations += _added("number", added_numbers, missing_numbers)

    out_quantities = {e.value for e in _by_kind(out, "quantity")}
    violations += [
        Violation("quantity", e.text, f'the amount "{e.text}" is not kept')
        for e in _unique_values(_by_kind(src, "quantity"))
        if e.value not in out_quantities
    ]

    src_sides = {e.value for e in _by_kind(src, "side")}
    out_sides = {e.value for e in _by_kind(out, "side")}
    missing_sides = [
        e for e in _unique_values(_by_kind(src, "side")) if not _side_covered(e.value, out_sides)
    ]
    added_sides = [
        e for e in _unique_values(_by_kind(out_own, "side")) if not _side_allowed(e.value, src_sides)
    ]
    violations += [Violation("side", e.text, f'the side "{e.text}" is not kept') for e in missing_sides]
    violations += _added("side", added_sides, missing_sides)

    src_neg, out_neg = _by_kind(src, "negation"), _by_kind(out_own, "negation")
    violations += [
        Violation(
            "negation",
            e.text,
            f'the negation "{e.text}" is not kept: a finding the original rules out would read as present',
        )
        for e in src_neg[len(out_neg) :]
    ]
    if not src_neg and out_neg:
        violations.append(
            Violation(
                "negation",
                out_neg[0].text,
                f'the negation "{out_neg[0].text}" is not in the original',
                added=True,
            )
        )

    out_hedges = {e.value for e in _by_kind(out, "hedge")}
    violations += [
        Violation(
            "hedge",
            e.text,
            f'the hedging "{e.text}" is not kept: the original is '
            "uncertain and the simplification must say so",
        )
        for e in _unique_values(_by_kind(src, "hedge"))
        if e.value not in out_hedges
    ]
    return violations


def _added(kind: str, added: list[Entity], missing: list[Entity]) -> list[Violation]:
    """Violations for added entities; the i-th added one is taken to stand for the i-th missing one
    (a flipped side, a changed size) so that a fix can replace it."""
    out = []
    for i, e in enumerate(added):
        replaces = missing[i].text if i < len(missing) else ""
        said = f' (the original says "{replaces}")' if replaces else ""
        out.append(
            Violation(
                kind,
                e.text,
                f'the {kind} "{e.text}" is not in the original{said}',
                added=True,
                replaces=replaces,
            )
        )
    return out


def _unique_values(entities: list[Entity]) -> list[Entity]:
    seen: set[str] = set()
    out = []
    for e in entities:
        if e.value not in seen:
            seen.add(e.value)
            out.append(e)
    return out


def _side_covered(value: str, sides: set[str]) -> bool:
    """A source side is kept by the same side, and "bilateral" also by "left and right"."""
    return value in sides or (value == "both" and {"left", "right"} <= sides)


def _side_allowed(value: str, sides: set[str]) -> bool:
    """An output side is no addition when the source has it, or has "both" for a left/right."""
    return (
        value in sides
        or (value in ("left", "right") and "both" in sides)
        or (value == "both" and {"left", "right"} <= sides)
    )
