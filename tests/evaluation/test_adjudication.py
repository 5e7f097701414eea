"""The adjudication queue and the recording of consensus labels (evaluation/adjudication_*.py):
the queue's order and measures, every refusal on its field, the label stored beside the raw
answers, the activity log and the final labels' provenance."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import ActivityEvent, ItemAnswer, StudyMembership
from evaluation.adjudication_selectors import UnitKey, adjudication_queue, study_units
from evaluation.adjudication_services import adjudication_record
from evaluation.models import AdjudicatedLabel
from measures.stats.disagreement import ADJUDICATED, AGREEMENT, UNRESOLVED
from tests.evaluation.adjudication_studies import disagreeing_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    return disagreeing_study()


def _correctness(setup) -> str:
    return UnitKey(setup["protocol"].pk, "correctness", setup["text"].source_id, setup["text"].pk).token


def test_the_queue_holds_the_disagreements_most_first(setup):
    queue = adjudication_queue(study=setup["study"])
    # correctness 2 vs 5 on a 1-5 scale: spread 3/4; the spans share nothing: 1.
    assert [(unit.item.key, unit.disagreement.score) for unit in queue] == [
        ("error_spans", 1.0),
        ("correctness", 0.75),
    ]
    correctness = queue[1]
    assert [a.rater for a in correctness.answers] == ["Rater 1", "Rater 2"]
    assert [a.value for a in correctness.answers] == [2, 5]
    # Their comments on the text are beside their answers; their pseudonyms are not.
    assert correctness.answers[0].justifications[0][1] == "R1 thinks 2"
    assert "R1" not in correctness.answers[0].rater


def test_recording_stores_the_label_beside_the_answers(setup):
    study = setup["study"]
    label = adjudication_record(
        study=study,
        unit=_correctness(setup),
        value="4",
        reason="misread",
        guideline_gap=True,
        adjudicator=setup["adjudicator"],
        time_spent_ms=1200,
    )
    assert (label.value, label.score, label.raters, label.disagreement) == (4, 4.0, 2, 0.75)
    # The raw answers are untouched.
    assert sorted(
        ItemAnswer.objects.filter(shown_text=setup["text"], item_key="correctness").values_list(
            "value", flat=True
        )
    ) == [
        2,
        5,
    ]
    assert [unit.item.key for unit in adjudication_queue(study=study)] == ["error_spans"]
    event = ActivityEvent.objects.get(study=study, verb="adjudication.recorded")
    assert event.details["value"] == 4 and event.details["guideline_gap"] is True
    assert event.actor_label == setup["adjudicator"].username
    # A second decision revises the label and logs the previous one.
    adjudication_record(
        study=study,
        unit=_correctness(setup),
        value=3,
        reason="genuine_ambiguity",
        adjudicator=setup["adjudicator"],
    )
    assert AdjudicatedLabel.objects.get().value == 3
    revised = ActivityEvent.objects.get(study=study, verb="adjudication.revised")
    assert revised.details["previous"] == {"value": 4, "reason": "misread"}


def test_final_labels_say_where_they_come_from(setup):
    study = setup["study"]
    adjudication_record(
        study=study, unit=_correctness(setup), value=4, reason="misread", adjudicator=setup["adjudicator"]
    )
    units = {(u.item.key, u.key.shown_text_id, u.key.source_id): u for u in study_units(study=study)}
    text = setup["text"]
    assert units[("correctness", text.pk, text.source_id)].final == (4, ADJUDICATED)
    assert units[("completeness", text.pk, text.source_id)].final == (4, AGREEMENT)
    assert units[("error_spans", text.pk, text.source_id)].final.provenance == UNRESOLVED
    # Severity is about the source: the unit has no text.
    assert units[("severity", None, text.source_id)].final.provenance == AGREEMENT


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"unit": "1.nothing"}, "unit", "is not <instrument>"),
        ({"value": "9"}, "value", "is not a point of the scale"),
        ({"value": ""}, "value", "required"),
        ({"reason": "tired"}, "reason", "is not one of"),
        ({"time_spent_ms": -1}, "time_spent_ms", "from 0 to"),
    ],
)
def test_bad_input_is_refused_on_its_field(setup, changes, field, reason):
    arguments = {
        "study": setup["study"],
        "unit": _correctness(setup),
        "value": 4,
        "reason": "misread",
        "adjudicator": setup["adjudicator"],
        **changes,
    }
    with pytest.raises(ValidationError) as refused:
        adjudication_record(**arguments)
    assert reason in " ".join(refused.value.message_dict[field])
    assert not AdjudicatedLabel.objects.exists()


def test_a_rater_of_the_item_may_not_adjudicate_it(setup):
    study = setup["study"]
    StudyMembership.objects.create(study=study, user=setup["rater_user"], role="adjudicator")
    with pytest.raises(ValidationError) as refused:
        adjudication_record(
            study=study, unit=_correctness(setup), value=4, reason="misread", adjudicator=setup["rater_user"]
        )
    assert "you rated this item" in refused.value.message_dict["adjudicator"][0]


def test_agreeing_units_and_unknown_targets_are_refused(setup):
    text = setup["text"]
    agreed = UnitKey(setup["protocol"].pk, "completeness", text.source_id, text.pk).token
    with pytest.raises(ValidationError, match="raters agree"):
        adjudication_record(
            study=setup["study"], unit=agreed, value=4, reason="misread", adjudicator=setup["adjudicator"]
        )
    elsewhere = UnitKey(setup["protocol"].pk, "correctness", 10**9, text.pk).token
    with pytest.raises(ValidationError, match="no source"):
        adjudication_record(
            study=setup["study"], unit=elsewhere, value=4, reason="misread", adjudicator=setup["adjudicator"]
        )


def test_span_consensus_is_checked_against_the_text(setup):
    text = setup["text"]
    unit = UnitKey(setup["version"].pk, "error_spans", text.source_id, text.pk).token
    mark = {"start": 0, "end": len(text.text) + 5, "category": "unexplained_jargon", "severity": "minor"}
    with pytest.raises(ValidationError) as refused:
        adjudication_record(
            study=setup["study"], unit=unit, value=[mark], reason="misread", adjudicator=setup["adjudicator"]
        )
    assert "after the text" in refused.value.message_dict["value"][0]
    mark["end"] = 5
    label = adjudication_record(
        study=setup["study"], unit=unit, value='[{"start": 0, "end": 5, "category": "unexplained_jargon", '
        '"severity": "minor"}]', reason="guideline_unclear", adjudicator=setup["adjudicator"]
    )  # fmt: skip
    assert label.value == [mark] and label.score == 1.0


def test_the_database_holds_one_label_per_unit_and_the_reasons(setup):
    label = adjudication_record(
        study=setup["study"],
        unit=_correctness(setup),
        value=4,
        reason="misread",
        adjudicator=setup["adjudicator"],
    )
    label.pk = None
    with pytest.raises(IntegrityError), transaction.atomic():
        label.save()
    with pytest.raises(IntegrityError), transaction.atomic():
        AdjudicatedLabel.objects.filter(pk=AdjudicatedLabel.objects.get().pk).update(reason="tired")


def test_pairwise_answers_compare_by_their_choice_and_give_their_reason():
    from evaluation.adjudication_selectors import comparable, disagreement_of, justification
    from instruments.presets import preset_load

    item = preset_load("pairwise_clinical").items[0]
    assert item.kind.value == "pairwise"
    keys = [option.key for option in item.options]
    answers = [{"choice": keys[0], "reason": "clearer"}, {"choice": keys[1], "reason": ""}]
    values = [comparable(item, value) for value in answers]
    assert values == keys[:2]
    assert justification(item, answers[0]) == "clearer" and justification(item, answers[1]) == ""
    split = disagreement_of(item, values)
    assert (split.score, split.majority, split.measure) == (1.0, None, "majority share")
    assert disagreement_of(item, [keys[0], keys[0], keys[1]]).majority == keys[0]
