"""radlay's radiology lay glossary and the term finder built on it. Django-free.

The glossary (`data/radiology_glossary.tsv`) was written for radlay: each entry maps a radiology
term to a plain-language rendering that can replace it in a sentence (same part of speech), with a
category (anatomy, finding, modifier, abbreviation, procedure), its variant spellings and the other
lay paraphrases that say the same thing ("darker" for "hypodense"). It is the dictionary of the
seed-001 dictionary baseline, the concept dictionary of seed 002's SCGR draft and what HIT checks.

`find_terms(text)` locates glossary terms: case-insensitive, on word boundaries, plurals and
hyphen/space spellings included ("hyper-enhancing" = "hyperenhancing", "ground glass" =
"ground-glass"), longest match first, never overlapping. Upper-case abbreviations only match in
upper case, so the pronoun "us" is never read as "US" (ultrasound).
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
GLOSSARY_PATH = DATA_DIR / "radiology_glossary.tsv"
CATEGORIES = ("anatomy", "finding", "modifier", "abbreviation", "procedure")

# Prefixes that reports write both joined and hyphenated ("hypoenhancing", "hypo-enhancing").
_HYPHENABLE_PREFIXES = (
    "hyper",
    "hypo",
    "intra",
    "extra",
    "peri",
    "sub",
    "non",
    "retro",
    "post",
    "pre",
    "para",
    "trans",
    "multi",
    "inter",
    "supra",
    "infra",
    "micro",
    "aorto",
    "anti",
    "pan",
)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_WORD_BOUNDARY = r"(?<![A-Za-z0-9])"
_WORD_START = re.compile(_WORD_BOUNDARY + r"[A-Za-z0-9]")
_KEY_CHARS = 3
# A lay rendering's parenthesised gloss: "simple (harmless)", "CT scan (detailed X-ray pictures)".
GLOSS = re.compile(r"\s*\(([^)]*)\)")


def regular_plural(word: str) -> str:
    """English regular plural of one word (irregular and Latin plurals are listed in the glossary)."""
    lower = word.lower()
    if re.search(r"[^aeiou]y$", lower):
        return word[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", lower):
        return word + "es"
    return word + "s"


def pluralize_phrase(phrase: str) -> str:
    """Regular plural of a phrase's last word before any parenthesised gloss."""
    head, paren, tail = phrase.partition(" (")
    words = head.split(" ")
    words[-1] = regular_plural(words[-1])
    return " ".join(words) + (paren + tail if paren else "")


@dataclass(frozen=True)
class GlossaryEntry:
    term: str
    plain: str
    category: str
    variants: tuple[str, ...] = ()
    plural_forms: tuple[str, ...] = ()
    plain_plural: str = ""
    paraphrases: tuple[str, ...] = ()

    @property
    def is_jargon(self) -> bool:
        """A term a layperson needs translated: its plain rendering says something else."""
        return _normalize(self.term) != _normalize(self.plain)

    def rendering(self, *, plural: bool = False) -> str:
        return (self.plain_plural or pluralize_phrase(self.plain)) if plural else self.plain

    def lay_renderings(self) -> tuple[str, ...]:
        """Every accepted lay rendering: the plain one, its plural, and the listed paraphrases."""
        return tuple(dict.fromkeys((self.plain, self.rendering(plural=True), *self.paraphrases)))

    def surface_forms(self) -> list[tuple[str, bool]]:
        """(form, is_plural) for the term, its variants and their plurals."""
        forms = [(self.term, False)] + [(v, False) for v in self.variants]
        return forms + [(p, True) for p in self.plural_forms]

    def jargon_forms(self) -> tuple[str, ...]:
        """The term and those of its other spellings (variants, plurals) that are not themselves a
        lay rendering of it: "pelvis" is listed as a spelling of "pelvic" and is its plain rendering.
        A rendering with a gloss ("hernias (bulges through weak spots)") is the term explained, and
        leaves its spelling ("hernias") jargon."""
        lay = {_normalize(r) for r in self.lay_renderings() if not GLOSS.search(r)}
        forms = [form for form, _ in self.surface_forms()]
        return tuple(dict.fromkeys(f for f in forms if f == self.term or _normalize(f) not in lay))


@dataclass(frozen=True)
class TermMatch:
    term: str
    plain: str
    start: int
    end: int
    category: str
    surface: str = ""
    plural: bool = False
    is_jargon: bool = True


def _normalize(text: str) -> str:
    return re.sub(r"[\s\-]+", " ", text.lower()).strip()


def _form_regex(form: str) -> str:
    """Regex for one surface form: hyphen/space-insensitive, upper-case tokens matched case-sensitively."""
    tokens = [t for t in re.split(r"(\s+|-)", form) if t]
    parts: list[str] = []
    for token in tokens:
        if token.isspace():
            parts.append(r"[\s\-]+")
        elif token == "-":
            parts.append(r"[\s\-]?")
        elif len(token) >= 2 and token.isupper():
            parts.append(f"(?-i:{re.escape(token)})")
        else:
            lower = token.lower()
            prefix = next(
                (p for p in _HYPHENABLE_PREFIXES if lower.startswith(p) and len(lower) > len(p) + 3), None
            )
            if prefix:
                parts.append(re.escape(token[: len(prefix)]) + r"-?" + re.escape(token[len(prefix) :]))
            else:
                parts.append(re.escape(token))
    return "".join(parts) + r"(?![A-Za-z0-9])"


def _key(text: str) -> str:
    """Index key: the first characters of the leading word (forms and text positions agree on it)."""
    found = re.match(r"[A-Za-z0-9]+", text)
    return found.group(0).lower()[:_KEY_CHARS] if found else ""


class Glossary:
    """The loaded glossary with an index for fast longest-match-first term finding."""

    def __init__(self, entries: list[GlossaryEntry]):
        self.entries: tuple[GlossaryEntry, ...] = tuple(entries)
        self._by_term: dict[str, GlossaryEntry] = {}
        self._index: dict[str, list[tuple[re.Pattern[str], GlossaryEntry, bool]]] = defaultdict(list)
        self._jargon_spellings: dict[GlossaryEntry, list[re.Pattern[str]]] = {}
        for entry in self.entries:
            self._by_term.setdefault(entry.term.lower(), entry)
            seen: set[str] = set()
            for form, plural in entry.surface_forms():
                if form in seen:
                    continue
                seen.add(form)
                pattern = re.compile(_form_regex(form), re.IGNORECASE)
                self._index[_key(form)].append((pattern, entry, plural))

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[GlossaryEntry]:
        return iter(self.entries)

    def get(self, term: str) -> GlossaryEntry | None:
        """The entry of a canonical term or of any of its spellings."""
        entry = self._by_term.get(term.lower())
        if entry is not None:
            return entry
        matches = self.find_terms(term)
        if len(matches) == 1 and matches[0].start == 0 and matches[0].end == len(term.strip()):
            return self._by_term[matches[0].term.lower()]
        return None

    def jargon_occurrences(self, entry: GlossaryEntry, text: str) -> list[tuple[int, int]]:
        """Every span of `text` where one of the entry's jargon spellings (`jargon_forms`) stands,
        overlapping ones and those inside a longer term included ("CT" in "CT scan"), unlike
        find_terms."""
        patterns = self._jargon_spellings.get(entry)
        if patterns is None:
            patterns = [
                re.compile(_WORD_BOUNDARY + _form_regex(form), re.IGNORECASE) for form in entry.jargon_forms()
            ]
            self._jargon_spellings[entry] = patterns
        return sorted({found.span() for pattern in patterns for found in pattern.finditer(text)})

    def find_terms(self, text: str) -> list[TermMatch]:
        """Non-overlapping glossary terms in `text`, in text order; longer matches win overlaps."""
        candidates: list[tuple[int, int, GlossaryEntry, bool]] = []
        for start_match in _WORD_START.finditer(text):
            start = start_match.start()
            for pattern, entry, plural in self._index.get(_key(text[start : start + 40]), ()):
                found = pattern.match(text, start)
                if found:
                    candidates.append((start, found.end(), entry, plural))
        # Longest first; among equal lengths the earlier start, then the canonical (singular) form.
        candidates.sort(key=lambda c: (-(c[1] - c[0]), c[0], c[3]))
        taken: list[tuple[int, int, GlossaryEntry, bool]] = []
        for cand in candidates:
            if all(cand[1] <= t[0] or cand[0] >= t[1] for t in taken):
                taken.append(cand)
        taken.sort(key=lambda c: c[0])
        return [
            TermMatch(
                term=e.term,
                plain=e.rendering(plural=pl),
                start=s,
                end=end,
                category=e.category,
                surface=text[s:end],
                plural=pl,
                is_jargon=e.is_jargon,
            )
            for s, end, e, pl in taken
        ]


def _parse_variants(raw: str, term: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    variants: list[str] = []
    plurals: list[str] = []
    auto_plural = False
    for item in (v.strip() for v in raw.split(";")):
        if not item:
            continue
        if item == "+pl":
            auto_plural = True
        elif item.startswith("pl:"):
            plurals.append(item[3:].strip())
        else:
            variants.append(item)
    if auto_plural:
        plurals.extend(pluralize_phrase(form) for form in [term, *variants])
    return tuple(dict.fromkeys(variants)), tuple(dict.fromkeys(plurals))


def read_glossary(path: Path) -> Glossary:
    """Parse a glossary TSV (see the header of data/radiology_glossary.tsv)."""
    entries: list[GlossaryEntry] = []
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(
            (line for line in handle if not line.startswith("#")), delimiter="\t", quoting=csv.QUOTE_NONE
        )
        for line_no, row in enumerate(rows, start=2):
            term, plain, category = (row.get(k, "") or "" for k in ("term", "plain", "category"))
            term, plain, category = term.strip(), plain.strip(), category.strip()
            if not term or not plain:
                raise ValueError(f"{path.name}: row {line_no} lacks a term or a plain rendering")
            if category not in CATEGORIES:
                raise ValueError(f"{path.name}: row {line_no}: unknown category {category!r}")
            variants, plurals = _parse_variants(row.get("variants") or "", term)
            entries.append(
                GlossaryEntry(
                    term=term,
                    plain=plain,
                    category=category,
                    variants=variants,
                    plural_forms=plurals,
                    plain_plural=(row.get("plain_plural") or "").strip(),
                    paraphrases=tuple(
                        p.strip() for p in (row.get("paraphrases") or "").split(";") if p.strip()
                    ),
                )
            )
    return Glossary(entries)


@lru_cache(maxsize=4)
def load_glossary(path: str | None = None) -> Glossary:
    """The glossary (radlay's own by default), parsed once per path."""
    return read_glossary(Path(path) if path else GLOSSARY_PATH)


def find_terms(text: str) -> list[TermMatch]:
    """Glossary terms in `text` with radlay's default glossary (see Glossary.find_terms)."""
    return load_glossary().find_terms(text)


WORD_PARTS_PATH = DATA_DIR / "word_parts.tsv"
_CONNECTING_VOWELS = "oia"


@lru_cache(maxsize=1)
def _word_parts() -> dict[str, list[tuple[str, str]]]:
    parts: dict[str, list[tuple[str, str]]] = {"prefix": [], "root": [], "suffix": []}
    with WORD_PARTS_PATH.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        for row in rows:
            parts[row["kind"]].append((row["part"], row["meaning"]))
    for kind in parts:
        parts[kind].sort(key=lambda p: len(p[0]), reverse=True)
    return parts


def _segment_roots(middle: str, roots: list[tuple[str, str]]) -> list[str] | None:
    """Meanings of `middle` read as root (+ connecting vowel) + root…, or None if it does not split."""
    if not middle or middle in _CONNECTING_VOWELS:
        return []
    for part, meaning in roots:
        if middle.startswith(part):
            rest = middle[len(part) :]
            for skip in ("", *_CONNECTING_VOWELS):
                if rest.startswith(skip):
                    tail = _segment_roots(rest[len(skip) :], roots) if rest[len(skip) :] else []
                    if tail is not None:
                        return [meaning, *tail]
    return None


def explain_by_parts(word: str) -> str | None:
    """Meaning of a medical word from its Greek/Latin parts ("splenomegaly" -> "spleen + enlargement"),
    or None when it does not split fully into known parts."""
    w = word.lower()
    parts = _word_parts()
    best: list[str] | None = None
    for prefix, p_meaning in [("", ""), *parts["prefix"]]:
        if not w.startswith(prefix):
            continue
        for suffix, s_meaning in [("", ""), *parts["suffix"]]:
            if not w.endswith(suffix) or len(w) - len(prefix) - len(suffix) < 2:
                continue
            middle = w[len(prefix) : len(w) - len(suffix)] if suffix else w[len(prefix) :]
            roots = _segment_roots(middle, parts["root"])
            if not roots:
                continue
            meanings = ([p_meaning] if p_meaning else []) + roots + ([s_meaning] if s_meaning else [])
            if best is None or len(meanings) < len(best):
                best = meanings
    return " + ".join(best) if best else None
