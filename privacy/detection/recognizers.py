"""Radiology-aware recognizers added to Presidio's analyzer. Django-free.

Presidio's own pattern recognizers find what has a fixed shape (phone numbers through Google's
`phonenumbers`, US social security numbers, IP addresses, numeric dates); the recognizers here add
what radiology reports carry: identifiers after a label ("MRN:", "Accession #", "DOB"), clinicians
named in signatures ("Dictated by Dr. X", "Electronically signed by X, MD"), patients and relatives
after a title or a label, dates written out ("14 March 2021", "Mar 14th, 2021"), ages over 89,
street addresses and city/state/ZIP, long record-like numbers (device serials, DICOM UIDs), and
people named on the census name lists (`names.py`).

Every recognizer reports the group named `value` of its pattern, so that a label ("MRN:") stays in
the text and only the identifier is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from privacy.detection import names
from privacy.detection.presidio_without_models import (
    AnalysisExplanation,
    EntityRecognizer,
    NlpArtifacts,
    RecognizerResult,
)

# --- Building blocks --------------------------------------------------------------------------------

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
# A name word: capitalised (O'Brien, McAllister, Al-Rashid, Élodie, Yılmaz: Latin-1 and Latin
# Extended-A letters), or an initial ("J.").
_LOWER = "a-zß-öø-ÿĀ-ſ"
_NAME_WORD = rf"(?:[A-ZÀ-ÖØ-Þ](?:['’][A-Z])?[{_LOWER}]+(?:[A-Z][{_LOWER}]+)?(?:-[A-Z]?[{_LOWER}]+)*|[A-Z]\.)"
_PARTICLE = r"(?:van|von|der|de|da|del|della|di|dos|du|la|le|bin|binti|ibn|al|el|ter|ten)"
# One space between the words of a name: columns of a header are set apart by several.
_FULL_NAME = rf"{_NAME_WORD}(?:[ \t](?:{_PARTICLE}[ \t])?{_NAME_WORD}){{0,3}}"
# "SMITH, JOHN A" and "Smith, John" as headers write them.
_LAST_FIRST = r"[A-Z][A-Za-z'’-]+,[ \t]*[A-Z][A-Za-z'’-]+(?:[ \t]+[A-Z]\.?)?"
_UPPER_NAME = r"[A-Z][A-Z'’-]+(?:[ \t]+[A-Z][A-Z'’-]+){1,3}"
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof|Doctor|Sr|Nurse)\.?"
_CREDENTIAL = r"(?:M\.?D\.?|D\.?O\.?|MBBS|MBChB|Ph\.?D\.?|RN|NP|PA-C|FRCR|FRCPC|RT\(R\)|RDMS|RVT)"
_PERSON_LABEL = (
    r"(?i:patient(?:'s)?[ \t]+name|patient|pt|name|referring(?:[ \t]+(?:physician|provider|doctor|clinician))?|"  # noqa: E501 - one pattern reads best on one line
    r"ordering(?:[ \t]+(?:physician|provider|doctor|clinician))?|attending(?:[ \t]+physician)?|"
    r"primary[ \t]+care(?:[ \t]+(?:physician|provider))?|pcp|radiologist|resident|fellow|technologist|"
    r"sonographer|tech|dictated[ \t]+by|signed[ \t]+by|electronically[ \t]+signed[ \t]+by|e-signed[ \t]+by|"
    r"read[ \t]+by|reviewed[ \t]+by|interpreted[ \t]+by|transcribed[ \t]+by|verified[ \t]+by|"
    r"approved[ \t]+by|performed[ \t]+by|discussed[ \t]+with|communicated[ \t]+(?:with|to)|called[ \t]+to|"
    r"relayed[ \t]+to|reported[ \t]+to|notified|paged|cc|copy[ \t]+to|guardian|mother|father|wife|"
    r"husband|son|daughter|spouse|partner|sister|brother|next[ \t]+of[ \t]+kin|emergency[ \t]+contact|"
    r"contact|accompanied[ \t]+by)"
)
_STATES = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|"
    "NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY"
)
_STATES_NOT_CREDENTIALS = "|".join(s for s in _STATES.split("|") if s not in ("MD", "PA"))
_STREET_TYPE = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
    r"Ter|Circle|Cir|Parkway|Pkwy|Highway|Hwy|Square|Sq)\.?"
)


class LabelledRecognizer(EntityRecognizer):
    """One entity found by regular expressions; each pattern's `value` group (else the whole
    match) is the identifier. `accept(text)` may refuse a candidate."""

    def __init__(
        self, entity: str, patterns: Iterable[tuple[str, str, float]], *, flags: int = 0, name: str = ""
    ) -> None:
        self.label = name or f"radlay-{entity.lower()}"
        self.patterns = [(label, re.compile(regex, flags), score) for label, regex, score in patterns]
        super().__init__(supported_entities=[entity], name=self.label)

    def load(self) -> None:  # nothing to load: the patterns are compiled in __init__
        pass

    def accept(self, candidate: str, pattern: str) -> str | None:
        """The candidate found by `pattern`, trimmed if need be, or None to refuse it."""
        return candidate

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        results: list[RecognizerResult] = []
        entity = self.supported_entities[0]
        for label, regex, score in self.patterns:
            for match in regex.finditer(text):
                group = "value" if "value" in regex.groupindex else 0
                start, end = match.span(group)
                if start < 0 or start == end:
                    continue
                kept = self.accept(text[start:end], label)
                if not kept:
                    continue
                end = start + len(kept)
                explanation = AnalysisExplanation(
                    recognizer=self.label, original_score=score, pattern_name=label, pattern=regex.pattern
                )
                results.append(RecognizerResult(entity, start, end, score, analysis_explanation=explanation))
        return results


class PersonRecognizer(LabelledRecognizer):
    """People after a title or a label, and before a credential. The context is strong enough to
    take common words as names ("Dr. Young", "Dictated by Grace White"), so only report words are
    kept out: a trailing one is trimmed ("Dr. Patel Findings"), a candidate of nothing else is
    refused ("discussed with Emergency Department")."""

    def __init__(self) -> None:
        super().__init__(
            "PERSON",
            [
                ("title", rf"\b{_TITLE}[ \t]+(?P<value>{_FULL_NAME})", 0.9),
                (
                    "label",
                    rf"\b{_PERSON_LABEL}[ \t]*[:#-]?[ \t]*(?:{_TITLE}[ \t]+)?(?P<value>{_LAST_FIRST}|{_FULL_NAME})",  # noqa: E501 - one pattern reads best on one line
                    0.8,
                ),
                ("label, upper case", rf"\b{_PERSON_LABEL}[ \t]*:[ \t]*(?P<value>{_UPPER_NAME})\b", 0.8),
                ("credential", rf"\b(?P<value>{_FULL_NAME}),?[ \t]+{_CREDENTIAL}(?![A-Za-z])", 0.9),
            ],
            name="radlay-person-context",
        )

    def accept(self, candidate: str, pattern: str) -> str | None:
        never = names.REPORT_WORDS
        words = re.split(r"([ \t,]+)", candidate)
        # Trim trailing report words and separators ("Smith Findings", "Smith, MD").
        while words and (not words[-1].strip(" \t,") or words[-1].lower().strip(".") in never):
            words.pop()
        kept = "".join(words).rstrip(" \t,")
        meaningful = [w for w in re.split(r"[ \t,]+", kept) if w]
        if not meaningful or all(w.lower().strip(".") in never for w in meaningful):
            return None
        return kept


class NameListRecognizer(EntityRecognizer):
    """Two or three capitalised words, a census first name then a census surname, neither a common,
    lay or glossary word: "Maria Gonzalez" anywhere in the text."""

    _PAIR = re.compile(r"\b([A-Z][a-z]+)[ \t]+(?:([A-Z])\.?[ \t]+)?([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b")

    def __init__(self) -> None:
        super().__init__(supported_entities=["PERSON"], name="radlay-name-list")

    def load(self) -> None:
        pass

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        first, last, never = names.first_names(), names.surnames(), names.never_names()
        results = []
        for match in self._PAIR.finditer(text):
            given, family = match.group(1).lower(), match.group(3).lower()
            surname_parts = family.split("-")
            if (
                given in first
                and all(part in last for part in surname_parts)
                and given not in never
                and not any(part in never for part in surname_parts)
            ):
                results.append(RecognizerResult("PERSON", match.start(), match.end(), 0.7))
        return results


def radiology_recognizers() -> list[EntityRecognizer]:
    """The recognizers radlay adds to Presidio's, one per identifier family."""
    number_label = r"[ \t]*(?:number|no\.?|num\.?|#|id)?[ \t]*[:#.]?[ \t]*"
    return [
        PersonRecognizer(),
        NameListRecognizer(),
        LabelledRecognizer(
            "MEDICAL_RECORD_NUMBER",
            [
                (
                    "labelled MRN",
                    r"(?i:\b(?:MRN|MR|medical[ \t]+record|patient|pt|hospital|unit|chart|hosp)"
                    + number_label
                    + r")(?P<value>[A-Z]{0,3}[-]?\d[\d-]{3,14}\d)\b",
                    0.95,
                ),
            ],
        ),
        LabelledRecognizer(
            "ACCESSION_NUMBER",
            [
                (
                    "labelled accession",
                    r"(?i:\b(?:accession|acc|exam(?:ination)?|study|order|requisition|req)"
                    + number_label
                    + r")(?P<value>(?=[A-Z0-9.-]*\d{3})[A-Z0-9][A-Z0-9.-]{3,30}[A-Z0-9])\b",
                    0.95,
                ),
                ("accession shape", r"\b(?P<value>(?:ACC|RAD|ACN|XR|CT|MR|US)-?\d{2,4}-?\d{5,10})\b", 0.9),
            ],
        ),
        LabelledRecognizer(
            "OTHER_ID",
            [
                (
                    "labelled record",
                    r"(?i:\b(?:encounter|visit|account|acct|fin|csn|har|insurance|policy|member|"
                    r"health[ \t]+plan|beneficiary|licen[cs]e|certificate|serial|s/n|sn|device[ \t]+id|"
                    r"implant[ \t]+id|udi|vehicle|plate|vin)"
                    + number_label
                    + r")(?P<value>(?=[A-Z0-9./-]*\d{3})[A-Z0-9][A-Z0-9./-]{3,40}[A-Z0-9])\b",
                    0.9,
                ),
                # Six or more digits in one token (serials, DICOM UIDs, record numbers): no
                # measurement, level or score in a report has as many.
                ("long number", r"(?<![\w.])(?P<value>[A-Z]{0,5}[-#]?\d(?:[\d.-]*\d){5,})(?![\w])", 0.6),
            ],
        ),
        LabelledRecognizer(
            "SSN_LABELLED",
            [
                (
                    "labelled SSN",
                    r"(?i:\b(?:SSN|social[ \t]+security(?:[ \t]+(?:number|no\.?|#))?)[ \t]*[:#]?[ \t]*)(?P<value>\d{3}[- ]?\d{2}[- ]?\d{4})\b",  # noqa: E501 - one pattern reads best on one line
                    1.0,
                )
            ],
            name="radlay-ssn",
        ),
        LabelledRecognizer(
            "DATE_TIME",
            [
                (
                    "day month year",
                    rf"(?i:\b(?P<value>{_DAY}(?:[ \t]+of)?[ \t-]+{_MONTH},?[ \t-]+{_YEAR}))\b",
                    0.85,
                ),
                ("month day year", rf"(?i:\b(?P<value>{_MONTH}[ \t]+{_DAY},?[ \t]+{_YEAR}))\b", 0.85),
                ("month day", rf"\b(?P<value>{_MONTH}[ \t]+{_DAY})\b(?![ \t]*(?:mm|cm|%))", 0.6),
                ("month year", rf"\b(?P<value>{_MONTH}[ \t]+{_YEAR})\b", 0.7),
                # Not inside a longer dotted number (an IP address, a version).
                ("numeric", r"(?<![\d.])(?P<value>\d{1,2}[./-]\d{1,2}[./-](?:19|20)?\d\d)(?![\d]|\.\d)", 0.7),
                ("iso", r"(?<![\d.])(?P<value>(?:19|20)\d\d[./-]\d{1,2}[./-]\d{1,2})(?![\d]|\.\d)", 0.8),
                (
                    "compact with label",
                    r"(?i:\b(?:DOB|date|born|d\.o\.b\.)[ \t]*[:#]?[ \t]*)(?P<value>(?:19|20)\d{6})\b",
                    0.9,
                ),
                (
                    "labelled date",
                    r"(?i:\b(?:DOB|D\.O\.B\.|date[ \t]+of[ \t]+birth|birth[ \t]*date|born|admitted|discharged|"  # noqa: E501 - one pattern reads best on one line
                    r"exam[ \t]+date|date[ \t]+of[ \t]+(?:service|exam|study)|dos)[ \t]*[:#]?[ \t]*)"
                    r"(?P<value>[0-9A-Za-z][0-9A-Za-z ,./-]{4,20}\d)\b",
                    0.9,
                ),
            ],
            name="radlay-date",
        ),
        LabelledRecognizer(
            "AGE_OVER_89",
            [
                (
                    "age then unit",
                    r"(?i:\b(?P<value>(?:9\d|1[01]\d))(?=[ \t-]*(?:years?|yrs?|y/?o|y\.o\.|yo)\b))",
                    0.9,
                ),
                (
                    "label then age",
                    r"(?i:\b(?:age[d]?|aged)[ \t]*[:]?[ \t]*)(?P<value>(?:9\d|1[01]\d))\b",
                    0.9,
                ),
                ("nonagenarian", r"(?i:\b(?P<value>nonagenarian|centenarian)s?\b)", 0.8),
            ],
            name="radlay-age",
        ),
        LabelledRecognizer(
            "PHONE_LABELLED",
            [
                (
                    "north american",
                    r"(?<![\w-])(?P<value>(?:\+?1[ .-]?)?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,5})?)(?![\w-])",  # noqa: E501 - one pattern reads best on one line
                    0.75,
                ),
                (
                    "international",
                    r"(?<![\w])(?P<value>\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}\d)(?![\w])",
                    0.75,
                ),
                (
                    "labelled",
                    r"(?i:\b(?:phone|tel|telephone|fax|pager|pgr|cell|mobile|beeper|call(?:[ \t]+back)?|ext)\.?[ \t]*[:#]?[ \t]*)"  # noqa: E501 - one pattern reads best on one line
                    r"(?P<value>\+?[\d(][\d ().-]{3,18}\d)",
                    0.85,
                ),
            ],
            name="radlay-phone",
        ),
        LabelledRecognizer(
            "LOCATION",
            [
                (
                    "street address",
                    rf"\b(?P<value>\d{{1,6}}[ \t]+(?:[NSEW]\.?[ \t]+)?(?:[A-Z][a-z]+[ \t]+){{1,3}}{_STREET_TYPE}"  # noqa: E501 - one pattern reads best on one line
                    rf"(?:,?[ \t]+(?:Apt|Apartment|Unit|Suite|Ste|#)\.?[ \t]*\w+)?)",
                    0.85,
                ),
                (
                    "city, state",
                    rf"\b(?P<value>(?:[A-Z][a-z]+[ \t]){{0,2}}[A-Z][a-z]+,[ \t]*(?:{_STATES_NOT_CREDENTIALS})"
                    rf"(?:[ \t]+\d{{5}}(?:-\d{{4}})?)?)\b",
                    0.8,
                ),
                # "Smith, MD" and "Jones, PA" are credentials: Maryland and Pennsylvania need the ZIP.
                (
                    "city, state zip",
                    rf"\b(?P<value>(?:[A-Z][a-z]+[ \t]){{0,2}}[A-Z][a-z]+,[ \t]*(?:{_STATES})"
                    rf"[ \t]+\d{{5}}(?:-\d{{4}})?)\b",
                    0.8,
                ),
                ("zip after state", rf"\b(?:{_STATES})[ \t]+(?P<value>\d{{5}}(?:-\d{{4}})?)\b", 0.85),
                (
                    "labelled address",
                    r"(?i:\b(?:address|addr|residence|lives[ \t]+(?:at|in)|resides[ \t]+(?:at|in)|home)[ \t]*[:]?[ \t]*)(?P<value>[0-9A-Z][^\n;]{3,80}?)(?=[.;\n]|$)",  # noqa: E501 - one pattern reads best on one line
                    0.8,
                ),
                (
                    "labelled zip",
                    r"(?i:\b(?:zip|postcode|postal[ \t]+code)[ \t]*[:]?[ \t]*)(?P<value>[A-Z0-9][A-Z0-9 -]{2,9}[A-Z0-9])\b",  # noqa: E501 - one pattern reads best on one line
                    0.85,
                ),
            ],
            name="radlay-location",
        ),
        LabelledRecognizer(
            "EMAIL_ADDRESS",
            [
                (
                    "e-mail",
                    r"(?<![\w.+-])(?P<value>[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})",
                    1.0,
                )
            ],
            name="radlay-email",
        ),
        LabelledRecognizer(
            "URL",
            [
                (
                    "with scheme",
                    r"(?i:\b(?P<value>(?:https?|ftp|dicom|file)://[^\s<>\"']+[^\s<>\"'.,;:)]))",
                    0.9,
                ),
                (
                    "www",
                    r"(?i:\b(?P<value>www\d{0,3}\.[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[^\s<>\"']*)?[^\s<>\"'.,;:)]?))",
                    0.85,
                ),
            ],
            name="radlay-url",
        ),
    ]
