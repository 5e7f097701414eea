"""Flip share and first-position win rate (measures.stats.position_bias) against hand counts and
statsmodels' Wilson interval."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from measures.stats.position_bias import OrderedJudgement as J
from measures.stats.position_bias import position_bias


def test_flips_and_first_position_wins_by_hand():
    judgements = [
        J("s1", "x", "y", "left"),
        J("s1", "y", "x", "right"),  # consistent: x wins both times
        J("s1", "x", "z", "left"),
        J("s1", "z", "x", "left"),  # flip: the first text wins each time
        J("s2", "x", "y", "tie"),
        J("s2", "y", "x", "tie"),  # consistent tie
        J("s2", "x", "z", "tie"),
        J("s2", "z", "x", "right"),  # flip: tie vs x wins
        J("s3", "x", "y", "left"),  # one order only
    ]
    result = position_bias(judgements)
    assert result["n_pairs_both_orders"] == 4 and result["n_pairs_one_order"] == 1
    assert result["flips"] == 2 and result["flip_share"]["estimate"] == 0.5
    low, high = proportion_confint(2, 4, alpha=0.05, method="wilson")
    assert (result["flip_share"]["low"], result["flip_share"]["high"]) == pytest.approx((low, high))
    # Decisive: 6 answers (left, right, left, left, right, left); first position won 4.
    assert result["n_decisive"] == 6 and result["first_position_wins"] == 4
    assert result["first_position_win_rate"]["estimate"] == pytest.approx(4 / 6)


def test_no_answers_and_bad_choices():
    empty = position_bias([])
    assert empty["flip_share"]["estimate"] is None and empty["first_position_win_rate"]["p_value"] is None
    with pytest.raises(ValueError, match="choice"):
        position_bias([J("s", "x", "y", "A")])
