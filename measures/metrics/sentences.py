"""Offline sentence splitting for radiology text.

NLTK's punkt model is not available here (it is a data download), so this is a
rule-based splitter tuned to radiology reports and their lay rewrites: a sentence
ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets)
when whitespace and a plausible sentence start follow, unless the period belongs
to an abbreviation ("approx.", "e.g.", "Dr.", "vs.", "No. 3") or a list number
("1. The lungs ..."). Decimals ("1.2 cm") never split because no space follows
the period. Line breaks end a sentence by default, since reports put sections and
bullet points on their own lines.
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "split_sentences"]

# Lower-cased, without the final period. A period after one of these never ends a
# sentence, whatever follows ("Dr. Smith", "approx. 2 cm", "e.g. CT").
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        # titles
        "dr", "drs", "mr", "mrs", "ms", "prof", "st", "jr", "sr",
        # Latin and general
        "e.g", "eg", "i.e", "ie", "cf", "vs", "viz", "approx", "appr", "ca", "incl", "resp", "esp",
        "fig", "figs", "ref", "refs", "vol", "pp", "pg", "al",
        # report shorthand that takes a period
        "pt", "pts", "hx", "dx", "tx", "sx", "fx", "yo", "y.o", "ant", "post", "lat", "prox", "max", "min",
    }
)  # fmt: skip

# "No." / "Nos." abbreviate "number" only before a numeral ("No. 3"); "No." alone is a sentence.
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "nr"})

# A candidate boundary: terminal punctuation, closing quotes/brackets, then whitespace.
_BOUNDARY = re.compile(r"""[.!?]+["'”’)\]]*(?=\s)""")
_LAST_TOKEN = re.compile(r"(\S+)$")
_NEXT_TOKEN = re.compile(r"\s+(\S+)")
_LIST_MARKER = re.compile(r"(?:\d{1,2}|[a-zA-Z])")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")


def _is_abbreviation(token: str, next_token: str) -> bool:
    """Whether the period closing ``token`` is an abbreviation's (token is the text before it)."""
    stripped = token.lstrip("(\"'[“‘").lower()
    if stripped in ABBREVIATIONS:
        return True
    if stripped in _NUMBER_ABBREVIATIONS:
        return next_token[:1].isdigit()
    # Dotted initialisms such as "e.g" or "a.m" not listed above.
    return bool(_INITIALISM.fullmatch(stripped)) and len(stripped) <= 5 and next_token[:1].islower()


def _starts_sentence(next_token: str) -> bool:
    """Sentences start with a capital, a digit, a quote/bracket or a bullet; a lower-case
    word after a period usually means the period was an unlisted abbreviation."""
    return not next_token[:1].islower()


def _split_line(line: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(line):
        end = match.end()
        punctuation = match.group(0)
        next_match = _NEXT_TOKEN.match(line, end)
        if next_match is None:
            continue  # only trailing whitespace: the line's end closes the sentence
        next_token = next_match.group(1)
        if punctuation.startswith("."):
            before = line[start : match.start()]
            last = _LAST_TOKEN.search(before)
            token = last.group(1) if last else ""
            if _is_abbreviation(token, next_token):
                continue
            # "1. The lungs are clear." - a list number, not a sentence of its own.
            if before.strip() == token and _LIST_MARKER.fullmatch(token) and len(punctuation) == 1:
                continue
            if not _starts_sentence(next_token):
                continue
        sentence = line[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    tail = line[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def split_sentences(text: str, *, split_on_newlines: bool = True) -> list[str]:
    """Split ``text`` into sentences, each stripped of surrounding whitespace.

    With ``split_on_newlines`` (the default) every line break ends a sentence;
    without it, only blank lines (paragraph breaks) do and single line breaks are
    read as spaces.
    """
    if not text or not text.strip():
        return []
    if split_on_newlines:
        blocks = re.split(r"\s*[\r\n]+\s*", text)
    else:
        blocks = [re.sub(r"\s*[\r\n]\s*", " ", block) for block in re.split(r"(?:\r?\n\s*){2,}", text)]
    sentences: list[str] = []
    for block in blocks:
        if block.strip():
            sentences.extend(_split_line(block.strip()))
    return sentences
