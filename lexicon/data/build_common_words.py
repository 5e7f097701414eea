"""Re-make common_words_3000.txt and common_word_forms.txt (CWR's word list, seed 001).

Seed 001 counts an output word as common when its lemma is among the 3000 most
common English words. The list is derived here from permissively licensed data on
PyPI, the `spacy-lookups-data` package (MIT, ExplosionAI GmbH):

- `en_lexeme_prob`: spaCy v2's unigram log-probabilities for about a million
  English tokens, estimated by Explosion from web text (its top entries, such as
  "deleted" and "subreddits", show a Reddit-comment corpus);
- `en_lemma_exc`, `en_lemma_rules`, `en_lemma_index`: WordNet 3.0's irregular
  forms, suffix rules and lemma index (WordNet licence, Princeton University,
  permissive; see LICENSES.txt beside this script).

We chose it over `wordfreq` (better balanced sources, but its data is CC BY-SA 4.0)
so that the shipped list is permissive.

Steps: fold case and keep purely alphabetic tokens; map every token to the lemmas
WordNet's morphology allows (function words stay as they are; otherwise its irregular
forms, or the token itself and every suffix-rule result that is a WordNet lemma) and
share the token's probability among them; keep lemmas that WordNet knows or that are
function words (scikit-learn's English stop words, BSD), dropping one-letter ones
except "a" and "i" and names (tokens written capitalised more often than not); take
the 3000 with the most probability mass. `common_word_forms.txt` lists the inflected
forms (among the 200,000 most probable tokens) whose lemma is in the list, so CWR can
lemmatize at run time without NLTK's WordNet data. Caveat: the corpus is informal web
text, so the list has some forum words (and profanity) a book corpus would not rank.

Usage (the package is only needed to re-make the files, not at run time):

    pip download --no-deps -d /tmp/lookups spacy-lookups-data==1.0.5
    python lexicon/data/build_common_words.py \
        --lookups /tmp/lookups/spacy_lookups_data-1.0.5-py2.py3-none-any.whl
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import json
import math
import re
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

LIST_SIZE = 3000
FORM_VOCABULARY_SIZE = 200_000
POS_ORDER = ("noun", "verb", "adj", "adv")
WORD = re.compile(r"[a-z]+")
HERE = Path(__file__).resolve().parent
PACKAGE_VERSION = "1.0.5"
# Stems spaCy's tokenizer leaves from contractions (ca|n't, wo|n't, gon|na), not words.
TOKENIZER_ARTEFACTS = frozenset({"ca", "wo", "gon", "na"})


class LookupTables:
    """Reads `spacy_lookups_data/data/en_*.json.gz` from a wheel or an installed package."""

    def __init__(self, location: Path | None) -> None:
        self._zip: zipfile.ZipFile | None = None
        self._dir: Path | None = None
        if location is None:
            spec = importlib.util.find_spec("spacy_lookups_data")
            if spec is None or spec.origin is None:
                raise SystemExit("spacy-lookups-data is not installed; pass --lookups WHEEL_OR_DIR")
            self._dir = Path(spec.origin).parent / "data"
        elif location.suffix == ".whl":
            self._zip = zipfile.ZipFile(location)
        elif (location / "spacy_lookups_data" / "data").is_dir():
            self._dir = location / "spacy_lookups_data" / "data"
        else:
            self._dir = location

    def load(self, table: str) -> dict[str, Any]:
        name = f"en_{table}.json.gz"
        if self._zip is not None:
            raw = self._zip.read(f"spacy_lookups_data/data/{name}")
        else:
            assert self._dir is not None
            raw = (self._dir / name).read_bytes()
        with gzip.open(io.BytesIO(raw)) as handle:
            table_data: dict[str, Any] = json.load(handle)
        return table_data


class WordNetMorphology:
    """All lemmas WordNet's morphology (exceptions, index, suffix rules) allows for a word."""

    def __init__(self, tables: LookupTables) -> None:
        self.exceptions = tables.load("lemma_exc")
        self.rules = tables.load("lemma_rules")
        self.index = {pos: set(words) for pos, words in tables.load("lemma_index").items()}
        self.known = set().union(*self.index.values())

    def lemmas(self, word: str) -> set[str]:
        # Function words are not inflected ("his" is not the plural of "hi").
        if word in ENGLISH_STOP_WORDS:
            return {word}
        irregular = {lemma for pos in POS_ORDER for lemma in self.exceptions.get(pos, {}).get(word, ())}
        if irregular:
            return irregular | ({word} if word in self.known else set())
        found = {word} if word in self.known else set()
        for pos in POS_ORDER:
            for old, new in self.rules.get(pos, ()):
                if word.endswith(old) and len(word) > len(old):
                    candidate = word[: len(word) - len(old)] + new
                    if candidate in self.index[pos]:
                        found.add(candidate)
        return found or {word}


def folded_probabilities(tables: LookupTables) -> tuple[dict[str, float], dict[str, float]]:
    """Probability of each case-folded alphabetic token, and the part of it written in lower case."""
    mass: dict[str, float] = defaultdict(float)
    lower_mass: dict[str, float] = defaultdict(float)
    for token, log_prob in tables.load("lexeme_prob").items():
        folded = token.lower()
        if WORD.fullmatch(folded):
            mass[folded] += math.exp(log_prob)
            if token == folded:
                lower_mass[folded] += math.exp(log_prob)
    return mass, lower_mass


def keep_lemma(
    lemma: str, morphology: WordNetMorphology, token_mass: dict[str, float], lower_mass: dict[str, float]
) -> bool:
    if (len(lemma) == 1 and lemma not in {"a", "i"}) or lemma in TOKENIZER_ARTEFACTS:
        return False
    if lemma in ENGLISH_STOP_WORDS:
        return True
    # Mostly capitalised tokens are names (Batman, George), not common words.
    if lower_mass.get(lemma, 0.0) < 0.5 * token_mass.get(lemma, 0.0):
        return False
    return lemma in morphology.known


def build(tables: LookupTables) -> tuple[list[str], dict[str, list[str]]]:
    morphology = WordNetMorphology(tables)
    token_mass, lower_mass = folded_probabilities(tables)
    lemma_mass: dict[str, float] = defaultdict(float)
    token_lemmas: dict[str, set[str]] = {}
    for token, mass in token_mass.items():
        lemmas = morphology.lemmas(token)
        token_lemmas[token] = lemmas
        # An ambiguous form ("left": left or leave) shares its probability among its lemmas.
        for lemma in lemmas:
            lemma_mass[lemma] += mass / len(lemmas)
    ranked = sorted(
        (lemma for lemma in lemma_mass if keep_lemma(lemma, morphology, token_mass, lower_mass)),
        key=lambda lemma: (-lemma_mass[lemma], lemma),
    )
    common = ranked[:LIST_SIZE]
    common_set = set(common)
    vocabulary = sorted(token_mass, key=lambda token: (-token_mass[token], token))[:FORM_VOCABULARY_SIZE]
    forms: dict[str, list[str]] = {}
    for token in vocabulary:
        if token in common_set:
            continue
        form_lemmas = sorted(token_lemmas[token] & common_set)
        if form_lemmas:
            forms[token] = form_lemmas
    return common, forms


HEADER = f"""\
# Derived data: see build_common_words.py (re-make it with that script) and LICENSES.txt.
# Source: spacy-lookups-data {PACKAGE_VERSION} on PyPI (MIT License, Copyright (c) 2019 ExplosionAI GmbH):
#   unigram probabilities en_lexeme_prob (spaCy v2, estimated from web text, apparently Reddit comments)
#   and WordNet 3.0 morphology en_lemma_exc/en_lemma_rules/en_lemma_index
#   (WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved; WordNet licence,
#   permissive, full text in LICENSES.txt).
"""


def write(common: list[str], forms: dict[str, list[str]], out_dir: Path) -> None:
    words_text = (
        HEADER
        + f"# The {LIST_SIZE} most common English lemmas by probability mass, most common first.\n"
        + "".join(f"{word}\n" for word in common)
    )
    (out_dir / "common_words_3000.txt").write_text(words_text, encoding="utf-8")
    forms_text = (
        HEADER
        + "# Inflected forms whose lemma is in common_words_3000.txt: form<TAB>lemma[,lemma...]\n"
        + "".join(f"{form}\t{','.join(lemmas)}\n" for form, lemmas in sorted(forms.items()))
    )
    (out_dir / "common_word_forms.txt").write_text(forms_text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lookups", type=Path, default=None, help="spacy-lookups-data wheel or directory")
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write the lists to")
    args = parser.parse_args()
    common, forms = build(LookupTables(args.lookups))
    write(common, forms, args.out)
    print(f"wrote {len(common)} common words and {len(forms)} inflected forms to {args.out}")


if __name__ == "__main__":
    main()
