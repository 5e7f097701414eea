"""The console's instrument editor (console/instrument_views.py, instrument_forms.py): an item added,
edited, moved and removed through plain forms, bad input named by field from the validation's
paths, the version rule (in place before answers; a new version with a change note after), a save
over a newer revision refused, the whole document as YAML/JSON (round trip, all or nothing, no 500
on garbage) and the live preview drawn with the survey's item partials, saving nothing."""

from __future__ import annotations

import json

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation import participant_services
from annotation.activity_services import ActivityEvent
from annotation.instrument_services import instrument_revision
from annotation.models import Participant, StudyInstrument
from instruments.presets import preset_load
from instruments.validation import instrument_from_data, instrument_to_data
from surveys.radiologist import assignment, pages

KEY = "protocol_003_radiologist"
URL = f"/console/draft/instruments/{KEY}/"
PREVIEW = URL + "preview/"
AGREE_EN = ["strongly disagree", "disagree", "neutral", "agree", "strongly agree"]
AGREE_ES = ["totalmente en desacuerdo", "en desacuerdo", "neutral", "de acuerdo", "totalmente de acuerdo"]


def _row(study) -> StudyInstrument:
    return StudyInstrument.objects.get(study=study, key=KEY, is_current=True)


def _likert(study, **changes) -> dict:
    data = {
        "op": "add",
        "based_on": instrument_revision(_row(study)),
        "key": "actionability",
        "kind": "ordinal",
        "applies_to": "simplification",
        "roles": "radiologist",
        "required": "on",
        "codes": "1 2 3 4 5",
        "title_en": "Actionability",
        "title_es": "Accionabilidad",
        "wording_en": "Does the text tell the patient what to do next?",
        "wording_es": "¿Le dice el texto al paciente qué hacer después?",
        "labels_en": "\n".join(AGREE_EN),
        "labels_es": "\n".join(AGREE_ES),
        "preview_language": "en",
    }
    data.update(changes)
    return {name: value for name, value in data.items() if value is not None}


@pytest.fixture
def editing(client, draft, editor):
    client.force_login(editor)
    return draft


def _rate_one(study) -> None:
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = assignment.expert_items_ensure(participant=participant)[0]
    pages.expert_page_save(participant=participant, item=item, data={"A-correctness": "4"})


def test_the_list_and_the_editor_show_each_instrument_its_versions_and_the_bound_items(client, editing):
    page = client.get("/console/draft/instruments/").content.decode()
    assert KEY in page and "protocol_003_layperson" in page and "attached when the study was created" in page
    assert "none: edits are in place" in page
    editor_page = client.get(URL).content.decode()
    assert "protocol item: kept" in editor_page and 'id="save-add"' in editor_page
    # The preview draws the protocol's items with the participants' partials.
    assert (
        'name="preview-correctness"' in editor_page and "Do you think laypeople can understand" in editor_page
    )
    assert client.get("/console/draft/instruments/nope/").status_code == 404
    # The nav links it.
    assert 'href="/console/draft/instruments/"' in client.get("/console/draft/").content.decode()


def test_adding_a_likert_item_before_any_answer_edits_in_place_and_is_recorded(client, editing, editor):
    before = _row(editing)
    response = client.post(URL, _likert(editing, note="actionability, as the team asked"))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = _row(editing)
    assert row.pk == before.pk and row.version == 1 and row.fingerprint != before.fingerprint
    item = instrument_from_data(row.definition).item("actionability")
    assert [p.code for p in item.scale.points] == [1, 2, 3, 4, 5]
    assert [p.label["es"] for p in item.scale.points] == AGREE_ES
    assert item.wording["en"] == "Does the text tell the patient what to do next?"
    assert item.title["es"] == "Accionabilidad" and item.help == {}
    event = ActivityEvent.objects.filter(study=editing, verb="instrument.saved").latest("pk")
    assert event.actor == editor and event.details["key"] == KEY
    # The survey asks it at once: the study's current instrument has it.
    editing.refresh_from_db()
    from annotation.instrument_selectors import study_instrument_current

    added = study_instrument_current(study=editing, flow="expert").added_items
    assert [i.key for i in added] == ["actionability"]


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"wording_es": ""}, "wording_es", "wording.es: missing: every offered language needs this text"),
        ({"key": "1bad"}, "key", "key: '1bad' must match"),
        ({"key": "correctness"}, "key", "duplicate item key 'correctness'"),
        ({"labels_es": "uno\ndos"}, "labels_es", "2 labels here but 5 in en"),
        ({"labels_es": ""}, "labels_es", "scale.points[*].label.es: missing"),
        ({"codes": "1 2 3 4"}, "codes", "4 codes for 5 labels"),
        ({"codes": "1 2 x 4 5"}, "codes", "Codes are whole numbers"),
        ({"codes": "1 2 2 4 5"}, "codes", "duplicate code 2"),
        ({"labels_en": "a\na\nb\nc\nd"}, "labels_en", "duplicate label 'a'"),
        ({"title_es": ""}, "title_es", "title.es: missing"),
    ],
)
def test_bad_input_is_named_by_its_field_and_saves_nothing(client, editing, changes, field, message):
    before = _row(editing).fingerprint
    response = client.post(URL, _likert(editing, **changes))
    assert response.status_code == 400
    form = response.context["add"]
    assert any(message in error for error in form.errors.get(field, [])), form.errors
    assert _row(editing).fingerprint == before


def test_what_the_radiologist_page_cannot_show_is_refused_with_the_flows_reason(client, editing):
    response = client.post(
        URL,
        _likert(
            editing,
            kind="multiple_choice",
            codes=None,
            option_keys="\n".join(f"o{i}" for i in range(5)),
        ),
    )
    assert response.status_code == 400
    assert "the expert pages cannot show a multiple_choice item" in " ".join(
        response.context["add"].non_field_errors()
    )
    response = client.post(URL, _likert(editing, roles="layperson"))
    assert "roles must include 'radiologist'" in " ".join(response.context["add"].non_field_errors())


def test_once_answers_exist_a_change_needs_a_note_and_makes_a_recorded_new_version(client, editing, editor):
    _rate_one(editing)
    page = client.get(URL).content.decode()
    assert "Answers exist" in page and "saving makes version 2" in page
    refused = client.post(URL, _likert(editing))
    assert refused.status_code == 400 and "say why it changes" in " ".join(
        refused.context["add"].errors["note"]
    )
    assert StudyInstrument.objects.filter(study=editing, key=KEY).count() == 1
    assert client.post(URL, _likert(editing, note="actionability")).status_code == 302
    rows = list(StudyInstrument.objects.filter(study=editing, key=KEY).order_by("version"))
    assert [(r.version, r.is_current, r.change_note) for r in rows] == [
        (1, False, rows[0].change_note),
        (2, True, "actionability"),
    ]
    assert rows[1].created_by == editor
    assert rows[0].definition == instrument_to_data(preset_load(KEY))
    history = client.get("/console/draft/instruments/").content.decode()
    assert 'data-version="protocol_003_radiologist-1"' in history and "actionability" in history


def test_a_save_over_a_newer_revision_is_refused(client, editing):
    shown = _likert(editing)  # the page as shown: its hidden revision
    other = _likert(editing, key="clarity", wording_en="Is it clear?", wording_es="¿Es clara?")
    assert client.post(URL, other).status_code == 302  # someone else saved meanwhile
    after_other = _row(editing).fingerprint
    response = client.post(URL, shown)
    assert response.status_code == 400
    assert "changed by another save since this page was shown" in " ".join(
        response.context["add"].non_field_errors()
    )
    assert _row(editing).fingerprint == after_other


def test_moving_and_removing_added_items_and_the_bound_ones_stay(client, editing):
    client.post(URL, _likert(editing))
    client.post(URL, _likert(editing, key="clarity", wording_en="Is it clear?", wording_es="¿Es clara?"))
    keys = lambda: [i["key"] for i in _row(editing).definition["items"]]  # noqa: E731
    assert keys()[-2:] == ["actionability", "clarity"]
    move = {"op": "move", "item": "clarity", "action": "up"}
    assert client.post(URL, {**move, "based_on": instrument_revision(_row(editing))}).status_code == 302
    assert keys()[-2:] == ["clarity", "actionability"]
    removed = {
        "op": "move",
        "item": "clarity",
        "action": "remove",
        "based_on": instrument_revision(_row(editing)),
    }
    assert client.post(URL, removed).status_code == 302
    assert "clarity" not in keys()
    bound = {
        "op": "move",
        "item": "correctness",
        "action": "remove",
        "based_on": instrument_revision(_row(editing)),
    }
    response = client.post(URL, bound)
    assert response.status_code == 400 and "cannot be removed" in " ".join(response.context["errors"])
    assert "correctness" in keys()


def test_an_items_texts_are_edited_per_language(client, editing):
    url = URL + "items/correctness/"
    page = client.get(url)
    assert page.status_code == 200 and page.context["form"]["wording_es"].value()
    data = {name: page.context["form"][name].value() or "" for name in page.context["form"].fields}
    data.update(
        op="texts", item="correctness", help_en="Check every finding.", help_es="Compruebe cada hallazgo."
    )
    assert client.post(url, data).status_code == 302
    item = instrument_from_data(_row(editing).definition).item("correctness")
    assert item.help == {"en": "Check every finding.", "es": "Compruebe cada hallazgo."}
    half = {**data, "help_es": ""}
    bad = client.post(url, half)
    assert bad.status_code == 400 and any(
        "help.es: missing" in e for e in bad.context["form"].errors["help_es"]
    )


def test_yaml_and_json_round_trip_through_download_and_upload(client, editing):
    client.post(URL, _likert(editing))
    row = _row(editing)
    downloaded = client.get(f"/console/draft/instruments/{KEY}.yaml")
    assert downloaded["Content-Disposition"].endswith('-v1.yaml"')
    assert yaml.safe_load(downloaded.content) == row.definition
    as_json = client.get(f"/console/draft/instruments/{KEY}.json")
    assert json.loads(as_json.content) == row.definition
    upload = SimpleUploadedFile("mine.yaml", downloaded.content)
    same = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "file": upload})
    assert same.status_code == 302 and _row(editing).fingerprint == row.fingerprint
    # Edited as YAML in the textarea: a new help text.
    document = yaml.safe_load(downloaded.content)
    document["items"][-1]["help"] = {"en": "Next steps.", "es": "Próximos pasos."}
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    saved = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "document": text})
    assert saved.status_code == 302
    assert (
        instrument_from_data(_row(editing).definition).item("actionability").help["es"] == "Próximos pasos."
    )
    # JSON uploaded back.
    payload = json.dumps(_row(editing).definition).encode()
    back = client.post(
        URL,
        {
            "op": "definition",
            "based_on": instrument_revision(_row(editing)),
            "file": SimpleUploadedFile("mine.json", payload),
        },
    )
    assert back.status_code == 302


@pytest.mark.parametrize(
    "upload, expected",
    [
        (SimpleUploadedFile("x.yaml", b"\xff\xfe\x00garbage\x81"), "not UTF-8"),
        (SimpleUploadedFile("x.yaml", b"key: [unclosed"), "not valid YAML"),
        (SimpleUploadedFile("x.json", b"{nope"), "not valid JSON"),
        (SimpleUploadedFile("x.yaml", b"- a list\n- not a mapping\n"), "must be a mapping"),
        (SimpleUploadedFile("x.pdf", b"%PDF-1.4"), ".yaml, .yml or .json"),
        (SimpleUploadedFile("x.yaml", b"[" * 5000 + b"]" * 5000), "nests more than 16 levels"),
    ],
)
def test_garbage_uploads_are_refused_by_name_never_a_500(client, editing, upload, expected):
    row = _row(editing)
    response = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "file": upload})
    assert response.status_code == 400
    assert expected in response.content.decode()
    assert _row(editing).fingerprint == row.fingerprint


def test_a_document_with_errors_lists_each_by_path_and_saves_nothing(client, editing):
    row = _row(editing)
    document = dict(row.definition)
    items = [dict(i) for i in document["items"]]
    items[0] = {**items[0], "kind": "bogus"}
    items[3] = {**items[3], "wording": {"en": "Only English"}}
    document["items"] = items
    response = client.post(
        URL,
        {"op": "definition", "based_on": instrument_revision(row), "document": yaml.safe_dump(document)},
    )
    assert response.status_code == 400
    errors = " ".join(response.context["definition"].non_field_errors())
    assert "items[0].kind: 'bogus' is not one of" in errors and "items[3].wording.es: missing" in errors
    assert _row(editing).fingerprint == row.fingerprint


def test_the_preview_renders_the_draft_with_the_participants_partials_and_saves_nothing(client, editing):
    before = _row(editing).fingerprint
    response = client.post(PREVIEW, _likert(editing, preview_language="es"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('name="preview-actionability"') == 5  # one radio per point
    assert "¿Le dice el texto al paciente qué hacer después?" in html and "totalmente de acuerdo" in html
    assert 'id="preview-item-actionability"' in html and "focus" in html
    assert 'role="radiogroup"' in html  # templates/surveys/items/_choice.html
    bad = client.post(PREVIEW, _likert(editing, wording_es="", codes="1 1 2 3 4"))
    text = bad.content.decode()
    assert "cannot be saved" in text and "items[9].wording.es" in text and "duplicate code 1" in text
    garbage = client.post(PREVIEW, {"op": "definition", "document": "key: [", "based_on": ""})
    assert garbage.status_code == 200 and "not valid YAML" in garbage.content.decode()
    assert client.post(PREVIEW, {"op": "nonsense"}).status_code == 404
    assert _row(editing).fingerprint == before
    # Without JavaScript, the Preview button renders the whole page with the draft, unsaved.
    plain = client.post(URL, _likert(editing, preview="1"))
    assert plain.status_code == 200 and 'name="preview-actionability"' in plain.content.decode()
    assert _row(editing).fingerprint == before


def test_the_service_refuses_a_save_based_on_an_older_revision(draft):
    from django.core.exceptions import ValidationError

    from annotation.instrument_services import study_instrument_save
    from tests.annotation.factories import ACTIONABILITY, instrument_with

    shown = instrument_revision(_row(draft))
    saved = study_instrument_save(
        study=draft, instrument=instrument_with(KEY, ACTIONABILITY), actor=None, based_on=shown
    )
    assert instrument_revision(saved) != shown  # an in-place edit is a new revision of the same row
    with pytest.raises(ValidationError) as refused:
        study_instrument_save(study=draft, instrument=preset_load(KEY), actor=None, based_on=shown)
    assert "another save" in refused.value.message_dict["based_on"][0]
    assert _row(draft).fingerprint == saved.fingerprint


def test_the_error_span_typology_is_added_from_the_instruments_page(client, editing):
    """One button puts the clinical typology into the radiologist instrument (the service the command
    and the admin use); once there the page offers it no more, and a second post is refused politely."""
    page = client.get("/console/draft/instruments/").content.decode()
    assert 'id="add-error-spans"' in page and "spans-note" not in page  # no answers: no note asked
    response = client.post("/console/draft/instruments/error-spans/", follow=True)
    assert "Error spans added to the radiologist instrument" in response.content.decode()
    items = {i["key"]: i for i in _row(editing).definition["items"]}
    assert items["error_spans"]["kind"] == "error_spans"
    assert 'id="add-error-spans"' not in client.get("/console/draft/instruments/").content.decode()
    again = client.post("/console/draft/instruments/error-spans/", follow=True)
    assert again.status_code == 200 and "already asks error spans" in again.content.decode()
    assert StudyInstrument.objects.filter(study=editing, key=KEY).count() == 1  # edited in place once
