"""The analysis document's adjudication section: an adjudicated label recorded or revised makes
the snapshot stale, and the refreshed document holds the figures the adjudication selectors
compute live, every interval inside its support."""

from __future__ import annotations

import json

import pytest

from evaluation import services
from evaluation.adjudication_selectors import UnitKey
from evaluation.adjudication_services import adjudication_record
from evaluation.analysis.adjudication_section import adjudication_document
from evaluation.analysis.adjudication_summary import adjudication_summary
from evaluation.pages.context import study_report_html
from evaluation.selectors import analysis_coverage, snapshot_analysis
from tests.evaluation.adjudication_studies import disagreeing_study
from tests.evaluation.analysis.test_interval_bounds import check

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]


def _live(study) -> dict:
    """The section as computed now from the selectors, in its stored (JSON) form."""
    return json.loads(json.dumps(adjudication_document(adjudication_summary(study=study))))


def _document(study) -> dict:
    state = services.analysis_snapshot_refresh(study=study)
    assert not state.stale
    return snapshot_analysis(state.snapshot)


@pytest.mark.heavy
def test_recording_and_revising_a_label_refresh_the_adjudication_section():
    setup = disagreeing_study()
    study = setup["study"]
    unit = UnitKey(setup["protocol"].pk, "correctness", setup["text"].source_id, setup["text"].pk).token
    before = _document(study)
    computed_at = services.analysis_snapshot_refresh(study=study).snapshot.computed_at
    section = before["adjudication"]
    assert section == _live(study)
    assert section["overall"]["provenance"]["adjudicated"] == 0
    assert section["overall"]["agreement"]["adjudicated"] == 0

    coverage = analysis_coverage(study=study)
    adjudication_record(study=study, unit=unit, value=4, reason="misread", adjudicator=setup["adjudicator"])
    assert analysis_coverage(study=study) != coverage
    after = _document(study)
    assert services.analysis_snapshot_refresh(study=study).snapshot.computed_at > computed_at
    section = after["adjudication"]
    assert section == _live(study)
    overall = section["overall"]
    assert overall["provenance"]["adjudicated"] == 1 and overall["agreement"]["adjudicated"] == 1
    assert (
        overall["agreement"]["resolved"]["share"]
        > before["adjudication"]["overall"]["agreement"]["resolved"]["share"]
    )
    (correctness,) = [
        item
        for item in section["items"]
        if item["item"] == "correctness" and item["instrument"] == "protocol_003_radiologist"
    ]
    # Raw: the raters' 2 and 5 average 3.5 on the disagreed text; adjudicated: its label, 4.
    assert correctness["raw_mean"]["support"] == [1.0, 5.0]
    assert correctness["adjudicated_mean"]["mean"] > correctness["raw_mean"]["mean"]

    # Revising the label (same count of labels, a later update) makes it stale again.
    revised_at = services.analysis_snapshot_refresh(study=study).snapshot.computed_at
    adjudication_record(study=study, unit=unit, value=2, reason="misread", adjudicator=setup["adjudicator"])
    again = _document(study)["adjudication"]
    assert services.analysis_snapshot_refresh(study=study).snapshot.computed_at > revised_at
    assert again == _live(study) and again != section
    (correctness,) = [
        item
        for item in again["items"]
        if item["item"] == "correctness" and item["instrument"] == "protocol_003_radiologist"
    ]
    assert correctness["adjudicated_mean"]["mean"] < correctness["raw_mean"]["mean"]

    # Every interval of the section lies inside its declared support.
    assert check(again) > 0
    # The report's Methods say how the final labels are formed.
    report = study_report_html(study=study, reported=None)
    assert "Final labels (the adjudication section)" in report and "no consensus is made up" in report


def test_a_study_without_adjudicable_answers_has_no_section():
    assert adjudication_document({"items": [], "overall": None}) is None
