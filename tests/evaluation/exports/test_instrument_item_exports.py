"""Instrument-item exports (long and wide; CSV, XLSX, JSON) and the API: the analysis's figures
recomputed with pandas and `krippendorff` from the exported files, and the role rule."""

from __future__ import annotations

import io
import json

import krippendorff
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import StudyMembership
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.analysis.study import study_analysis
from evaluation.analysis.study_frames import study_frames
from studies.team_services import study_member_add
from tests.annotation import answers
from tests.evaluation.instrument_studies import seed000_study, seed002_study

pytestmark = pytest.mark.usefixtures("fast_analysis")
CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def api(owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return client


@pytest.fixture
def medlay(owner):
    study, instrument, raters = seed002_study(n_sources=8)
    raters[0].external_id = "PROLIFIC-E1"
    raters[0].save()
    study.researchers.add(owner)
    return study


def _body(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def test_long_and_wide_csv_reproduce_the_analysis(client, owner, medlay):
    client.force_login(owner)
    long = pd.read_csv(io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.csv"))))
    assert len(long) == answers.item_answers().filter(participant__study=medlay).count()
    assert set(long["instrument"]) == {"medlaybench_002"} and set(long["language"]) == {"en"}
    assert set(long["item_kind"]) == {"ordinal"} and "external_id" not in long.columns
    wide = pd.read_csv(
        io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.csv", {"layout": "wide"})))
    )
    # One row per participant × pair, one column per criterion.
    assert len(wide) == 3 * 8 * 2
    assert [f"medlaybench_002.{c}" for c in CRITERIA] == [c for c in wide.columns if c.startswith("medlay")]
    options = AnalysisOptions(n_resamples=20, correlations=False, metric_families=("readability",))
    analysis = study_analysis(study_frames(study=medlay), options=options)
    (group,) = analysis["instrument_items"]["groups"]
    for record in group["items"]:
        column = f"medlaybench_002.{record['key']}"
        # Per-criterion mean from either layout, with pandas.
        assert record["mean"]["mean"] == pytest.approx(long[long["item"] == record["key"]]["score"].mean())
        assert record["mean"]["mean"] == pytest.approx(wide[column].mean())
        for system, rows in wide.groupby("systems"):
            assert record["by_system"][system]["mean"] == pytest.approx(rows[column].mean())
        grid = wide.pivot_table(index="participant", columns=["text_id", "reference_text_id"], values=column)
        assert record["agreement"]["alpha_ordinal"] == pytest.approx(
            krippendorff.alpha(
                reliability_data=grid.to_numpy(float),
                level_of_measurement="ordinal",
                value_domain=[1, 2, 3, 4, 5],
            )
        )


def test_xlsx_and_json_hold_the_same_rows(client, owner, medlay):
    from openpyxl import load_workbook

    client.force_login(owner)
    csv_rows = pd.read_csv(io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.csv"))))
    sheet = load_workbook(io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.xlsx")))).active
    values = list(sheet.values)
    xlsx_rows = pd.DataFrame(values[1:], columns=values[0])
    assert list(xlsx_rows.columns) == list(csv_rows.columns)
    assert xlsx_rows["score"].astype(float).tolist() == csv_rows["score"].tolist()
    records = json.loads(_body(client.get(f"/dashboard/{medlay.slug}/items.json")))
    assert [r["value"] for r in records] == csv_rows["value"].tolist()


def test_sentence_matching_values_are_typed_in_json_and_text_in_csv(client, owner):
    study, instrument, annotators = seed000_study(slug="matching", n_sources=3)
    study.researchers.add(owner)
    client.force_login(owner)
    records = json.loads(_body(client.get(f"/dashboard/{study.slug}/items.json")))
    assert isinstance(records[0]["value"], dict) and set(records[0]["value"]) == {
        "generated_count",
        "matches",
    }
    stored = {
        (a.participant.pseudonym, a.shown_text_id): a
        for a in answers.item_answers().filter(participant__study=study)
    }
    for record in records:
        answer = stored[(record["participant"], record["text_id"])]
        assert record["value"] == answer.value and record["score"] == answer.score
    long = pd.read_csv(io.BytesIO(_body(client.get(f"/dashboard/{study.slug}/items.csv"))))
    assert json.loads(long["value"][0]) == records[0]["value"]
    wide = pd.read_csv(
        io.BytesIO(_body(client.get(f"/dashboard/{study.slug}/items.csv", {"layout": "wide"})))
    )
    assert wide["layman_rrg_000_matching.sentence_match"].tolist() == pytest.approx(long["score"].tolist())


def test_a_viewer_gets_no_external_ids_and_a_bad_layout_is_named(client, owner, medlay):
    viewer = get_user_model().objects.create_user("vic", password="pw-vic-123")
    study_member_add(study=medlay, user=viewer, role=StudyMembership.Role.VIEWER, actor=owner)
    client.force_login(owner)
    owned = pd.read_csv(
        io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.csv", {"include_external_ids": "1"})))
    )
    assert "PROLIFIC-E1" in set(owned["external_id"].dropna())
    client.force_login(viewer)
    seen = pd.read_csv(
        io.BytesIO(_body(client.get(f"/dashboard/{medlay.slug}/items.csv", {"include_external_ids": "1"})))
    )
    assert "external_id" not in seen.columns and set(seen["participant"]) == {"E1", "E2", "L"}
    bad = client.get(f"/dashboard/{medlay.slug}/items.csv", {"layout": "tall"})
    assert bad.status_code == 400 and b"layout" in bad.content


@pytest.mark.heavy
def test_api_exports_and_analysis_section(api, medlay):
    wide = json.loads(_body(api.get(f"/api/studies/{medlay.slug}/items/json/", {"layout": "wide"})))
    assert len(wide) == 48 and wide[0]["medlaybench_002.fluency"] in {1.0, 2.0, 3.0, 4.0, 5.0}
    bad = api.get(f"/api/studies/{medlay.slug}/items/csv/", {"layout": "tall"})
    assert bad.status_code == 400 and "layout" in bad.json()
    assert api.get(f"/api/studies/{medlay.slug}/items/pdf/").status_code == 404
    analysis = api.get(f"/api/studies/{medlay.slug}/analysis/")
    if analysis.status_code == 202:  # computed by the task the request queued (eager in tests)
        analysis = api.get(f"/api/studies/{medlay.slug}/analysis/")
    section = analysis.json()["instrument_items"]
    assert [item["key"] for item in section["groups"][0]["items"]] == list(CRITERIA)


@pytest.mark.heavy
def test_dashboard_and_report_show_the_section_only_where_there_are_items(client, owner, medlay):
    from tests.annotation.factories import build_study

    client.force_login(owner)
    page = client.get(f"/dashboard/{medlay.slug}/")
    if b"Instrument items" not in page.content:  # the first visit queued the analysis (eager in tests)
        page = client.get(f"/dashboard/{medlay.slug}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Instrument items" in text and "Factual Correctness" in text and "α ordinal" in text
    assert "E1 " in text  # per-rater means, seed 002's Table 4 columns
    report = client.get(f"/dashboard/{medlay.slug}/report.html").content.decode()
    assert "Instrument items" in report and "Fluency" in report and "MedLayBench-V" in report
    plain = build_study(slug="plainreport", n_sources=2)
    plain.researchers.add(owner)
    client.get(f"/dashboard/{plain.slug}/")
    assert "Instrument items" not in client.get(f"/dashboard/{plain.slug}/report.html").content.decode()
