"""Span suggestions for AI-assisted marking (annotation.span_suggestions): a judge's spans plus a
seeded share of planted wrong ones, placed where the planted-control generator would change the
text, never over a judge's span; the rate is refused outside (0, 0.5]."""

from __future__ import annotations

import pytest

from annotation.span_suggestions import (
    PLANTED,
    SuggestionRateError,
    assisted_page,
    planted_places,
    planted_rate_check,
    suggestions_for,
)
from generation.controls import CATEGORIES, SEVERITIES, plant_control

SOURCE = "Small 3 mm nodule in the left lower lobe. No pleural effusion."
TEXT = "There is a small 3 mm spot in the left lung. There is no fluid around the lung."
JUDGE = [{"start": 17, "end": 21, "category": "unexplained_jargon", "severity": "minor"}]


@pytest.mark.parametrize("rate", [0, -0.1, 0.51, 1, "x", None, float("nan")])
def test_a_rate_outside_the_bounds_is_refused_on_its_field(rate):
    with pytest.raises(SuggestionRateError) as caught:
        planted_rate_check(rate)
    assert caught.value.field == "planted_rate"


def test_planted_places_are_unchanged_words_of_the_typology_away_from_the_judges_spans():
    places = planted_places(TEXT, source=SOURCE, taken=[(17, 21)], seed=0, plant=plant_control)
    kinds = {p.kind for p in places}
    assert {"laterality", "negation"} <= kinds
    for place in places:
        assert place.origin == PLANTED and place.category in CATEGORIES and place.severity in SEVERITIES
        assert place.end > place.start and not (place.start < 21 and place.end > 17)
    side = next(p for p in places if p.kind == "laterality")
    assert TEXT[side.start : side.end] == "left"


def test_the_share_planted_follows_the_rate_and_the_seed():
    shares = []
    for rate in (0.1, 0.5):
        planted = total = 0
        for rater in range(200):
            found = suggestions_for(
                TEXT,
                plant=plant_control,
                source=SOURCE,
                judge_spans=JUDGE,
                rate=rate,
                rater=rater,
                text_key=1,
            )
            planted += sum(1 for s in found if s.origin == PLANTED)
            total += len(found)
        shares.append(planted / total)
    assert 0.05 < shares[0] < 0.15 and 0.35 < shares[1] <= 0.5
    first = suggestions_for(
        TEXT, plant=plant_control, source=SOURCE, judge_spans=JUDGE, rate=0.5, rater="R1", text_key=1
    )
    assert first == suggestions_for(
        TEXT, plant=plant_control, source=SOURCE, judge_spans=JUDGE, rate=0.5, rater="R1", text_key=1
    )
    assert [s.id for s in first] == [f"s{i}" for i in range(1, len(first) + 1)]
    assert any(s.origin == "judge" and (s.start, s.end) == (17, 21) for s in first)


def test_assistance_randomised_per_page():
    pages = [assisted_page(rater="R1", text_key=k, share=0.5) for k in range(400)]
    assert 150 < sum(pages) < 250
    assert all(assisted_page(rater="R1", text_key=k) for k in range(10))
