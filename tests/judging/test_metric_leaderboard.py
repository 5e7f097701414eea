"""The automatic metrics enter the judge leaderboard with their rank correlation with the
radiologists, checked against scipy on constructed data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judging.agreement_terms import RUBRIC_FIELDS
from judging.selectors import leaderboard, metric_rows
from measures.stats.correlation import correlate
from tests.annotation.factories import build_study


def analysis_with(metrics: dict[str, np.ndarray], ratings: dict[str, np.ndarray]) -> dict:
    records = []
    for metric, x in metrics.items():
        for aspect, y in ratings.items():
            for record in correlate(x, y, n_resamples=20, seed=0):
                records.append({"level": "item", "metric": metric, "measure": aspect, **record})
            records.append(
                {"level": "system", "metric": metric, "measure": aspect, "method": "spearman", "r": 1.0}
            )
    return {"correlations": records}


@pytest.fixture
def constructed():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=60)
    ratings = {
        aspect: np.clip(np.round(3 + truth + rng.normal(0, 0.7, 60)), 1, 5) for aspect in RUBRIC_FIELDS
    }
    metrics = {
        "tracks": truth + rng.normal(0, 0.3, 60),
        "inverse": -truth + rng.normal(0, 0.6, 60),
        "noise": rng.normal(size=60),
    }
    return metrics, ratings


def test_metric_rows_average_the_rank_correlations_over_the_rubric(constructed):
    metrics, ratings = constructed
    rows = {row["label"]: row for row in metric_rows(analysis_with(metrics, ratings))}
    for metric, x in metrics.items():
        expected_rho = np.mean([stats.spearmanr(x, y).statistic for y in ratings.values()])
        expected_tau = np.mean([stats.kendalltau(x, y).statistic for y in ratings.values()])
        assert rows[metric]["spearman"] == pytest.approx(expected_rho, abs=1e-12)
        assert rows[metric]["kendall"] == pytest.approx(expected_tau, abs=1e-12)
        assert rows[metric]["kind"] == "automatic metric" and rows[metric]["n"] == 60
        assert rows[metric].get("icc") is None  # no agreement statistic across scales


@pytest.mark.django_db
def test_leaderboard_ranks_by_the_size_of_rho(constructed):
    metrics, ratings = constructed
    study = build_study(slug="board", n_sources=2)
    rows = leaderboard(study=study, analysis=analysis_with(metrics, ratings))
    assert [row["label"] for row in rows] == ["tracks", "inverse", "noise"]
    assert rows[1]["spearman"] < 0


@pytest.mark.django_db
def test_leaderboard_without_an_analysis_lists_only_judges():
    study = build_study(slug="empty-board", n_sources=2)
    assert leaderboard(study=study) == []
