"""Each radiologist's reliability from planted controls (evaluation/analysis/planted_control_scores.py), the
analysis's z-normalised radiologist scores (evaluation/analysis/protocol.py), and planted rows never entering
the study's tables."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from scipy import stats

from annotation import participant_services
from annotation.models import Participant, PlantedControl
from evaluation.analysis import protocol
from evaluation.analysis.planted_control_scores import (
    RELIABILITY_ASPECTS,
    reliability_rows,
    row_score,
    study_rater_reliability,
)
from evaluation.analysis.protocol import AnalysisOptions, expert_ratings_z
from evaluation.analysis.study import study_analysis
from evaluation.analysis.study_frames import study_frames
from generation.services.controls import study_controls_plant
from surveys.radiologist import assignment, pages
from tests.annotation import answers
from tests.annotation.factories import build_study

ASPECTS = ("correctness", "completeness", "hallucination", "structure", "simplicity")
FAST = AnalysisOptions(n_resamples=20, correlations=False, metric_families=())


def test_row_score_is_the_mean_of_the_aspects_a_planted_error_breaks():
    assert RELIABILITY_ASPECTS == ("correctness", "completeness", "hallucination")
    assert row_score({"correctness": 2, "completeness": 4, "hallucination": 3, "structure": 1}) == 3
    assert row_score({"structure": 1}) is None


def test_reliability_rows_agree_with_scipy_and_count_found_spans():
    rng = random.Random(5)
    pairs = [("r1", c, rng.choice([3, 4, 5]), rng.choice([1, 2, 3])) for c in range(12)]
    pairs += [("r2", c, rng.choice([1, 3, 5]), rng.choice([1, 3, 5])) for c in range(12)]
    spans = {("r1", c): c % 3 != 0 for c in range(12)} | {("r2", c): None for c in range(12)}
    rows = reliability_rows(pairs, spans)
    for rater in ("r1", "r2"):
        real = [p[2] for p in pairs if p[0] == rater]
        planted = [p[3] for p in pairs if p[0] == rater]
        reference = stats.mannwhitneyu(real, planted, alternative="greater", method="asymptotic")
        assert rows[rater]["p_value"] == pytest.approx(reference.pvalue)
        assert rows[rater]["caught"] == pytest.approx(
            sum(r - p >= 1 for r, p in zip(real, planted, strict=True)) / 12
        )
    assert rows["r1"]["unreliable"] is False and rows["r1"]["span_found"] == pytest.approx(8 / 12)
    assert rows["r2"]["span_found"] is None
    few = reliability_rows(pairs[:5])
    assert few["r1"]["unreliable"] is None  # fewer than ten controls: not decidable


def expert_ratings_frame_example():
    import pandas as pd

    # Rating 3 is credited to two systems: it counts once in its rater's mean.
    return pd.DataFrame(
        {
            "rating_id": [1, 2, 3, 3, 4, 5],
            "participant": ["a", "a", "a", "a", "b", "b"],
            "system": ["x", "y", "x", "y", "x", "y"],
            **{aspect: [1.0, 3.0, 5.0, 5.0, 4.0, 4.0] for aspect in ASPECTS},
        }
    )


def test_z_scores_are_each_raters_scores_standardised_once_per_rating():
    frame = expert_ratings_frame_example()
    z = expert_ratings_z(frame)
    a = np.array([1.0, 3.0, 5.0])
    expected = (a - a.mean()) / a.std()
    assert list(z["correctness"][:4]) == pytest.approx([expected[0], expected[1], expected[2], expected[2]])
    assert z["correctness"][4:].isna().all()  # rater b's scores do not vary


# --- on a study --------------------------------------------------------------------------------------


def _radiologist(study, seed: int) -> Participant:
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    Participant.objects.filter(pk=participant.pk).update(order_seed=seed)
    participant.refresh_from_db()
    return participant


def _answer_all(
    participant: Participant, *, careful: bool, seed: int, real_scores: dict | None = None
) -> None:
    """Every page answered: a careful rater scores planted rows 1-2 and real ones 4-5; a careless
    one picks every score at random. Real rows get `real_scores[text]` when given (the same answers
    on a twin study)."""
    rng = random.Random(seed)
    for item in assignment.expert_items_ensure(participant=participant):
        page = pages.expert_page_get(item=item)
        plantedset = {text.label for text in page.texts if text.text not in real_texts(item)}
        data = {"original-severity": "Mild", "original-simplicity": "3"}
        for row in page.texts:
            for cell in row.aspects:
                if real_scores is not None and row.label not in plantedset:
                    value = real_scores[(row.text, cell.key)]
                elif not careful:
                    value = rng.randint(1, 5)
                elif row.label in plantedset and cell.key in RELIABILITY_ASPECTS:
                    value = rng.choice([1, 2])
                else:
                    value = rng.choice([4, 5])
                data[cell.field] = str(value)
        pages.expert_page_save(participant=participant, item=item, data=data)


def real_texts(item) -> set[str]:
    return set(item.source.texts.values_list("text", flat=True))


@pytest.mark.django_db
def test_a_careless_radiologist_is_flagged_and_a_careful_one_is_not(client):
    study = build_study(slug="rel-study", n_sources=12, systems=("a", "b", "c", "d"))
    result = study_controls_plant(study=study, rate=0.2, seed=1)
    assert result.planted == 12
    careful, careless = _radiologist(study, 1), _radiologist(study, 2)
    _answer_all(careful, careful=True, seed=1)
    _answer_all(careless, careful=False, seed=2)
    rows = {row["participant"]: row for row in study_rater_reliability(study=study)}
    assert len(rows) == 2
    by_status = {row["status"]: row for row in rows.values()}
    assert set(by_status) == {"reliable", "unreliable"}
    assert by_status["reliable"]["n_planted"] == 12 and by_status["reliable"]["caught"] == 1.0
    assert by_status["unreliable"]["p_value"] >= 0.05
    # The progress page's table and the dashboard's progress section say so.
    client.force_login(get_user_model().objects.create_superuser("rel-admin", password="pw"))
    html = client.get(reverse("evaluation:study-progress", args=[study.slug])).content.decode()
    for row in rows.values():
        assert f'<tr data-status="{row["status"]}"><td>{row["participant"]}</td>' in html
    section = client.get(reverse("evaluation:study-progress-section", args=[study.slug])).content.decode()
    assert "<b>unreliable</b>" in section and "<b>reliable</b>" in section


def _tables(frames, *, z: bool) -> dict:
    """Tables 1-3 (radiologist, original and lay columns; confidence vs accuracy; preference wins),
    the radiologists' agreement and the counts, as study_analysis computes them."""
    return {
        "expert": protocol.expert_table(frames, z=z),
        "expert_original": protocol.expert_original_table(frames),
        "lay": protocol.lay_table(frames),
        "confidence_vs_accuracy": protocol.confidence_vs_accuracy(frames),
        "preferences": protocol.preference_wins(frames)[0],
        "agreement": protocol.agreement(frames),
        "ratings": len(frames.expert_ratings),
        "judgements": len(frames.expert_judgements),
    }


@pytest.mark.heavy
@pytest.mark.django_db
def test_planted_rows_never_enter_the_tables():
    """The same study with and without 20% planted controls, the same real answers: the same Tables
    1-3 (raw and z-normalised), agreement and counts; the analysis records the z option."""
    plain = build_study(slug="tables-plain", n_sources=10)
    controlled = build_study(slug="tables-controlled", n_sources=10)
    study_controls_plant(study=controlled, rate=0.2, seed=4)
    assert PlantedControl.objects.filter(study=controlled).count() == 10
    tables = []
    for study in (plain, controlled):
        for seed in (1, 2):
            participant = _radiologist(study, seed)
            texts = study.sources.values_list("texts__text", flat=True)
            scores = {(t, a): random.Random(f"{seed}{t}{a}").randint(1, 5) for t in texts for a in ASPECTS}
            _answer_all(participant, careful=False, seed=seed, real_scores=scores)
        frames = study_frames(study=study)
        tables.append((_tables(frames, z=False), _tables(frames, z=True)))
    (raw_plain, z_plain), (raw_controlled, z_controlled) = tables
    assert z_plain["expert"] != raw_plain["expert"] and raw_plain["ratings"] == 2 * 40
    assert len(answers.control_answers(study=controlled)) == 2 * 10
    assert raw_controlled == raw_plain
    assert z_controlled == z_plain
    analysis = study_analysis(frames, options=dataclasses.replace(FAST, expert_z_scores=True))
    assert analysis["options"]["expert_scores"] == "z" and analysis["expert"] == z_controlled["expert"]
