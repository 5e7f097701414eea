"""The research API: token authentication, own studies only, every endpoint, the OpenAPI schema."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Simplification
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.evaluation.document_keys import ANALYSIS_KEYS

pytestmark = pytest.mark.usefixtures("fast_analysis")


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def study(researcher):
    study = build_answered_study(slug="mine", n_lay=4)
    study.researchers.add(researcher)
    return study


@pytest.fixture
def api(researcher):
    client = APIClient()
    token = Token.objects.create(user=researcher)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_token_is_required(study):
    response = APIClient().get("/api/studies/")
    assert response.status_code in (401, 403)
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.get("/api/studies/").status_code == 401


def test_obtain_a_token_with_username_and_password(researcher):
    response = APIClient().post("/api/token/", {"username": "ada", "password": "pw-ada-123"}, format="json")
    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=researcher).key


def test_study_list_holds_only_own_studies(api, study, other_study):
    response = api.get("/api/studies/")
    assert response.status_code == 200
    slugs = [s["slug"] for s in response.json()["results"]]
    assert slugs == ["mine"]
    detail = api.get("/api/studies/mine/").json()
    assert detail["n_sources"] == 4 and detail["n_systems"] == 4 and detail["n_participants"] == 5


@pytest.mark.parametrize(
    "path",
    [
        "",
        "sources/",
        "systems/",
        "simplifications/",
        "progress/",
        "answers/",
        "analysis/",
        "audit/",
        "exports/csv/",
    ],
)
def test_another_researchers_study_is_404(api, study, other_study, path):
    assert api.get(f"/api/studies/theirs/{path}").status_code == 404


def test_sources_systems_simplifications(api, study):
    sources = api.get("/api/studies/mine/sources/").json()
    assert [s["key"] for s in sources["results"]] == ["s01", "s02", "s03", "s04"]
    systems = api.get("/api/studies/mine/systems/").json()
    assert [s["key"] for s in systems] == ["plain_bs", "plain_sc", "cot_bs", "cot_sc"]
    simplifications = api.get("/api/studies/mine/simplifications/").json()
    assert simplifications["count"] == Simplification.objects.filter(source__study=study).count() == 16
    shared = [s for s in simplifications["results"] if s["source"] == "s01" and s["system"].startswith("cot")]
    assert shared[0]["text_id"] == shared[1]["text_id"]


def test_progress(api, study):
    progress = api.get("/api/studies/mine/progress/").json()
    lay = [p for p in progress if p["role"] == "layperson"]
    assert len(lay) == 4 and all(p["done"] == p["total"] == 4 for p in lay)


def test_answers_are_paginated_in_long_format(api, study):
    first = api.get("/api/studies/mine/answers/?limit=10").json()
    assert len(first["results"]) == 10
    assert first["previous"] is None and "cursor=" in first["next"]
    second = api.get(first["next"]).json()
    everything = api.get("/api/studies/mine/answers/?limit=5000").json()
    assert everything["next"] is None
    assert second["results"] == everything["results"][10:20]
    assert api.get(second["previous"]).json()["results"] == first["results"]
    assert {"participant", "question", "value", "value_number"} <= set(everything["results"][0])
    assert api.get("/api/studies/mine/answers/?limit=x").status_code == 400


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("offset=10", "offset"),
        ("cursor=x", "cursor"),
        ("cursor=" + "a" * 300 + ":b", "cursor"),
    ],
)
def test_answers_refuse_offsets_and_foreign_cursors_naming_the_parameter(api, study, query, parameter):
    response = api.get(f"/api/studies/mine/answers/?{query}")
    assert response.status_code == 400
    assert parameter in response.json()


def test_answers_refuse_a_cursor_altered_by_the_client(api, study):
    from urllib.parse import parse_qs, urlsplit

    cursor = parse_qs(urlsplit(api.get("/api/studies/mine/answers/?limit=3").json()["next"]).query)["cursor"][
        0
    ]
    tampered = cursor[:-1] + ("A" if cursor[-1] != "A" else "B")
    response = api.get("/api/studies/mine/answers/", {"cursor": tampered})
    assert response.status_code == 400 and "cursor" in response.json()


@pytest.mark.parametrize(
    "payload",
    [[99, [], 0, False], [0, [1], 0, False], [0, [1, 2, "x"], -1, False], [0, [], 0, "no"], "x", None],
)
def test_answers_refuse_signed_cursors_that_are_no_position(api, study, payload):
    from evaluation.api_pagination import cursor_text

    response = api.get("/api/studies/mine/answers/", {"cursor": cursor_text(payload)})
    assert response.status_code == 400 and "cursor" in response.json()


@pytest.mark.heavy
def test_analysis_has_the_documented_keys(api, study):
    analysis = api.get("/api/studies/mine/analysis/").json()
    for key in ANALYSIS_KEYS:
        assert key in analysis
    assert analysis["lay"]["original"]["n"] == 16


@pytest.mark.heavy
def test_audit_endpoint(api, study):
    audit = api.get("/api/studies/mine/audit/?reported=seed003").json()
    assert audit["reported_file"] == "seed003.yaml"
    assert audit["summary"]["total"] == len(audit["rows"]) == 85
    assert api.get("/api/studies/mine/audit/?reported=nope").status_code == 404


def test_exports_stream(api, study):
    response = api.get("/api/studies/mine/exports/csv/")
    assert response.status_code == 200 and response.streaming
    frame = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)))
    assert "external_id" not in frame.columns
    with_ids = api.get("/api/studies/mine/exports/json/?include_external_ids=1")
    assert b'"external_id"' in b"".join(with_ids.streaming_content)
    assert api.get("/api/studies/mine/exports/pdf/").status_code == 404


def test_schema_endpoint_and_no_schema_warnings_for_this_api(client, researcher):
    from django.urls import include, path
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    client.force_login(researcher)
    assert client.get("/api/schema/").status_code == 200
    # The research API's own endpoints generate without a single drf-spectacular warning or error.
    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator(patterns=[path("api/", include("evaluation.api_urls"))]).get_schema(
            public=True
        )
    assert not GENERATOR_STATS, dict(GENERATOR_STATS._warn_cache) | dict(GENERATOR_STATS._error_cache)
    assert "/api/studies/{slug}/analysis/" in schema["paths"]
    assert "/api/studies/{slug}/exports/{file_format}/" in schema["paths"]
