"""Setting up every kind of study from the console and `manage.py study_kind` (annotation/
study_kinds.py, studies/study_kind_services.py, studies/rater_groups.py, console/flow_views.py)
and reading every flow's answers through evaluation/exports/study_answers.py."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import escape

from annotation import participant_services
from annotation.models import (
    Participant,
    PlantedControl,
    Study,
    StudyInstrument,
)
from evaluation.exports.answers import AnswerExport
from evaluation.exports.items import ItemAnswerExport
from evaluation.exports.study_answers import (
    answer_counts,
    participant_units,
    protocol_asked,
    study_flows,
    units_by_flow_and_group,
)
from instruments.presets import preset_load, preset_path
from studies.rater_groups import invite_groups
from studies.study_kind_services import study_launch_problems, study_reference_set
from studies.study_kinds import KIND_PRESETS, study_kinds
from studies.team_services import study_member_add
from surveys.compare_two.services import pairwise_answer_save, pairwise_tasks_prepare
from surveys.radiologist.controls import control_answer_save
from surveys.rate_each_pair import pages
from surveys.rate_each_pair import selectors as design
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_editor(client, editor, draft):
    # An editor of a study (`draft`) may create studies.
    client.force_login(editor)
    return client


def _new(client, **fields):
    data = {"title": "T", "slug": "t", "unit": "sentence", "language": "en", **fields}
    return client.post(reverse("console:study-new"), data)


def test_every_shipped_kind_is_offered_with_what_it_asks_and_its_paper(client_editor):
    html = client_editor.get(reverse("console:study-new")).content.decode()
    for kind in study_kinds():
        assert f'value="{kind.key}"' in html and escape(kind.title) in html
        assert kind.citation is not None and escape(kind.citation.title) in html
    assert {k.key for k in study_kinds()} == set(KIND_PRESETS)
    kinds = {k.key: k for k in study_kinds()}
    assert kinds["layman_rrg_000_matching"].needs_reference and not kinds["medlaybench_002"].needs_reference
    assert kinds["medlaybench_002"].groups == ("layperson", "radiologist")
    assert kinds["layman_rrg_000_expert"].groups == ("medical_expert",)
    # An item without a title is named by its wording, cut at a word's end with an ellipsis.
    for kind in kinds.values():
        for item in kind.items:
            assert len(item.title) <= 80
            if item.title.endswith("…"):
                assert item.title[-2].isalnum(), item.title
    protocol = {item.key: item.title for item in kinds["protocol"].items}
    assert any(title.endswith("…") for title in protocol.values())


@pytest.mark.parametrize(
    ("kind", "flow"),
    [
        ("medlaybench_002", "pairs"),
        ("layman_rrg_000_expert", "pairs"),
        ("layman_rrg_000_matching", "pairs"),
        ("pairwise_clinical", "pairwise"),
    ],
)
def test_a_study_starts_from_a_preset(client_editor, kind, flow):
    response = _new(client_editor, kind=kind)
    assert response.status_code == 302
    row = StudyInstrument.objects.get(study__slug="t", flow=flow)
    assert row.preset == kind and row.is_current


def test_the_protocol_is_the_default_kind(client_editor):
    assert _new(client_editor).status_code == 302
    flows = set(StudyInstrument.objects.filter(study__slug="t").values_list("flow", flat=True))
    assert flows == {"expert", "lay"}


def test_an_uploaded_instrument_file_joins_the_flow_that_asks_it(client_editor):
    text = preset_path("medlaybench_002").read_text().replace("key: medlaybench_002", "key: our_pairs", 1)
    upload = SimpleUploadedFile("ours.yaml", text.encode())
    assert _new(client_editor, kind="file", instrument_file=upload).status_code == 302
    assert StudyInstrument.objects.get(study__slug="t", key="our_pairs").flow == "pairs"


def test_a_bad_instrument_file_is_refused_on_its_field_and_creates_nothing(client_editor):
    upload = SimpleUploadedFile("ours.yaml", b"key: x\nversion: 1\nitems: nope\n")
    response = _new(client_editor, kind="file", instrument_file=upload)
    assert response.status_code == 400 and not Study.objects.filter(slug="t").exists()
    assert "instrument_file" in response.context["form"].errors
    # An instrument every flow refuses (an item about the source): refused by the service, rolled back.
    text = (
        preset_path("protocol_003_layperson")
        .read_text()
        .replace("key: protocol_003_layperson", "key: ours", 1)
    )
    response = _new(client_editor, kind="file", instrument_file=SimpleUploadedFile("o.yaml", text.encode()))
    assert response.status_code == 400 and not Study.objects.filter(slug="t").exists()
    assert "no flow can ask" in str(response.context["form"].errors["instrument_file"])
    response = _new(client_editor, kind="file")
    assert response.status_code == 400 and "instrument_file" in response.context["form"].errors


@pytest.fixture
def matching(editor) -> Study:
    study = build_study(slug="match", n_sources=2, systems=("ref", "gen1"), status="draft")
    study_member_add(study=study, user=editor, role="editor", actor="test")
    call_command("study_kind", study="match", kind="layman_rrg_000_matching", stdout=io.StringIO())
    return study


def test_a_reference_system_is_needed_where_an_item_compares_with_one(client_editor, matching):
    problems = study_launch_problems(study=matching)
    assert "reference_system" in problems and "annotator" in " ".join(problems["rater_group"])
    url = reverse("console:flow-reference", args=["match"])
    response = client_editor.post(url, {"reference_system": ""})
    assert response.status_code == 400 and "compares each text with a reference" in response.content.decode()
    assert client_editor.post(url, {"reference_system": "nope"}).status_code == 400
    assert client_editor.post(url, {"reference_system": "ref"}).status_code == 302
    assert matching.systems.get(is_reference=True).key == "ref"
    # Launch refused, on its fields, until the annotators are invited; nothing opened.
    response = client_editor.post(reverse("console:flows-launch", args=["match"]))
    assert response.status_code == 400 and "has no participants" in response.content.decode()
    matching.refresh_from_db()
    assert matching.status == "draft"


def test_invitations_list_the_rater_groups_with_their_counts(client_editor, matching):
    choices = {c.value: c for c in invite_groups(study=matching)}
    assert set(choices) == {"annotator:layperson", "annotator:radiologist"}
    page = client_editor.get(reverse("console:participants", args=["match"])).content.decode()
    assert "annotator, as laypeople (0 invited)" in page
    url = reverse("console:participants-invite", args=["match"])
    assert client_editor.post(url, {"role": "annotator:layperson", "count": 3}).status_code == 302
    assert set(Participant.objects.filter(study=matching).values_list("role", "rater_group")) == {
        ("layperson", "annotator")
    }
    assert (
        "annotator, as laypeople (3 invited)"
        in client_editor.get(reverse("console:participants", args=["match"])).content.decode()
    )
    response = client_editor.post(url, {"role": "anything", "count": 1})
    assert response.status_code == 400 and Participant.objects.filter(study=matching).count() == 3
    study_reference_set(study=matching, key="ref")
    assert client_editor.post(reverse("console:flows-launch", args=["match"])).status_code == 302
    matching.refresh_from_db()
    assert matching.status == "open"


def test_the_command_refuses_what_the_form_refuses(matching):
    with pytest.raises(CommandError, match="compares each text with a reference"):
        call_command("study_kind", study="match", reference_system="", stdout=io.StringIO())
    out = io.StringIO()
    call_command("study_kind", list=True, stdout=out)
    assert all(key in out.getvalue() for key in KIND_PRESETS)


def test_controls_are_previewed_planted_and_removed_from_the_console(client_editor, draft):
    url = reverse("console:flow-controls", args=["draft"])
    preview = client_editor.post(url, {"rate": "0.5", "seed": "0", "action": "preview"})
    assert preview.status_code == 200 and not PlantedControl.objects.exists()
    shown = preview.context["preview"]
    assert shown and "controls-preview-table" in preview.content.decode()
    assert client_editor.post(url, {"rate": "0.5", "seed": "0", "action": "plant"}).status_code == 302
    assert PlantedControl.objects.filter(study=draft).count() == len(shown)
    assert client_editor.post(url, {"rate": "2", "seed": "0", "action": "plant"}).status_code == 400
    assert client_editor.post(url, {"action": "remove"}).status_code == 302
    assert not PlantedControl.objects.exists()


def _post(**fields) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in fields.items():
        data[name.replace("__", ".")] = value
    return data


def test_a_pairs_study_counts_its_own_answers_units_and_exports_them():
    study = build_study(slug="medlay", n_sources=2, systems=("a", "b"))
    call_command("study_kind", study="medlay", kind="medlaybench_002", stdout=io.StringIO())
    people = [
        participant_services.participant_create(study=study, role=r) for r in ("radiologist", "layperson")
    ]
    for person in people:
        pages.pairs_consent_accept(participant=person)
    Participant.objects.filter(pk=people[1].pk).update(language="")  # an older participant: none recorded
    pair = design.participant_pairs(participant=people[0])[0]
    fields = dict.fromkeys(("factual_correctness", "completeness", "simplicity", "fluency"), "4")
    for person in people:
        pages.pair_answers_save(
            participant=person,
            pair=pair,
            data=_post(**{f"medlaybench_002__{k}": v for k, v in fields.items()}),
        )
    flows = study_flows(study=study)
    assert flows.flow_of(role="radiologist") == "pairs" and not protocol_asked(study=study, flows=flows)
    counts = answer_counts(study=study)
    assert (counts.participants, counts.answers) == (2, 8)
    assert [(r.flow, r.participants, r.answers) for r in counts.by_flow] == [("pairs", 2, 8)]
    units = participant_units(study=study)
    total = len(design.study_pairs(study=study))
    assert {(u.flow, u.done, u.total) for u in units.values()} == {("pairs", 1, total)}
    assert [(r.group, r.done, r.total) for r in units_by_flow_and_group(study=study)] == [
        ("layperson", 1, total),
        ("radiologist", 1, total),
    ]
    document = b"".join(AnswerExport(study=study, file_format="csv")).decode()
    rows = list(csv.DictReader(io.StringIO(document)))
    assert len(rows) == 8 and {r["phase"] for r in rows} == {"pairs"}
    assert {r["question"] for r in rows} == {f"medlaybench_002.{k}" for k in fields}
    assert {r["value"] for r in rows} == {"4"} and all(r["language"] == "en" for r in rows)
    # The item export's participant_language is filled for a pairs participant with none recorded.
    items = b"".join(ItemAnswerExport(study=study, file_format="csv")).decode()
    assert {r["participant_language"] for r in csv.DictReader(io.StringIO(items))} == {"en"}


def test_participants_never_see_a_venue_note_for_researchers():
    shown = design.citation_short(preset_load("medlaybench_002").citation)
    assert "paper text" not in shown and "radlay" not in shown and shown.startswith("Han Jang")


def test_a_pairwise_study_counts_and_exports_its_comparisons():
    study = build_study(slug="pw", n_sources=2, systems=("a", "b"))
    call_command("study_kind", study="pw", kind="pairwise_clinical", stdout=io.StringIO())
    judge = participant_services.participant_create(study=study, role="radiologist")
    instrument = StudyInstrument.objects.get(study=study, flow="pairwise")
    assert participant_units(study=study)[judge.pk].total == 2  # not started: the comparisons planned
    tasks = pairwise_tasks_prepare(participant=judge, instrument=instrument)
    task = (
        type(tasks[0])
        .objects.select_related("instrument", "participant__study", "left", "right")
        .get(pk=tasks[0].pk)
    )
    pairwise_answer_save(task=task, choice="left", reason="clearer")
    counts = answer_counts(study=study)
    assert counts.flow("pairwise").answers == 1 and counts.flow("pairwise").participants == 1
    assert [(r.flow, r.done, r.total) for r in units_by_flow_and_group(study=study)] == [("pairwise", 1, 2)]
    for file_format in ("csv", "json"):
        document = b"".join(AnswerExport(study=study, file_format=file_format)).decode()
        assert "pairwise_clinical.preference" in document and "clearer" in document
    assert answers.item_answers().get().language == "en"


def test_a_planted_controls_answers_are_in_the_answers_export_and_counted():
    study = build_study(slug="ctl", n_sources=1, systems=("a",))
    text = study.sources.get().simplifications.get().shown_text
    control = PlantedControl.objects.create(
        study=study,
        degrades=text,
        kind="negation",
        text="Not " + text.text,
        start=0,
        end=4,
        original_start=0,
        original_end=0,
        category="omission",
        severity="major",
    )
    rater = participant_services.participant_create(study=study, role="radiologist")
    control_answer_save(
        participant=rater, control=control, scores={"correctness": 2, "hallucination": 1}, comment="odd"
    )
    counts = answer_counts(study=study)
    # Counted as the export writes them: one row per aspect scored and one for the comment.
    assert counts.flow("controls").answers == 3 and counts.answers == 3
    assert counts.flow("controls").participants == 1
    document = b"".join(AnswerExport(study=study, file_format="csv")).decode()
    rows = [r for r in csv.DictReader(io.StringIO(document)) if r["phase"] == "planted_control"]
    assert [(r["question"], r["value_number"]) for r in rows] == [
        ("correctness", "2"),
        ("hallucination", "1"),
        ("comment", ""),
    ]
    assert rows[0]["systems"] == "planted negation of a" and rows[0]["text_id"] == str(text.pk)


def test_the_header_counts_a_protocol_studys_answers_as_the_answers_csv_has_them():
    """A radiologist's rating of a text is five aspects and a comment: six rows of the CSV, six
    answers in the header (not one "rating"), and so for the judgement of the source."""
    from surveys.radiologist.services import expert_rating_save, expert_source_judgement_save

    study = build_study(slug="proto", n_sources=2, systems=("a", "b"))
    rater = participant_services.participant_create(study=study, role="radiologist")
    scores = {"correctness": 4, "completeness": 3, "hallucination": 5, "structure": 2, "simplicity": 4}
    for source in study.sources.all():
        for simplification in source.simplifications.all():
            expert_rating_save(
                participant=rater, shown_text=simplification.shown_text, scores=scores, comment="fine"
            )
        expert_source_judgement_save(participant=rater, source=source, severity="Mild", simplicity=3)
    document = b"".join(AnswerExport(study=study, file_format="csv")).decode()
    rows = list(csv.DictReader(io.StringIO(document)))
    assert len(rows) == 2 * 2 * 6 + 2 * 2
    counts = answer_counts(study=study)
    assert (counts.participants, counts.answers) == (1, len(rows))
    assert [(r.flow, r.participants, r.answers) for r in counts.by_flow] == [("expert", 1, len(rows))]
