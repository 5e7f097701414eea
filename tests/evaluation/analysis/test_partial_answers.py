"""The analysis of partial answers: a participant who leaves half-way, a radiologist's page with
rows unanswered, a study with answers for one system only. Every figure is computed from the
answers present (checked against a hand count of what the test saved), and no stage fails."""

from __future__ import annotations

import json
import math

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import participant_services, scales
from annotation.models import Participant, Simplification, SimplificationText, Source, Study
from evaluation import services as evaluation_services
from evaluation.analysis.protocol import AnalysisOptions
from studies import source_services
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study, lay_item_of
from tests.evaluation.analysis.test_study_frames import build_answered_study

FAST = AnalysisOptions(
    n_resamples=20, correlation_resamples=10, metric_families=("readability",), correlation_metrics=("fkgl",)
)


def _finite_json(document) -> str:
    """The document as strict JSON: NaN or infinity anywhere fails."""
    return json.dumps(document, allow_nan=False, default=str)


def _halfway_study() -> Study:
    """build_answered_study's four complete laypeople, and one who answered Q1 of panel 1 and left
    (what the autosave of the first question stores: Q2 and Q3 not yet answered)."""
    study = build_answered_study(slug="halfway", n_lay=4)
    person = participant_services.participant_create(
        study=study, role=Participant.Role.LAYPERSON, external_id="halfway01"
    )
    item = lay_item_of(
        person, study.sources.order_by("position").first(), study.systems.order_by("position").first()
    )
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Most of it"})
    return study


@pytest.mark.heavy
@pytest.mark.django_db
def test_a_half_answered_lay_page_leaves_the_next_snapshot_with_its_figures(fast_analysis):
    study = _halfway_study()
    snapshot = evaluation_services.analysis_snapshot_compute_here(study=study)
    assert snapshot.error == "" and snapshot.computed_at is not None
    assert snapshot.result["lay"]["original"]["n"] == 17
    drawn = {name for name, svg in snapshot.figures.items() if svg.lstrip().startswith("<svg")}
    assert {"system_means", "confidence", "votes", "severity"} <= drawn


@pytest.mark.django_db
def test_a_lay_panel_one_answer_without_a_severity_guess_does_not_stop_the_analysis():
    study = _halfway_study()
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


# --- the property: any partial answer set of both flows ----------------------------------------------

SYSTEM_KEYS = ("a", "b", "c")
PANEL_ONE = ("understanding", "confidence", "urgency_confidence", "severity_guess")
PANEL_TWO = (*PANEL_ONE, "helpfulness")


def _answers(data, questions: tuple[str, ...]) -> dict[str, str]:
    """Any subset of `questions` (also none), each with any level of its scale."""
    asked = data.draw(st.lists(st.sampled_from(questions), unique=True))
    return {q: data.draw(st.sampled_from(scales.LAY_SCALES[q].names)) for q in asked}


def _code(question: str, name: str) -> float:
    return float(scales.LAY_SCALES[question].value_of(name))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _saved_study(data) -> tuple[Study, dict]:
    """A study of three sources × three systems (b and c share source 0's text) with whatever
    answers `data` draws, saved through the survey's services; and what was saved, for the hand
    counts."""
    study = build_study(slug="partial", n_sources=3, systems=SYSTEM_KEYS, shared=((0, "b", "c"),))
    sources = list(study.sources.order_by("position"))
    unrated = data.draw(st.lists(st.sampled_from([s.key for s in sources]), unique=True))
    Source.objects.filter(study=study, key__in=unrated).update(reference_severity="")
    reference = {
        s.key: (None if s.key in unrated else float(scales.SEVERITY.value_of(s.reference_severity)))
        for s in sources
    }
    text_systems: dict[int, tuple[str, ...]] = {}
    for simplification in Simplification.objects.filter(source__study=study).order_by("system__position"):
        text_systems.setdefault(simplification.shown_text_id, ())
        text_systems[simplification.shown_text_id] += (simplification.system.key,)
    systems = list(study.systems.order_by("position"))
    # Only some systems may be shown at all (a study with answers for one system only).
    shown_systems = data.draw(st.lists(st.sampled_from(range(3)), min_size=1, max_size=3, unique=True))
    saved: dict = {"original": [], "assisted": [], "preferences": [], "ratings": [], "reference": reference}
    for p in range(data.draw(st.integers(0, 3))):
        person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
        positions = data.draw(st.lists(st.sampled_from(range(3)), unique=True))
        for position, i in enumerate(positions):
            system = systems[shown_systems[(p + i) % len(shown_systems)]]
            item = lay_item_of(person, sources[i], system, position=position)
            shown = item.shown_text
            # Panel 1 only, panels 1 and 2, panel 2 without panel 1 (imported), or nothing at all.
            if data.draw(st.booleans()):
                answers = _answers(data, PANEL_ONE)
                lay_answers.lay_answer_save(item=item, phase="original", answers=answers)
                if answers:  # a panel saved with no answer stores none (one ItemAnswer per answer)
                    saved["original"].append((sources[i].key, answers))
            if data.draw(st.booleans()):
                lay_answers.lay_item_lock_original(item=item)
                answers = _answers(data, PANEL_TWO)
                lay_answers.lay_answer_save(item=item, phase="assisted", answers=answers)
                if answers:
                    saved["assisted"].append((sources[i].key, text_systems[shown.pk], answers))
            if data.draw(st.booleans()):
                order = list(item.preference_order)
                most = data.draw(st.none() | st.lists(st.sampled_from(order), unique=True))
                least = data.draw(st.none() | st.lists(st.sampled_from(order), unique=True))
                lay_answers.lay_preference_save(item=item, most=most, least=least)
                saved["preferences"].append((most or [], least or []))
    for _ in range(data.draw(st.integers(0, 2))):
        radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
        for i, source in enumerate(sources):
            if not data.draw(st.booleans()):
                continue
            expert_answers.expert_item_create(participant=radiologist, source=source, position=i)
            for text in SimplificationText.objects.filter(source=source).order_by("pk"):
                if data.draw(st.booleans()):  # a row of the page left unanswered, or (part of) it
                    aspects = data.draw(st.lists(st.sampled_from(list(scales.EXPERT_ASPECTS)), unique=True))
                    scores = {aspect: data.draw(st.integers(1, 5)) for aspect in aspects}
                    expert_answers.expert_rating_save(participant=radiologist, shown_text=text, scores=scores)
                    saved["ratings"].append((text_systems[text.pk], scores))
            severity = data.draw(st.none() | st.sampled_from(scales.SEVERITY.names))
            simplicity = data.draw(st.none() | st.integers(1, 5))
            expert_answers.expert_source_judgement_save(
                participant=radiologist, source=source, severity=severity, simplicity=simplicity
            )
    saved["text_systems"] = text_systems
    return study, saved


@pytest.mark.heavy
@pytest.mark.django_db
@settings(
    # About 0.5–2 s an example on two busy cores; 300 examples passed when this test was written.
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_partial_answer_set_of_both_flows_is_analysed_from_the_answers_present(data):
    # Each example in a rolled-back savepoint: the next one starts from an empty database.
    with transaction.atomic():
        study, saved = _saved_study(data)
        # The analysis the snapshot task computes (its figures are drawn from this document:
        # test_a_half_answered_lay_page_leaves_the_next_snapshot_with_its_figures).
        analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
        transaction.set_rollback(True)

    _finite_json(analysis)
    reference = saved["reference"]
    original = [answers for _, answers in saved["original"]]
    assert analysis["n"]["lay_answers"] == {
        "original": len(saved["original"]),
        "assisted": len(saved["assisted"]),
    }
    lay = analysis["lay"]["original"]
    assert lay["n"] == len(original)
    for question in ("understanding", "confidence"):
        values = [_code(question, a[question]) for a in original if question in a]
        assert lay[question] == pytest.approx(_mean(values))
        assert analysis["confidence_intervals"]["lay"]["original"][question]["n"] == len(values)
    guessed = [
        (_code("severity_guess", a["severity_guess"]), reference[key])
        for key, a in saved["original"]
        if "severity_guess" in a and reference[key] is not None
    ]
    assert lay["n_severity"] == len(guessed)
    assert lay["severity_accuracy"] == pytest.approx(_mean([float(g == r) for g, r in guessed]))
    assert analysis["confidence_intervals"]["lay"]["original"]["severity_accuracy"]["n"] == len(guessed)

    for system in SYSTEM_KEYS:
        credited = [a for _, systems, a in saved["assisted"] if system in systems]
        column = analysis["lay"][system]
        assert column["n"] == len(credited)
        helpfulness = [_code("helpfulness", a["helpfulness"]) for a in credited if "helpfulness" in a]
        assert column["helpfulness"] == pytest.approx(_mean(helpfulness))
        assert analysis["system_means"]["helpfulness"][system]["n"] == len(helpfulness)
        ratings = [scores for systems, scores in saved["ratings"] if system in systems]
        correctness = [s["correctness"] for s in ratings if "correctness" in s]
        assert analysis["expert"][system]["correctness"] == pytest.approx(_mean(correctness))
        assert analysis["expert"][system]["n"] == sum(1 for s in ratings if s)
        for side, k in (("most", 0), ("least", 1)):
            votes = sum(
                1 for choice in saved["preferences"] for t in choice[k] if system in saved["text_systems"][t]
            )
            assert analysis["preference_details"][side]["votes"][system] == votes


@pytest.mark.django_db
def test_a_system_without_texts_and_a_source_without_simplifications_are_analysed():
    study = build_study(slug="gaps", n_sources=2, systems=("a", "b"))
    source_services.system_upsert(study=study, key="never_generated")
    source_services.source_upsert(study=study, key="s03", text="Sentence 3: no simplification yet.")
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    item = lay_item_of(person, study.sources.get(key="s01"), study.systems.get(key="a"))
    lay_answers.lay_answer_save(item=item, phase="original", answers={"severity_guess": "Critical"})
    lay_answers.lay_preference_save(item=item, most=[item.preference_order[0]])

    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)

    _finite_json(analysis)
    assert analysis["lay"]["never_generated"]["n"] == 0
    assert analysis["expert"]["never_generated"]["n"] == 0
    # s01's reference severity is Critical (build_study): the one guess is a hit.
    assert analysis["lay"]["original"]["severity_accuracy"] == 1.0
    assert analysis["lay"]["original"]["understanding"] is None
    assert sum(analysis["preference_details"]["most"]["votes"].values()) == 1
    assert sum(analysis["preference_details"]["least"]["votes"].values()) == 0


# --- the property on planted controls and error spans --------------------------------------------


def _control_study():
    from generation.services.controls import study_controls_plant
    from studies.error_span_services import study_error_spans_add

    study = build_study(slug="partial-controls", n_sources=4, systems=("a", "b", "c"))
    study_controls_plant(study=study, rate=0.25, seed=2)
    study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    return study


@pytest.mark.heavy
@pytest.mark.django_db
@settings(
    # About 2–4 s an example on two busy cores.
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_partial_answer_set_on_controls_and_spans_gives_the_reliability_of_the_answers_present(
    data, client
):
    """Radiologists answer any part of their pages, planted rows included: any subset of the
    aspects, and each row's error-span widget posting nothing, "" , "[]" or one mark (on the
    planted change or away from it). The reliability records count the controls with a score
    and the share of them whose planted change was marked, as a hand count of what was posted says;
    the progress page answers."""
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from annotation.models import PlantedControl
    from annotation.selectors import participant_label
    from evaluation.analysis.planted_control_scores import RELIABILITY_ASPECTS, study_rater_reliability
    from surveys.radiologist import assignment, pages

    with transaction.atomic():
        study = _control_study()
        controls = {c.text: c for c in PlantedControl.objects.filter(study=study).select_related("degrades")}
        expected: dict[str, dict] = {}
        for seed in range(data.draw(st.integers(1, 2))):
            person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
            Participant.objects.filter(pk=person.pk).update(order_seed=seed + 1)
            person.refresh_from_db()
            planted_hits: dict[int, bool] = {}  # control id: its planted change marked
            real_scored: set[str] = set()
            for item in assignment.expert_items_ensure(participant=person):
                page = pages.expert_page_get(item=item)
                answered: dict[str, str] = {}
                for row in page.texts:
                    aspects = data.draw(st.lists(st.sampled_from([c.key for c in row.aspects]), unique=True))
                    answered |= {f"{row.label}-{a}": str(data.draw(st.integers(1, 5))) for a in aspects}
                    control = controls.get(row.text)
                    marks = data.draw(st.sampled_from(["absent", "", "[]", "on", "away"]))
                    hit = False
                    if marks in ("on", "away") and control is not None and len(row.text) > 1:
                        start = min(control.start, len(row.text) - 1) if marks == "on" else None
                        if marks == "away":
                            # A one-character mark away from the planted change, where the text allows.
                            free = [
                                i for i in range(len(row.text)) if i + 1 < control.start or i > control.end
                            ]
                            start = free[0] if free else None
                        if start is not None:
                            hit = marks == "on"
                            mark = {"start": start, "end": start + 1}
                            mark |= {"category": "unexplained_jargon", "severity": "minor"}
                            answered[f"{row.label}-error_spans"] = json.dumps([mark])
                    elif marks != "absent":
                        answered[f"{row.label}-error_spans"] = marks if marks in ("", "[]") else "[]"
                    if any(a in RELIABILITY_ASPECTS for a in aspects):
                        if control is None:
                            real_scored.add(row.text)
                        else:
                            planted_hits[control.pk] = hit
                pages.expert_page_save(participant=person, item=item, data=answered)
            paired = [c for c in controls.values() if c.pk in planted_hits and c.degrades.text in real_scored]
            if paired:  # a rater has a record once one control and its original are scored
                label = participant_label(person.pseudonym, person.pk)
                expected[label] = {"paired": len(paired), "hits": list(planted_hits.values())}
        rows = study_rater_reliability(study=study)
        client.force_login(get_user_model().objects.create_superuser("partial-spans", password="pw"))
        status = client.get(reverse("evaluation:study-progress", args=[study.slug])).status_code
        transaction.set_rollback(True)

    assert status == 200
    assert {row["participant"] for row in rows} == set(expected)
    for row in rows:
        want = expected[row["participant"]]
        assert row["n_planted"] == want["paired"]
        assert row["span_found"] == pytest.approx(sum(want["hits"]) / len(want["hits"]))
