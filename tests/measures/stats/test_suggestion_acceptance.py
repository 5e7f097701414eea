"""Acceptance of true and planted suggestions and span rates (measures.stats.suggestion_acceptance)
against hand counts and statsmodels' Wilson interval."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from measures.stats.suggestion_acceptance import Page, SuggestionFate, span_rates, suggestion_acceptance


def test_kept_and_accepted_shares_by_hand():
    fates = [
        SuggestionFate("R1", "judge", "accepted"),
        SuggestionFate("R1", "judge", "edited"),
        SuggestionFate("R1", "judge", "deleted"),
        SuggestionFate("R1", "planted", "accepted"),
        SuggestionFate("R2", "planted", "deleted"),
        SuggestionFate("R2", "planted", "pending"),
        SuggestionFate("R2", "judge", "accepted"),
    ]
    result = suggestion_acceptance(fates)
    overall = result["overall"]
    assert overall["judge"]["kept"]["estimate"] == pytest.approx(3 / 4)
    assert overall["judge"]["accepted_unchanged"]["estimate"] == pytest.approx(2 / 4)
    assert overall["planted"]["kept"]["estimate"] == pytest.approx(1 / 2)
    assert overall["planted"]["pending"] == 1
    low, high = proportion_confint(3, 4, method="wilson")
    assert (overall["judge"]["kept"]["low"], overall["judge"]["kept"]["high"]) == pytest.approx((low, high))
    r2 = {r["rater"]: r for r in result["raters"]}["R2"]
    assert r2["planted"]["kept"]["estimate"] == 0 and r2["planted"]["kept"]["low"] == pytest.approx(0)
    with pytest.raises(ValueError, match="fate"):
        suggestion_acceptance([SuggestionFate("R1", "judge", "kept")])


def test_span_rates_assisted_and_not():
    pages = [Page("R1", True, 3), Page("R1", True, 1), Page("R1", False, 0), Page("R1", False, 1)]
    result = span_rates(pages, n_resamples=500)
    assert result["assisted"]["estimate"] == 2 and result["unassisted"]["estimate"] == 0.5
    assert result["difference"]["estimate"] == 1.5
    assert 0 <= result["unassisted"]["low"] <= 0.5 <= result["unassisted"]["high"]
    assert np.isclose(result["assisted"]["pages"], 2)
    only = span_rates([Page("R1", True, 2)], n_resamples=50)
    assert only["unassisted"]["estimate"] is None and only["difference"]["estimate"] is None
