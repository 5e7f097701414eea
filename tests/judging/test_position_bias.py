"""A pairwise judge asked every comparison in both orders (judging.position_bias): the glossary
heuristic reads both texts alike (no flips), a judge that always answers "A" flips every pair; the
ranking counts both orders."""

from __future__ import annotations

import io
import json

import pytest
from django.template.loader import render_to_string

from judging.management.commands.judge import Command
from judging.models import JudgeItem
from judging.report import judge_report_context
from surveys.compare_two.services import pairwise_instrument_attach
from tests.annotation.factories import build_study


@pytest.fixture
def pairwise_study(db):
    study = build_study(slug="pw-judged", n_sources=3, systems=("a", "b", "c"))
    pairwise_instrument_attach(study=study)
    return study


def test_every_pair_is_asked_in_both_orders_and_the_heuristic_never_flips(pairwise_study, launch):
    run = launch(study=pairwise_study, backend="glossary", instruments=["pairwise_clinical"])
    items = JudgeItem.objects.filter(run=run)
    # 3 sources × 3 pairs of systems × 2 orders.
    assert items.count() == 18 and items.exclude(status="succeeded").count() == 0
    orders = {(i.source_id, i.shown_text_id, i.reference_text_id) for i in items}
    assert all((s, b, a) in orders for s, a, b in orders)
    (row,) = run.agreement["position_bias"]
    assert row["item"] == "preference" and row["n_pairs_both_orders"] == 9
    assert row["flips"] == 0 and row["flip_share"]["estimate"] == 0
    assert 0 <= row["flip_share"]["low"] <= row["flip_share"]["high"] <= 1
    assert row["ranking"]["n_comparisons"] == row["n_judgements"] == 18
    out = io.StringIO()
    Command(stdout=out)._print_agreement(run)
    assert "flip share 0.000" in out.getvalue() and "over 9 pairs" in out.getvalue()


def test_a_judge_that_prefers_the_first_text_flips_every_pair(pairwise_study, launch, judge_server):
    def always_a(request):
        return json.dumps({"preference": "left"})

    for agent in ("radiologist", "patient", "generator"):
        judge_server.set_fallback(agent, always_a)
    run = launch(
        study=pairwise_study, backend="openai", model_name="judge-model", instruments=["pairwise_clinical"]
    )
    prompt = judge_server.chat_requests()[0].messages[0]["content"]
    assert "Text A:" in prompt and "Text B:" in prompt
    (row,) = run.agreement["position_bias"]
    assert row["flip_share"]["estimate"] == 1 and row["flips"] == 9
    rate = row["first_position_win_rate"]
    assert rate["estimate"] == 1 and rate["p_value"] < 0.001 and 0 <= rate["low"] <= rate["high"] <= 1
    # Both orders in the ranking: every system wins as often as it loses, so none stands out.
    strengths = [s["strength"] for s in row["ranking"]["systems"]]
    assert max(abs(s) for s in strengths) < 1e-6
    html = render_to_string(
        "judging/_report_section.html", {"judges": judge_report_context(study=pairwise_study)}
    )
    assert "judge-position-bias" in html and "1.000" in html


@pytest.fixture
def preference_study(db):
    """A study whose sources each have a reference text and two systems' texts, asking in the
    "pairs" flow (not the pairwise flow) which of a text and its reference is better, beside a
    1–5 rating of the text against its reference."""
    from instruments.presets import preset_load
    from instruments.validation import instrument_from_data, instrument_to_data
    from tests.evaluation.instrument_studies import instrument_add, pairs_study

    def english(value):
        if isinstance(value, dict):
            return {k: english(v) for k, v in value.items() if k != "es"}
        return [english(v) for v in value] if isinstance(value, list) else value

    study, _ = pairs_study(slug="pref-judged", systems=("a", "b"), n_sources=3)
    data = english(instrument_to_data(preset_load("pairwise_clinical")))
    rating = instrument_to_data(preset_load("medlaybench_002"))["items"][0]
    data |= {"key": "pairs_preference", "languages": ["en"], "items": [*data["items"], rating]}
    instrument = instrument_from_data(data)
    instrument_add(study=study, instrument=instrument, flow="pairs")
    return study, rating["key"]


def test_a_preference_item_of_another_flow_is_asked_in_both_orders(preference_study, launch):
    from judging.instrument_answers import judge_answers_frame
    from judging.models import JudgeAnswer
    from judging.pair_orders import reference_texts

    study, rating = preference_study
    run = launch(study=study, backend="glossary", instruments=["pairs_preference"])
    items = JudgeItem.objects.filter(run=run)
    # 3 sources × 2 systems × 2 orders.
    assert items.count() == 12 and items.exclude(status="succeeded").count() == 0
    references = {text for texts in reference_texts(study_id=study.pk).values() for text in texts}
    forward = {(i.shown_text_id, i.reference_text_id) for i in items if i.reference_text_id in references}
    reversed_ = {(i.shown_text_id, i.reference_text_id) for i in items if i.shown_text_id in references}
    assert len(forward) == len(reversed_) == 6 and {(b, a) for a, b in reversed_} == forward
    for answer in JudgeAnswer.objects.filter(item__run=run).select_related("item"):
        # The reversed order asks the preference only: a rating of the reference against the text
        # would be a rating of the wrong text.
        expected = {"preference"} if answer.item.shown_text_id in references else {"preference", rating}
        assert set(answer.item_values) == expected
    # The judge-vs-human rows keep the order the humans were asked.
    frame = judge_answers_frame(study=study, run_id=run.pk)
    assert set(frame["reference_id"].astype(int)) <= references and len(frame) == 6 * 2
    (row,) = run.agreement["position_bias"]
    assert (row["instrument"], row["flow"], row["item"]) == ("pairs_preference", "pairs", "preference")
    assert row["n_pairs_both_orders"] == 6 and row["flips"] == 0
    assert row["ranking"]["n_comparisons"] == row["n_judgements"] == 12


def test_a_first_text_judge_flips_every_preference_of_another_flow(preference_study, launch, judge_server):
    study, rating = preference_study

    def always_a(request):
        prompt = request.messages[-1]["content"]
        answer = {"preference": "left"}
        if "Questions:" in prompt and f'"{rating}"' in prompt:
            answer[rating] = 3
        return json.dumps(answer)

    for agent in ("radiologist", "patient", "generator"):
        judge_server.set_fallback(agent, always_a)
    run = launch(study=study, backend="openai", model_name="judge-model", instruments=["pairs_preference"])
    assert run.items.exclude(status="succeeded").count() == 0
    (row,) = run.agreement["position_bias"]
    assert row["flow"] == "pairs" and row["flips"] == 6 and row["flip_share"]["estimate"] == 1
    rate = row["first_position_win_rate"]
    assert rate["estimate"] == 1 and 0 <= rate["low"] <= rate["high"] <= 1
