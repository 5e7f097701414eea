"""The error-span export (one row per span, humans and judges; CSV, XLSX, JSON and the API) and the
"Clinical safety: error spans" section of the dashboard and the report, recomputed by hand from the
stored answers."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.analysis.error_spans import wilson_interval
from tests.annotation import answers as typed_answers
from tests.evaluation.span_studies import span_study

pytestmark = pytest.mark.usefixtures("fast_analysis")


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def spans(owner):
    study, version, people = span_study(slug="spanexport")
    study.researchers.add(owner)
    return study


def _body(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def _expected(study) -> list[tuple]:
    rows = []
    for answer in typed_answers.item_answers().filter(participant__study=study, item_key="error_spans"):
        text = answer.shown_text.text
        marked = sorted(
            answer.value or [], key=lambda s: (s["start"], s["end"], s["category"], s["severity"])
        )
        if not marked:
            rows.append((answer.participant.pseudonym, answer.shown_text_id, 0, "", "", ""))
        for span in marked:
            rows.append(
                (answer.participant.pseudonym, answer.shown_text_id, len(marked),
                 text[span["start"] : span["end"]], span["category"], span["severity"])
            )  # fmt: skip
    return sorted(rows)


def test_one_row_per_span_and_one_per_text_seen_without_marks(client, owner, spans):
    client.force_login(owner)
    frame = pd.read_csv(
        io.BytesIO(_body(client.get(f"/dashboard/{spans.slug}/items.csv", {"layout": "spans"}))),
        keep_default_na=False,
    )
    got = sorted(
        (r.participant, int(r.text_id), int(r.spans_on_text), r.marked_text, r.category, r.severity)
        for r in frame.itertuples()
    )
    assert got == _expected(spans)
    assert set(frame["systems"]) == {"plain", "lay"} and set(frame["role"]) == {"radiologist"}
    clean = frame[frame["spans_on_text"] == 0]
    assert len(clean) and (clean["start"] == "").all()
    # the marked text is the shown text's characters at the offsets
    some = frame[frame["spans_on_text"] > 0].iloc[0]
    answer = typed_answers.item_answers().get(
        participant__pseudonym=some["participant"], shown_text_id=some["text_id"]
    )
    assert answer.shown_text.text[int(some["start"]) : int(some["end"])] == some["marked_text"]
    xlsx = pd.read_excel(
        io.BytesIO(_body(client.get(f"/dashboard/{spans.slug}/items.xlsx", {"layout": "spans"})))
    )
    assert len(xlsx) == len(frame)


def test_the_api_json_is_typed_and_carries_the_judges_spans(spans, owner, django_capture_on_commit_callbacks):
    from judging import services

    with django_capture_on_commit_callbacks(execute=True):
        run = services.judge_run_create(
            study=spans, backend="glossary", instruments=["protocol_003_radiologist"]
        )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    rows = json.loads(_body(api.get(f"/api/studies/{spans.slug}/items/json/", {"layout": "spans"})))
    humans = [r for r in rows if r["role"] == "radiologist"]
    judged = [r for r in rows if r["role"] == f"judge:{run.pk}"]
    assert len(humans) == len(_expected(spans)) and judged
    assert {r["participant"] for r in judged} == {f"judge {run.pk}"}
    marked = [r for r in judged if r["spans_on_text"]]
    assert marked and all(isinstance(r["start"], int) for r in marked)
    assert all(r["start"] is None and r["marked_text"] == "" for r in judged if not r["spans_on_text"])
    bad = api.get(f"/api/studies/{spans.slug}/items/csv/", {"layout": "tall"})
    assert bad.status_code == 400 and "spans" in bad.json()["layout"][0]


def test_dashboard_and_report_lead_with_the_could_harm_share(client, owner, spans):
    client.force_login(owner)
    page = client.get(f"/dashboard/{spans.slug}/")
    if b"Clinical safety" not in page.content:  # the first visit queued the analysis (eager in tests)
        page = client.get(f"/dashboard/{spans.slug}/")
    text = page.content.decode()
    assert "Clinical safety: error spans" in text and "could harm" in text
    answers = typed_answers.item_answers().filter(participant__study=spans, item_key="error_spans")
    for system in ("plain", "lay"):
        texts = {}
        for a in answers.filter(shown_text__simplifications__system__key=system):
            harmed = any(s["severity"] == "could_harm" for s in a.value or [])
            texts[a.shown_text_id] = texts.get(a.shown_text_id, False) or harmed
        k, n = sum(texts.values()), len(texts)
        low, high = wilson_interval(k, n)
        figure = f"{100 * k / n:.1f}% [{100 * low:.1f}%, {100 * high:.1f}%]"
        assert f"{k} of {n}" in text
        assert figure.split(" [")[0] in text and figure.split(" ", 1)[1] in text
    report = client.get(f"/dashboard/{spans.slug}/report.html").content.decode()
    assert "Clinical safety: error spans" in report and "Krippendorff" in report
