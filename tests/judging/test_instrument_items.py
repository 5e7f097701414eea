"""Judges that ask an instrument's items (judging/instrument_items.py): seed 002's four criteria
and seed 000's sentence matching with no code change — the prompt and schema built from the items,
answers validated with instruments.answers, stored on JudgeAnswer, and set beside the humans'."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest

from annotation.models import Participant
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.analysis.study import study_analysis
from evaluation.analysis.study_frames import study_frames
from instruments.answers import item_value_validate
from instruments.presets import preset_load
from instruments.schema import AppliesTo
from judging.instrument import AnswerError
from judging.instrument_items import (
    ITEM_TASK,
    aggregate_item_samples,
    answer_schema,
    item_prompt,
    judge_items,
    parse_item_answer,
)
from judging.models import JudgeAnswer
from tests.annotation import answers as typed_answers
from tests.evaluation.instrument_studies import seed000_study, seed002_study

CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")
MEDLAY = preset_load("medlaybench_002")


def test_the_prompt_and_schema_come_from_the_items():
    items = judge_items(MEDLAY, AppliesTo.PAIR)
    assert [item.key for item in items] == list(CRITERIA)
    prompt = item_prompt(MEDLAY, items, role="radiologist", sentence="S.", text="T.", reference="R.")
    for item in items:
        assert item.wording["en"] in prompt and item.title["en"] in prompt
    assert "1 - strongly disagree" in prompt and "5 - strongly agree" in prompt
    schema = answer_schema(items)
    assert schema["required"] == list(CRITERIA) and schema["properties"]["fluency"] == {
        "enum": [1, 2, 3, 4, 5]
    }
    assert judge_items(MEDLAY, AppliesTo.SOURCE) == ()


def test_answers_are_validated_like_a_humans():
    items = judge_items(MEDLAY, AppliesTo.PAIR)
    good = {"factual_correctness": 5, "completeness": 4, "simplicity": 3, "fluency": 5, "justification": "ok"}
    assert parse_item_answer(items, "```json\n" + json.dumps(good) + "\n```") == good
    with pytest.raises(AnswerError) as out_of_range:
        parse_item_answer(items, json.dumps({**good, "fluency": 6}))
    assert out_of_range.value.kind == "out_of_range" and "fluency" in str(out_of_range.value)
    with pytest.raises(AnswerError) as missing:
        parse_item_answer(items, json.dumps({"factual_correctness": 5}))
    assert missing.value.kind == "schema"
    matching = judge_items(preset_load("layman_rrg_000_matching"), AppliesTo.PAIR)
    parsed = parse_item_answer(
        matching, json.dumps({"sentence_match": [[0], [0, 2]]}), generated=3, references=2
    )
    assert parsed["sentence_match"] == {"generated_count": 3, "matches": [[0], [0, 2]]}
    with pytest.raises(AnswerError):
        parse_item_answer(matching, json.dumps({"sentence_match": [[3], []]}), generated=3, references=2)
    values, scores, spread = aggregate_item_samples(items, [dict(good, fluency=f) for f in (5, 4, 4)])
    assert (
        values["fluency"] == 4 and scores["fluency"] == 4.0 and spread["fluency"]["values"] == [5.0, 4.0, 4.0]
    )


@pytest.fixture
def launch(django_capture_on_commit_callbacks):
    from judging import services

    def run(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            judge_run = services.judge_run_create(**kwargs)
        judge_run.refresh_from_db()
        return judge_run

    return run


@pytest.mark.heavy
@pytest.mark.django_db
def test_the_glossary_judge_answers_seed002s_criteria_offline_and_enters_agreement(launch):
    study, instrument, raters = seed002_study(slug="medjudge", n_sources=6)
    humans_before = typed_answers.item_answers().count()
    run = launch(study=study, backend="glossary", instruments=["medlaybench_002"])
    assert run.items.filter(task=ITEM_TASK).count() == 6 * 2  # every (lay caption, expert caption) pair
    assert run.items.exclude(status="succeeded").count() == 0
    for answer in JudgeAnswer.objects.filter(item__run=run):
        assert set(answer.item_values) == set(CRITERIA)  # jsonb keeps keys sorted
        for key, value in answer.item_values.items():
            assert item_value_validate(instrument.item(key), value) == value
            assert answer.item_scores[key] == float(value)
    # Deterministic: a second run gives the same answers.
    again = launch(study=study, backend="glossary", instruments=["medlaybench_002"])
    values = lambda r: sorted(  # noqa: E731
        (a.item.shown_text_id, json.dumps(a.item_values)) for a in JudgeAnswer.objects.filter(item__run=r)
    )
    assert values(run) == values(again)
    # Judges are not participants and write no human answer.
    assert (
        typed_answers.item_answers().count() == humans_before
        and Participant.objects.filter(study=study).count() == 3
    )
    # The run's agreement and the study analysis set the judge beside the humans, per item.
    records = {r["item"]: r for r in run.agreement["instrument_items"]}
    assert set(records) == set(CRITERIA)
    analysis = study_analysis(
        study_frames(study=study),
        options=AnalysisOptions(n_resamples=20, correlations=False, metric_families=("readability",)),
    )
    (group,) = analysis["instrument_items"]["groups"]
    assert analysis["instrument_items"]["n"]["judge_answers"] == 2 * 12 * 4
    fluency = next(item for item in group["items"] if item["key"] == "fluency")
    assert fluency["n_participants"] == 3  # the judge is not counted among the humans
    mine = next(j for j in fluency["judges"] if j["judge"] == str(run.pk))
    humans = typed_answers.item_answers().filter(participant__study=study, item_key="fluency")
    units = sorted({(a.shown_text_id, a.reference_text_id) for a in humans})
    grid = np.full((4, len(units)), np.nan)
    for a in humans:
        grid[
            ["E1", "E2", "L"].index(a.participant.pseudonym),
            units.index((a.shown_text_id, a.reference_text_id)),
        ] = a.score
    for answer in JudgeAnswer.objects.filter(item__run=run):
        grid[3, units.index((answer.item.shown_text_id, answer.item.reference_text_id))] = answer.item_scores[
            "fluency"
        ]
    assert mine["with_humans"]["n_coders"] == 4
    if np.unique(grid[~np.isnan(grid)]).size > 1:
        assert mine["with_humans"]["alpha_ordinal"] == pytest.approx(
            krippendorff.alpha(
                reliability_data=grid, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
            )
        )
    assert records["fluency"]["with_humans"]["alpha_ordinal"] == mine["with_humans"]["alpha_ordinal"]


@pytest.mark.django_db
def test_the_glossary_judge_matches_sentences(launch):
    study, instrument, annotators = seed000_study(slug="matchjudge", n_sources=3)
    run = launch(study=study, backend="glossary", instruments=["layman_rrg_000_matching"])
    assert run.items.exclude(status="succeeded").count() == 0
    answer = JudgeAnswer.objects.filter(item__run=run).first()
    value = answer.item_values["sentence_match"]
    assert item_value_validate(instrument.item("sentence_match"), value) is not None
    assert 0.0 <= answer.item_scores["sentence_match"] <= 1.0


@pytest.mark.django_db
def test_a_models_answers_are_validated_and_an_unknown_instrument_is_named(launch, judge_server):
    from django.core.exceptions import ValidationError

    study, instrument, raters = seed002_study(slug="medllm", n_sources=2, systems=("scgr",))
    answers = iter(["I cannot help with that.", json.dumps(dict.fromkeys(CRITERIA, 6))])

    def respond(request):
        return next(answers, json.dumps(dict.fromkeys(CRITERIA, 4)))

    judge_server.set_fallback("generator", respond)
    run = launch(study=study, backend="openai", model_name="judge-model", instruments=["medlaybench_002"])
    assert run.items.exclude(status="succeeded").count() == 0
    first = run.items.order_by("pk").first()
    assert [entry.get("kind") for entry in first.transcript][:2] in (
        ["refusal", "out_of_range"],
        ["malformed", "out_of_range"],
    )
    assert [a.item_values for a in JudgeAnswer.objects.filter(item__run=run)] == [
        dict.fromkeys(CRITERIA, 4)
    ] * 2
    with pytest.raises(ValidationError) as error:
        launch(study=study, backend="glossary", instruments=["no_such_instrument"])
    assert (
        "instruments" in error.value.message_dict
        and "medlaybench_002" in error.value.message_dict["instruments"][0]
    )


@pytest.mark.django_db
def test_the_judge_answers_csv_carries_the_item_answers(launch, client):
    import csv
    import io

    from django.contrib.auth import get_user_model

    study, instrument, raters = seed002_study(slug="medcsv", n_sources=2, systems=("scgr",))
    run = launch(study=study, backend="glossary", instruments=["medlaybench_002"])
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    study.researchers.add(user)
    client.force_login(user)
    response = client.get(f"/judging/{study.slug}/judge-answers.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert {row["task"] for row in rows} == {ITEM_TASK} and len(rows) == run.items.count() == 2
    stored = {a.item.shown_text_id: a for a in JudgeAnswer.objects.filter(item__run=run)}
    for row in rows:
        answer = stored[int(row["text_id"])]
        assert (
            row["instrument"] == "medlaybench_002 v1"
            and int(row["reference_text_id"]) == answer.item.reference_text_id
        )
        assert json.loads(row["item_values"]) == answer.item_values
        assert json.loads(row["item_scores"]) == answer.item_scores
