"""`include_external_ids` is read by one function (evaluation/exports/request_options.py) for the API and
the dashboard's downloads: every spelling that gives the ids in one gives them in the other."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.exports.request_options import include_external_ids_asked
from tests.evaluation.analysis.test_study_frames import build_answered_study

pytestmark = pytest.mark.usefixtures("fast_analysis")


@pytest.mark.parametrize(
    ("value", "asked"),
    [("1", True), ("true", True), ("True", True), ("TRUE", True), ("yes", True), ("on", True), (" 1 ", True)]
    + [("", False), ("0", False), ("false", False), ("False", False), ("no", False), ("off", False)],
)
def test_the_flag_has_one_reading(value, asked):
    assert include_external_ids_asked({"include_external_ids": value}) is asked
    assert include_external_ids_asked({}) is False


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["True", "on", "1", "false"])
def test_the_api_and_the_html_download_agree(client, value):
    researcher = get_user_model().objects.create_user("ids-owner", password="pw")
    study = build_answered_study(slug="ids", n_lay=2)
    study.researchers.add(researcher)  # owner: may have the ids
    client.force_login(researcher)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")

    query = f"?include_external_ids={value}"
    html = client.get(reverse("evaluation:study-export", args=[study.slug, "csv"]) + query)
    via_api = api.get(f"/api/studies/{study.slug}/exports/csv/{query}")
    assert html.status_code == via_api.status_code == 200
    html_header = b"".join(html.streaming_content).splitlines()[0]
    api_header = b"".join(via_api.streaming_content).splitlines()[0]
    assert html_header == api_header
    assert (b"external_id" in html_header) is (value != "false")
