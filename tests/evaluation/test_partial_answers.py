"""The analysis of partial answers: a participant who leaves half-way, a radiologist's page with
rows unanswered, a study with answers for one system only. Every figure is computed from the
answers present (checked against a hand count of what the test saved), and no stage fails."""

from __future__ import annotations

import json
import math

import pytest

from annotation import services
from annotation.models import Participant
from evaluation import services as evaluation_services
from evaluation.analysis import AnalysisOptions
from tests.evaluation.test_analysis_inputs import build_answered_study

FAST = AnalysisOptions(
    n_resamples=20, correlation_resamples=10, metric_families=("readability",), correlation_metrics=("fkgl",)
)


def _finite_json(document) -> str:
    """The document as strict JSON: NaN or infinity anywhere fails."""
    return json.dumps(document, allow_nan=False, default=str)


@pytest.mark.django_db
def test_a_lay_panel_one_answer_without_a_severity_guess_does_not_stop_the_analysis():
    study = build_answered_study(slug="halfway", n_lay=4)
    person = services.participant_create(study=study, role=Participant.Role.LAYPERSON, external_id="halfway01")
    source = study.sources.order_by("position").first()
    system = study.systems.order_by("position").first()
    item = services.lay_item_create(
        participant=person,
        source=source,
        position=0,
        shown_text=source.simplifications.get(system=system).shown_text,
        assigned_system=system,
    )
    # What the autosave of the first question stores: Q1 only, Q2 and Q3 not yet answered.
    services.lay_answer_save(item=item, phase="original", answers={"understanding": "Most of it"})

    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)

    _finite_json(analysis)
    original = analysis["lay"]["original"]
    # 4 complete laypeople × 4 sources, plus the one half answer.
    assert original["n"] == 17
    assert original["n_severity"] == 16  # the half answer has no severity guess
    assert analysis["n"]["laypeople"] == 5
    # Its understanding counts ("Most of it" = 3): the hand mean of build_answered_study's panel-1
    # understanding (levels (p + i) % 2 + 1 over p, i < 4: eight 1s and eight 2s) and the 3.
    assert original["understanding"] == pytest.approx((8 * 1 + 8 * 2 + 3) / 17)
    interval = analysis["confidence_intervals"]["lay"]["original"]
    assert interval["understanding"]["n"] == 17
    assert interval["severity_accuracy"]["n"] == 16
    assert not math.isnan(interval["severity_accuracy"]["mean"])
