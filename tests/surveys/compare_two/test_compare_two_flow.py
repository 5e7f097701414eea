from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import participant_services
from annotation.models import PairwiseTask, Participant, StudyInstrument
from measures.stats.pairwise import preferences_to_pairs
from surveys.compare_two.assignment import Candidate, pairwise_plan
from surveys.compare_two.selectors import derived_comparisons, pairwise_comparisons
from surveys.compare_two.services import (
    pairwise_answer_save,
    pairwise_consent_accept,
    pairwise_instrument_attach,
    pairwise_tasks_prepare,
)
from surveys.lay import services as lay_answers
from tests.annotation import answers
from tests.annotation.factories import build_study

SYSTEMS = ("a", "b", "c")


def test_the_plan_balances_the_pairs_across_participants_and_randomises_sides():
    sources = [
        (s, [Candidate(10 * s + i, key, 10 * s + i) for i, key in enumerate(SYSTEMS)]) for s in range(6)
    ]
    shown = Counter()
    sides = Counter()
    for p in range(30):
        plan = pairwise_plan(sources=sources, participant_index=p, seed=1000 + p)
        assert sorted(pair.source for pair in plan) == list(range(6))
        for pair in plan:
            systems = (SYSTEMS[pair.left % 10], SYSTEMS[pair.right % 10])
            shown[(pair.source, frozenset(systems))] += 1
            sides[systems[0]] += 1
        assert plan == pairwise_plan(sources=sources, participant_index=p, seed=1000 + p)
    # Over 30 participants each of the 3 pairs is shown 10 times per source; each system 60 times.
    assert set(shown.values()) == {10}
    assert 40 < sides["a"] < 80 and sum(sides.values()) == 180


def test_two_systems_with_the_same_text_are_never_paired():
    sources = [(1, [Candidate(1, "a", 7), Candidate(2, "b", 7), Candidate(3, "c", 8)])]
    for p in range(6):
        (pair,) = pairwise_plan(sources=sources, participant_index=p, seed=p)
        assert 3 in (pair.left, pair.right)
    assert (
        pairwise_plan(
            sources=[(1, [Candidate(1, "a", 7), Candidate(2, "b", 7)])], participant_index=0, seed=0
        )
        == []
    )


@pytest.fixture
def study(db):
    study = build_study(slug="pw", n_sources=4, systems=SYSTEMS)
    pairwise_instrument_attach(study=study)
    return study


def test_attach_is_idempotent_and_the_tasks_are_drawn_once(study):
    instrument = pairwise_instrument_attach(study=study)
    assert StudyInstrument.objects.filter(study=study, flow="pairwise").count() == 1
    assert study.activity.filter(verb="instrument.attached").count() == 1
    person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    first = pairwise_tasks_prepare(participant=person, instrument=instrument)
    again = pairwise_tasks_prepare(participant=person, instrument=instrument)
    assert [t.pk for t in first] == [t.pk for t in again] and len(first) == 4
    assert PairwiseTask.objects.filter(participant=person).count() == 4


def _task(study):
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    instrument = StudyInstrument.objects.get(study=study, flow="pairwise")
    pairwise_tasks_prepare(participant=person, instrument=instrument)
    return person, PairwiseTask.objects.select_related(
        "instrument", "participant__study", "left", "right"
    ).filter(participant=person)


def test_an_answer_is_stored_as_an_item_answer_and_changing_it_updates_it(study):
    person, tasks = _task(study)
    task = tasks[0]
    pairwise_answer_save(task=task, choice="left", reason="  clearer  ")
    answer = pairwise_answer_save(task=task, choice="neither", reason="")
    stored = answers.item_answers().get(participant=person)
    assert stored.pk == answer.pk
    assert stored.value == {"choice": "neither", "reason": ""}
    assert stored.shown_text_id == task.left.shown_text_id
    assert stored.reference_text_id == task.right.shown_text_id
    assert stored.item_key == "preference" and stored.language == "en"


def test_a_bad_choice_is_a_named_error_and_writes_nothing(study):
    _, tasks = _task(study)
    with pytest.raises(ValidationError) as error:
        pairwise_answer_save(task=tasks[0], choice="better")
    assert error.value.message_dict["choice"] == ["Please choose one of the answers."]
    with pytest.raises(ValidationError) as error:
        pairwise_answer_save(task=tasks[0], choice="tie", reason="x" * 2001)
    assert error.value.message_dict["reason"] == ["The reason is too long: at most 2000 characters."]
    assert "reason" in error.value.message_dict
    assert not answers.item_answers().exists()


def test_the_views_walk_through_the_pages_and_refuse_bad_input_with_a_4xx(client, study):
    person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    response = client.get(reverse("surveys:entry", args=[person.token]))
    assert response.url == reverse("surveys:pairwise-start", args=[person.token])
    response = client.get(response.url)
    assert response.url == reverse("surveys:pairwise-consent", args=[person.token])
    response = client.post(response.url, {"choice": "accept"})
    response = client.get(response.url)
    task_url = response.url
    page = client.get(task_url)
    assert page.status_code == 200
    assert b"Neither is acceptable" in page.content and b"Comparison 1 of 4" in page.content
    bad = client.post(task_url, {"choice": "better"})
    assert bad.status_code == 422 and b"Please choose one of the answers." in bad.content
    assert client.post(task_url, {}).status_code == 422
    for _ in range(4):
        response = client.post(
            client.get(reverse("surveys:pairwise-start", args=[person.token])).url, {"choice": "tie"}
        )
        assert response.status_code == 302
    done = client.get(reverse("surveys:pairwise-start", args=[person.token]))
    assert done.url == reverse("surveys:pairwise-done", args=[person.token])
    assert client.get(done.url).status_code == 200
    person.refresh_from_db()
    assert person.completed_at is not None
    other = pairwise_consent_accept(
        participant=participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    )
    foreign = client.get(task_url.replace(person.token, other.token))
    assert foreign.status_code == 404


def test_consent_comes_before_the_first_comparison_and_declining_is_recorded(client, study):
    study.expert_consent_text = "Our own consent text for radiologists."
    study.save(update_fields=["expert_consent_text"])
    person = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    start = reverse("surveys:pairwise-start", args=[person.token])
    consent = reverse("surveys:pairwise-consent", args=[person.token])
    assert client.get(start).url == consent
    page = client.get(consent)
    html = page.content.decode()
    assert page.status_code == 200 and "Our own consent text for radiologists." in html
    assert "I agree, continue" in html
    # Nothing is drawn or recorded before consent; no page and no answer can be reached.
    assert not PairwiseTask.objects.filter(participant=person).exists()
    person.refresh_from_db()
    assert person.consented_at is None and person.started_at is None
    assert client.get(reverse("surveys:pairwise-done", args=[person.token])).url == consent
    # A page of someone else's (drawn for them) is not answerable by this participant either way.
    other = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    pairwise_consent_accept(participant=other)
    (task, *_) = pairwise_tasks_prepare(
        participant=other, instrument=StudyInstrument.objects.get(study=study, flow="pairwise")
    )
    own_url = reverse("surveys:pairwise-task", args=[person.token, task.pk])
    assert client.get(own_url).url == consent
    refused = client.post(own_url, {"choice": "tie"})
    assert refused.status_code == 409 and b"Please read and agree" in refused.content
    assert not answers.item_answers().exists()

    declined = client.post(consent, {"choice": "decline"})
    assert declined.status_code == 200 and b"You chose not to take part" in declined.content
    person.refresh_from_db()
    assert person.declined_at is not None and person.consented_at is None
    assert client.get(start).url == consent  # declined: back to the information, not the pages

    # A layperson with no study text sees radlay's default, which describes this task.
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    html = client.get(reverse("surveys:pairwise-consent", args=[lay.token])).content.decode()
    assert "two simpler versions of it, side by side" in html
    agreed = client.post(reverse("surveys:pairwise-consent", args=[lay.token]), {"choice": "accept"})
    assert agreed.url == reverse("surveys:pairwise-start", args=[lay.token])
    lay.refresh_from_db()
    assert lay.consented_at is not None and lay.declined_at is None and lay.last_activity_at is not None
    first = client.get(reverse("surveys:pairwise-start", args=[lay.token]))
    assert "/compare/" in first.url


def test_the_selector_reads_every_answer_in_one_query(study, django_assert_num_queries):
    for choice in ("left", "right", "tie"):
        person, tasks = _task(study)
        for task in tasks:
            pairwise_answer_save(task=task, choice=choice)
    with django_assert_num_queries(1):
        comparisons = pairwise_comparisons(study=study)
    assert len(comparisons) == 12
    stored = {
        (a.participant_id, a.shown_text_id, a.reference_text_id): a.value["choice"]
        for a in answers.item_answers().all()
    }
    for task in PairwiseTask.objects.select_related("participant", "source", "left__system", "right__system"):
        match = [
            c for c in comparisons if c.rater == task.participant.pseudonym and c.source == task.source.key
        ]
        assert len(match) == 1
        assert (match[0].left, match[0].right) == (task.left.system.key, task.right.system.key)
        assert (
            match[0].outcome
            == stored[(task.participant_id, task.left.shown_text_id, task.right.shown_text_id)]
        )
        assert match[0].left_length > 0


def test_lay_preferences_become_derived_comparisons(db):
    from tests.annotation.factories import lay_item_of

    study = build_study(slug="lay-derived", n_sources=1, systems=SYSTEMS)
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    source = study.sources.get()
    item = lay_item_of(person, source, study.systems.get(key="a"))
    texts = {
        s.system.key: s.shown_text for s in source.simplifications.select_related("system", "shown_text")
    }
    item.preference_order = [texts[k].pk for k in SYSTEMS]
    item.save(update_fields=["preference_order"])
    lay_answers.lay_preference_save(item=item, most=[texts["b"].pk], least=[texts["c"].pk])
    derived = derived_comparisons(study=study)
    expected = preferences_to_pairs(["b"], ["c"], list(SYSTEMS))
    assert sorted((c.left, c.right) for c in derived) == sorted((c.left, c.right) for c in expected)
    assert all(c.derived and c.rater == person.pseudonym and c.source == source.key for c in derived)


def test_a_text_ticked_both_most_and_least_counts_as_neither(db):
    from annotation.answer_store import Target, answers_upsert, flow_instrument_id
    from tests.annotation.factories import lay_item_of

    study = build_study(slug="lay-both", n_sources=1, systems=SYSTEMS)
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    source = study.sources.get()
    item = lay_item_of(person, source, study.systems.get(key="a"))
    texts = {
        s.system.key: s.shown_text for s in source.simplifications.select_related("system", "shown_text")
    }
    item.preference_order = []  # no stored order: all texts
    item.save(update_fields=["preference_order"])
    # Stored as an import may hold them (two systems' identical texts are one text).
    answers_upsert(
        participant=person,
        instrument_id=flow_instrument_id(study=study, flow="lay"),
        target=Target(source_id=source.pk, phase="preference"),
        values={
            "most": (sorted(str(texts[k].pk) for k in "ab"), None),
            "least": ([str(texts["b"].pk)], None),
        },
    )
    derived = derived_comparisons(study=study)
    assert sorted((c.left, c.right) for c in derived) == [("a", "b"), ("a", "c")]
