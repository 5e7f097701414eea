"""AI-assisted error-span marking: the suggestions a radiologist's span widget is pre-filled with —
a judge's spans, and a seeded share of **planted wrong** ones — and how a rate is checked. Pure: no
Django; the planted spans come from the planted-control generator (generation.controls).

A planted suggestion is a plausible error of the clinical typology placed where there is none: the
place where the generator *would* plant a change of one kind (a side word for laterality, a size's
number, a negation, a sentence rendering a finding for omission) in the text as it stands, marked
with that kind's category and severity. The text is unchanged, so the span is correct text that
the suggestion calls an error; a rater who accepts it accepted what the model proposed without
checking. Insertion kinds (a false reassurance) have no span in the unchanged text and are not
used; a place overlapping one of the judge's spans is not used either.

How many: the team's rate r in (0, 0.5] is the expected share of planted suggestions among those a
rater sees. A text with n judge spans gets m = r / (1 − r) · max(n, 1) planted ones in expectation
(⌊m⌋, plus one more with probability m − ⌊m⌋), as many as it has places for. The draw is seeded by
the study's seed, the rater and the text: a rater sees the same suggestions on every visit, and two
raters see different planted ones.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# The kinds whose planted change replaces words of the text (so that the unchanged words are a
# span a suggestion can point at), most plausible first.
PLANTABLE_KINDS = ("laterality", "size", "negation", "omission")
RATE_FIELD = "planted_rate"
TRUE, PLANTED = "judge", "planted"
FATES = ("accepted", "edited", "deleted", "pending")


class SuggestionRateError(ValueError):
    """A planted-suggestion rate outside (0, 0.5]; ``field`` names the field to show it on."""

    field = RATE_FIELD


def planted_rate_check(rate: Any) -> float:
    """The rate as a float, or SuggestionRateError saying why not."""
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise SuggestionRateError(f"The planted-suggestion rate must be a number, got {rate!r}.") from None
    if not math.isfinite(value) or not 0 < value <= 0.5:
        raise SuggestionRateError(
            f"The planted-suggestion rate must be above 0 and at most 0.5 (a share of the suggestions "
            f"a rater sees), got {rate!r}: with more planted than true suggestions the assistance would "
            "mislead more than it helps."
        )
    return value


@dataclass(frozen=True)
class Suggestion:
    """One suggested mark: ``origin`` is "judge" (a judge's span) or "planted" (a planted wrong one)."""

    id: str
    origin: str
    start: int
    end: int
    category: str
    severity: str
    kind: str = ""  # the planted-control kind of a planted suggestion

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rng(*parts: Any) -> random.Random:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start < b and a < end for a, b in spans)


def planted_places(
    text: str, *, source: str, taken: Sequence[tuple[int, int]], seed: int, plant: Any
) -> list[Suggestion]:
    """Every place a planted suggestion could go in ``text`` (see the module docstring). ``plant``
    is the planted-control generator (generation.controls.plant_control, passed in by the app that
    builds on both: annotation imports no app above it)."""
    plant_control = plant
    places: list[Suggestion] = []
    for kind in PLANTABLE_KINDS:
        control = plant_control(text, source=source, kind=kind, seed=seed)
        if control is None or control.original_end <= control.original_start:
            continue
        start, end = control.original_start, control.original_end
        # Trim the whitespace a sentence-level change takes with it.
        while end > start and text[end - 1].isspace():
            end -= 1
        if end <= start or _overlaps(start, end, [*taken, *[(p.start, p.end) for p in places]]):
            continue
        places.append(Suggestion("", PLANTED, start, end, control.category, control.severity, kind))
    return places


def suggestions_for(
    text: str,
    *,
    source: str,
    judge_spans: Sequence[Mapping[str, Any]],
    rate: float,
    rater: Any,
    text_key: Any,
    seed: int = 0,
    plant: Any,
    categories: Sequence[str] | None = None,
    severities: Sequence[str] | None = None,
) -> list[Suggestion]:
    """The suggestions one rater sees on one text: the judge's spans and the planted ones, in text
    order, each with a stable id. ``categories``/``severities``: the item's (a planted suggestion
    of a category the item does not offer is not used)."""
    rate = planted_rate_check(rate)
    true = [
        Suggestion(
            "", TRUE, int(span["start"]), int(span["end"]), str(span["category"]), str(span["severity"])
        )
        for span in judge_spans
    ]
    rng = _rng("span-suggestions", seed, rater, text_key)
    places = [
        p
        for p in planted_places(
            text, source=source, taken=[(s.start, s.end) for s in true], seed=seed, plant=plant
        )
        if (categories is None or p.category in categories)
        and (severities is None or p.severity in severities)
    ]
    expected = rate / (1 - rate) * max(len(true), 1)
    count = int(expected) + (1 if rng.random() < expected - int(expected) else 0)
    planted = rng.sample(places, min(count, len(places)))
    ordered = sorted([*true, *planted], key=lambda s: (s.start, s.end, s.origin))
    return [
        Suggestion(f"s{i}", s.origin, s.start, s.end, s.category, s.severity, s.kind)
        for i, s in enumerate(ordered, start=1)
    ]


def assisted_page(*, rater: Any, text_key: Any, seed: int = 0, share: float = 1.0) -> bool:
    """Whether this rater's page of this text is assisted, when a team randomises assistance per
    page (``share`` of the pages, seeded); share 1 assists every page."""
    if not 0 <= share <= 1:
        raise ValueError("the share of assisted pages must lie in [0, 1]")
    return _rng("span-assistance", seed, rater, text_key).random() < share


# --- what a page offers and what the rater did with it ------------------------------------------------
# The app that holds the suggestions' source (judging's runs) registers a provider from its
# AppConfig.ready(): annotation imports none of the apps that build on it.
Offer = tuple[bool, list[Suggestion]]  # (the page is assisted, the suggestions shown)
PageOffers = dict[tuple[str, int], Offer]  # by (error-span item key, shown text id)
_PROVIDERS: dict[str, Any] = {}


def span_suggestions_provider_register(key: str, provider: Any) -> None:
    """`provider(participant=..., source=Source, texts=[SimplificationText], items=[Item]) ->
    PageOffers | None` (None: the study offers no assistance). Called once per page with all its
    texts and error-span items, so that a provider reads its option once and the texts' spans in
    one query: a page's cost does not grow with its texts."""
    _PROVIDERS[key] = provider


def span_suggestions_page(
    *, participant: Any, source: Any, texts: Sequence[Any], items: Sequence[Any]
) -> PageOffers:
    """The first registered provider's offers for this rater's page ({} where none offers any)."""
    for key in sorted(_PROVIDERS):
        offers = _PROVIDERS[key](participant=participant, source=source, texts=texts, items=items)
        if offers is not None:
            return dict(offers)
    return {}


def span_suggestions_offered(*, participant: Any, text: Any, item: Any) -> Offer | None:
    """The first registered provider's offer for this rater, text and error-span item (None: the
    study offers no assistance)."""
    for key in sorted(_PROVIDERS):
        offers = _PROVIDERS[key](participant=participant, source=text.source, texts=[text], items=[item])
        if offers is not None:
            return offers.get((item.key, text.pk), (False, []))
    return None


def suggestion_fates_apply(offered: Sequence[Suggestion], fates: Any) -> list[dict[str, Any]]:
    """Each suggestion offered with the fate the page sent for it ({id: fate}; "pending" where none
    was sent). ValueError naming a suggestion that was not offered or a fate not among FATES."""
    if not isinstance(fates, Mapping):
        raise ValueError("the suggestions' fates are a JSON object {suggestion id: fate}")
    known = {s.id for s in offered}
    unknown = sorted(str(k) for k in fates if k not in known)
    if unknown:
        raise ValueError(f"suggestion {unknown[0]!r} was not offered on this page")
    bad = sorted(f"{k}={v!r}" for k, v in fates.items() if v not in FATES)
    if bad:
        raise ValueError(f"suggestion fate {bad[0]} is not one of {', '.join(FATES)}")
    return [{**s.as_dict(), "fate": fates.get(s.id, "pending")} for s in offered]


def offer_with_fates(offer: Offer | None, stored: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The suggestions a page shows: the offer, each with the fate stored before (pending else)."""
    if offer is None or not offer[0]:
        return []
    fates = {row["id"]: row.get("fate", "pending") for row in (stored or {}).get("items", [])}
    return [{**s.as_dict(), "fate": fates.get(s.id, "pending")} for s in offer[1]]
