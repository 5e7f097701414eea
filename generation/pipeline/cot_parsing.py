"""Extract the final simplification from a chain-of-thought answer. Django-free.

The CoT prompt (seed 003, A.3.1) asks for a list of medical terms with lay explanations and,
"finally", a simplification. Models answer in a handful of shapes:

1. a heading naming the simplification — "Simplification:", "Simplified sentence:",
   "**Final simplification:**", "### Simplified version", "Here's a simplification of the original
   sentence that laypeople can understand:", "In simpler terms:" — followed by the text on the same
   line or in the lines below it;
2. a numbered or bulleted list of terms, then a closing paragraph that is the simplification.

The last heading wins (a model sometimes restates it). The extracted text loses markdown
emphasis, surrounding quotes and a lead-in such as "In simpler terms," (those are the chat's
framing, not the simplification a participant should read). When no shape is recognised the whole
answer comes back with ok=False and a reason, and the caller flags the job for a human to check.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class CotParse(NamedTuple):
    text: str
    ok: bool
    reason: str


_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•+])\s+")
_MD_HEADING = re.compile(r"^\s*#{1,6}\s*")
_EMPHASIS = re.compile(r"(\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)|(?<!\w)_(?!\s)|(?<!\s)_(?!\w))")
# A heading that *is* a simplification label ("Final simplified sentence", "Simplification",
# "Lay summary"); checked against the label text before the colon.
_LABEL = re.compile(
    r"^(?:(?:the|my|a|your)\s+)?"
    r"(?:(?:final|overall|improved|revised|new|updated|concise|refined|more\s+concise|shorter)\s+)*"
    r"(?:simplification|simplified\s+(?:sentence|version|text|statement|report|summary|explanation|form|"
    r"translation)?|plain[- ]language\s+(?:version|summary|sentence)|lay(?:person's|man's|people)?\s+"
    r"(?:version|summary|sentence|explanation)|in\s+(?:simple|simpler|plain|lay|layman's|layperson's)\s+"
    r"(?:terms|language|words|english))"
    r"(?:\s+(?:of|for)\s+(?:the|this)\s+(?:original\s+)?(?:radiology\s+)?sentence)?"
    r"(?:\s*\([^)]*\))?$",
    re.IGNORECASE,
)
# A sentence that introduces the simplification ("Finally, here is a simplified version of the
# original sentence that laypeople can understand:"). A line ending in a colon that names a
# simplification but not the term list ("...medical terms and their simplified explanations:").
_INTRO = re.compile(r"simplif|simpler\s+terms|plain\s+language|lay(?:man's|person's)\s+terms", re.IGNORECASE)
_TERM_LIST_INTRO = re.compile(
    r"\bterms?\b(?!\s*[:,]?\s*$)|\bexplanations\b|\bdefinitions?\b|\bglossary\b", re.IGNORECASE
)
_SIMPLE_TERMS = re.compile(r"in\s+(?:simple|simpler|plain|lay|layman's|layperson's)\s+terms", re.IGNORECASE)
_LEAD_IN = re.compile(
    r"^(?:finally|overall|in\s+summary|to\s+summarize|in\s+conclusion|in\s+other\s+words|simply\s+put|"
    r"put\s+simply|in\s+(?:simple|simpler|plain|lay|layman's|layperson's)\s+(?:terms|language|words))\s*[,:]\s*",
    re.IGNORECASE,
)
_QUOTES = {'"': '"', "“": "”", "'": "'", "‘": "’", "«": "»"}


def _plain(line: str) -> str:
    """A line without markdown heading marks, list markers or emphasis, for matching labels."""
    line = _MD_HEADING.sub("", line)
    line = _LIST_ITEM.sub("", line)
    return _EMPHASIS.sub("", line).strip()


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
        inner = text[1:-1].strip()
        # Leave text alone that merely starts and ends with two different quotations.
        if text[0] in inner and _QUOTES[text[0]] == text[0]:
            break
        text = inner
    return text


def clean_simplification(text: str) -> str:
    """Remove the chat's framing around an extracted simplification."""
    text = _EMPHASIS.sub("", text).strip()
    text = _strip_quotes(text)
    lead = _LEAD_IN.match(text)
    if lead and len(text) > lead.end():
        rest = text[lead.end() :]
        text = rest[0].upper() + rest[1:]
    text = _strip_quotes(text)
    # Paragraphs of one simplification stay paragraphs; hard wraps inside one become spaces.
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paragraphs if p)


def _heading(line: str) -> tuple[bool, str]:
    """Is `line` a simplification heading? Returns (is_heading, text after the colon)."""
    stripped = line.strip()
    if not stripped:
        return False, ""
    plain = _plain(stripped)
    is_md_heading = bool(_MD_HEADING.match(stripped)) or (
        stripped.startswith(("**", "__")) and stripped.rstrip(":").endswith(("**", "__"))
    )
    if ":" in plain:
        label, _, after = plain.partition(":")
        label = label.strip()
        if _LABEL.match(label):
            return True, after.strip()
        # An introducing sentence ends with the colon; text after it on the same line is the answer.
        if (
            _INTRO.search(label)
            and (not _TERM_LIST_INTRO.search(label) or _SIMPLE_TERMS.search(label))
            and (len(label.split()) >= 3 or not after.strip())
        ):
            return True, after.strip()
        return False, ""
    if is_md_heading and _LABEL.match(plain):
        return True, ""
    return False, ""


def _ends_block(line: str, after_blank: bool) -> bool:
    stripped = line.strip()
    if _MD_HEADING.match(stripped) or _LIST_ITEM.match(line):
        return True
    plain = _plain(stripped)
    if plain.endswith(":") and len(plain.split()) <= 6:
        return True  # the next section's heading, e.g. "Explanation:"
    # After a blank line, "Note: ..." or "Explanation: ..." starts a new section.
    label, colon, _ = plain.partition(":")
    return after_blank and bool(colon) and 0 < len(label.split()) <= 3


def _block_after(lines: list[str], start: int) -> str:
    """The text from line `start` (blank lines skipped) up to the next section, or the end."""
    block: list[str] = []
    after_blank = False
    for line in lines[start:]:
        if not block:
            if line.strip():
                block.append(line)
            continue
        if not line.strip():
            after_blank = True
            block.append(line)
            continue
        if _ends_block(line, after_blank):
            break
        block.append(line)
    return "\n".join(block).strip()


def _continuation(lines: list[str], start: int) -> str:
    """Lines directly below `start` (no blank line) that continue its paragraph."""
    block: list[str] = []
    for line in lines[start:]:
        if not line.strip() or _ends_block(line, False):
            break
        block.append(line)
    return "\n".join(block)


def parse_cot_answer(answer: str) -> CotParse:
    """The final simplification in a CoT answer: CotParse(text, ok, reason)."""
    text = answer.replace("\r\n", "\n").strip()
    if not text:
        return CotParse("", False, "empty answer")
    lines = text.split("\n")

    for index in range(len(lines) - 1, -1, -1):
        is_heading, inline = _heading(lines[index])
        if not is_heading:
            continue
        # "Simplification: X" (maybe wrapped onto the next lines) or "Simplification:" with the text
        # in the lines below it.
        if inline:
            body = "\n".join(part for part in (inline, _continuation(lines, index + 1)) if part)
        else:
            body = _block_after(lines, index + 1)
        cleaned = clean_simplification(body)
        if cleaned:
            return CotParse(cleaned, True, f"heading: {_plain(lines[index]).split(':')[0].strip()!r}")

    # No heading: a term list followed by a closing paragraph.
    list_lines = [i for i, line in enumerate(lines) if _LIST_ITEM.match(line)]
    if list_lines:
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        last = paragraphs[-1]
        last_lines = last.strip().split("\n")
        # A list item's explanation indented under it is part of the list, not the closing text.
        if not any(_LIST_ITEM.match(line) for line in last_lines) and not last.startswith((" ", "\t")):
            cleaned = clean_simplification(last)
            if cleaned and not cleaned.endswith(":"):
                return CotParse(cleaned, True, "final paragraph after the term list")
        return CotParse(text, False, "term list without a closing simplification")
    return CotParse(text, False, "no simplification heading and no term list")


def has_cot_shape(answer: str) -> bool:
    """Whether an answer looks like a CoT answer (a heading or a term list + closing paragraph)."""
    return parse_cot_answer(answer).ok
