"""Database constraints and the answer services' idempotency."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation import answer_writes, participant_services
from annotation.answer_store import flow_instrument_id
from annotation.models import (
    ItemAnswer,
    Participant,
    PlantedControl,
    Simplification,
    SimplificationText,
    Source,
)
from studies import source_services
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return build_study(slug="unit", n_sources=2, shared=((0, "cot_bs", "cot_sc"),))


@pytest.fixture
def radiologist(study):
    return participant_services.participant_create(study=study, role="radiologist")


@pytest.fixture
def layperson(study):
    return participant_services.participant_create(study=study, role="layperson")


def test_identical_texts_share_one_row(study):
    first = Source.objects.get(study=study, key="s01")
    second = Source.objects.get(study=study, key="s02")
    assert SimplificationText.objects.filter(source=first).count() == 3
    assert SimplificationText.objects.filter(source=second).count() == 4
    bs = Simplification.objects.get(source=first, system__key="cot_bs")
    sc = Simplification.objects.get(source=first, system__key="cot_sc")
    assert bs.shown_text_id == sc.shown_text_id


def test_whitespace_differences_are_the_same_text(study):
    source = Source.objects.get(study=study, key="s02")
    a = source_services.simplification_text_get_or_create(source=source, text="Two  small\nspots. ")
    b = source_services.simplification_text_get_or_create(source=source, text=" Two small spots.")
    assert a.pk == b.pk


def test_changing_a_text_removes_the_orphan(study):
    source = Source.objects.get(study=study, key="s02")
    system = study.systems.get(key="plain_bs")
    old = Simplification.objects.get(source=source, system=system).shown_text_id
    source_services.simplification_upsert(source=source, system=system, text="A brand new text.")
    assert not SimplificationText.objects.filter(pk=old).exists()


def test_token_has_at_least_128_bits(layperson, study):
    other = participant_services.participant_create(study=study, role="layperson")
    assert len(layperson.token) >= 43  # 32 bytes url-safe base64
    assert layperson.token != other.token
    assert layperson.pseudonym != other.pseudonym


def test_expert_rating_is_idempotent_and_partial(study, radiologist):
    text = SimplificationText.objects.filter(source__study=study).first()
    expert_answers.expert_rating_save(
        participant=radiologist, shown_text=text, scores={"correctness": 4}, time_spent_ms=500
    )
    expert_answers.expert_rating_save(
        participant=radiologist, shown_text=text, scores={"correctness": 5, "structure": 3}, time_spent_ms=250
    )
    rating = answers.rating()
    assert (rating.correctness, rating.structure, rating.completeness) == (5, 3, None)
    assert rating.time_spent_ms == 750
    assert not rating.is_complete


@pytest.mark.parametrize("value", [0, 6, "x", "4.5", None])
def test_expert_rating_rejects_out_of_range(study, radiologist, value):
    text = SimplificationText.objects.filter(source__study=study).first()
    if value is None:
        with pytest.raises(ValidationError):
            expert_answers.expert_rating_save(
                participant=radiologist, shown_text=text, scores={"harmfulness": 3}
            )
    else:
        with pytest.raises(ValidationError):
            expert_answers.expert_rating_save(
                participant=radiologist, shown_text=text, scores={"correctness": value}
            )
    assert answers.ratings() == []


def test_expert_rating_refuses_laypeople_and_other_studies(study, layperson, radiologist):
    other = build_study(slug="other", n_sources=1)
    foreign_text = SimplificationText.objects.filter(source__study=other).first()
    own_text = SimplificationText.objects.filter(source__study=study).first()
    with pytest.raises(ValidationError):
        expert_answers.expert_rating_save(
            participant=radiologist, shown_text=foreign_text, scores={"correctness": 3}
        )
    with pytest.raises(ValidationError):
        expert_answers.expert_rating_save(
            participant=layperson, shown_text=own_text, scores={"correctness": 3}
        )


def _answer(participant, text, **fields) -> ItemAnswer:
    instrument = flow_instrument_id(study=participant.study, flow="expert")
    return ItemAnswer.objects.create(
        participant=participant,
        instrument_id=instrument,
        source=text.source,
        shown_text=text,
        **{"item_key": "correctness", "value": 3, "score": 3.0, **fields},
    )


def test_database_refuses_a_second_answer_to_one_item_and_target(study, radiologist):
    text = SimplificationText.objects.filter(source__study=study).first()
    _answer(radiologist, text)
    with pytest.raises(IntegrityError), transaction.atomic():
        _answer(radiologist, text, value=4, score=4.0)


def test_database_refuses_unknown_phases_and_a_control_with_a_text(study, layperson, radiologist):
    text = SimplificationText.objects.filter(source__study=study).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        _answer(radiologist, text, phase="panel 4")
    control = PlantedControl.objects.create(
        study=study,
        degrades=text,
        kind="negation",
        text="x",
        start=0,
        end=1,
        original_start=0,
        original_end=1,
        category="c",
        severity="s",
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        _answer(radiologist, text, control=control)
    with pytest.raises(IntegrityError), transaction.atomic():
        Source.objects.filter(pk=text.source_id).update(reference_severity="Terrible")


def test_source_judgement_idempotent(study, radiologist):
    source = Source.objects.get(study=study, key="s01")
    expert_answers.expert_source_judgement_save(participant=radiologist, source=source, severity="Mild")
    expert_answers.expert_source_judgement_save(participant=radiologist, source=source, simplicity=2)
    expert_answers.expert_source_judgement_save(participant=radiologist, source=source, severity="Serious")
    judgement = answers.judgement()
    assert (judgement.severity, judgement.simplicity) == ("Serious", 2)
    with pytest.raises(ValidationError):
        expert_answers.expert_source_judgement_save(participant=radiologist, source=source, severity="Fatal")


def test_lay_answers_idempotent_locked_and_validated(study, layperson):
    source = Source.objects.get(study=study, key="s01")
    item = lay_answers.lay_item_create(
        participant=layperson,
        source=source,
        position=0,
        shown_text=source.texts.first(),
        assigned_system=None,
    )
    lay_answers.lay_answer_save(
        item=item, phase="original", answers={"understanding": "Not at all"}, time_spent_ms=10
    )
    lay_answers.lay_answer_save(
        item=item,
        phase="original",
        answers={"understanding": "Most of it", "severity_guess": "Mild"},
        time_spent_ms=5,
    )
    answer = answers.lay_answer(item, "original")
    assert (answer.understanding, answer.severity_guess, answer.time_spent_ms) == ("Most of it", "Mild", 15)
    with pytest.raises(ValidationError):
        lay_answers.lay_answer_save(item=item, phase="original", answers={"helpfulness": "It did not help"})
    with pytest.raises(ValidationError):
        lay_answers.lay_answer_save(item=item, phase="assisted", answers={"confidence": "Very"})
    lay_answers.lay_item_lock_original(item=item)
    with pytest.raises(answer_writes.AnswerLocked):
        lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    # Re-sending the same value (a double submit) is not a change and is accepted.
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Most of it"})
    assert answers.lay_answer(item, "original").understanding == "Most of it"
    lay_answers.lay_answer_save(
        item=item, phase="assisted", answers={"helpfulness": "I understand much better"}
    )
    assert len(answers.lay_answers(item=item)) == 2


def test_lay_preference_sets_and_foreign_texts(study, layperson):
    source = Source.objects.get(study=study, key="s01")
    item = lay_answers.lay_item_create(
        participant=layperson,
        source=source,
        position=0,
        shown_text=source.texts.first(),
        assigned_system=None,
    )
    assert sorted(item.preference_order) == sorted(source.texts.values_list("pk", flat=True))
    a, b = item.preference_order[:2]
    lay_answers.lay_preference_save(item=item, most=[a, b], most_justification="clear")
    lay_answers.lay_preference_save(item=item, least=[b], most=[a])
    preference = answers.preference(item)
    assert sorted(preference.most) == [a]
    assert sorted(preference.least) == [b]
    assert preference.most_justification == "clear"
    foreign = SimplificationText.objects.filter(source__key="s02", source__study=study).first()
    with pytest.raises(ValidationError):
        lay_answers.lay_preference_save(item=item, most=[foreign.pk])


def test_external_id_unique_per_study(study):
    participant_services.participant_create(study=study, role="layperson", external_id="PID1")
    with pytest.raises(IntegrityError), transaction.atomic():
        participant_services.participant_create(study=study, role="layperson", external_id="PID1")
    other = build_study(slug="other2", n_sources=1)
    participant_services.participant_create(study=other, role="layperson", external_id="PID1")
    assert Participant.objects.filter(external_id="PID1").count() == 2


def test_source_positions_are_stable_on_update(study):
    source_services.source_upsert(study=study, key="s01", text="Updated text.")
    new = source_services.source_upsert(study=study, key="s99", text="New one.")
    assert Source.objects.get(study=study, key="s01").position == 0
    assert new.position == 2
