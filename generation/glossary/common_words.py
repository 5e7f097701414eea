"""Common English words for the Patient check (seed 001's "top-3000 words" idea). Django-free.

Sources, in order:
1. `evaluation/metrics/data/common_words_3000.txt` (shipped by the metrics engineer for CWR; one
   word a line, '#' comments) when it exists — the same list CWR uses, so the Patient agent and the
   metric agree on what "common" means;
2. otherwise the Dale-Chall easy-word list that textstat (a pinned dependency) ships, if importable;
3. always added: radlay's small everyday list (`data/common_words_fallback.txt`) and the lay health
   words laypeople know but general lists lack (`data/lay_words.txt`: kidney, scan, x-ray…).

Inflected forms are recognised by stripping regular endings (no lemmatizer data is available here).
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

_DATA_DIR = Path(__file__).resolve().parent / "data"
REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_COMMON_WORDS = REPO_ROOT / "evaluation" / "metrics" / "data" / "common_words_3000.txt"
FALLBACK_COMMON_WORDS = _DATA_DIR / "common_words_fallback.txt"
LAY_WORDS = _DATA_DIR / "lay_words.txt"


def read_word_list(path: Path) -> set[str]:
    """One word a line; blank lines and '#' comments skipped; lower-cased."""
    words: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        word = line.split("#", 1)[0].strip().lower()
        if word:
            words.add(word)
    return words


def _textstat_easy_words() -> set[str]:
    # Located, not imported: importing textstat 0.7.3 pulls in pkg_resources for nothing we need here.
    spec = importlib.util.find_spec("textstat")
    if spec is None or not spec.submodule_search_locations:
        return set()  # textstat is pinned in requirements.txt; the fallback list still works without it
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "en" / "easy_words.txt"
    return read_word_list(path) if path.is_file() else set()


@lru_cache(maxsize=1)
def _load() -> tuple[frozenset[str], str]:
    if SHARED_COMMON_WORDS.is_file():
        base, source = read_word_list(SHARED_COMMON_WORDS), str(SHARED_COMMON_WORDS.relative_to(REPO_ROOT))
    else:
        base = _textstat_easy_words()
        source = "textstat Dale-Chall easy words" if base else "radlay fallback list only"
    words = base | read_word_list(FALLBACK_COMMON_WORDS) | read_word_list(LAY_WORDS)
    return frozenset(words), f"{source} + common_words_fallback.txt + lay_words.txt"


def load_common_words() -> frozenset[str]:
    """The common-word set (lower case) the Patient check accepts without explanation."""
    return _load()[0]


def common_words_source() -> str:
    """Which lists `load_common_words()` was built from (for provenance and the report)."""
    return _load()[1]


def word_candidates(word: str) -> list[str]:
    """The word and its plausible base forms after stripping one regular English ending."""
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
            if stem.endswith("i"):  # "darkier" is not a word, but "happier" -> "happy"
                out.append(stem[:-1] + "y")
    if w.endswith("ly") and len(w) > 4:
        out += [w[:-2], w[:-2] + "e"]
        if w.endswith("ily"):
            out.append(w[:-3] + "y")
    if w.endswith("'s") or w.endswith("’s"):
        out.append(w[:-2])
    return list(dict.fromkeys(out))


def is_common(word: str, *, extra: frozenset[str] | set[str] = frozenset()) -> bool:
    """True when `word` (or its regular base form) is in the common-word set or in `extra`."""
    words = load_common_words()
    if re.fullmatch(r"[\d.,/%]+", word):
        return True
    return any(c in words or c in extra for c in word_candidates(word))
