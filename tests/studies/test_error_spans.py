"""Error spans on the radiologist page: the clinical typology put into a study's
radiologist instrument (in place before answers, a new recorded version after, refused when there
already), and the marks a radiologist sets on a simplification: autosaved as one JSON list, checked
against the shown text (code-point offsets), refused by name with a 4xx, shown back on reload,
replaced as a whole with the earlier list kept as a revision."""

from __future__ import annotations

import io
import json
import re
from html import unescape

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
    SimplificationText,
    Study,
    StudyInstrument,
)
from instruments.presets import preset_load
from instruments.schema import ItemKind
from instruments.validation import instrument_from_data, instrument_to_data
from studies import source_services
from studies.error_span_services import study_error_spans_add
from surveys.radiologist import assignment, pages
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
# A shown text whose code points and UTF-16 units differ (the emoji), with a non-ASCII letter.
TEXT = "Cœur normal 🫀; a small nodule in the left lung, probably benign."


def current_row(study) -> StudyInstrument:
    return StudyInstrument.objects.get(study=study, flow="expert", is_current=True)


def span_study(slug: str, *, add: bool = True):
    study = build_study(slug=slug, n_sources=1, systems=("a", "b"))
    source = study.sources.get()
    source_services.simplification_upsert(source=source, system=study.systems.get(key="a"), text=TEXT)
    if add:
        study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    return study


def started(client, participant) -> ExpertItem:
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return ExpertItem.objects.filter(participant=participant).order_by("position").first()


def label_of(item: ExpertItem, text: str) -> str:
    """The blind label under which `text` is shown on the page."""
    ids = SimplificationText.objects.filter(pk__in=item.text_order, text=text).values_list("pk", flat=True)
    return "ABCDEFGH"[item.text_order.index(ids[0])]


def marking(client, slug: str) -> tuple[Study, Participant, ExpertItem, str]:
    """A radiologist on the first page of a new study with the typology, and the form field of the
    error-span item under TEXT."""
    study = span_study(slug)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)
    return study, participant, item, f"{label_of(item, TEXT)}-error_spans"


def page_url(participant, item) -> str:
    return reverse("surveys:expert-page", args=[participant.token, item.pk])


def span(phrase: str, category: str, severity: str) -> dict:
    start = TEXT.index(phrase)
    return {"start": start, "end": start + len(phrase), "category": category, "severity": severity}


# --- Putting the typology into a study -------------------------------------------------------------


def test_the_typology_is_added_in_place_before_any_answer():
    study = span_study("spans-in-place", add=False)
    before = current_row(study)
    row = study_error_spans_add(study=study, actor=None, note="pilot asks for errors")
    assert row.pk == before.pk and row.version == before.version == 1
    assert StudyInstrument.objects.filter(study=study, flow="expert").count() == 1
    item = instrument_from_data(row.definition).item("error_spans")
    typology = preset_load("clinical_error_spans").item("error_spans")
    assert item.kind is ItemKind.ERROR_SPANS and item == typology
    assert [o.key for o in item.options][0] == "omitted_finding"
    assert [o.key for o in item.severities] == ["minor", "could_mislead", "could_harm"]
    assert row.change_note == "pilot asks for errors"
    # The protocol's items are all still there, in their order, before the new one.
    protocol = [i.key for i in preset_load("protocol_003_radiologist").items]
    assert [i.key for i in instrument_from_data(row.definition).items] == [*protocol, "error_spans"]


def test_once_answers_exist_the_typology_is_a_new_recorded_version(client):
    study = span_study("spans-versioned", add=False)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)
    pages.expert_page_save(participant=participant, item=item, data={"A-correctness": "4"})
    old = current_row(study)
    row = study_error_spans_add(study=study, actor=None)
    old.refresh_from_db()
    assert row.pk != old.pk and (old.version, row.version) == (1, 2)
    assert not old.is_current and row.is_current
    assert "error_spans" not in {i["key"] for i in old.definition["items"]}
    assert row.change_note == "added the error-span typology clinical_error_spans (version 1)"
    assert study.activity.filter(verb="instrument.saved").exists()


def test_a_second_addition_is_refused_and_changes_nothing():
    study = span_study("spans-twice")
    row = current_row(study)
    with pytest.raises(ValidationError, match="already asks error spans"):
        study_error_spans_add(study=study, actor=None)
    assert current_row(study).pk == row.pk and current_row(study).fingerprint == row.fingerprint
    with pytest.raises(CommandError, match="already asks error spans"):
        call_command("instrument", study=study.slug, add_error_spans=True, stdout=io.StringIO())


def test_the_command_adds_the_typology():
    study = span_study("spans-command", add=False)
    out = io.StringIO()
    call_command("instrument", study=study.slug, add_error_spans=True, stdout=out)
    assert "error spans added; protocol_003_radiologist version 1 is current" in out.getvalue()
    assert "error_spans" in {i["key"] for i in current_row(study).definition["items"]}


def test_the_admin_action_adds_the_typology_and_says_when_it_is_there(admin_client):
    study = span_study("spans-admin", add=False)
    changelist = reverse("admin:annotation_study_changelist")
    data = {"action": "add_error_spans", "_selected_action": [study.pk]}
    response = admin_client.post(changelist, data, follow=True)
    assert "Error spans added to spans-admin" in response.content.decode()
    assert "error_spans" in {i["key"] for i in current_row(study).definition["items"]}
    response = admin_client.post(changelist, data, follow=True)
    assert "already asks error spans" in response.content.decode()


def test_an_instrument_in_english_only_gets_the_typology_in_english_only():
    study = span_study("spans-english", add=False)
    data = instrument_to_data(preset_load("protocol_003_radiologist"))
    data = json.loads(json.dumps(data), object_hook=lambda d: {k: v for k, v in d.items() if k != "es"})
    data["languages"], data["translation_status"] = ["en"], {"en": "source"}
    study_instrument_save(study=study, instrument=instrument_from_data(data), actor=None)
    row = study_error_spans_add(study=study, actor=None)
    item = instrument_from_data(row.definition).item("error_spans")
    assert set(item.wording) == {"en"} and set(item.severities[0].label) == {"en"}


def test_the_lay_flow_cannot_ask_error_spans():
    study = span_study("spans-lay", add=False)
    lay = instrument_from_data(
        StudyInstrument.objects.get(study=study, flow="lay", is_current=True).definition
    )
    typology = preset_load("clinical_error_spans").item("error_spans")
    data = instrument_to_data(lay)
    item = instrument_to_data(preset_load("clinical_error_spans"))["items"][0]
    data["items"].append({**item, "roles": ["layperson"], "phases": ["assisted"]})
    with pytest.raises(ValidationError, match="cannot show a error_spans item"):
        study_instrument_save(study=study, instrument=instrument_from_data(data), actor=None)
    assert typology.key == "error_spans"


# --- Marking on the page -----------------------------------------------------------------------------


def test_marks_are_autosaved_shown_back_and_replaced_with_a_revision(client):
    study, participant, item, field = marking(client, "spans-page")
    html = client.get(page_url(participant, item)).content.decode()
    # One widget per simplification, the stored text in a JSON block, no answer yet.
    assert html.count("data-span-item") == 2
    block = re.search(rf'<script id="span-text-{field}" type="application/json">(.*?)</script>', html)
    assert block is not None and json.loads(block[1]) == TEXT
    assert f'name="{field}" value=""' in html
    assert "Omitted finding" in html and "Could harm" in html and "Add mark" in html

    marks = [
        span("small nodule", "wrong_finding_or_location", "could_mislead"),
        span("probably benign", "wrong_severity_or_false_reassurance", "could_harm"),
    ]
    response = client.post(
        page_url(participant, item), {field: json.dumps(marks), "elapsed_ms": "900"}, **HTMX
    )
    assert response.status_code == 200 and "Saved" in response.content.decode()
    (answer,) = answers.item_answers().filter(participant=participant)
    assert answer.item_key == "error_spans" and answer.value == marks and answer.score == 2.0
    assert answer.shown_text.text == TEXT
    assert [TEXT[m["start"] : m["end"]] for m in answer.value] == ["small nodule", "probably benign"]
    assert answer.time_spent_ms == 900 and answer.language == "en"

    # After a reload the marks are in the answer field and listed with their words.
    html = client.get(page_url(participant, item)).content.decode()
    stored = re.search(rf'name="{field}" value="([^"]*)"', html)
    assert stored is not None and json.loads(unescape(stored[1])) == marks
    assert "“small nodule”" in html and "Wrong finding or location · Could mislead" in html
    assert "“probably benign”" in html and "Wrong severity or false reassurance · Could harm" in html

    # Editing sends the whole list: it replaces the stored one, and the earlier list is kept.
    client.post(page_url(participant, item), {field: json.dumps(marks[1:])}, **HTMX)
    answer.refresh_from_db()
    assert answer.value == marks[1:] and answer.score == 1.0
    revision = AnswerRevision.objects.get(answer_type="annotation.ItemAnswer", answer_id=answer.pk)
    assert revision.previous == {"value": marks}
    # Every mark removed: "no error marked", the list before kept too.
    client.post(page_url(participant, item), {field: "[]"}, **HTMX)
    answer.refresh_from_db()
    assert answer.value == [] and answer.score == 0.0
    assert AnswerRevision.objects.filter(answer_id=answer.pk).count() == 2
    # The same list again changes nothing and writes no revision.
    client.post(page_url(participant, item), {field: "[]"}, **HTMX)
    assert AnswerRevision.objects.filter(answer_id=answer.pk).count() == 2


def test_an_empty_list_where_nothing_was_marked_is_no_answer(client):
    study, participant, item, field = marking(client, "spans-empty")
    for value in ("", "[]"):
        response = client.post(page_url(participant, item), {field: value}, **HTMX)
        assert response.status_code == 200
    assert not answers.item_answers().exists()


def test_a_plain_submit_without_javascript_keeps_the_marks(client):
    study, participant, item, field = marking(client, "spans-nojs")
    marks = [span("Cœur", "unexplained_jargon", "minor")]
    client.post(page_url(participant, item), {field: json.dumps(marks)}, **HTMX)
    html = client.get(page_url(participant, item)).content.decode()
    assert "Marking errors needs JavaScript" in html  # hidden once the page's scripts run
    # The form posts the answer field as it was rendered, with the other answers.
    stored = json.dumps(marks, separators=(",", ":"))
    response = client.post(
        page_url(participant, item), {field: stored, "A-correctness": "3", "action": "skip"}
    )
    assert response.status_code == 302
    assert answers.item_answers().get().value == marks
    assert not AnswerRevision.objects.exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            [{"start": 0, "end": len(TEXT) + 1, "category": "hallucinated_content", "severity": "minor"}],
            f"error_spans: spans[0] ends at {len(TEXT) + 1}, after the text&#x27;s {len(TEXT)} characters",
        ),
        (
            [{"start": 5, "end": 3, "category": "hallucinated_content", "severity": "minor"}],
            "spans[0] must have 0 &lt;= start &lt; end",
        ),
        (
            [{"start": 0, "end": 4, "category": "typo", "severity": "minor"}],
            "spans[0].category &#x27;typo&#x27; is not one of",
        ),
        (
            [{"start": 0, "end": 4, "category": "hallucinated_content", "severity": "fatal"}],
            "spans[0].severity &#x27;fatal&#x27; is not one of",
        ),
        ([{"start": 0, "end": 4}], "spans[0] is {start, end, category, severity}"),
        ({"start": 0}, "error spans are a list of"),
        ("not json [", "the marks are not a JSON list"),
        ("[" * 100000, "the marks are not a JSON list"),
        (
            [{"start": 0, "end": 1, "category": "hallucinated_content", "severity": "minor"}] * 501,
            "at most 500",
        ),
    ],
)
def test_bad_marks_are_refused_by_name_and_save_nothing(client, value, message):
    study, participant, item, field = marking(client, "spans-bad")
    raw = value if isinstance(value, str) else json.dumps(value)
    response = client.post(
        page_url(participant, item), {field: raw, f"{label_of(item, TEXT)}-correctness": "4"}, **HTMX
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not answers.item_answers().exists() and not answers.ratings(participant=participant)
    # A plain submit is refused the same way, on the page, with a 400.
    response = client.post(page_url(participant, item), {field: raw, "action": "next"})
    assert response.status_code == 400 and message in response.content.decode()


def test_the_end_of_the_text_is_counted_in_code_points(client):
    study, participant, item, field = marking(client, "spans-codepoints")
    # The text is one code point shorter than its UTF-16 length: its last character is at len(TEXT).
    assert len(TEXT.encode("utf-16-le")) // 2 == len(TEXT) + 1
    whole = [{"start": 0, "end": len(TEXT), "category": "hallucinated_content", "severity": "minor"}]
    assert client.post(page_url(participant, item), {field: json.dumps(whole)}, **HTMX).status_code == 200
    whole[0]["end"] = len(TEXT) + 1  # the UTF-16 length: refused
    assert client.post(page_url(participant, item), {field: json.dumps(whole)}, **HTMX).status_code == 400


def test_a_regenerated_simplification_keeps_the_text_its_marks_point_into(client):
    study, participant, item, field = marking(client, "spans-regenerated")
    marks = [span("left lung", "wrong_finding_or_location", "could_harm")]
    client.post(page_url(participant, item), {field: json.dumps(marks)}, **HTMX)
    source = study.sources.get()
    source_services.simplification_upsert(
        source=source, system=study.systems.get(key="a"), text="Another text."
    )
    answer = answers.item_answers().get()
    assert answer.shown_text.text == TEXT and answer.value == marks


def test_a_spanish_study_marks_in_spanish(client):
    study = span_study("spans-spanish")
    Study.objects.filter(pk=study.pk).update(language="es")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)
    field = f"{label_of(item, TEXT)}-error_spans"
    marks = [span("left lung", "wrong_finding_or_location", "could_harm")]
    client.post(page_url(participant, item), {field: json.dumps(marks)}, **HTMX)
    html = client.get(page_url(participant, item)).content.decode()
    # The typology's wording (the preset's Spanish) and the widget's interface (the catalogue).
    assert "Errores en el texto" in html and "Hallazgo omitido" in html and "Podría causar daño" in html
    assert (
        "Añadir marca" in html and "Categoría" in html and "Para marcar errores hace falta JavaScript" in html
    )
    assert "“left lung”" in html and "Hallazgo o localización incorrectos · Podría causar daño" in html
    strings = json.loads(
        re.search(r'<script id="survey-strings" type="application/json">(.*?)</script>', html)[1]
    )
    assert strings["span_added"] == "Marca %(n)s añadida: «%(text)s», %(category)s, %(severity)s."
    assert answers.item_answers().get().language == "es"


def test_a_page_finished_without_marks_stores_no_error_marked_on_each_unmarked_text():
    """The span rates count a text a rater saw and left clean: finishing the page stores [] on
    every text without marks, keeps the marks given, and a mark set afterwards replaces the []."""
    from tests.surveys.test_radiologist_flow import full_answers

    study = span_study("spans-clean")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = assignment.expert_items_ensure(participant=participant)[0]
    page = pages.expert_page_get(item=item)
    field = f"{label_of(item, TEXT)}-error_spans"
    data = {k: v for k, v in full_answers(page).items() if not k.endswith("-error_spans")}
    del data["A-structure"]
    pages.expert_page_save(participant=participant, item=item, data=data)
    assert not answers.item_answers().exists()  # not finished: nothing said about the texts yet

    marks = [span("small nodule", "wrong_finding_or_location", "could_mislead")]
    pages.expert_page_save(
        participant=participant, item=item, data={field: json.dumps(marks), "A-structure": "3"}
    )
    stored = {a.shown_text.text: a.value for a in answers.item_answers().filter(participant=participant)}
    assert len(stored) == 2 and stored[TEXT] == marks
    (clean_text,) = set(stored) - {TEXT}
    assert stored[clean_text] == []
    assert answers.item_answers().get(shown_text__text=clean_text).score == 0.0

    clean_field = f"{label_of(item, clean_text)}-error_spans"
    late = [{"start": 0, "end": 3, "category": "unexplained_jargon", "severity": "minor"}]
    pages.expert_page_save(participant=participant, item=item, data={clean_field: json.dumps(late)})
    assert answers.item_answers().get(shown_text__text=clean_text).value == late


def test_the_marking_instructions_appear_once_per_page(client):
    study, participant, item, field = marking(client, "spans-once")
    html = client.get(page_url(participant, item)).content.decode()
    assert html.count("data-span-item") == 2
    # One keys paragraph, which both texts' marking areas point to.
    assert html.count('class="span-keys') == 1
    (keys_id,) = re.findall(r'<p class="span-keys[^"]*" id="([^"]+)"', html)
    assert html.count(f'aria-describedby="{keys_id}"') == 2
