"""evaluation/analysis/study_frames.py: the database as frames (crediting shared texts).
`build_answered_study` is reused by the view, API, export and report tests."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation import participant_services
from annotation.models import LayItem, Participant, SimplificationText, Study
from evaluation.analysis import study_frames
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation import answers
from tests.annotation.factories import build_study, lay_item_of

UNDERSTANDING = ["Not at all", "Some parts of it", "Most of it", "Completely"]
CONFIDENCE = ["Not at all", "With low confidence", "With high confidence"]
SEVERITY = ["Critical", "Serious", "Moderate", "Mild", "Healthy"]
HELPFULNESS = [
    "It further confused me",
    "It did not help",
    "I understand slightly better",
    "I understand much better",
]
SYSTEMS = ("plain_bs", "plain_sc", "cot_bs", "cot_sc")


def build_answered_study(
    *,
    slug: str = "answered",
    n_sources: int = 4,
    n_lay: int = 4,
    n_radiologists: int = 1,
    external_ids: bool = False,
) -> Study:
    """A study of `n_sources` sources × four systems where, on source 0, cot_bs and cot_sc share one
    text; radiologists rate every distinct text; each layperson p answers every source with system
    (p + i) mod 4 (a Latin square) and votes in panel 3. Answers follow simple arithmetic rules so
    tests can predict the counts."""
    study = build_study(slug=slug, n_sources=n_sources, shared=((0, "cot_bs", "cot_sc"),))
    sources = list(study.sources.order_by("position"))
    systems = {s.key: s for s in study.systems.all()}
    for r in range(n_radiologists):
        radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
        for i, source in enumerate(sources):
            expert_answers.expert_item_create(participant=radiologist, source=source, position=i)
            for j, text in enumerate(SimplificationText.objects.filter(source=source).order_by("pk")):
                score = 1 + (i + j + r) % 5
                expert_answers.expert_rating_save(
                    participant=radiologist,
                    shown_text=text,
                    scores={
                        "correctness": score,
                        "completeness": 5,
                        "hallucination": 6 - score,
                        "structure": 4,
                        "simplicity": score,
                    },
                    comment="ok" if j == 0 else None,
                )
            expert_answers.expert_source_judgement_save(
                participant=radiologist, source=source, severity=SEVERITY[i % 5], simplicity=1 + i % 5
            )
        participant_services.participant_complete(participant=radiologist)
    for p in range(n_lay):
        person = participant_services.participant_create(
            study=study,
            role=Participant.Role.LAYPERSON,
            external_id=f"PROLIFIC{p:04d}" if external_ids else "",
        )
        person.latin_square_row = p
        person.save(update_fields=["latin_square_row"])
        for i, source in enumerate(sources):
            system = systems[SYSTEMS[(p + i) % 4]]
            shown = source.simplifications.get(system=system).shown_text
            item = lay_answers.lay_item_create(
                participant=person, source=source, position=i, shown_text=shown, assigned_system=system
            )
            lay_answers.lay_answer_save(
                item=item,
                phase="original",
                answers={
                    "understanding": UNDERSTANDING[(p + i) % 2],
                    "confidence": CONFIDENCE[i % 3],
                    "severity_guess": SEVERITY[(i + p) % 5],
                },
                time_spent_ms=1000,
            )
            lay_answers.lay_item_lock_original(item=item)
            lay_answers.lay_answer_save(
                item=item,
                phase="assisted",
                answers={
                    "understanding": UNDERSTANDING[2 + (p + i) % 2],
                    "confidence": CONFIDENCE[(i + 1) % 3],
                    "severity_guess": SEVERITY[i % 5],
                    "helpfulness": HELPFULNESS[(p + i) % 4],
                },
                time_spent_ms=2000,
            )
            texts = item.preference_order
            lay_answers.lay_preference_save(
                item=item,
                most=[texts[p % len(texts)]],
                least=[texts[-1]],
                most_justification="clear" if p == 0 else "",
                least_justification="",
            )
            item.stage = LayItem.Stage.DONE
            item.save(update_fields=["stage"])
        participant_services.participant_complete(participant=person)
    return study


@pytest.mark.django_db
def test_expert_frame_credits_a_shared_text_to_both_systems():
    study = build_answered_study()
    frame = study_frames.expert_ratings_frame(study=study)
    # 4 sources × 4 systems = 16 (rating, system) rows from 15 ratings (one shared text).
    assert len(frame) == 16
    assert frame["rating_id"].nunique() == 15
    shared = frame[(frame["source"] == "s01") & frame["system"].isin(["cot_bs", "cot_sc"])]
    assert shared["rating_id"].nunique() == 1
    assert frame["correctness"].dtype == "float64"


@pytest.mark.django_db
def test_lay_frame_has_numbers_and_the_credited_systems():
    study = build_answered_study()
    frame = study_frames.lay_answers_frame(study=study)
    assert len(frame) == 4 * 4 * 2
    row = frame[
        (frame["participant"] == "L003") & (frame["source"] == "s01") & (frame["phase"] == "assisted")
    ]
    # L003 is row p = 2: source 0 shows system (2 + 0) mod 4 = cot_bs, whose text cot_sc shares.
    assert row["systems"].iloc[0] == ("cot_bs", "cot_sc")
    assert row["assigned_system"].iloc[0] == "cot_bs"
    # understanding "Most of it" = 3; helpfulness HELPFULNESS[2] = 1; reference Critical = 1
    assert row["understanding"].iloc[0] == 3.0
    assert row["helpfulness"].iloc[0] == 1.0
    assert row["reference_severity"].iloc[0] == 1.0
    original = frame[frame["phase"] == "original"]
    assert original["helpfulness"].isna().all()


@pytest.mark.django_db
def test_preferences_frame_maps_chosen_texts_to_system_sets():
    study = build_answered_study()
    frame = study_frames.lay_preferences_frame(study=study)
    assert len(frame) == 16
    shared_id = SimplificationText.objects.get(source__key="s01", simplifications__system__key="cot_bs").pk
    for row in frame.itertuples():
        assert len(row.most_texts) == 1
        if shared_id in row.most_texts:
            assert row.most == frozenset({"cot_bs", "cot_sc"})
        else:
            assert len(row.most) == 1


@pytest.mark.django_db
def test_preferences_frame_keeps_its_study_when_another_studys_preferences_lie_between_its_own():
    first = build_answered_study(slug="first", n_lay=1)
    second = build_answered_study(slug="second", n_lay=2)
    # A later layperson of the first study: its preference ids come after the second study's.
    person = participant_services.participant_create(study=first, role=Participant.Role.LAYPERSON)
    item = lay_item_of(person, first.sources.get(position=1), first.systems.get(key="cot_sc"))
    texts = item.preference_order
    lay_answers.lay_preference_save(item=item, most=texts[:2], least=[texts[-1]])
    for study in (first, second):
        frame = study_frames.lay_preferences_frame(study=study)
        expected = {pref.pk: (set(pref.most), set(pref.least)) for pref in answers.preferences(study=study)}
        assert len(frame) == len(expected) == (5 if study == first else 8)
        for row in frame.itertuples():
            assert (set(row.most_texts), set(row.least_texts)) == expected[row.preference_id]


@pytest.mark.django_db
def test_frames_of_an_empty_study_analyse_without_errors(settings):
    study = build_study(slug="empty", n_sources=2)
    frames = study_frames.study_frames(study=study)
    assert isinstance(frames.lay_answers, pd.DataFrame) and frames.lay_answers.empty
    from evaluation.analysis.protocol import AnalysisOptions
    from evaluation.analysis.study import study_analysis

    analysis = study_analysis(
        frames,
        options=AnalysisOptions(n_resamples=20, metric_families=("readability",), correlation_resamples=10),
    )
    assert analysis["lay"]["original"]["n"] == 0
    assert analysis["preferences"]["most"] == dict.fromkeys(SYSTEMS, 0)
    assert analysis["agreement"]["preference_alpha_masi"]["most"] is None
