"""A pairwise judge asked every comparison in both orders (judging.position_bias): the glossary
heuristic reads both texts alike (no flips), a judge that always answers "A" flips every pair; the
ranking counts both orders."""

from __future__ import annotations

import io
import json

import pytest
from django.template.loader import render_to_string

from annotation.pairwise.services import pairwise_instrument_attach
from judging.management.commands.judge import Command
from judging.models import JudgeItem
from judging.report import judge_report_context
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
