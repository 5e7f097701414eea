"""The lay survey's modules (surveys/lay/): row handout and backfill, item creation, the safety
gate, stage transitions and the panel-1 lock, the next step, attention checks, progress,
recruitment-link participants and completion."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import Http404
from django.utils import timezone

from annotation import answer_writes, participant_services
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    LayItem,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    System,
)
from evaluation import progress
from surveys import survey_page
from surveys.lay import assignment, entry, panels, steps
from surveys.lay import selectors as design
from surveys.lay import services as lay_answers
from surveys.lay.errors import LayFlowError, PanelClosed, PreferenceConflict, StudyNotReady
from surveys.radiologist import services as expert_answers
from tests.annotation import answers
from tests.annotation.factories import build_study
from tests.annotation.row_locks import study_row_held

pytestmark = pytest.mark.django_db
LAY = Participant.Role.LAYPERSON
PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}
PANEL2 = {
    "understanding": "Most of it",
    "confidence": "With high confidence",
    "severity_guess": "Moderate",
    "helpfulness": "I understand much better",
}


def _lay(study, **kwargs) -> Participant:
    participant = participant_services.participant_create(study=study, role=LAY, **kwargs)
    return participant_services.participant_consent(participant=participant, accepted=True)


def _started(study, **kwargs) -> Participant:
    participant = _lay(study, **kwargs)
    assignment.lay_survey_start(participant=participant)
    participant.refresh_from_db()
    return participant


def _save(item: LayItem, panel: str, data, **kwargs):
    return panels.lay_panel_save(
        participant=item.participant, item_id=item.pk, panel=panel, data=data, **kwargs
    )


def _items(participant) -> list[LayItem]:
    return list(LayItem.objects.filter(participant=participant).order_by("position"))


def _to_panel_3(item: LayItem) -> None:
    """Answer and submit panels 1 and 2 of `item` (refreshed: it is then in panel 3, or done)."""
    _save(item, "original", data=PANEL1, submit=True)
    item.refresh_from_db()
    panels.lay_panel_open(item=item, panel="assisted")
    _save(item, "assisted", data=PANEL2, submit=True)
    item.refresh_from_db()


def _panel_3_item() -> LayItem:
    """The item of a one-sentence study's layperson, at panel 3."""
    item = _items(_started(build_study(n_sources=1)))[0]
    _to_panel_3(item)
    return item


def _finish_item(item: LayItem) -> None:
    _to_panel_3(item)
    if item.stage == "preference":
        first, last = item.preference_order[0], item.preference_order[-1]
        _save(
            item,
            "preference",
            submit=True,
            data={"fields": ["most", "least"], "most": [str(first)], "least": [str(last)]},
        )


def _complete(participant) -> Participant:
    for item in _items(participant):
        _finish_item(item)
    entry.lay_survey_complete(participant=participant)
    participant.refresh_from_db()
    return participant


def _system_index(study) -> dict[int, int]:
    return {
        pk: j
        for j, pk in enumerate(
            System.objects.filter(study=study).order_by("position").values_list("pk", flat=True)
        )
    }


# --- Start: rows and items ------------------------------------------------------------------------


def test_start_creates_items_by_the_latin_square():
    study = build_study(n_sources=5)
    participants = [_started(study) for _ in range(5)]
    assert [p.latin_square_row for p in participants] == [0, 1, 2, 3, 0]
    systems = _system_index(study)
    for participant in participants:
        items = _items(participant)
        assert [i.position for i in items] == list(range(5))
        assert sorted(i.source.position for i in items) == list(range(5))
        for item in items:
            expected = (participant.latin_square_row + item.source.position) % 4
            assert systems[item.assigned_system_id] == expected
            simplification = Simplification.objects.get(source=item.source, system=item.assigned_system)
            assert item.shown_text_id == simplification.shown_text_id
            own_texts = set(
                SimplificationText.objects.filter(source=item.source).values_list("pk", flat=True)
            )
            assert sorted(item.preference_order) == sorted(own_texts) and len(own_texts) == 4


def test_display_order_is_random_per_participant_and_reproducible():
    study = build_study(n_sources=8, systems=("a", "b"))
    orders = {tuple(i.source.position for i in _items(_started(study))) for _ in range(6)}
    assert len(orders) > 1  # six identical shuffles of 8 sources: chance 1 / 8!^5
    participant = _started(study)
    again = assignment.lay_survey_start(participant=participant)  # idempotent
    assert [i.pk for i in again] == [i.pk for i in _items(participant)]
    assert LayItem.objects.filter(participant=participant).count() == 8


def test_start_requires_consent():
    study = build_study()
    participant = participant_services.participant_create(study=study, role=LAY)
    with pytest.raises(LayFlowError):
        assignment.lay_survey_start(participant=participant)
    assert not LayItem.objects.filter(participant=participant).exists()


def test_abandoned_and_returned_rows_are_reused_first_and_answers_kept():
    study = build_study(n_sources=4)
    study.abandon_after_minutes = 60
    study.save()
    p = [_started(study) for _ in range(4)]
    _finish_item(_items(p[1])[0])
    answers_before = len(answers.lay_answers(participant=p[1]))
    assert answers_before == 2
    # p1 went quiet two hours ago; p3 returned the study on the recruiter.
    Participant.objects.filter(pk=p[1].pk).update(last_activity_at=timezone.now() - timedelta(hours=2))
    Participant.objects.filter(pk=p[3].pk).update(returned_at=timezone.now())
    newcomer = _started(study)
    assert newcomer.latin_square_row == 1
    assert _started(study).latin_square_row == 3
    assert _started(study).latin_square_row == 0  # then the normal rotation
    p[1].refresh_from_db()
    assert p[1].latin_square_row == 1  # kept: it says where the abandoned participant's items came from
    assert len(answers.lay_answers(participant=p[1])) == answers_before
    assert design.participant_is_abandoned(participant=p[1])
    assert progress.participant_status(participant=p[1], started=True) == "abandoned"


def test_completed_participants_keep_their_row_even_when_idle():
    study = build_study(n_sources=2, systems=("a", "b"))
    first = _complete(_started(study))
    Participant.objects.filter(pk=first.pk).update(last_activity_at=timezone.now() - timedelta(days=3))
    first.refresh_from_db()
    assert not design.participant_is_abandoned(participant=first)
    assert _started(study).latin_square_row == 1


def test_sources_per_participant_rotates_a_subset():
    study = build_study(n_sources=4)
    study.lay_sources_per_participant = 2
    study.save()
    seen = []
    for _ in range(8):
        participant = _started(study)
        items = _items(participant)
        assert len(items) == 2
        seen.append(sorted(i.source.position for i in items))
    assert seen[:4] == [[0, 1]] * 4 and seen[4:] == [[2, 3]] * 4
    assert progress.latin_square_balance(study=study).period == 8


def test_identical_texts_are_shown_once_and_credited_to_every_system():
    study = build_study(n_sources=2, systems=("a", "b", "c"), shared=((0, "a", "b"),))
    source = Source.objects.get(study=study, position=0)
    shared = Simplification.objects.get(source=source, system__key="a").shown_text_id
    participants = [_started(study) for _ in range(3)]
    for participant in participants:
        item = LayItem.objects.get(participant=participant, source=source)
        assert len(item.preference_order) == 2 and shared in item.preference_order
        for earlier in _items(participant)[: item.position + 1]:  # the survey's order
            _finish_item(earlier)
    # Row 1 was assigned system b, which shows the text it shares with a.
    item_b = LayItem.objects.get(participant=participants[1], source=source)
    assert item_b.assigned_system.key == "b" and item_b.shown_text_id == shared
    balance = progress.latin_square_balance(study=study)
    systems = {s.key: s.pk for s in balance.systems}
    assert balance.cells[(source.pk, systems["a"])].answered == 1
    assert balance.cells[(source.pk, systems["a"])].shared == 1  # b's answer on the same text
    assert balance.cells[(source.pk, systems["b"])].shared == 1
    assert balance.cells[(source.pk, systems["c"])].shared == 0


# --- Safety gate ------------------------------------------------------------------------------------


def _rate(study, source, system_key, *, hallucination=5, correctness=5, comment="", pseudonym="R001"):
    expert = Participant.objects.filter(
        study=study, pseudonym=pseudonym
    ).first() or participant_services.participant_create(
        study=study, role=Participant.Role.RADIOLOGIST, pseudonym=pseudonym
    )
    text = Simplification.objects.get(source=source, system__key=system_key).shown_text
    expert_answers.expert_rating_save(
        participant=expert,
        shown_text=text,
        comment=comment,
        scores={"hallucination": hallucination, "correctness": correctness},
    )
    return text


def test_safety_gate_withholds_low_rated_texts_from_new_participants():
    study = build_study(n_sources=3)
    s0 = Source.objects.get(study=study, position=0)
    bad = _rate(study, s0, "plain_bs", hallucination=1, comment="Says the lesion is cancer.")
    _rate(study, s0, "plain_sc", correctness=3, pseudonym="R002")  # above the threshold (2)
    # Gate off (the default): nothing withheld, but the flag is listed for the researcher.
    assert design.lay_withheld_text_ids(study=study) == set()
    assert [(f.rater, f.aspect, f.score, f.comment) for f in design.lay_safety_flags(study=study)] == [
        ("R001", "hallucination", 1, "Says the lesion is cancer.")
    ]
    study.safety_gate_enabled = True
    study.save()
    assert design.lay_withheld_text_ids(study=study) == {bad.pk}
    participants = [_started(study) for _ in range(4)]
    for participant in participants:
        item = LayItem.objects.get(participant=participant, source=s0)
        assert item.shown_text_id != bad.pk
        assert bad.pk not in item.preference_order and len(item.preference_order) == 3
    # Row 0 would have shown plain_bs for source 0: it gets the next system in row order.
    assert LayItem.objects.get(participant=participants[0], source=s0).assigned_system.key == "plain_sc"
    # Other sources are untouched.
    s1 = Source.objects.get(study=study, position=1)
    assert LayItem.objects.get(participant=participants[0], source=s1).assigned_system.key == "plain_sc"


def test_correctness_at_threshold_is_withheld_too():
    study = build_study(n_sources=1, systems=("a", "b"))
    study.safety_gate_enabled, study.safety_gate_threshold = True, 3
    study.save()
    source = Source.objects.get(study=study)
    text = _rate(study, source, "a", correctness=3)
    assert design.lay_withheld_text_ids(study=study) == {text.pk}
    assert [(f.aspect, f.score) for f in design.lay_safety_flags(study=study)] == [("correctness", 3)]


def test_gate_applies_when_a_started_participant_first_opens_panel_2_and_3():
    study = build_study(n_sources=1, systems=("a", "b", "c"))
    study.safety_gate_enabled = True
    study.save()
    participant = _started(study)  # row 0: system a
    item = _items(participant)[0]
    assert item.assigned_system.key == "a"
    source = item.source
    bad = _rate(study, source, "a", hallucination=2)
    _save(item, "original", data=PANEL1, submit=True)
    item = panels.lay_panel_open(item=LayItem.objects.get(pk=item.pk), panel="assisted")
    assert item.assigned_system.key == "b" and item.shown_text_id != bad.pk
    assert bad.pk not in item.preference_order and len(item.preference_order) == 2
    assert item.original_locked_at is not None


def test_source_with_every_text_withheld_ends_after_panel_1():
    study = build_study(n_sources=2, systems=("a", "b"))
    study.safety_gate_enabled = True
    study.save()
    participant = _started(study)
    item = _items(participant)[0]
    for key in ("a", "b"):
        _rate(study, item.source, key, hallucination=1)
    _save(item, "original", data=PANEL1, submit=True)
    item = panels.lay_panel_open(item=LayItem.objects.get(pk=item.pk), panel="assisted")
    assert item.stage == "done" and item.original_locked_at is None
    # And a newcomer is not shown that source at all.
    newcomer = _started(study)
    assert [i.source.position for i in _items(newcomer)] == [1 - item.source.position]


def test_a_study_with_every_text_withheld_hands_out_no_row():
    study = build_study(n_sources=1, systems=("a", "b"))
    study.safety_gate_enabled = True
    study.save()
    source = Source.objects.get(study=study)
    for key in ("a", "b"):
        _rate(study, source, key, hallucination=1)
    participant = _lay(study)
    with pytest.raises(StudyNotReady):
        assignment.lay_survey_start(participant=participant)
    participant.refresh_from_db()
    assert participant.latin_square_row is None  # the row stays free for when texts are released
    assert not LayItem.objects.filter(participant=participant).exists()


@pytest.mark.django_db(transaction=True)
def test_items_are_made_outside_the_study_lock_and_a_held_row_resumes():
    """Newcomers arriving together queue for the row handout alone (a few queries under the study's
    row lock), not for each other's item inserts (thousands of rows in a study that shows every
    source). A participant whose items were not made after the handout gets them, for their row,
    without touching the study's lock."""
    if connection.vendor != "postgresql":
        pytest.skip("needs row locks held by another connection")
    study = build_study(n_sources=4)
    participant = _lay(study)
    Participant.objects.filter(pk=participant.pk).update(latin_square_row=2)
    with study_row_held(study):
        items = assignment.lay_survey_start(participant=participant)
    systems = _system_index(study)
    assert len(items) == 4
    for item in LayItem.objects.filter(participant=participant).select_related("source"):
        assert systems[item.assigned_system_id] == (2 + item.source.position) % 4
    participant.refresh_from_db()
    assert participant.latin_square_row == 2


# --- Panels, stages, the lock ------------------------------------------------------------------------


def test_panel_1_submit_needs_every_answer_then_moves_on():
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    _save(item, "original", data={"understanding": "Completely"})
    with pytest.raises(ValidationError) as missing:
        _save(item, "original", data={}, submit=True)
    assert set(missing.value.message_dict) == {"confidence", "severity_guess"}
    item.refresh_from_db()
    assert item.stage == "original"
    _save(item, "original", submit=True, data={"confidence": "Not at all", "severity_guess": "Healthy"})
    answer = answers.lay_answer(item, "original")
    assert (answer.understanding, answer.confidence, answer.severity_guess) == (
        "Completely",
        "Not at all",
        "Healthy",
    )
    item.refresh_from_db()
    assert item.stage == "assisted" and item.original_locked_at is None  # locked only when shown


def test_panel_1_is_locked_once_panel_2_is_shown():
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    _save(item, "original", data=PANEL1, submit=True)
    panels.lay_panel_open(item=LayItem.objects.get(pk=item.pk), panel="assisted")
    item.refresh_from_db()
    assert item.original_locked_at is not None
    with pytest.raises(PanelClosed):
        _save(item, "original", data={**PANEL1, "understanding": "Completely"})
    with pytest.raises(answer_writes.AnswerLocked):  # the service refuses as well
        lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    # A retried identical save is harmless.
    _save(item, "original", data=PANEL1)
    assert answers.lay_answer(item, "original").understanding == "Some parts of it"


def test_panel_2_shown_twice_at_once_locks_panel_1_once():
    # Two pages of panel 2 read the item before either locked panel 1 (two tabs): the first
    # locks it with one UPDATE, the second finds nothing to update and reads the item again.
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    _save(item, "original", data=PANEL1, submit=True)
    first, second = LayItem.objects.get(pk=item.pk), LayItem.objects.get(pk=item.pk)
    for stale in (first, second):
        stale.participant = item.participant
    opened = panels.lay_panel_open(item=first, panel="assisted")
    locked_at = LayItem.objects.get(pk=item.pk).original_locked_at
    assert opened.original_locked_at == locked_at is not None
    again = panels.lay_panel_open(item=second, panel="assisted")
    assert again.original_locked_at == locked_at and again.stage == "assisted"
    assert LayItem.objects.get(pk=item.pk).original_locked_at == locked_at


def test_later_panels_cannot_be_answered_early_and_left_panels_not_changed():
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    with pytest.raises(PanelClosed):
        _save(item, "assisted", data=PANEL2)
    _finish_item(item)
    item.refresh_from_db()
    assert item.stage == "done" and item.completed_at is not None
    with pytest.raises(PanelClosed):
        _save(item, "assisted", data={**PANEL2, "helpfulness": "It did not help"})
    assert answers.lay_answer(item, "assisted").helpfulness == "I understand much better"


def test_a_save_out_of_turn_is_refused_and_writes_nothing():
    # The save reads where the participant is in its locking query (steps.lay_item_for_save).
    study = build_study(n_sources=2)
    first = AttentionCheck.objects.create(
        study=study, position=0, prompt="Choose Blue.", options=["Red", "Blue"], expected_answer="Blue"
    )
    middle = AttentionCheck.objects.create(
        study=study, position=1, prompt="Choose Red.", options=["Red", "Blue"], expected_answer="Red"
    )
    participant = _started(study)
    items = _items(participant)
    for item in items:  # a check is due before the first item
        with pytest.raises(PanelClosed, match="current question first"):
            _save(item, "original", data=PANEL1)
    entry.attention_check_answer(participant=participant, check=first, answer="Blue")
    with pytest.raises(PanelClosed, match="current question first"):  # the second item, early
        _save(items[1], "original", data=PANEL1)
    _finish_item(items[0])
    with pytest.raises(PanelClosed, match="current question first"):  # the middle check is due
        _save(items[1], "original", data=PANEL1)
    assert not answers.lay_answers(item=items[1])
    entry.attention_check_answer(participant=participant, check=middle, answer="Red")
    _save(items[1], "original", data=PANEL1)
    assert answers.lay_answer(items[1], "original").understanding == PANEL1["understanding"]
    other = _items(_started(study))[0]
    with pytest.raises(Http404):  # somebody else's item
        panels.lay_panel_save(participant=participant, item_id=other.pk, panel="original", data=PANEL1)


def test_bad_values_and_questions_not_asked_are_refused():
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    for data in (
        {"understanding": "Totally"},
        {"helpfulness": "It did not help"},
        {"urgency_confidence": "Not at all"},
    ):
        with pytest.raises(ValidationError):
            _save(item, "original", data=data)
    assert not [a for a in answers.lay_answers(item=item) if a.understanding or a.helpfulness]


def test_urgency_question_when_the_study_asks_it():
    study = build_study(n_sources=1)
    study.ask_urgency = True
    study.save()
    item = _items(_started(study))[0]
    with pytest.raises(ValidationError) as missing:
        _save(item, "original", data=PANEL1, submit=True)
    assert set(missing.value.message_dict) == {"urgency_confidence"}
    _save(item, "original", data={"urgency_confidence": "With high confidence"}, submit=True)
    assert answers.lay_answer(item, "original").urgency_confidence == "With high confidence"


def test_preference_panel_sets_and_overlap():
    item = _panel_3_item()
    a, b, c, d = item.preference_order
    _save(item, "preference", data={"fields": ["most", "least"], "most": [a, b]})
    with pytest.raises(ValidationError) as both:
        _save(item, "preference", data={"fields": ["most", "least"], "most": [a, b], "least": [b]})
    assert "both" in str(both.value)
    with pytest.raises(ValidationError):  # a text of another source
        _save(item, "preference", data={"fields": ["most"], "most": [a, 999999]})
    with pytest.raises(ValidationError):  # least still empty
        _save(item, "preference", data={"fields": ["most", "least"], "most": [a, b]}, submit=True)
    _save(
        item,
        "preference",
        submit=True,
        data={
            "fields": ["most", "least"],
            "most": [a, b],
            "least": [d],
            "most_justification": " Clear words. ",
            "least_justification": "Too long.",
        },
    )
    preference = answers.preference(item)
    assert set(preference.most) == {a, b}
    assert list(preference.least) == [d]
    assert preference.most_justification == "Clear words." and preference.order_shown == [a, b, c, d]
    item.refresh_from_db()
    assert item.stage == "done"


def test_a_preference_autosave_of_one_question_keeps_the_other_and_refuses_an_overlap():
    """An autosave of one question leaves the other's stored choice; a text liked most cannot
    become least liked that way either: that tick is refused (and named), the rest is stored."""
    item = _panel_3_item()
    a, b, c, _ = item.preference_order
    _save(item, "preference", data={"fields": "most", "most": [a, b]}, time_spent_ms=100)
    _save(item, "preference", data={"fields": "most", "most": [a, c]}, time_spent_ms=100)
    with pytest.raises(PreferenceConflict) as both:
        _save(item, "preference", data={"fields": "least", "least": [c]}, time_spent_ms=100)
    assert "Simplification C cannot be among both" in str(both.value)
    assert both.value.conflicts == {"least": {c: "C"}}
    preference = answers.preference(item)
    assert set(preference.most) == {a, c}
    # The refused tick cost nothing else: the save's time is kept.
    assert not preference.least and preference.time_spent_ms == 300
    _save(item, "preference", data={"fields": "least", "least": [b]}, submit=True)
    preference = answers.preference(item)
    assert set(preference.most) == {a, c}
    assert set(preference.least) == {b}


def _choices(item) -> tuple[set, set]:
    preference = answers.preference(item)
    return set(preference.most), set(preference.least)


def test_an_overlapping_tick_never_costs_the_valid_answers_beside_it():
    """Panel 3's overlapping tick, as the page sends it (both questions on every change): B most, then B
    least (refused: B stays most), then C least (saved, B least still refused), then the submit:
    Q5 = {B}, Q6 = {C}; the submit with the refused tick does not move on and names it, the next
    one does."""
    item = _panel_3_item()
    a, b, c, _ = item.preference_order
    both = {"fields": ["most", "least"]}
    _save(item, "preference", data={**both, "most": [b]})
    with pytest.raises(PreferenceConflict) as refused:
        _save(item, "preference", data={**both, "most": [b], "least": [b]})
    assert refused.value.conflicts == {"least": {b: "B"}}
    assert "your tick for B in Q6 (least liked) was not saved (B stays in Q5" in str(refused.value)
    assert _choices(item) == ({b}, set())
    with pytest.raises(PreferenceConflict):
        _save(item, "preference", data={**both, "most": [b], "least": [b, c]})
    assert _choices(item) == ({b}, {c})  # C as least is saved beside the refused B
    with pytest.raises(PreferenceConflict) as on_submit:
        _save(item, "preference", submit=True, data={**both, "most": [b], "least": [b, c]})
    assert set(on_submit.value.message_dict) == {"least"}  # nothing is reported missing
    item.refresh_from_db()
    assert item.stage == "preference" and _choices(item) == ({b}, {c})
    _save(item, "preference", submit=True, data={**both, "most": [b], "least": [c]})
    item.refresh_from_db()
    assert item.stage == "done" and _choices(item) == ({b}, {c})


def test_the_stored_tick_wins_whichever_question_came_first_and_a_fresh_pair_is_refused_in_both():
    item = _panel_3_item()
    a, b, c, d = item.preference_order
    both = {"fields": ["most", "least"]}
    _save(item, "preference", data={**both, "least": [a]})
    with pytest.raises(PreferenceConflict) as least_first:
        _save(item, "preference", data={**both, "most": [a, b], "least": [a]})
    assert least_first.value.conflicts == {"most": {a: "A"}}
    assert _choices(item) == ({b}, {a})
    # Ticked in both at once (one plain POST): nothing says which was meant, so neither is stored.
    with pytest.raises(PreferenceConflict) as fresh:
        _save(item, "preference", data={**both, "most": [b, d], "least": [a, d]})
    assert fresh.value.conflicts == {"most": {d: "D"}, "least": {d: "D"}}
    assert "please choose one" in str(fresh.value)
    assert _choices(item) == ({b}, {a})
    # Unticking B as most makes B as least valid: the same page state is then stored whole.
    _save(item, "preference", data={**both, "most": [], "least": [a, b]})
    assert _choices(item) == (set(), {a, b})


def test_preference_overlap_rule_keeps_the_stored_tick():
    from surveys.lay.services import preference_overlap_refused

    assert preference_overlap_refused(
        stored={"most": {1}, "least": {2}}, wanted={"most": {1, 2, 3}, "least": {1, 2, 3, 4}}
    ) == {"most": {2, 3}, "least": {1, 3}}
    assert preference_overlap_refused(
        stored={"most": set(), "least": set()}, wanted={"most": {1}, "least": {2}}
    ) == {
        "most": set(),
        "least": set(),
    }


def test_single_distinct_text_skips_panel_3():
    study = build_study(n_sources=1, systems=("a", "b"), shared=((0, "a", "b"),))
    item = _items(_started(study))[0]
    assert design.lay_item_panels(item=item) == ("original", "assisted")
    _finish_item(item)
    item.refresh_from_db()
    assert item.stage == "done" and not answers.preferences(item=item)


def test_time_spent_is_added_per_panel():
    study = build_study(n_sources=1)
    item = _items(_started(study))[0]
    _save(item, "original", data={"understanding": "Completely"}, time_spent_ms=1200)
    _save(item, "original", data={"confidence": "Not at all"}, time_spent_ms=800)
    assert answers.lay_answer(item, "original").time_spent_ms == 2000
    assert survey_page.elapsed_ms_clean("-5") == 0 and survey_page.elapsed_ms_clean("abc") == 0
    assert survey_page.elapsed_ms_clean(10**12) == survey_page.MAX_INTERVAL_MS
    stamp = panels.panel_stamp(item=item, panel="original", now=1000.0)

    def elapsed(panel, data):
        return panels.panel_elapsed_ms(item_id=item.pk, panel=panel, data=data, now=1004.5)

    assert elapsed("original", {"rendered_at": stamp}) == 4500  # a plain POST: the time since rendering
    assert elapsed("assisted", {"rendered_at": stamp}) == 0  # another panel's stamp
    assert elapsed("original", {"rendered_at": stamp + "x"}) == 0  # a forged stamp
    # An autosave's own interval counts, but never more than the page has been open.
    assert elapsed("original", {"rendered_at": stamp, "elapsed_ms": "1200"}) == 1200
    assert elapsed("original", {"rendered_at": stamp, "elapsed_ms": str(30 * 60 * 1000)}) == 4500
    assert elapsed("original", {"elapsed_ms": "1200"}) == 0  # no render stamp: nothing to vouch for it


# --- Steps, attention checks, progress, completion -------------------------------------------------------


def test_steps_with_attention_checks_and_progress():
    study = build_study(n_sources=2)
    first = AttentionCheck.objects.create(
        study=study, position=0, prompt="Choose Blue.", options=["Red", "Blue"], expected_answer="Blue"
    )
    middle = AttentionCheck.objects.create(
        study=study, position=1, prompt="Type the word seven.", options=[], expected_answer="seven"
    )
    participant = _started(study)
    items = _items(participant)
    step = steps.lay_next_step(participant=participant)
    assert step.kind == "check" and step.check == first
    bar = steps.lay_progress(participant=participant, step=step)
    assert (bar.done, bar.total) == (0, 2 + 2 * 3)
    entry.attention_check_answer(participant=participant, check=first, answer="Red")
    step = steps.lay_next_step(participant=participant)
    assert (step.kind, step.item, step.panel) == ("item", items[0], "original")
    _finish_item(items[0])
    assert steps.lay_next_step(participant=participant).check == middle
    entry.attention_check_answer(participant=participant, check=middle, answer="  SEVEN ")
    step = steps.lay_next_step(participant=participant)
    assert step.item == items[1]
    bar = steps.lay_progress(participant=participant, step=step)
    assert (bar.done, bar.item_number, bar.panel_number, bar.panels_total) == (5, 2, 1, 3)
    with pytest.raises(LayFlowError):
        entry.lay_survey_complete(participant=participant)
    _finish_item(items[1])
    assert steps.lay_next_step(participant=participant).kind == "complete"
    responses = dict(
        AttentionCheckResponse.objects.filter(participant=participant).values_list(
            "check_item__position", "passed"
        )
    )
    assert responses == {0: False, 1: True}
    entry.lay_survey_complete(participant=participant)
    participant.refresh_from_db()
    assert participant.completed_at is not None
    report = progress.study_progress(study=study)
    assert [(c.answered, c.failed) for c in report.checks] == [(1, 1), (1, 0)]
    assert [(f.participant, f.prompt) for f in report.failures] == [(participant.pseudonym, first.prompt)]


def test_attention_check_validation():
    study = build_study(n_sources=1)
    check = AttentionCheck.objects.create(
        study=study, position=0, prompt="?", options=["Yes", "No"], expected_answer="No"
    )
    participant = _started(study)
    with pytest.raises(ValidationError):
        entry.attention_check_answer(participant=participant, check=check, answer="Maybe")
    with pytest.raises(ValidationError):
        entry.attention_check_answer(participant=participant, check=check, answer="")
    other = build_study(slug="other", n_sources=1)
    with pytest.raises(ValidationError):
        entry.attention_check_answer(participant=_lay(other), check=check, answer="No")
    assert not AttentionCheckResponse.objects.exists()


def test_completion_url_keeps_prolific_urls_and_fills_code_placeholder():
    study = build_study(n_sources=1)
    participant = _lay(study)
    assert entry.lay_completion_url(participant=participant) == ""
    study.completion_redirect_url = "https://app.prolific.com/submissions/complete?cc=C1A2B3"
    study.save()
    participant.refresh_from_db()
    assert entry.lay_completion_url(participant=participant) == study.completion_redirect_url
    study.completion_redirect_url = "https://example.org/done?code={code}"
    study.save()
    participant.refresh_from_db()
    assert entry.lay_completion_url(participant=participant) == (
        f"https://example.org/done?code={participant.completion_code}"
    )


# --- Recruitment links and background -------------------------------------------------------------


def test_join_same_pid_resumes_the_same_participant():
    study = build_study(n_sources=1)
    recruitment = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "S1", "SESSION_ID": "X1"}
    first = entry.lay_participant_join(study=study, recruitment=recruitment)
    again = entry.lay_participant_join(study=study, recruitment={**recruitment, "SESSION_ID": "X2"})
    assert first.pk == again.pk
    assert first.external_id == recruitment["PROLIFIC_PID"] and first.recruitment == recruitment
    assert Participant.objects.filter(study=study).count() == 1


def test_join_race_loser_rereads_the_winner(monkeypatch):
    study = build_study(n_sources=1)
    pid = "PID_RACE"
    real_lookup = entry.lay_join_existing
    lookups = []

    def racing_lookup(**kwargs):
        lookups.append(kwargs)
        if len(lookups) == 1:  # the other request inserts the same PID just after our lookup
            participant_services.participant_create(study=study, role=LAY, external_id=pid, pseudonym="L900")
            return None
        return real_lookup(**kwargs)

    monkeypatch.setattr(entry, "lay_join_existing", racing_lookup)
    participant = entry.lay_participant_join(study=study, recruitment={"PROLIFIC_PID": pid})
    assert participant.pseudonym == "L900" and len(lookups) == 2
    assert Participant.objects.filter(study=study, external_id=pid).count() == 1


def test_recruitment_params_are_checked():
    assert entry.recruitment_clean({"PROLIFIC_PID": " abc ", "OTHER": "x"}) == {"PROLIFIC_PID": "abc"}
    for bad in ("a b", "<script>", "x" * 201):
        with pytest.raises(ValidationError):
            entry.recruitment_clean({"PROLIFIC_PID": bad})


def test_background_questions():
    study = build_study(n_sources=1)
    study.background_questions = [
        {"key": "age", "question": "Your age group?", "options": ["18-29", "30-49", "50+"]},
        {"key": "job", "question": "Your occupation?"},
        {"question": "no key: skipped"},
    ]
    study.save()
    participant = _lay(study)
    assert [q.key for q in design.lay_background_questions(study=study)] == ["age", "job"]
    assert design.lay_background_pending(participant=participant)
    with pytest.raises(ValidationError):
        entry.lay_background_save(participant=participant, data={"age": "12"})
    entry.lay_background_save(participant=participant, data={"age": "30-49"})
    participant.refresh_from_db()
    assert participant.background == {"age": "30-49", "job": ""}
    assert not design.lay_background_pending(participant=participant)
