"""surveys/radiologist/ (assignment, pages, progress): page assignment, page reading and saving,
completeness, progress, resume, timing; and the default texts of annotation/protocol_texts.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection

from annotation import participant_services, protocol_texts, scales
from annotation.models import (
    ExpertItem,
    Participant,
    SimplificationText,
)
from studies import source_services
from surveys.radiologist import assignment, pages
from surveys.radiologist import selectors as progress
from surveys.radiologist import services as expert_answers
from tests.annotation import answers
from tests.annotation.factories import build_study
from tests.annotation.row_locks import study_row_held

pytestmark = pytest.mark.django_db


def radiologist(study, seed: int = 7) -> Participant:
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    participant.order_seed = seed
    participant.save(update_fields=["order_seed"])
    return participant


def full_answers(page: pages.ExpertPage, value: int = 4, severity: str = "Mild") -> dict[str, str]:
    data = {"original-severity": severity, "original-simplicity": "3"}
    for row in page.texts:
        for cell in row.aspects:
            data[cell.field] = str(value)
    return data


def first_page(participant: Participant) -> pages.ExpertPage:
    item = assignment.expert_items_ensure(participant=participant)[0]
    return pages.expert_page_get(item=item)


# --- labels and texts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("index", "label"), [(0, "A"), (1, "B"), (25, "Z"), (26, "AA"), (27, "AB"), (701, "ZZ"), (702, "AAA")]
)
def test_text_label_is_spreadsheet_style(index, label):
    assert pages.text_label(index) == label


def test_default_expert_instructions_hold_the_whole_rubric_and_severity_scale():
    text = protocol_texts.EXPERT_INSTRUCTIONS_DEFAULT
    assert [a.key for a in protocol_texts.EXPERT_ASPECTS] == list(scales.EXPERT_ASPECTS)
    for definition in scales.EXPERT_ASPECTS.values():
        assert definition in text
    for level in scales.SEVERITY.levels:
        assert f"{level.name}: {level.definition}" in text
    assert "1 - strongly disagree, 2 - disagree, 3 - neutral, 4 - agree, 5 - strongly agree" in text
    assert "Findings of ACL 2024" in protocol_texts.PROTOCOL_CITATION


def test_default_lay_texts_describe_the_three_panels_and_severity_levels():
    assert "agree" in protocol_texts.LAY_CONSENT_DEFAULT.lower()
    for intro in protocol_texts.LAY_PANEL_INTROS.values():
        assert intro in protocol_texts.LAY_INSTRUCTIONS_DEFAULT
    for level in scales.SEVERITY.levels:
        assert level.definition in protocol_texts.LAY_INSTRUCTIONS_DEFAULT


# --- page assignment ---------------------------------------------------------------------------


def test_every_source_gets_one_page_in_a_seeded_order_and_a_second_visit_adds_nothing():
    study = build_study(n_sources=6)
    participant = radiologist(study, seed=11)
    items = assignment.expert_items_ensure(participant=participant)
    assert sorted(i.source_id for i in items) == sorted(study.sources.values_list("pk", flat=True))
    assert [i.position for i in items] == [1, 2, 3, 4, 5, 6]
    again = assignment.expert_items_ensure(participant=participant)
    assert [i.pk for i in again] == [i.pk for i in items]
    assert ExpertItem.objects.filter(participant=participant).count() == 6

    order = [i.source_id for i in items]
    ExpertItem.objects.filter(participant=participant).delete()
    assert [i.source_id for i in assignment.expert_items_ensure(participant=participant)] == order

    other = radiologist(study, seed=12)
    other_order = [i.source_id for i in assignment.expert_items_ensure(participant=other)]
    assert sorted(other_order) == sorted(order)
    assert other_order != order  # seeds 11 and 12 give different permutations of 6 sources


@pytest.mark.django_db(transaction=True)
def test_a_first_visit_locks_its_participant_not_the_study():
    """Radiologists opening their links together must not queue behind one another: a first visit
    locks the participant's row alone. (Locked through the participant's default ordering, it took
    the study's row too, and 20 first visits at once waited 224 ms each on PostgreSQL.)"""
    if connection.vendor != "postgresql":
        pytest.skip("needs row locks held by another connection")
    study = build_study(n_sources=3)
    participant = radiologist(study, seed=1)
    with study_row_held(study):
        assignment.expert_pages_prepare(participant=participant)
    assert ExpertItem.objects.filter(participant=participant).count() == 3


def test_configured_subset_is_deterministic_per_participant():
    study = build_study(n_sources=6)
    study.expert_sources_per_participant = 2
    study.save()
    participant = radiologist(study, seed=5)
    items = assignment.expert_items_ensure(participant=participant)
    assert len(items) == 2
    chosen = [i.source_id for i in items]
    ExpertItem.objects.filter(participant=participant).delete()
    assert [i.source_id for i in assignment.expert_items_ensure(participant=participant)] == chosen
    assert progress.expert_progress(participant=participant) == progress.Progress(done=0, total=2)


def test_a_source_added_later_is_appended_as_a_new_last_page():
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = assignment.expert_items_ensure(participant=participant)
    new = source_services.source_upsert(study=study, key="late", text="A late sentence.")
    items = assignment.expert_items_ensure(participant=participant)
    assert [i.position for i in items] == [1, 2, 3]
    assert items[-1].source_id == new.pk


def test_a_page_shows_each_distinct_text_once_under_blind_labels():
    study = build_study(n_sources=1, shared=((0, "plain_bs", "cot_bs"),))
    page = first_page(radiologist(study))
    assert [row.label for row in page.texts] == ["A", "B", "C"]
    distinct = set(SimplificationText.objects.filter(source=page.source).values_list("text", flat=True))
    assert {row.text for row in page.texts} == distinct
    assert [c.key for c in page.texts[0].aspects] == list(scales.EXPERT_ASPECTS)


def test_a_layperson_gets_no_rating_pages():
    study = build_study(n_sources=1)
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    with pytest.raises(ValidationError):
        assignment.expert_items_ensure(participant=lay)
    assert not ExpertItem.objects.exists()


def test_a_deleted_text_is_skipped_and_the_other_labels_keep_their_letters():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = assignment.expert_items_ensure(participant=participant)[0]
    item.text_order = [item.text_order[0], 10**9, item.text_order[1]]
    item.save()
    page = pages.expert_page_get(item=item)
    assert [row.label for row in page.texts] == ["A", "C"]


# --- saving, completeness, progress, resume ----------------------------------------------------------


def test_page_is_complete_only_when_every_aspect_severity_and_simplicity_are_given():
    study = build_study(n_sources=2)
    participant = radiologist(study)
    page = first_page(participant)
    item = page.item
    data = full_answers(page)
    del data["A-structure"]
    page = pages.expert_page_save(participant=participant, item=item, data=data)
    assert page.missing == ["A-structure"]
    item.refresh_from_db()
    assert item.completed_at is None

    page = pages.expert_page_save(participant=participant, item=item, data={"A-structure": "2"})
    assert page.complete  # no justification needed
    item.refresh_from_db()
    assert item.completed_at is not None
    assert progress.expert_progress(participant=participant) == progress.Progress(done=1, total=2)
    participant.refresh_from_db()
    assert participant.completed_at is None  # one page still to go


def test_severity_and_simplicity_of_the_original_are_both_required():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    data = full_answers(page)
    del data["original-simplicity"]
    assert pages.expert_page_save(participant=participant, item=page.item, data=data).missing == [
        "original-simplicity"
    ]


def test_resume_goes_to_the_first_incomplete_page_and_the_last_page_completes_the_survey():
    study = build_study(n_sources=3)
    participant = radiologist(study)
    items = assignment.expert_items_ensure(participant=participant)
    assert progress.expert_resume_item(participant=participant) == items[0]
    for item in (items[0], items[2]):
        page = pages.expert_page_get(item=item)
        pages.expert_page_save(participant=participant, item=item, data=full_answers(page))
    assert progress.expert_resume_item(participant=participant) == items[1]
    assert [e.complete for e in progress.expert_index(participant=participant)] == [True, False, True]
    participant.refresh_from_db()
    assert participant.completed_at is None

    page = pages.expert_page_get(item=items[1])
    pages.expert_page_save(participant=participant, item=items[1], data=full_answers(page))
    assert progress.expert_resume_item(participant=participant) is None
    participant.refresh_from_db()
    assert participant.completed_at is not None


def test_saving_twice_updates_the_one_row():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    pages.expert_page_save(participant=participant, item=page.item, data={"A-correctness": "2"})
    pages.expert_page_save(participant=participant, item=page.item, data={"A-correctness": "5"})
    pages.expert_page_save(participant=participant, item=page.item, data={"original-severity": "Mild"})
    pages.expert_page_save(participant=participant, item=page.item, data={"original-severity": "Serious"})
    assert answers.rating().correctness == 5
    assert answers.judgement().severity == "Serious"


@pytest.mark.parametrize("bad", ["0", "6", "x", "2.5", "-1"])
def test_an_out_of_range_value_saves_nothing_not_even_the_valid_fields_beside_it(bad):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    data = full_answers(page)
    data["B-hallucination"] = bad
    with pytest.raises(ValidationError) as caught:
        pages.expert_page_save(participant=participant, item=page.item, data=data, time_spent_ms=500)
    assert list(caught.value.message_dict) == ["B-hallucination"]
    assert not answers.ratings()
    assert not answers.judgements()
    page.item.refresh_from_db()
    assert page.item.time_spent_ms == 0


@pytest.mark.parametrize(
    "field",
    ["Z-correctness", "A-fluency", "original-structure", "garbage", "A-B-correctness"],
)
def test_a_field_that_is_not_a_question_on_the_page_is_refused(field):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    with pytest.raises(ValidationError) as caught:
        pages.expert_page_save(
            participant=participant, item=page.item, data={field: "3", "A-correctness": "3"}
        )
    assert field in caught.value.message_dict
    assert not answers.ratings()


def test_a_text_of_another_source_cannot_be_reached_by_its_id():
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = assignment.expert_items_ensure(participant=participant)
    other_text = items[1].text_order[0]
    with pytest.raises(ValidationError):
        pages.expert_page_save(
            participant=participant, item=items[0], data={f"{other_text}-correctness": "3"}
        )
    assert not answers.ratings()


def test_a_severity_that_is_not_a_level_is_refused():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    with pytest.raises(ValidationError) as caught:
        pages.expert_page_save(participant=participant, item=page.item, data={"original-severity": "Fatal"})
    assert list(caught.value.message_dict) == ["original-severity"]
    assert not answers.judgements()


def test_another_participants_page_is_refused():
    study = build_study(n_sources=1)
    owner, intruder = radiologist(study, 1), radiologist(study, 2)
    page = first_page(owner)
    with pytest.raises(ValidationError):
        pages.expert_page_save(participant=intruder, item=page.item, data={"A-correctness": "3"})
    assert not answers.ratings()


def test_empty_values_never_clear_an_answer_and_an_empty_justification_creates_no_row():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    pages.expert_page_save(
        participant=participant,
        item=page.item,
        data={"A-comment": "", "original-comment": "", "B-correctness": ""},
    )
    assert not answers.ratings()
    assert not answers.judgements()

    pages.expert_page_save(
        participant=participant, item=page.item, data={"A-correctness": "4", "A-comment": "ok"}
    )
    pages.expert_page_save(
        participant=participant, item=page.item, data={"A-correctness": "", "A-comment": ""}
    )
    rating = answers.rating()
    assert (rating.correctness, rating.comment) == (4, "")  # a justification can be deleted, a score cannot


def test_a_row_written_outside_the_page_lock_is_updated_not_duplicated_nor_lost():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    text = SimplificationText.objects.get(pk=page.item.text_order[0])
    # Another writer stored this row after the page was read: the page save believed there was none.
    expert_answers.expert_rating_save(
        participant=participant, shown_text=text, scores={"structure": 2}, time_spent_ms=300
    )
    expert_answers.expert_rating_save(
        participant=participant, shown_text=text, scores={"correctness": 5}, time_spent_ms=100, current={}
    )
    rating = answers.rating()
    # Nothing duplicated nor lost; the second save's time goes to the item it wrote.
    assert (rating.correctness, rating.structure, rating.time_spent_ms) == (5, 2, 400)


def test_a_save_that_completes_a_page_returns_the_surveys_progress_and_the_pages_number():
    study = build_study(n_sources=3)
    participant = radiologist(study)
    items = assignment.expert_items_ensure(participant=participant)
    page = pages.expert_page_save(
        participant=participant, item=items[1], data=full_answers(pages.expert_page_get(item=items[1]))
    )
    assert page.complete and page.number == 2
    assert (page.progress.done, page.progress.total) == (1, 3)
    counted = ExpertItem.objects.filter(participant=participant, completed_at__isnull=False).count()
    assert counted == page.progress.done
    # Saves that leave every page's completion as it was change neither: none is counted.
    page = pages.expert_page_save(participant=participant, item=items[1], data={"A-correctness": "3"})
    assert page.complete and page.progress is None and page.number is None
    page = pages.expert_page_save(participant=participant, item=items[0], data={"A-correctness": "3"})
    assert not page.complete and page.progress is None


def test_time_goes_to_the_page_and_to_the_row_an_autosave_answers():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    page = first_page(participant)
    pages.expert_page_save(
        participant=participant, item=page.item, data={"A-correctness": "4"}, time_spent_ms=1500
    )
    pages.expert_page_save(
        participant=participant,
        item=page.item,
        data={"A-completeness": "4", "original-severity": "Mild"},
        time_spent_ms=700,
    )
    page.item.refresh_from_db()
    assert page.item.time_spent_ms == 2200
    assert answers.rating().time_spent_ms == 1500  # the two-row save went to the page only


def test_a_page_shows_only_its_own_raters_answers():
    study = build_study(n_sources=1)
    first, second = radiologist(study, 1), radiologist(study, 2)
    page = first_page(first)
    pages.expert_page_save(participant=first, item=page.item, data=full_answers(page))
    other = first_page(second)
    assert all(cell.value is None for row in other.texts for cell in row.aspects)
    assert other.severity.value is None and len(other.missing) == 4 * 5 + 2


def test_completion_mark_follows_the_answers():
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = assignment.expert_items_ensure(participant=participant)[0]
    pages.expert_item_mark_completion(item=item, complete=True)
    first_mark = ExpertItem.objects.get(pk=item.pk).completed_at
    assert first_mark is not None
    pages.expert_item_mark_completion(item=item, complete=True)
    assert ExpertItem.objects.get(pk=item.pk).completed_at == first_mark
    pages.expert_item_mark_completion(item=item, complete=False)
    assert ExpertItem.objects.get(pk=item.pk).completed_at is None


# --- timing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1500", 1500),
        (1500, 1500),
        ("12.7", 12),
        ("-5", 0),
        ("x", 0),
        (None, 0),
        ("", 0),
        ("inf", 0),
        (str(10**12), pages.MAX_INTERVAL_MS),
    ],
)
def test_client_elapsed_ms_is_clamped_and_never_fails(raw, expected):
    assert pages.elapsed_ms_clean(raw) == expected


def test_the_signed_page_stamp_times_a_page_without_javascript():
    study = build_study(n_sources=2)
    participant = radiologist(study)
    first, second = assignment.expert_items_ensure(participant=participant)
    stamp = pages.page_stamp(item=first, now=1000.0)
    assert pages.page_stamp_elapsed_ms(item=first, stamp=stamp, now=1012.5) == 12500
    assert pages.page_stamp_elapsed_ms(item=second, stamp=stamp, now=1012.5) == 0  # another page's stamp
    assert pages.page_stamp_elapsed_ms(item=first, stamp=stamp + "x", now=1012.5) == 0  # tampered
    assert pages.page_stamp_elapsed_ms(item=first, stamp=stamp, now=999.0) == 0
    assert pages.page_stamp_elapsed_ms(item=first, stamp=stamp, now=1000.0 + 86400) == pages.MAX_INTERVAL_MS


# --- radiologists with accounts ------------------------------------------------------------------------


def test_participations_list_only_the_users_own_radiologist_roles():
    user_model = get_user_model()
    alice, bob = user_model.objects.create_user("alice"), user_model.objects.create_user("bob")
    one, two = build_study(slug="one", n_sources=2), build_study(slug="two", n_sources=3)
    mine = participant_services.participant_create(study=one, role=Participant.Role.RADIOLOGIST, user=alice)
    participant_services.participant_create(study=two, role=Participant.Role.LAYPERSON, user=alice)
    participant_services.participant_create(study=two, role=Participant.Role.RADIOLOGIST, user=bob)
    listed = progress.expert_participations(user=alice)
    assert [(p.pk, standing) for p, standing in listed] == [(mine.pk, progress.Progress(done=0, total=2))]
