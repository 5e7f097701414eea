"""Planted controls: planting (generation/services/controls.py), mixing into
radiologists' pages and routing their answers (surveys/radiologist/controls.py, pages.py)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.models import (
    AnswerRevision,
    ExpertItem,
    Participant,
    PlantedControl,
    SimplificationText,
)
from generation.controls import plant_control
from generation.services.controls import study_controls_plant
from instruments.schema import AppliesTo, Item, ItemKind, Option
from surveys.radiologist import assignment, pages
from surveys.radiologist import controls as planted
from tests.annotation import answers
from tests.annotation.factories import ACTIONABILITY, build_study, instrument_with

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def radiologist(study, seed: int) -> Participant:
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    Participant.objects.filter(pk=participant.pk).update(order_seed=seed)
    participant.refresh_from_db()
    return participant


def controlled_study(slug: str, *, n_sources: int = 10, rate: float = 0.2):
    study = build_study(slug=slug, n_sources=n_sources, systems=("a", "b", "c", "d"))
    return study, study_controls_plant(study=study, rate=rate, seed=3)


# --- planting --------------------------------------------------------------------------------------


def test_planting_reaches_the_rate_deterministically_and_idempotently():
    study, result = controlled_study("plant-rate")
    assert (result.texts, result.wanted, result.planted, result.changed) == (40, 10, 10, True)
    assert result.share == pytest.approx(0.2)
    rows = list(
        PlantedControl.objects.filter(study=study).values_list("degrades_id", "kind", "text", "start", "end")
    )
    # Each control is plant_control's degraded copy of the text it names, with its span.
    for control in PlantedControl.objects.filter(study=study).select_related("degrades__source"):
        expected = plant_control(
            control.degrades.text, source=control.degrades.source.text, kind=control.kind, seed=3
        )
        assert expected is not None and (control.text, control.start, control.end, control.category) == (
            expected.text,
            expected.start,
            expected.end,
            expected.category,
        )
    again = study_controls_plant(study=study, rate=0.2, seed=3)
    assert not again.changed
    assert (
        list(
            PlantedControl.objects.filter(study=study).values_list(
                "degrades_id", "kind", "text", "start", "end"
            )
        )
        == rows
    )
    # The same plan on a twin study whose rows have other ids: the same texts (by content) and kinds.
    build_study(slug="plant-rate-offset", n_sources=3)
    twin, _ = controlled_study("plant-rate-twin")
    assert [
        (c.degrades.text, c.kind, c.text)
        for c in PlantedControl.objects.filter(study=twin).order_by(
            "degrades__source__position", "degrades__text"
        )
    ] == [
        (c.degrades.text, c.kind, c.text)
        for c in PlantedControl.objects.filter(study=study).order_by(
            "degrades__source__position", "degrades__text"
        )
    ]


@pytest.mark.parametrize("rate", [-0.1, 0.6, "x"])
def test_a_bad_rate_is_refused_by_name(rate):
    study = build_study(slug="plant-bad", n_sources=2)
    with pytest.raises(ValidationError) as caught:
        study_controls_plant(study=study, rate=rate)
    assert "rate" in caught.value.message_dict


def test_controls_cannot_change_once_pages_exist_but_planting_again_is_harmless():
    study, _ = controlled_study("plant-late", n_sources=4)
    assignment.expert_items_ensure(participant=radiologist(study, 1))
    assert not study_controls_plant(study=study, rate=0.2, seed=3).changed
    with pytest.raises(ValidationError, match="plant controls before"):
        study_controls_plant(study=study, rate=0.3, seed=3)
    assert PlantedControl.objects.filter(study=study).count() == 4


def test_the_command_plants_and_reports(capsys):
    study = build_study(slug="plant-cmd", n_sources=5)
    call_command("plant_controls", "--study", "plant-cmd", "--rate", "0.2")
    assert "planted 5 controls among 20 texts" in capsys.readouterr().out
    assert study.planted_controls.count() == 5
    call_command("plant_controls", "--study", "plant-cmd", "--rate", "0.2")
    assert "unchanged" in capsys.readouterr().out
    with pytest.raises(CommandError, match="rate"):
        call_command("plant_controls", "--study", "plant-cmd", "--rate", "0.9")


# --- mixing ----------------------------------------------------------------------------------------


def test_controls_join_their_sources_pages_at_places_drawn_per_participant():
    study, _ = controlled_study("plant-mix")
    first, second = radiologist(study, 11), radiologist(study, 12)
    by_source = planted.source_controls(study.sources.values_list("pk", flat=True))
    slots = {}
    for participant in (first, second):
        for item in assignment.expert_items_ensure(participant=participant):
            assert sorted(c for _, c in item.control_slots) == by_source.get(item.source_id, [])
            assert len(item.text_order) == 4
            slots[(participant.pk, item.source_id)] = item.control_slots
    # Stable: drawn again from the participant's seed, the same places.
    for (participant_id, source_id), placed in slots.items():
        participant = Participant.objects.get(pk=participant_id)
        assert (
            planted.control_slots(
                participant=participant,
                source_id=source_id,
                n_real=4,
                control_ids=by_source.get(source_id, []),
            )
            == placed
        )
    # Different radiologists get different places (over the study's ten controls).
    assert [slots[(first.pk, s)] for s in by_source] != [slots[(second.pk, s)] for s in by_source]
    # At the study's rate: a fifth of the rows a radiologist rates are planted.
    total_rows = sum(
        len(i.text_order) + len(i.control_slots) for i in ExpertItem.objects.filter(participant=first)
    )
    assert sum(
        len(i.control_slots) for i in ExpertItem.objects.filter(participant=first)
    ) / total_rows == pytest.approx(0.2)


def _page_with_control(study, seed: int = 11):
    participant = radiologist(study, seed)
    for item in assignment.expert_items_ensure(participant=participant):
        if item.control_slots:
            return participant, item
    raise AssertionError("no page with a control")


def _control_label(item: ExpertItem) -> tuple[str, PlantedControl]:
    (index, control_id), *_ = item.control_slots
    return pages.text_label(index), PlantedControl.objects.get(pk=control_id)


def test_a_control_row_is_a_row_like_the_others_and_the_html_does_not_tell(client):
    study, _ = controlled_study("plant-html")
    participant, item = _page_with_control(study)
    label, control = _control_label(item)
    page = pages.expert_page_get(item=item)
    assert [row.label for row in page.texts] == [pages.text_label(i) for i in range(5)]
    assert next(row for row in page.texts if row.label == label).text == control.text
    assert len(page.missing) == 5 * 5 + 2  # the control's five aspects are asked like any row's
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    html = client.get(reverse("surveys:expert-page", args=[participant.token, item.pk])).content.decode()
    assert control.text in html
    lowered = html.lower()
    assert (
        "control" not in lowered.replace("controls", "")
        and "planted" not in lowered
        and "degrad" not in lowered
    )
    assert str(control.pk) not in re.findall(r'(?:name|id|data-[a-z-]+)="([^"]*)"', html)
    # Every card has the same markup but for its label and text.
    cards = re.findall(r'<section class="card block simplification".*?</section>', html, re.S)
    shapes = set()
    for card, row in zip(cards, page.texts, strict=True):
        shape = card.replace(row.text, "TEXT")
        shape = re.sub(rf"\b{row.label}\b", "L", shape)
        shapes.add(shape)
    assert len(cards) == 5 and len(shapes) == 1


def test_a_control_rows_answers_go_to_their_own_store_and_complete_the_page(client):
    study, _ = controlled_study("plant-save")
    participant, item = _page_with_control(study)
    label, control = _control_label(item)
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    response = client.post(url, {f"{label}-correctness": "2", "elapsed_ms": "500"}, **HTMX)
    assert response.status_code == 200
    answer = answers.control_answers(participant=participant, control=control)[0]
    assert answer.scores == {"correctness": 2} and answer.time_spent_ms == 500
    assert not answers.ratings(participant=participant)
    client.post(url, {f"{label}-correctness": "1", f"{label}-comment": "Wrong."}, **HTMX)
    answer = answers.control_answers(participant=participant, control=control)[0]
    revisions = AnswerRevision.objects.filter(participant=participant).count()
    assert (answer.scores, answer.comment, revisions) == ({"correctness": 1}, "Wrong.", 1)
    # Refusals as on a real row: nothing of the request is saved.
    real_label = next(r.label for r in pages.expert_page_get(item=item).texts if r.label != label)
    response = client.post(url, {f"{label}-completeness": "9", f"{real_label}-correctness": "4"}, **HTMX)
    assert (
        response.status_code == 400
        and "completeness must be a whole number from 1 to 5" in response.content.decode()
    )
    assert not answers.ratings(participant=participant)
    answer = answers.control_answers(participant=participant, control=control)[0]
    assert "completeness" not in answer.scores
    # A whole page: real rows rated, the control's answers about the control; the page is then complete.
    page = pages.expert_page_get(item=item)
    data = {"original-severity": "Mild", "original-simplicity": "3"}
    data |= {cell.field: "4" for row in page.texts for cell in row.aspects}
    client.post(url, data)
    item.refresh_from_db()
    assert item.completed_at is not None
    assert len(answers.ratings(participant=participant)) == 4
    assert {r.source_id for r in answers.ratings(participant=participant)} == {item.source_id}
    answer = answers.control_answers(participant=participant, control=control)[0]
    assert answer.scores == dict.fromkeys(
        ("correctness", "completeness", "hallucination", "structure", "simplicity"), 4
    )
    # Shown back after a reload.
    html = client.get(url).content.decode()
    assert f'name="{label}-correctness" value="4" data-key="4" checked' in html


def test_a_row_of_another_page_and_a_foreign_control_are_refused():
    study, _ = controlled_study("plant-foreign")
    participant, item = _page_with_control(study)
    other_study, _ = controlled_study("plant-foreign-2")
    foreign = PlantedControl.objects.filter(study=other_study).first()
    with pytest.raises(ValidationError, match="another study"):
        planted.control_answer_save(participant=participant, control=foreign, scores={"correctness": 3})
    with pytest.raises(ValidationError, match="no such simplification"):
        planted.control_of(-foreign.pk, item)
    with pytest.raises(ValidationError, match="no simplification Z"):
        pages.expert_page_save(participant=participant, item=item, data={"Z-correctness": "3"})


SPANS = Item(
    key="errors",
    kind=ItemKind.ERROR_SPANS,
    applies_to=AppliesTo.SIMPLIFICATION,
    roles=("radiologist",),
    wording={"en": "Mark the errors."},
    required=False,
    options=(Option(key="wrong_finding_or_location", label={"en": "Wrong finding"}),),
    severities=(Option(key="could_harm", label={"en": "Could harm"}),),
)


def test_added_items_on_a_control_row_are_checked_and_kept_with_the_control():
    study, _ = controlled_study("plant-added")
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_radiologist", ACTIONABILITY), actor=None
    )
    study.refresh_from_db()
    participant, item = _page_with_control(study)
    label, control = _control_label(item)
    pages.expert_page_save(participant=participant, item=item, data={f"{label}-actionability": "2"})
    assert not answers.item_answers().filter(control__isnull=True).exists()
    assert answers.control_answers(control=control)[0].added == {"actionability": 2}
    page = pages.expert_page_get(item=item)
    row = next(r for r in page.texts if r.label == label)
    assert row.added[0].value == 2
    with pytest.raises(ValidationError) as caught:
        pages.expert_page_save(participant=participant, item=item, data={f"{label}-actionability": "7"})
    assert f"{label}-actionability" in caught.value.message_dict


def test_error_spans_on_a_control_are_checked_against_the_controls_text():
    study, _ = controlled_study("plant-spans")
    participant, item = _page_with_control(study)
    _, control = _control_label(item)
    span = {
        "start": control.start,
        "end": control.end,
        "category": "wrong_finding_or_location",
        "severity": "could_harm",
    }
    answer = planted.control_answer_save(participant=participant, control=control, added=[(SPANS, [span])])
    assert answer.added == {"errors": [span]}
    too_long = {**span, "end": len(control.text) + 1}
    with pytest.raises(ValidationError, match="after the text's"):
        planted.control_answer_save(
            participant=participant, control=control, added=[(SPANS, json.dumps([too_long]))]
        )
    assert SimplificationText.objects.filter(text=control.text).count() == 0  # never a text of the study


def test_the_study_admin_action_asks_the_rate_then_plants(client):
    from django.contrib.auth import get_user_model

    study = build_study(slug="plant-admin", n_sources=5)
    user = get_user_model().objects.create_user(
        "plant-admin", password="pw", is_staff=True, is_superuser=True
    )
    client.force_login(user)
    url = reverse("admin:annotation_study_changelist")
    chosen = {"action": "plant_controls", "_selected_action": [study.pk]}
    page = client.post(url, chosen)
    assert page.status_code == 200 and 'name="rate"' in page.content.decode()
    assert not study.planted_controls.exists()
    refused = client.post(url, {**chosen, "rate": "0.9", "seed": "0"})
    assert refused.status_code == 200 and "less than or equal to 0.5" in refused.content.decode()
    done = client.post(url, {**chosen, "rate": "0.2", "seed": "0"}, follow=True)
    assert "5 controls among 20 texts" in done.content.decode()
    assert study.planted_controls.count() == 5
    assert study.activity.filter(verb="planted controls").exists()


def test_a_page_shows_only_controls_of_its_own_source():
    """A page's control_slots are ids in JSON, not foreign keys: one naming a control of another
    source (a page brought in by a study archive) is neither shown nor answerable."""
    study, _ = controlled_study("plant-own-source")
    participant, item = _page_with_control(study)
    stranger = PlantedControl.objects.filter(study=study).exclude(degrades__source=item.source_id).first()
    ExpertItem.objects.filter(pk=item.pk).update(control_slots=[*item.control_slots, [0, stranger.pk]])
    item.refresh_from_db()
    page = pages.expert_page_get(item=item)
    assert stranger.text not in [row.text for row in page.texts]
    assert len(page.texts) == 4 + len(item.control_slots) - 1
    with pytest.raises(ValidationError, match="no such simplification"):
        planted.control_of(planted.row_key(stranger.pk), item)


def test_a_page_with_a_control_finished_without_marks_stores_no_error_marked_on_its_real_texts_only():
    """Finishing a page stores "no error marked" on its clean real texts (the span rates count
    them); a planted control left unmarked is simply not caught, nothing of it enters ItemAnswer."""
    from studies.error_span_services import study_error_spans_add

    study, _ = controlled_study("plant-clean")
    study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    participant, item = _page_with_control(study)
    label, control = _control_label(item)
    page = pages.expert_page_get(item=item)
    data = {"original-severity": "Mild", "original-simplicity": "3"}
    data |= {cell.field: "4" for row in page.texts for cell in row.aspects}
    page = pages.expert_page_save(participant=participant, item=item, data=data)
    assert page.complete
    stored = answers.item_answers().filter(participant=participant, item_key="error_spans")
    assert stored.count() == len(page.texts) - 1
    assert all(value == [] for value in stored.values_list("value", flat=True))
    assert not stored.filter(shown_text__text=control.text).exists()
    assert answers.control_answers(participant=participant, control=control)[0].added == {}
