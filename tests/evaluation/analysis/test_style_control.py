"""The style-controlled rankings in a study's analysis and report (evaluation.analysis.style_control): the
pairwise answers with length and reading-grade covariates beside the plain ranking, and equal
lengths reported as not estimable."""

from __future__ import annotations

import json

import pytest
from django.template.loader import render_to_string

from annotation import participant_services
from annotation.models import PairwiseTask, Participant, SimplificationText, StudyInstrument
from evaluation import services as evaluation_services
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.analysis.style_control import comparison_covariates, text_style
from evaluation.pages.context import pairwise_rankings, style_rankings
from measures.stats.pairwise import Comparison
from surveys.compare_two.services import (
    pairwise_answer_save,
    pairwise_instrument_attach,
    pairwise_tasks_prepare,
)
from tests.annotation.factories import build_study

FAST = AnalysisOptions(n_resamples=20, correlations=False, metric_families=())
SYSTEMS = ("a", "b", "c")


def _answered(study, n_people=8):
    pairwise_instrument_attach(study=study)
    instrument = StudyInstrument.objects.get(study=study, flow="pairwise")
    for i in range(n_people):
        person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
        pairwise_tasks_prepare(participant=person, instrument=instrument)
        for j, task in enumerate(
            PairwiseTask.objects.select_related("left__shown_text", "right__shown_text", "instrument").filter(
                participant=person
            )
        ):
            left, right = len(task.left.shown_text.text.split()), len(task.right.shown_text.text.split())
            # Mostly the longer text; now and then the other one, so every system wins and loses.
            longer = "left" if left >= right else "right"
            choice = longer if (i + j) % 4 else ("right" if longer == "left" else "left")
            pairwise_answer_save(task=task, choice=choice, reason="")


@pytest.mark.django_db
def test_the_analysis_and_report_show_the_style_controlled_ranking_beside_the_plain_one():
    study = build_study(slug="styled", n_sources=6, systems=SYSTEMS)
    # Texts of different lengths per system, varying by source.
    # Drawn from the texts' order, never their database ids (which depend on what ran before).
    texts = SimplificationText.objects.filter(source__study=study).order_by("source__position", "text")
    for i, text in enumerate(texts):
        extra = " more words here" * ((i * 7) % 5)
        text.text = f"{text.text}{extra}. The finding is small and stable."
        text.save(update_fields=["text"])
    _answered(study)
    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
    json.dumps(analysis, allow_nan=False, default=str)
    styled = analysis["pairwise"]["style_controlled"]["asked"]
    assert styled["model"] == "bradley_terry"
    covariates = {c["name"]: c for c in styled["covariates"]}
    assert covariates["words"]["estimable"] and covariates["words"]["coefficient"] > 0
    assert {s["system"] for s in styled["systems"]} == set(SYSTEMS)
    assert styled["n_comparisons"] == analysis["pairwise"]["asked"]["n_comparisons"]
    html = render_to_string(
        "evaluation/_pairwise.html",
        {
            "pairwise_rankings": pairwise_rankings(analysis["pairwise"]),
            "style_rankings": style_rankings(analysis["pairwise"]),
        },
    )
    assert "style-ranking" in html and "length difference (words" in html and "plain rank" in html


def test_equal_lengths_are_not_estimable_in_the_covariates():
    texts = {("s1", "a"): "one two three", ("s1", "b"): "four five six", ("s1", "c"): "x y z"}
    comparisons = [
        Comparison("r1", "s1", "a", "b", "left"),
        Comparison("r1", "s1", "b", "c", "left"),
        Comparison("r2", "s1", "c", "a", "left"),
        Comparison("r2", "s1", "b", "a", "right"),
    ]
    covariates = comparison_covariates(comparisons, texts)
    assert covariates["words"] == [0.0] * 4
    from evaluation.analysis.style_control import style_controlled_rankings

    result = style_controlled_rankings(comparisons, [], texts)
    words = {c["name"]: c for c in result["asked"]["covariates"]}["words"]
    assert not words["estimable"] and "same value" in words["reason"]
    assert result["derived"] is None
    assert comparison_covariates([Comparison("r", "s9", "a", "b", "left")], texts) is None
    assert text_style("") == (0.0, 0.0)
