"""The protocol's answers in the wide layout (evaluation/exports/wide.py): one row per stored
answer, one column per question, and every value of the long export in exactly one cell."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evaluation.exports.answers import AnswerExport
from evaluation.exports.wide import ProtocolWideExport
from tests.annotation import answers
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = pytest.mark.django_db

KEY = ("participant", "source", "systems", "assigned_system", "text_id", "phase", "created_at")


def _csv(export) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(export).decode("utf-8"))))


def test_every_long_value_is_one_cell_of_the_wide_rows():
    study = build_answered_study(slug="wide")
    long_rows = _csv(AnswerExport(study=study, file_format="csv"))
    wide_rows = _csv(ProtocolWideExport(study=study, file_format="csv"))
    cells = {
        (tuple(row[k] for k in KEY), question): value
        for row in wide_rows
        for question, value in row.items()
        if question not in KEY and question in {r["question"] for r in long_rows} and value != ""
    }
    assert cells == {(tuple(r[k] for k in KEY), r["question"]): r["value"] for r in long_rows}
    # One wide row per lay panel and per rated text (the other stored answers have rows of their own).
    lay = [r for r in wide_rows if r["role"] == "layperson" and r["phase"] in ("original", "assisted")]
    expert = [r for r in wide_rows if r["phase"] == "expert"]
    assert len(lay) == len(answers.lay_answers(study=study))
    assert len(expert) == len(answers.ratings(study=study))


def test_the_dashboard_offers_it_where_the_protocol_is_asked(client):
    from django.contrib.auth import get_user_model

    study = build_answered_study(slug="wide-view")
    user = get_user_model().objects.create_user("r", password="x")
    study.researchers.add(user)
    client.force_login(user)
    url = reverse("evaluation:study-export", args=["wide-view", "csv"])
    response = client.get(url + "?layout=wide")
    assert response.status_code == 200 and "answers-protocol-wide" in response["Content-Disposition"]
    assert client.get(url + "?layout=tall").status_code == 400
