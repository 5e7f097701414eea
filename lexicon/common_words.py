"""The common-word rule: a word is common when its lemma is among the 3000 most common
English words (seed 001, section 5.1: "We first lemmatize each word ... If the lemmatized form is
in the top-3000 commonly-used English words, then it is a common word").

Data (in `data/`, derived by `build_common_words.py`, licences in `LICENSES.txt`):

- `common_words_3000.txt`: the 3000 lemmas;
- `common_word_forms.txt`: inflected forms whose lemma is in the list (WordNet 3.0 morphology:
  "children" -> child, "went" -> go, "teeth" -> tooth), so lemmatizing needs no NLTK data;
- `lay_words.txt`: health and imaging words laypeople know that a general list lacks ("kidney",
  "scan"), for the Patient agent's check.

`is_common` is the one rule; CWR counts with it and the Patient agent accepts every word it
accepts. `is_known_to_laypeople` is the Patient's wider check: common words, lay words, numbers,
and regular derivations of either ("mildly", "kidneys").
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

__all__ = [
    "COMMON_WORDS_PATH",
    "COMMON_WORD_FORMS_PATH",
    "LAY_WORDS_PATH",
    "CommonWords",
    "is_common",
    "is_known_to_laypeople",
    "is_lay_word",
    "load_common_words",
    "read_word_list",
    "word_candidates",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
COMMON_WORDS_PATH = DATA_DIR / "common_words_3000.txt"
COMMON_WORD_FORMS_PATH = DATA_DIR / "common_word_forms.txt"
LAY_WORDS_PATH = DATA_DIR / "lay_words.txt"

_NUMBER = re.compile(r"[\d.,/%]+")


def _data_lines(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].rstrip()
        if line.strip():
            lines.append(line)
    return lines


def read_word_list(path: Path) -> set[str]:
    """One word a line; blank lines and '#' comments skipped; lower-cased."""
    return {line.strip().lower() for line in _data_lines(path)}


class CommonWords:
    """The top-3000 lemmas and the table that maps an inflected form to its lemmas."""

    def __init__(self, words_path: Path | None = None, forms_path: Path | None = None) -> None:
        self.words = frozenset(read_word_list(words_path or COMMON_WORDS_PATH))
        forms: dict[str, tuple[str, ...]] = {}
        for line in _data_lines(forms_path or COMMON_WORD_FORMS_PATH):
            form, lemmas = line.split("\t")
            forms[form.strip()] = tuple(lemmas.strip().split(","))
        self.forms = forms

    def lemmas(self, word: str) -> tuple[str, ...]:
        """The lemmas of a lower-case word: its entries in the form table, else itself."""
        return self.forms.get(word, (word,))

    def is_common(self, word: str) -> bool:
        """True when some lemma of `word` (any case) is one of the 3000 common words."""
        return any(lemma in self.words for lemma in self.lemmas(word.lower()))


@lru_cache(maxsize=1)
def load_common_words() -> CommonWords:
    """The shipped common-word list with its form table, read once."""
    return CommonWords()


@lru_cache(maxsize=1)
def _lay_words() -> frozenset[str]:
    return frozenset(read_word_list(LAY_WORDS_PATH))


def is_common(word: str) -> bool:
    """Seed 001's rule: the word's lemma is among the 3000 most common English words."""
    return load_common_words().is_common(word)


def word_candidates(word: str) -> list[str]:
    """The word and its plausible base forms after stripping one regular English ending
    (for words outside the form table, such as lay words: "kidneys" -> kidney)."""
    w = word.lower().strip("'’")
    out = [w]
    if w.endswith("ies") and len(w) > 4:
        out.append(w[:-3] + "y")
    if w.endswith("es") and len(w) > 3:
        out.append(w[:-2])
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        out.append(w[:-1])
    for suffix in ("ing", "ed", "er", "est"):
        if w.endswith(suffix) and len(w) >= len(suffix) + 2:
            stem = w[: -len(suffix)]
            out += [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:  # "bigger" -> "big"
                out.append(stem[:-1])
            if stem.endswith("i"):  # "happier" -> "happy"
                out.append(stem[:-1] + "y")
    if w.endswith("ly") and len(w) > 4:
        out += [w[:-2], w[:-2] + "e"]
        if w.endswith("ily"):
            out.append(w[:-3] + "y")
    if w.endswith("'s") or w.endswith("’s"):
        out.append(w[:-2])
    return list(dict.fromkeys(out))


def is_lay_word(word: str) -> bool:
    """True when `word` or a regular base form of it is one of radlay's lay health words."""
    lay = _lay_words()
    return any(candidate in lay for candidate in word_candidates(word))


def is_known_to_laypeople(word: str, *, extra: frozenset[str] | set[str] = frozenset()) -> bool:
    """The Patient agent's check: a number, a common word (`is_common`), a lay word, a word in
    `extra`, or a regular derivation of one of these ("mildly" -> mild)."""
    if _NUMBER.fullmatch(word):
        return True
    if is_common(word):
        return True
    lay = _lay_words()
    return any(c in lay or c in extra or is_common(c) for c in word_candidates(word))
