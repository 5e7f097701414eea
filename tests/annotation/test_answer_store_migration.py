"""Migration 0021 moves every typed answer into the one answer store and back: a populated database
at 0020 (the typed tables filled, one study without instrument rows), migrated forward (rows,
values as the instrument's items take them, scores, times, revisions, the presets attached), then
back (the typed rows rebuilt as they were). Run with Django's MigrationExecutor, as Django's own
migration tests do."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from instruments.answers import item_value_validate
from instruments.validation import instrument_from_data

BEFORE = [("annotation", "0020_item_answer_targets")]
AFTER = [("annotation", "0022_drop_typed_answer_tables")]
SPAN = {"start": 0, "end": 3, "category": "omission", "severity": "minor"}
WHEN = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _populate(apps) -> dict:
    get = apps.get_model
    study = get("annotation", "Study").objects.create(slug="typed", title="Typed")
    source = get("annotation", "Source").objects.create(study=study, key="s1", text="Orig.", position=0)
    systems = [
        get("annotation", "System").objects.create(study=study, key=key, position=n)
        for n, key in enumerate(("a", "b"))
    ]
    Text = get("annotation", "SimplificationText")  # noqa: N806 - a historical model class
    texts = [Text.objects.create(source=source, text=f"Text {n}.", text_hash=f"h{n}") for n in range(2)]
    for system, text in zip(systems, texts, strict=True):
        get("annotation", "Simplification").objects.create(source=source, system=system, shown_text=text)
    Participant = get("annotation", "Participant")  # noqa: N806 - a historical model class
    radiologist = Participant.objects.create(
        study=study, role="radiologist", pseudonym="R1", token="r", language="en"
    )
    layperson = Participant.objects.create(study=study, role="layperson", pseudonym="L1", token="l")
    rating = get("annotation", "ExpertRating").objects.create(
        participant=radiologist,
        shown_text=texts[0],
        correctness=4,
        completeness=5,
        comment="Good.",
        time_spent_ms=1000,
    )
    judgement = get("annotation", "ExpertSourceJudgement").objects.create(
        participant=radiologist, source=source, severity="Mild", simplicity=3, time_spent_ms=500
    )
    item = get("annotation", "LayItem").objects.create(
        participant=layperson,
        source=source,
        position=0,
        assigned_system=systems[0],
        shown_text=texts[0],
        preference_order=[texts[1].pk, texts[0].pk],
        stage="done",
    )
    LayAnswer = get("annotation", "LayAnswer")  # noqa: N806 - a historical model class
    original = LayAnswer.objects.create(
        item=item,
        phase="original",
        understanding="Most of it",
        confidence="With low confidence",
        time_spent_ms=300,
    )
    LayAnswer.objects.create(
        item=item,
        phase="assisted",
        understanding="Completely",
        helpfulness="It did not help",
        time_spent_ms=200,
    )
    preference = get("annotation", "LayPreference").objects.create(
        item=item, most_justification="Clear.", order_shown=item.preference_order, time_spent_ms=100
    )
    preference.most.set(texts)
    control = get("annotation", "PlantedControl").objects.create(
        study=study, degrades=texts[1], kind="negation", text="Not text.", start=0, end=3,
        original_start=0, original_end=0, category="omission", severity="minor",
    )  # fmt: skip
    get("annotation", "PlantedControlAnswer").objects.create(
        participant=radiologist, control=control, scores={"correctness": 2}, added={"error_spans": [SPAN]},
        comment="Odd.", time_spent_ms=50, revisions=0,
    )  # fmt: skip
    Revision = get("annotation", "AnswerRevision")  # noqa: N806 - a historical model class
    Revision.objects.create(
        participant=radiologist, answer_type="annotation.ExpertRating", answer_id=rating.pk,
        previous={"correctness": 2}, previous_at=WHEN, revised_at=WHEN,
    )  # fmt: skip
    Revision.objects.create(
        participant=layperson, answer_type="annotation.LayAnswer", answer_id=original.pk,
        previous={"understanding": "Not at all"}, previous_at=WHEN, revised_at=WHEN,
    )  # fmt: skip
    return {"study": study.pk, "texts": [t.pk for t in texts], "judgement": judgement.pk, "source": source.pk}


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_the_typed_answers_move_into_the_store_and_back():
    try:
        old = _migrate(BEFORE)
        made = _populate(old)
        new = _migrate(AFTER)
        _check_forward(new, made)
        old = _migrate(BEFORE)
        _check_backward(old, made)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _check_forward(apps, made: dict) -> None:
    get = apps.get_model
    instruments = {
        row.flow: row for row in get("annotation", "StudyInstrument").objects.filter(study_id=made["study"])
    }
    # The study had no instrument rows: the presets are attached, as current versions.
    assert {f: (r.key, r.is_current) for f, r in instruments.items()} == {
        "expert": ("protocol_003_radiologist", True),
        "lay": ("protocol_003_layperson", True),
    }
    assert get("annotation", "Study").objects.get(pk=made["study"]).instruments_stamp
    rows = list(get("annotation", "ItemAnswer").objects.filter(participant__study_id=made["study"]))
    got = {
        (r.participant.role, r.item_key, r.phase, r.shown_text_id, r.control_id is not None): (
            r.value,
            r.score,
        )
        for r in rows
    }
    text, other = made["texts"]
    assert got == {
        ("radiologist", "correctness", "", text, False): (4, 4.0),
        ("radiologist", "completeness", "", text, False): (5, 5.0),
        ("radiologist", "comment", "", text, False): ("Good.", None),
        ("radiologist", "severity", "", None, False): (4, 4.0),  # Mild
        ("radiologist", "original_simplicity", "", None, False): (3, 3.0),
        ("layperson", "understanding", "original", None, False): (3, 3.0),
        ("layperson", "confidence", "original", None, False): (2, 2.0),
        ("layperson", "understanding", "assisted", None, False): (4, 4.0),
        ("layperson", "helpfulness", "assisted", text, False): (0, 0.0),
        ("layperson", "most", "preference", None, False): (sorted([str(text), str(other)]), None),
        ("layperson", "most_justification", "preference", None, False): ("Clear.", None),
        ("radiologist", "correctness", "", None, True): (2, 2.0),
        ("radiologist", "error_spans", "", None, True): ([SPAN], 1.0),
        ("radiologist", "comment", "", None, True): ("Odd.", None),
    }
    # Each typed row's time goes to its first item answer: the times add up per target.
    assert sorted(r.time_spent_ms for r in rows if r.time_spent_ms) == [50, 100, 200, 300, 500, 1000]
    # The values are what the presets' items take (the item values the flows store).
    for r in rows:
        if r.control_id is not None and r.item_key == "error_spans":
            continue
        item = instrument_from_data(r.instrument.definition).item(r.item_key)
        assert item_value_validate(item, r.value, texts=[str(text), str(other)]) is not None
    revisions = {
        (
            rev.answer_type,
            get("annotation", "ItemAnswer").objects.get(pk=rev.answer_id).item_key,
        ): rev.previous
        for rev in get("annotation", "AnswerRevision").objects.all()
    }
    assert revisions == {
        ("annotation.ItemAnswer", "correctness"): {"value": 2},
        ("annotation.ItemAnswer", "understanding"): {"value": 1},
    }


def _check_backward(apps, made: dict) -> None:
    get = apps.get_model
    text, other = made["texts"]
    (rating,) = get("annotation", "ExpertRating").objects.all()
    assert (rating.shown_text_id, rating.correctness, rating.completeness, rating.hallucination) == (
        text,
        4,
        5,
        None,
    )
    assert (rating.comment, rating.time_spent_ms) == ("Good.", 1000)
    (judgement,) = get("annotation", "ExpertSourceJudgement").objects.all()
    assert (judgement.severity, judgement.simplicity, judgement.comment, judgement.time_spent_ms) == (
        "Mild", 3, "", 500,
    )  # fmt: skip
    answers = {a.phase: a for a in get("annotation", "LayAnswer").objects.all()}
    assert (answers["original"].understanding, answers["original"].confidence) == (
        "Most of it",
        "With low confidence",
    )
    assert (answers["assisted"].understanding, answers["assisted"].helpfulness) == (
        "Completely",
        "It did not help",
    )
    assert (answers["original"].time_spent_ms, answers["assisted"].time_spent_ms) == (300, 200)
    (preference,) = get("annotation", "LayPreference").objects.all()
    assert set(preference.most.values_list("pk", flat=True)) == {text, other}
    assert (preference.most_justification, preference.order_shown) == ("Clear.", [other, text])
    (control,) = get("annotation", "PlantedControlAnswer").objects.all()
    assert (control.scores, control.added, control.comment, control.time_spent_ms) == (
        {"correctness": 2}, {"error_spans": [SPAN]}, "Odd.", 50,
    )  # fmt: skip
    assert not get("annotation", "ItemAnswer").objects.exists()
    revisions = {
        (r.answer_type, r.answer_id): r.previous for r in get("annotation", "AnswerRevision").objects.all()
    }
    assert revisions == {
        ("annotation.ExpertRating", rating.pk): {"correctness": 2},
        ("annotation.LayAnswer", answers["original"].pk): {"understanding": "Not at all"},
    }


SQLITE_SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from tests.annotation import test_answer_store_migration as t

call_command("migrate", verbosity=0)
old = t._migrate(t.BEFORE)
made = t._populate(old)
t._check_forward(t._migrate(t.AFTER), made)
t._check_backward(t._migrate(t.BEFORE), made)
executor = MigrationExecutor(connection)
executor.migrate(executor.loader.graph.leaf_nodes())
print(json.dumps({"checked": True}))
"""


@pytest.mark.heavy
def test_the_migration_runs_both_ways_on_the_embedded_sqlite_default(tmp_path):
    from tests.annotation.sqlite_run import run_on_sqlite

    assert run_on_sqlite(SQLITE_SCRIPT, tmp_path) == {"checked": True}
