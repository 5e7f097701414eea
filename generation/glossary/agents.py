"""The four agents of the self-correction loop (seed 003, Figure 2), played without a model. Django-free.

- Generator, initial: the seed-001 dictionary baseline made readable — every glossary term is
  replaced by its plain rendering, then sentence templates fix what word-for-word substitution
  breaks ("liver lesions" -> "abnormal areas in the liver", prepositional renderings such as
  "bilateral" -> "on both sides" move after their noun, a verbless fragment becomes "The scan shows
  …", articles agree, "cm" becomes "centimeters"). Measurements, sides, negations and hedges are
  kept as written. The CoT variant lists the terms with their explanations, then "Simplification: …".
- Radiologist: every concept and entity of the original must survive (lexicon.facts);
  each missing or added one is reported on its own "- Missing …"/"- Added …" line.
- Patient: every word must be known to laypeople (lexicon.common_words.is_known_to_laypeople: a
  common word by seed 001's top-3000 rule or a curated lay word), or be explained in parentheses;
  each other word is reported on an "- Unclear word: …" line. (The glossary's renderings are
  written in those words: tests/lexicon/test_glossary.py.)
- Processor: "No." when a feedback flags nothing, else "Yes." followed by the flagged points.
- Generator, refine: applies the flagged fixes — re-inserts a missing concept (in plain words) or
  entity next to its neighbours from the original, puts back a flipped side or changed size, and
  replaces an unclear word by its glossary rendering or adds a parenthesised explanation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lexicon.common_words import is_known_to_laypeople
from lexicon.facts import Violation, check_facts, extract_entities
from lexicon.glossary import Glossary, TermMatch, explain_by_parts, load_glossary

# ---------------------------------------------------------------------------------------------
# Generator: substitution + sentence templates
# ---------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s+|\d+(?:\.\d+)?|[A-Za-z][\w'’]*(?:-[A-Za-z][\w'’]*)*|[^\w\s]")
# Renderings that start like this follow their noun in English ("kidneys on both sides").
_POSTPOSITIVE_STARTS = (
    "in ",
    "on ",
    "at ",
    "inside ",
    "outside ",
    "under ",
    "near ",
    "around ",
    "with ",
    "without ",
    "just ",
    "smaller than ",
    "since ",
    "after surgery",
    "only partly",
    "throughout",
    "causing ",
)
# One-word organ renderings that read better after a multi-word finding ("abnormal areas in the liver").
_ORGANS = frozenset(
    """liver kidney lung pancreas spleen bone brain heart womb stomach intestine gallbladder bladder
chest belly spine pelvis windpipe thyroid rib""".split()
)
_PAIRED_ORGANS = frozenset({"kidney", "lung", "bone", "rib"})
# Words that end the noun phrase a postpositive rendering moves behind.
_PHRASE_BOUNDARY = frozenset(
    """and or with without of in within at on to from by for is are was were which that
measuring measures measure seen noted likely probably possibly may might could containing reflecting extending
but as along throughout near adjacent due the a an there no not than along into""".split()
)
_FINITE_VERBS = frozenset(
    """is are was were has have had shows show showed demonstrates demonstrate measures
measure terminates ends end appears appear appeared contains contain remains remain extends extend seems lies
sits does do did can may might could will would should must reflects represents suggests""".split()
)
_NOUN_CATEGORIES = ("finding", "anatomy", "procedure", "abbreviation")


@dataclass
class _Tok:
    text: str
    kind: str  # "space" | "word" | "punct" | "term" | "moved"
    match: TermMatch | None = None


def _category(tok: _Tok) -> str | None:
    """The glossary category of a token's term; None for a token that matched no term."""
    return tok.match.category if tok.match else None


def _tokens(sentence: str, matches: list[TermMatch]) -> list[_Tok]:
    toks: list[_Tok] = []
    cursor = 0

    def raw(chunk: str) -> None:
        for piece in _TOKEN_RE.findall(chunk):
            kind = "space" if piece.isspace() else ("word" if piece[0].isalnum() else "punct")
            toks.append(_Tok(piece, kind))

    for m in matches:
        raw(sentence[cursor : m.start])
        toks.append(_Tok(m.plain, "term", m))
        cursor = m.end
    raw(sentence[cursor:])
    return toks


def _next(toks: list[_Tok], i: int) -> int:
    """Index of the first non-space token after i (len(toks) if none)."""
    j = i + 1
    while j < len(toks) and toks[j].kind == "space":
        j += 1
    return j


def _is_postpositive(tok: _Tok) -> bool:
    """A rendering that must follow its noun; those ending in a preposition ("with no sign of") take an
    object after them and stay where they are."""
    text = tok.text.lower()
    return (
        tok.kind == "term"
        and tok.match is not None
        and tok.match.category in ("modifier", "anatomy", "finding")
        and text.startswith(_POSTPOSITIVE_STARTS)
        and not re.search(r"\b(?:of|for|to|with|than|from)$", text)
    )


def _phrase_end(toks: list[_Tok], start: int) -> int:
    """Index just past the noun phrase that starts at `start` (== start when there is none)."""
    j, end, seen_noun = start, start, False
    while j < len(toks):
        tok = toks[j]
        if tok.kind == "space":
            j += 1
            continue
        if tok.kind in ("term", "moved"):
            category = tok.match.category if tok.match else "finding"
            if seen_noun and category == "modifier":
                break
            if _is_postpositive(tok):
                break
            seen_noun = seen_noun or category in _NOUN_CATEGORIES
        elif tok.kind == "word":
            if tok.text[0].isdigit():
                # A measurement inside the phrase ("a 4 mm stone") belongs to it; a bare number ends it.
                k = _next(toks, j)
                if k < len(toks) and toks[k].text.lower() in ("mm", "cm") and not seen_noun:
                    end = j = k + 1
                    continue
                break
            if tok.text.lower() in _PHRASE_BOUNDARY:
                break
            seen_noun = True  # an unknown word inside a phrase is usually a noun ("hip", "rib")
        else:
            break
        end = j + 1
        j += 1
    return end


def _reorder_anatomy_adjuncts(toks: list[_Tok]) -> list[_Tok]:
    """ "liver lesions" -> "abnormal areas in the liver": a one-word organ before a multi-word finding."""
    out = list(toks)
    i = 0
    while i < len(out):
        a = out[i]
        j = _next(out, i)
        if (
            a.kind == "term"
            and a.match
            and a.match.category == "anatomy"
            and a.text.lower() in _ORGANS
            and j < len(out)
            and j == i + 2
            and out[j].kind == "term"
            and _category(out[j]) == "finding"
            and " " in out[j].text
            and "(" not in out[j].text
        ):
            side = ""
            start = i
            if (
                i >= 2
                and out[i - 1].kind == "space"
                and out[i - 2].kind == "word"
                and out[i - 2].text.lower() in ("left", "right")
            ):
                side, start = out[i - 2].text.lower() + " ", i - 2
            organ = a.text
            finding = out[j].match
            assert finding is not None  # its category was read above
            if not side and finding.plural and organ.lower() in _PAIRED_ORGANS:
                organ = organ + "s"
            moved = _Tok(f"{out[j].text} in the {side}{organ}", "moved", out[j].match)
            out[start : j + 1] = [moved]
            i = start + 1
            continue
        i += 1
    return out


def _move_postpositives(toks: list[_Tok]) -> list[_Tok]:
    """Prepositional renderings written before a noun move after its phrase; "A or B <noun>" moves whole."""
    out = list(toks)
    i = 0
    while i < len(out):
        tok = out[i]
        if not _is_postpositive(tok):
            i += 1
            continue
        group_end, group_text = i + 1, tok.text
        j = _next(out, i)
        if j < len(out) and out[j].kind == "word" and out[j].text.lower() in ("or", "and"):
            k = _next(out, j)
            if k < len(out) and _is_postpositive(out[k]):
                group_end, group_text = k + 1, f"{tok.text} {out[j].text.lower()} {out[k].text}"
        start = _next(out, group_end - 1)
        end = _phrase_end(out, start)
        if end == start:
            i += 1
            continue
        phrase = out[start:end]
        moved = _Tok(group_text, "moved", tok.match)
        out[i:end] = phrase + [_Tok(" ", "space"), moved]
        i += len(phrase) + 2
    return out


def _aspect_phrases(toks: list[_Tok]) -> list[_Tok]:
    """ "defect posterior aspect" -> "defect in the back part": reports drop the preposition."""
    out = list(toks)
    for i, tok in enumerate(out):
        if tok.kind == "term" and tok.match and tok.match.term == "aspect":
            k = i - 1
            while k >= 0 and (
                out[k].kind == "space" or (out[k].kind == "term" and _category(out[k]) == "modifier")
            ):
                k -= 1
            first_mod = k + 1
            while first_mod < i and out[first_mod].kind == "space":
                first_mod += 1
            if k >= 0 and out[k].kind in ("term", "moved") and first_mod < i:
                out[first_mod] = _Tok(
                    "in the " + out[first_mod].text, out[first_mod].kind, out[first_mod].match
                )
    return out


def _fix_articles(text: str) -> str:
    def choose(m: re.Match[str]) -> str:
        article, word = m.group(1), m.group(2)
        an = _wants_an(word)
        new = "an" if an else "a"
        if article[0].isupper():
            new = new.capitalize()
        return f"{new} {word}"

    return re.sub(r"\b([Aa]n?)\s+([A-Za-z0-9][\w-]*)", choose, text)


def _wants_an(word: str) -> bool:
    if word[0].isdigit():
        return bool(re.match(r"(8|11|18)(\D|$)", word))
    if len(word) >= 2 and word.isupper():
        return word[0] in "AEFHILMNORSX"
    lower = word.lower()
    if lower.startswith(("uni", "use", "usu", "eu", "one", "once", "ure")):
        return False
    if lower.startswith(("hour", "honest", "honor")):
        return True
    return lower[0] in "aeiou"


def _expand_units(text: str) -> str:
    text = re.sub(r"(\d)\s*[x×]\s*(?=\d)", r"\1 by ", text)

    def unit(m: re.Match[str]) -> str:
        value, abbrev = m.group(1), m.group(2).lower()
        word = {"cm": "centimeter", "mm": "millimeter"}[abbrev]
        return f"{value} {word}" + ("" if value == "1" else "s")

    return re.sub(r"\b(\d+(?:\.\d+)?)\s*(cm|mm)\b", unit, text, flags=re.IGNORECASE)


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def _has_main_verb(text: str) -> bool:
    words = re.findall(r"[A-Za-z']+", text.lower())
    for i, w in enumerate(words):
        if w in _FINITE_VERBS and not any(
            x in ("which", "that", "who", "where") for x in words[max(0, i - 3) : i]
        ):
            return True
    return False


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:)])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"([,;])\1+", r"\1", text)
    text = re.sub(r",\s*\.", ".", text)
    # "the same on both sides on both sides": two renderings that say the same thing.
    text = re.sub(r"\b(\w+(?:[ -]\w+){1,4}) \1\b", r"\1", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?!(?:had|that)\b)([A-Za-z]{3,}) \1\b", r"\1", text, flags=re.IGNORECASE)
    # A measurement before its noun is singular: "a 1.4 centimeter sac".
    text = re.sub(r"\b([Aa]n?) (\d+(?:\.\d+)?) (centimeter|millimeter)s\b", r"\1 \2 \3", text)
    text = _fix_articles(text)
    if text and text[0].isalpha():
        text = text[0].upper() + text[1:]
    if text and text[-1] not in ".!?":
        text += "."
    return text


def _split_sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip()) if s.strip()]


def substitute(text: str, *, glossary: Glossary | None = None) -> str:
    """Word-for-word glossary substitution (seed 002's noisy lay draft; seed 001's dictionary baseline)."""
    glossary = glossary or load_glossary()
    out, cursor = [], 0
    for m in glossary.find_terms(text):
        out.append(text[cursor : m.start])
        out.append(m.plain)
        cursor = m.end
    out.append(text[cursor:])
    return "".join(out)


def _simplify_one(sentence: str, glossary: Glossary) -> str:
    body = sentence.strip().rstrip(".")
    toks = _tokens(body, glossary.find_terms(body))
    toks = _reorder_anatomy_adjuncts(toks)
    toks = _move_postpositives(toks)
    toks = _aspect_phrases(toks)
    text = _expand_units("".join(t.text for t in toks))
    if not _has_main_verb(text):
        text = re.sub(
            r"(?<!\bbe)\s+(?:seen|noted|identified|present)\b(?=\s+(?:with|in|within|at|on)\b|\s*[,.]|$)",
            "",
            text,
        )
        stripped = re.sub(r"^few\b", "a few", text.strip(), flags=re.IGNORECASE)
        if stripped.lower().startswith("after "):
            text = "This is " + _lower_first(stripped)
        else:
            text = "The scan shows " + _lower_first(stripped)
    return _tidy(text)


def simplify(sentence: str, *, glossary: Glossary | None = None) -> str:
    """Generator, plain prompt: the glossary simplification of one radiology sentence (or a few)."""
    glossary = glossary or load_glossary()
    return " ".join(_simplify_one(s, glossary) for s in _split_sentences(sentence))


def explained_terms(sentence: str, *, glossary: Glossary | None = None) -> list[TermMatch]:
    """The sentence's terms a layperson needs explained (jargon with an uncommon word or an abbreviation)."""
    glossary = glossary or load_glossary()
    seen: set[str] = set()
    out = []
    for m in glossary.find_terms(sentence):
        entry = glossary.get(m.term)
        if entry is None or not entry.is_jargon or m.term in seen:
            continue
        words = re.findall(r"[A-Za-z]+", m.surface)
        if m.category == "abbreviation" or not all(is_known_to_laypeople(w) for w in words):
            seen.add(m.term)
            out.append(m)
    return out


def simplify_cot(sentence: str, *, glossary: Glossary | None = None) -> str:
    """Generator, CoT prompt: the terms with explanations, then "Simplification: …"."""
    glossary = glossary or load_glossary()
    lines = ["Complicated medical terms:"]
    for i, m in enumerate(explained_terms(sentence, glossary=glossary), start=1):
        entry = glossary.get(m.term)
        plain = entry.plain if entry else m.plain
        lines.append(f"{i}. {m.surface[0].upper() + m.surface[1:]}: in everyday words, {plain}.")
    if len(lines) == 1:
        lines.append("None: every word of the sentence is everyday English.")
    lines += ["", f"Simplification: {simplify(sentence, glossary=glossary)}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Radiologist
# ---------------------------------------------------------------------------------------------

RADIOLOGIST_OK = (
    "The simplification is correct and complete: it keeps every finding, body part, measurement, "
    "side, negation and hedge of the original sentence and adds nothing that is not in it. "
    "No changes are needed."
)


def radiologist_feedback(sentence: str, simplification: str, *, glossary: Glossary | None = None) -> str:
    """Radiologist agent: "- Missing …"/"- Added …" lines, one per lost or invented fact."""
    violations = check_facts(sentence, simplification, glossary=glossary)
    if not violations:
        return RADIOLOGIST_OK
    lines = ["The simplification does not keep all the information of the original sentence:"]
    for v in violations:
        lines.append(f'- {v.label}: "{v.expected}" — {v.detail}.')
    lines.append("Please correct these points and keep everything else.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Patient
# ---------------------------------------------------------------------------------------------

PATIENT_OK = "I understand all the words and concepts in this simplification; it is clear to me."
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z][A-Za-z'’]*)*")
_ROMAN_RE = re.compile(r"[IVX]+")


@dataclass(frozen=True)
class UnclearWord:
    word: str
    start: int
    end: int
    suggestion: str = ""  # the glossary rendering, or "" when the glossary has none


def _explained_spans(text: str) -> list[tuple[int, int]]:
    """Parenthesised glosses and the (up to three) words they explain."""
    spans = []
    for m in re.finditer(r"\(([^()]*)\)", text):
        spans.append((m.start(), m.end()))
        before = re.search(r"((?:[A-Za-z][\w'’-]*[\s-]+){1,3})$", text[: m.start()])
        if before:
            spans.append((before.start(), m.start()))
    return spans


def unclear_words(text: str, *, glossary: Glossary | None = None) -> list[UnclearWord]:
    """Words of `text` a layperson would not know: not common, not a curated lay word, not explained."""
    glossary = glossary or load_glossary()
    explained = _explained_spans(text)
    matches = glossary.find_terms(text)
    out: list[UnclearWord] = []
    seen: set[str] = set()
    for m in _WORD_RE.finditer(text):
        word = m.group(0)
        if any(s <= m.start() and m.end() <= e for s, e in explained) or word.lower() in seen:
            continue
        if _ROMAN_RE.fullmatch(word) or (len(word) == 1):
            continue
        if _is_known(word):
            continue
        seen.add(word.lower())
        cover = next((t for t in matches if t.start <= m.start() and m.end() <= t.end), None)
        suggestion = (
            cover.plain
            if cover and (cover_entry := glossary.get(cover.term)) and cover_entry.is_jargon
            else ""
        )
        out.append(UnclearWord(word, m.start(), m.end(), suggestion))
    return out


def _is_known(word: str) -> bool:
    if len(word) >= 2 and word.isupper():
        return False  # an abbreviation needs spelling out, whatever its lower-case twin means
    if is_known_to_laypeople(word):
        return True
    parts = [p for p in word.split("-") if len(p) > 1]
    return bool(parts) and "-" in word and all(is_known_to_laypeople(p) for p in parts)


def patient_feedback(simplification: str, *, glossary: Glossary | None = None) -> str:
    """Patient agent: one "- Unclear word: …" line per word a layperson would not understand."""
    words = unclear_words(simplification, glossary=glossary)
    if not words:
        return PATIENT_OK
    lines = ["Some words are hard for me to understand:"]
    for w in words:
        lines.append(f'- Unclear word: "{w.word}" — I do not know what it means; please use everyday words.')
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Processor
# ---------------------------------------------------------------------------------------------

_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$", re.MULTILINE)
_STRUCTURED_RE = re.compile(
    r"^(?:Missing|Added) (?:concept|size|number|quantity|side|negation|hedging):|"
    r"^Unclear word:"
)
_CRITICAL_RE = re.compile(
    r"\b(missing|omit\w*|lacks?|lacking|lost|drop\w*|should|consider|suggest\w*|recommend\w*|unclear|"
    r"confus\w*|(?:don't|do not|didn't|did not|can't|cannot) (?:understand|know)|not sure|difficult|hard to|"
    r"complicated|replace|add|include|clarify|explain|incorrect|inaccurate|wrong|error|mislead\w*|"
    r"needs?|improve\w*|jargon|too technical|not (?:mention|include)\w*)\b",
    re.IGNORECASE,
)
_NO_ISSUE_RE = re.compile(
    r"\b(no (?:changes?|improvements?|issues?|problems?|suggestions?|critical)|nothing (?:is )?(?:missing|to "
    r"(?:add|change|improve))|(?:does not|doesn't) need|no need|(?:don't|do not) need)\b",
    re.IGNORECASE,
)


def feedback_points(feedback: str) -> list[str]:
    """The critical comments or suggestions in a feedback text (structured lines first, then sentences
    with a critical cue and no "no changes needed" phrasing — the latter for model-written feedback)."""
    bullets = _BULLET_RE.findall(feedback)
    structured = [b for b in bullets if _STRUCTURED_RE.match(b)]
    if structured:
        return structured
    candidates = bullets or [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", feedback) if s.strip()]
    return [c for c in candidates if _CRITICAL_RE.search(c) and not _NO_ISSUE_RE.search(c)]


def process_feedback(feedback: str, *, source_agent: str | None = None) -> str:
    """Processor agent: "No." when the feedback flags nothing, else "Yes." and the points, one a line."""
    points = feedback_points(feedback)
    if not points:
        return "No."
    who = {"radiologist": "The radiologist", "patient": "The patient"}.get(source_agent or "", "The feedback")
    return "\n".join([f"Yes. {who} asks for these changes:", *[f"- {p}" for p in points]])


# ---------------------------------------------------------------------------------------------
# Generator: refine
# ---------------------------------------------------------------------------------------------

_ITEM_RE = re.compile(r'(Missing|Added) (concept|size|number|quantity|side|negation|hedging): "([^"]+)"')
_UNCLEAR_RE = re.compile(r'Unclear word: "([^"]+)"')
_QUANTITY_LAY = {"few": "a few", "couple": "a couple of"}


@dataclass
class _Unit:
    start: int
    end: int
    forms: list[str]
    kind: str  # "concept" | entity kind | "word"
    key: str  # term, entity text, or word


def _units(sentence: str, glossary: Glossary) -> list[_Unit]:
    units: list[_Unit] = []
    for m in glossary.find_terms(sentence):
        entry = glossary.get(m.term)
        forms = [m.plain, re.sub(r"\s*\([^)]*\)", "", m.plain), m.surface, m.term]
        if entry:
            forms += [entry.plain, entry.rendering(plural=True)]
        units.append(_Unit(m.start, m.end, list(dict.fromkeys(f for f in forms if f)), "concept", m.term))
    taken = [(u.start, u.end) for u in units]
    for e in extract_entities(sentence):
        forms = [e.text, _expand_units(e.text)]
        if e.kind == "side" and e.value == "both":
            forms += ["both sides", "both"]
        units.append(_Unit(e.start, e.end, list(dict.fromkeys(forms)), e.kind, e.text))
    taken += [(u.start, u.end) for u in units if u.kind != "concept"]
    for word in re.finditer(r"[A-Za-z0-9]+", sentence):
        if not any(s <= word.start() < e for s, e in taken):
            units.append(_Unit(word.start(), word.end(), [word.group(0)], "word", word.group(0)))
    units.sort(key=lambda u: (u.start, -u.end))
    return units


def _find_form(text: str, forms: list[str], cursor: int) -> tuple[int, int] | None:
    best = None
    for form in forms:
        m = re.compile(r"(?<![\w])" + re.escape(form) + r"(?![\w])", re.IGNORECASE).search(text, cursor)
        if m and (best is None or m.start() < best[0] or (m.start() == best[0] and m.end() > best[1])):
            best = (m.start(), m.end())
    return best


def _align(units: list[_Unit], text: str) -> dict[int, tuple[int, int]]:
    """Monotonic alignment of the original's units onto the simplification: unit index -> span."""
    aligned: dict[int, tuple[int, int]] = {}
    cursor = 0
    for idx, unit in enumerate(units):
        span = _find_form(text, unit.forms, cursor)
        if span:
            aligned[idx] = span
            cursor = span[1]
    return aligned


def _insert(text: str, sentence: str, units: list[_Unit], target: _Unit, phrase: str) -> str:
    """Insert `phrase` where `target` sat in the original, between its aligned neighbours."""
    aligned = _align([u for u in units if u is not target], text)
    others = [u for u in units if u is not target]
    before = [
        (units_idx, span) for units_idx, span in aligned.items() if others[units_idx].end <= target.start
    ]
    after = [
        (units_idx, span) for units_idx, span in aligned.items() if others[units_idx].start >= target.end
    ]
    postpositive = phrase.lower().startswith(_POSTPOSITIVE_STARTS)
    if postpositive and after:
        _, span = min(after, key=lambda a: others[a[0]].start)
        return text[: span[1]] + " " + phrase + text[span[1] :]
    if before:
        idx, span = max(before, key=lambda a: others[a[0]].end)
        pos = span[1]
        # Keep the original's punctuation between the neighbour and the inserted fact ("sure, probably").
        gap = sentence[others[idx].end : target.start]
        rest = text[pos:]
        punct = re.match(r"\s*[,;:]", rest)
        if punct and re.search(r"[,;:]", gap):
            pos += punct.end()
        return text[:pos] + " " + phrase + " " + text[pos:].lstrip()
    if after:
        _, span = min(after, key=lambda a: others[a[0]].start)
        return text[: span[0]] + phrase + " " + text[span[0] :]
    body = text.rstrip().rstrip(".")
    return f"{body}, {phrase}."


def _lay_phrase(unit: _Unit) -> str:
    if unit.kind == "concept":
        return unit.forms[0]
    if unit.kind == "size":
        return _expand_units(unit.key)
    if unit.kind == "side" and unit.key.lower().startswith("bilateral"):
        return "on both sides"
    if unit.kind == "quantity":
        return _QUANTITY_LAY.get(unit.key.lower(), unit.key.lower())
    return unit.key.lower() if not unit.key.isupper() else unit.key


def _replace_first(text: str, old: str, new: str) -> str:
    pattern = re.compile(r"(?<![\w])" + re.escape(old) + r"(?![\w])", re.IGNORECASE)
    found = pattern.search(text)
    if not found:
        for variant in (_expand_units(old),):
            found = re.compile(r"(?<![\w])" + re.escape(variant) + r"(?![\w])", re.IGNORECASE).search(text)
            if found:
                break
    if not found:
        return text
    return text[: found.start()] + new + text[found.end() :]


def _remove_first(text: str, kind: str, old: str) -> str:
    """Drop an added fact that stands for nothing in the original ("without" becomes "with")."""
    if kind == "negation":
        replacement = {"without": "with"}.get(old.lower(), "")
        return _replace_first(text, old, replacement)
    return _replace_first(text, old, "")


# With this many facts missing the draft is a paraphrase the original's words cannot be threaded
# back into; the Generator rewrites from the original instead (what a model asked to fix it would do).
REWRITE_THRESHOLD = 3


def _partial_span(
    text: str, unit: _Unit, entry_words: list[str], taken: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """Where the draft already names part of a missing concept ("the gallbladder" for "gallbladder
    fossa"): that word is replaced by the full rendering rather than repeated next to it."""
    for word in entry_words:
        for m in re.finditer(r"(?<![\w])" + re.escape(word) + r"s?(?![\w])", text, re.IGNORECASE):
            if not any(s <= m.start() < e for s, e in taken):
                return m.start(), m.end()
    return None


def _concept_words(unit: _Unit) -> list[str]:
    words: list[str] = []
    for form in unit.forms:
        for w in re.findall(r"[A-Za-z]+", re.sub(r"\([^)]*\)", "", form)):
            if len(w) >= 4 and w.lower() not in words and w.lower() not in _PHRASE_BOUNDARY:
                words.append(w.lower())
    return words


def _missing_count(sentence: str, text: str, glossary: Glossary) -> int:
    return len(check_facts(sentence, text, glossary=glossary))


def apply_fact_fixes(
    sentence: str, text: str, violations: list[Violation], *, glossary: Glossary | None = None
) -> str:
    """Fix the radiologist's points: swap back flipped/changed facts, re-insert missing ones (in the plain
    words of the glossary, next to their neighbours from the original). A draft that lost too much, or
    that threading cannot repair, is rewritten from the original; the better-checked text is kept."""
    glossary = glossary or load_glossary()
    rewrite = simplify(sentence, glossary=glossary)
    if sum(not v.added for v in violations) >= REWRITE_THRESHOLD:
        return rewrite
    units = _units(sentence, glossary)
    resolved: set[str] = set()
    for v in [v for v in violations if v.added]:
        if v.replaces:
            source_unit = next((u for u in units if u.key == v.replaces and u.kind != "concept"), None)
            new = _lay_phrase(source_unit) if source_unit else v.replaces
            text = _replace_first(text, v.expected, new)
            resolved.add(v.replaces)
        else:
            text = _remove_first(text, v.kind, v.expected)
    # Re-read: a swap may already have restored a concept ("right side of the liver" -> "left side…").
    remaining = [v for v in check_facts(sentence, text, glossary=glossary) if not v.added]
    for v in remaining:
        if v.expected in resolved:
            continue
        kind = "concept" if v.kind == "concept" else v.kind
        target = next((u for u in units if u.kind == kind and u.key == v.expected), None)
        if target is None:
            continue
        phrase = _lay_phrase(target)
        if kind == "concept":
            others = [u for u in units if u is not target]
            taken = [span for i, span in _align(others, text).items() if others[i].kind == "concept"]
            span = _partial_span(text, target, _concept_words(target), taken)
            if span:
                text = text[: span[0]] + phrase + text[span[1] :]
                continue
        text = _insert(text, sentence, units, target, phrase)
    text = _tidy(text)
    if _missing_count(sentence, rewrite, glossary) <= _missing_count(
        sentence, text, glossary
    ) and check_facts(sentence, text, glossary=glossary):
        return rewrite
    return text


def _explanation(word: str) -> str:
    parts = explain_by_parts(word)
    if parts:
        return f"a medical word: {parts}"
    if len(word) >= 2 and word.isupper():
        return "a medical abbreviation; ask the doctor what it stands for"
    return "a medical term; ask the doctor what it means"


def apply_word_fixes(text: str, words: list[str], *, glossary: Glossary | None = None) -> str:
    """Fix the patient's points: glossary rendering where there is one, else a parenthesised explanation."""
    glossary = glossary or load_glossary()
    for word in words:
        if word.lower() in ("cm", "mm"):
            text = _expand_units(text)
            continue
        pattern = re.compile(r"(?<![\w])" + re.escape(word) + r"(?![\w])", re.IGNORECASE)
        found = pattern.search(text)
        if not found or any(s <= found.start() < e for s, e in _explained_spans(text)):
            continue
        cover = next(
            (m for m in glossary.find_terms(text) if m.start <= found.start() and found.end() <= m.end), None
        )
        entry = glossary.get(cover.term) if cover else None
        if cover and entry and entry.is_jargon:
            text = text[: cover.start] + cover.plain + text[cover.end :]
        else:
            text = text[: found.end()] + f" ({_explanation(word)})" + text[found.end() :]
    return _tidy(text)


def _strip_cot(text: str) -> str:
    found = re.search(r"Simplification:\s*(.+)$", text, re.DOTALL | re.IGNORECASE)
    return found.group(1).strip() if found else text.strip()


def _says_no(feedback: str) -> bool:
    return bool(re.match(r"\s*no\b", feedback, re.IGNORECASE)) and not _ITEM_RE.search(feedback)


def refine(
    sentence: str,
    previous: str,
    *,
    radiologist_feedback: str = "",
    patient_feedback: str = "",
    glossary: Glossary | None = None,
) -> str:
    """Generator, refine prompt: apply the (processed) feedback's points to the previous simplification.

    Points are read from the "- Missing …"/"- Added …"/"- Unclear word: …" lines the deterministic
    agents write. Feedback that flags something without such lines (a model's prose) is answered by
    running the glossary's own radiologist and patient checks instead.
    """
    glossary = glossary or load_glossary()
    text = _strip_cot(previous)
    if radiologist_feedback.strip() and not _says_no(radiologist_feedback):
        items = _ITEM_RE.findall(radiologist_feedback)
        violations = check_facts(sentence, text, glossary=glossary)
        if items:
            wanted = {(a == "Added", k if k != "hedging" else "hedge", x) for a, k, x in items}
            violations = [v for v in violations if (v.added, v.kind, v.expected) in wanted] or violations
        if violations:
            text = apply_fact_fixes(sentence, text, violations, glossary=glossary)
    if patient_feedback.strip() and not _says_no(patient_feedback):
        words = _UNCLEAR_RE.findall(patient_feedback) or [
            w.word for w in unclear_words(text, glossary=glossary)
        ]
        text = apply_word_fixes(text, words, glossary=glossary)
    return _tidy(text)


def scgr_answer(original: str, *, glossary: Glossary | None = None) -> str:
    """The glossary backend as SCGR's refiner: its templated simplification of the original (the draft is
    the same substitution without templates), with its own factuality and wording fixes applied."""
    glossary = glossary or load_glossary()
    text = simplify(original, glossary=glossary)
    violations = check_facts(original, text, glossary=glossary)
    if violations:
        text = apply_fact_fixes(original, text, violations, glossary=glossary)
    words = [w.word for w in unclear_words(text, glossary=glossary)]
    return apply_word_fixes(text, words, glossary=glossary) if words else text
