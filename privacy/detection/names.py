"""The name lists the name recognizer reads, and the words that are never a name. Django-free.

First names and surnames come from the `names` package (MIT; the US Census Bureau's 1990 lists:
5,494 first names, 88,799 surnames, which carry the country's many origins: Nguyen, Patel, Kim,
Garcia, Okafor is not in them, hence the context recognizers). The census surnames include English
words ("White", "Mass", "Heart", "Left"), so a word counts as a possible name only when it is not
among the common English words, the lay health words or the radiology glossary's terms (radlay's
own lists in `lexicon/`): a finding mistaken for a name must never erase a medical word.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import names as names_package  # type: ignore[import-untyped]  # a data package without types

from lexicon.common_words import LAY_WORDS_PATH, load_common_words, read_word_list
from lexicon.glossary import load_glossary

_NAMES_DIR = Path(names_package.__file__).resolve().parent


def _census(file_name: str) -> frozenset[str]:
    with (_NAMES_DIR / file_name).open(encoding="ascii") as handle:
        return frozenset(line.split()[0].lower() for line in handle if line.strip())


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    return _census("dist.male.first") | _census("dist.female.first")


@lru_cache(maxsize=1)
def surnames() -> frozenset[str]:
    return _census("dist.all.last")


# Words of reports that the lists above do not hold but that a report capitalises (section
# headings, sides, modalities) and that must never be read as names.
REPORT_WORDS = frozenset(
    """
    findings impression history comparison technique indication clinical exam examination report
    addendum conclusion recommendation recommendations procedure contrast views view study
    left right bilateral anterior posterior lateral medial superior inferior proximal distal
    ct mri mr us xr pet nm dexa cta mra chest abdomen pelvis head neck spine brain knee hip
    shoulder wrist ankle foot hand liver kidney kidneys lung lungs heart no normal mild moderate
    severe stable unchanged new small large acute chronic status post signed dictated electronically
    radiology radiologist department hospital clinic center centre medical physician resident
    emergency ed er icu urgent stat preliminary final attending referring ordering
    patient name mrn dob date time phone fax email accession age sex male female pager cell mobile
    tel ext address ssn acc exam order encounter account serial signed md do rn np
    """.split()
)


@lru_cache(maxsize=1)
def never_names() -> frozenset[str]:
    """Lower-case words that are never taken for a name on the name list alone."""
    common = load_common_words()
    words: set[str] = set(common.words) | set(common.forms) | set(read_word_list(LAY_WORDS_PATH))
    for entry in load_glossary().entries:
        for spelling in (entry.term, *entry.variants):
            words.update(spelling.lower().replace("-", " ").split())
    return frozenset(words | REPORT_WORDS)
