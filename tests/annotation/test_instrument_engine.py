"""annotation/instrument_{binding,selectors,services}.py: the protocol presets attached to every
study, the version rule where instruments are saved, the binding table, answers of added items, and
the release read back through the engine after the data migration."""

from __future__ import annotations

import dataclasses
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotation import participant_services, scales
from annotation.instrument_binding import PROTOCOL_BINDINGS, SHAPE_ITEMS, binding_of, unbound_items
from annotation.instrument_selectors import (
    EXPERT,
    LAY,
    AnswerKey,
    instrument_answers,
    study_instrument_current,
)
from annotation.instrument_services import item_answer_save, study_instrument_save
from annotation.models import Participant, SimplificationText, Study, StudyInstrument
from instruments.presets import preset_load
from instruments.schema import AppliesTo, ItemKind, Point, Scale
from instruments.validation import instrument_from_data, instrument_to_data
from studies import study_services
from studies.importers.release import read_release
from surveys.radiologist import assignment, pages
from tests.annotation import answers as typed_answers
from tests.annotation.factories import ACTIONABILITY, build_study, instrument_with

pytestmark = pytest.mark.django_db


def created_study(slug: str = "engine") -> Study:
    study, _ = study_services.study_get_or_create(slug=slug, title="Engine")
    return study


# --- Attaching and the binding table ----------------------------------------------------------------


def test_a_new_study_asks_the_protocol_presets():
    study = created_study()
    rows = {row.flow: row for row in StudyInstrument.objects.filter(study=study)}
    assert {flow: row.key for flow, row in rows.items()} == {
        EXPERT: "protocol_003_radiologist",
        LAY: "protocol_003_layperson",
    }
    assert study.instruments_stamp
    current = study_instrument_current(study=study, flow=EXPERT)
    assert current.row_id == rows[EXPERT].pk
    assert current.instrument == preset_load("protocol_003_radiologist")
    assert current.added_items == ()


def test_every_protocol_item_is_bound_and_every_binding_is_a_protocol_item():
    for name, bindings in PROTOCOL_BINDINGS.items():
        preset = preset_load(name)
        assert {item.key for item in preset.items} == set(bindings), name
        assert unbound_items(preset) == ()
        for key, binding in bindings.items():
            # The typed shape's column the protocol's analysis reads it in.
            assert SHAPE_ITEMS[binding.shape][binding.column] == key, (name, key)
            item = preset.item(key)
            if binding.levels is not None:
                # Level names ↔ the item's codes, one to one, in both directions.
                assert item.scale is not None
                assert sorted(binding.levels.codes.values()) == sorted(item.scale.codes)
                for code in item.scale.codes:
                    assert binding.value_of(binding.stored_of(code)) == code
    assert binding_of("protocol_003_radiologist", "actionability") is None
    assert binding_of("medlaybench_002", "correctness") is None


def test_the_current_instrument_costs_no_query_once_cached(django_assert_num_queries):
    study = created_study()
    study_instrument_current(study=study, flow=EXPERT)
    fresh = Study.objects.get(pk=study.pk)
    with django_assert_num_queries(0):
        assert study_instrument_current(study=fresh, flow=LAY).instrument.key == "protocol_003_layperson"


# --- The version rule ---------------------------------------------------------------------------------


def test_before_any_answer_an_instrument_is_edited_in_place():
    study = created_study()
    row = StudyInstrument.objects.get(study=study, flow=EXPERT)
    stamp = study.instruments_stamp
    saved = study_instrument_save(
        study=study,
        instrument=instrument_with("protocol_003_radiologist", ACTIONABILITY),
        actor=None,
        note="add",
    )
    assert saved.pk == row.pk and saved.version == 1
    assert StudyInstrument.objects.filter(study=study, flow=EXPERT).count() == 1
    study.refresh_from_db()
    assert study.instruments_stamp != stamp
    assert [i.key for i in study_instrument_current(study=study, flow=EXPERT).added_items] == [
        "actionability"
    ]


def _rate_one(study: Study) -> Participant:
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = assignment.expert_items_ensure(participant=participant)[0]
    pages.expert_page_save(participant=participant, item=item, data={"A-correctness": "4"})
    return participant


def test_once_answers_exist_a_change_is_a_new_recorded_version():
    study = build_study(slug="versioned", n_sources=1, systems=("a", "b"))
    _rate_one(study)
    user = get_user_model().objects.create_user("editor")
    changed = instrument_with("protocol_003_radiologist", ACTIONABILITY)
    with pytest.raises(ValidationError) as refused:
        study_instrument_save(study=study, instrument=changed, actor=user, note="same version")
    assert "answers exist under version 1" in str(refused.value)
    saved = study_instrument_save(
        study=study, instrument=dataclasses.replace(changed, version=2), actor=user, note="actionability"
    )
    rows = list(StudyInstrument.objects.filter(study=study, flow=EXPERT).order_by("version"))
    assert [(r.version, r.is_current) for r in rows] == [(1, False), (2, True)]
    assert rows[0].definition == instrument_to_data(preset_load("protocol_003_radiologist"))
    assert saved.created_by == user and saved.change_note == "actionability"
    study.refresh_from_db()
    assert study_instrument_current(study=study, flow=EXPERT).row_id == saved.pk


def test_a_bound_items_structure_and_what_a_flow_cannot_show_are_refused_by_name():
    study = created_study()
    preset = preset_load("protocol_003_radiologist")
    seven = dataclasses.replace(
        preset.item("correctness"),
        scale=Scale(points=tuple(Point(code=c, label={"en": str(c), "es": str(c)}) for c in range(1, 8))),
    )
    broken = dataclasses.replace(
        preset, items=tuple(seven if i.key == "correctness" else i for i in preset.items)
    )
    with pytest.raises(ValidationError) as refused:
        study_instrument_save(study=study, instrument=broken, actor=None)
    assert "item 'correctness': its scale cannot change" in str(refused.value)
    matching = dataclasses.replace(
        ACTIONABILITY, key="matched", kind=ItemKind.SENTENCE_MATCHING, applies_to=AppliesTo.PAIR, scale=None
    )
    with pytest.raises(ValidationError) as refused:
        study_instrument_save(
            study=study, instrument=instrument_with("protocol_003_radiologist", matching), actor=None
        )
    assert "(matched): the expert pages cannot show a sentence_matching item" in str(refused.value)


# --- Answers of added items ------------------------------------------------------------------------------


def test_an_added_items_answer_is_validated_by_name_and_stored_with_its_code():
    study = build_study(slug="added", n_sources=1, systems=("a",))
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_radiologist", ACTIONABILITY), actor=None
    )
    source = study.sources.get()
    simplification = source.simplifications.get()
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    row_id = StudyInstrument.objects.get(study=study, flow=EXPERT).pk
    with pytest.raises(ValidationError) as refused:
        item_answer_save(
            participant=participant,
            instrument_id=row_id,
            item=ACTIONABILITY,
            raw="7",
            source_id=source.pk,
            shown_text_id=simplification.shown_text_id,
        )
    assert refused.value.message_dict == {
        "actionability": ["actionability: 7 is not a point of the scale ((1, 2, 3))"]
    }
    item_answer_save(
        participant=participant,
        instrument_id=row_id,
        item=ACTIONABILITY,
        raw="2",
        source_id=source.pk,
        shown_text_id=simplification.shown_text_id,
        language="en",
    )
    (answer,) = typed_answers.item_answers().all()
    assert (answer.value, answer.score, answer.language) == (2, 2.0, "en")
    study.refresh_from_db()
    key = AnswerKey(participant.pk, "actionability", source.pk, simplification.shown_text_id)
    assert instrument_answers(study=study, flow=EXPERT)[key] == 2


# --- The release through the engine, after the data migration ----------------------------------------------


@pytest.mark.release
def _expert_answers_expected(person, pid, sources, text_of) -> dict[AnswerKey, object]:
    """The engine's answers a release radiologist's ratings and source judgements become."""
    expected: dict[AnswerKey, object] = {}
    for rating in person.expert_ratings:
        text = text_of[(rating.source_key, rating.system)]
        for aspect, score in rating.scores.items():
            expected[AnswerKey(pid, aspect, sources[rating.source_key], text)] = score
    for judgement in person.expert_judgements:
        source = sources[judgement.source_key]
        if judgement.severity:
            expected[AnswerKey(pid, "severity", source)] = scales.SEVERITY.value_of(judgement.severity)
        if judgement.simplicity is not None:
            expected[AnswerKey(pid, "original_simplicity", source)] = judgement.simplicity
        if judgement.comment:
            expected[AnswerKey(pid, "original_comment", source)] = judgement.comment
    return expected


def _lay_answers_expected(person, pid, sources, text_of) -> dict[AnswerKey, object]:
    """The engine's answers a release layperson's items become."""
    expected: dict[AnswerKey, object] = {}
    for lay in person.lay_items:
        source, shown = sources[lay.source_key], text_of[(lay.source_key, lay.systems[0])]
        for phase, answers in (("original", lay.original), ("assisted", lay.assisted)):
            for name, level in answers.items():
                if level:
                    target = shown if name == "helpfulness" else None
                    expected[AnswerKey(pid, name, source, target, phase)] = scales.LAY_SCALES[name].value_of(
                        level
                    )
        for name, systems in (("most", lay.most), ("least", lay.least)):
            if systems:
                chosen = frozenset(str(text_of[(lay.source_key, s)]) for s in systems)
                expected[AnswerKey(pid, name, source, None, "preference")] = chosen
        for name in ("most_justification", "least_justification"):
            if getattr(lay, name):
                expected[AnswerKey(pid, name, source, None, "preference")] = getattr(lay, name)
    return expected


@pytest.mark.heavy
def test_the_release_reads_back_through_the_engine_after_the_migration(release_dir):
    call_command("import_release", str(release_dir), "--study", "release-engine", stdout=io.StringIO())
    study = Study.objects.get(slug="release-engine")
    # Every answer is stored under the study's presets (attached when it was created; a study made
    # before instruments existed got them from migration 0014, its answers moved by 0021:
    # tests/annotation/test_answer_store_migration.py).
    rows = {row.flow: row for row in StudyInstrument.objects.filter(study=study)}
    # import_release creates the study, so it is attached the presets as they are now (the
    # radiologist's with its practice items).
    assert instrument_from_data(rows[EXPERT].definition) == preset_load("protocol_003_radiologist")
    assert instrument_from_data(rows[LAY].definition) == preset_load("protocol_003_layperson")

    records = read_release(release_dir)
    participants = {p.pseudonym: p.pk for p in Participant.objects.filter(study=study)}
    sources = dict(study.sources.values_list("key", "pk"))
    text_of = {
        (source_key, system): text_id
        for source_key, system, text_id in SimplificationText.objects.filter(source__study=study).values_list(
            "source__key", "simplifications__system__key", "pk"
        )
    }
    expected: dict[AnswerKey, object] = {}
    for person in records.participants:
        pid = participants[person.pseudonym]
        expected |= _expert_answers_expected(person, pid, sources, text_of)
        expected |= _lay_answers_expected(person, pid, sources, text_of)
    read = {**instrument_answers(study=study, flow=EXPERT), **instrument_answers(study=study, flow=LAY)}
    # Comments of two systems sharing a text are merged into the one rating of that text: compared apart.
    merged_comments = {k: v for k, v in read.items() if k.item_key == "comment"}
    read = {k: v for k, v in read.items() if k.item_key != "comment"}
    assert read == expected
    for person in records.participants:
        for rating in person.expert_ratings:
            if rating.comment:
                key = AnswerKey(
                    participants[person.pseudonym],
                    "comment",
                    sources[rating.source_key],
                    text_of[(rating.source_key, rating.system)],
                )
                assert rating.comment in merged_comments[key]


def test_the_instrument_command_prints_saves_and_lists_versions(tmp_path):
    from django.core.management.base import CommandError

    from instruments.validation import instrument_from_yaml, instrument_to_yaml

    study = build_study(slug="command", n_sources=1, systems=("a", "b"))
    out = io.StringIO()
    call_command("instrument", "--study", "command", "--flow", "expert", stdout=out)
    assert instrument_from_yaml(out.getvalue()) == preset_load("protocol_003_radiologist")
    path = tmp_path / "radiologist.yaml"
    path.write_text(instrument_to_yaml(instrument_with("protocol_003_radiologist", ACTIONABILITY)))
    call_command("instrument", "--study", "command", "--save", str(path), stdout=io.StringIO())
    _rate_one(study)
    with pytest.raises(CommandError, match=r"x\.yaml"):
        call_command(
            "instrument", "--study", "command", "--save", str(tmp_path / "x.yaml"), stdout=io.StringIO()
        )
    retitled = dataclasses.replace(
        instrument_with("protocol_003_radiologist", ACTIONABILITY), title={"en": "Ours", "es": "Nuestro"}
    )
    path.write_text(instrument_to_yaml(retitled))
    with pytest.raises(CommandError, match="answers exist under version 1"):
        call_command("instrument", "--study", "command", "--save", str(path), stdout=io.StringIO())
    path.write_text(instrument_to_yaml(dataclasses.replace(retitled, version=2)))
    call_command(
        "instrument", "--study", "command", "--save", str(path), "--note", "our title", stdout=io.StringIO()
    )
    out = io.StringIO()
    call_command("instrument", "--study", "command", "--versions", stdout=out)
    assert out.getvalue().splitlines() == [
        "expert\tprotocol_003_radiologist\tv1\tkept\tattached when the study was created",
        "expert\tprotocol_003_radiologist\tv2\tcurrent\tour title",
        "lay\tprotocol_003_layperson\tv1\tcurrent\tattached when the study was created",
    ]
