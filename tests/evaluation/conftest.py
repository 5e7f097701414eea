"""Fixtures shared by the dashboard and API tests."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.annotation.factories import build_study

# Few resamples and one metric family: the pages and endpoints are tested, not the statistics.
FAST_ANALYSIS_OPTIONS = {
    "n_resamples": 50,
    "correlation_resamples": 10,
    "metric_families": ["readability"],
    "correlation_metrics": ["fkgl"],
}


@pytest.fixture
def fast_analysis(settings):
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS


@pytest.fixture
def other_study(db):
    """A study of another researcher ("bob")."""
    other = get_user_model().objects.create_user("bob", password="pw")
    study = build_study(slug="theirs", n_sources=2)
    study.researchers.add(other)
    return study
