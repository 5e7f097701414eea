"""The automatic metrics as CSV: from the dashboard and from `analyze --metrics-csv`."""

import io
from io import StringIO

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from evaluation.exports.metrics_table import metrics_table_rows
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


def test_rows_hold_every_simplification_then_every_system():
    analysis = {
        "systems": ["a", "b"],
        "metrics": {
            "text_metrics": ["fkgl", "bleu"],
            "per_simplification": [
                {"source": "s1", "system": "a", "text_id": 1, "fkgl": 5.0, "bleu": None},
                {"source": "s1", "system": "b", "text_id": 2, "fkgl": 6.0, "bleu": None},
            ],
            "per_system": {"a": {"fkgl": 5.0, "template_diversity": 1.0}, "b": {"fkgl": 6.0}},
        },
    }
    rows = list(metrics_table_rows(analysis))
    assert rows[0] == ["level", "source", "system", "text_id", "fkgl", "bleu", "template_diversity"]
    assert rows[1] == ["simplification", "s1", "a", 1, 5.0, "", ""]
    assert rows[3] == ["system", "", "a", "", 5.0, "", 1.0]
    assert rows[4] == ["system", "", "b", "", 6.0, "", ""]


def test_dashboard_download_and_command(client, tmp_path):
    study = build_study(slug="mcsv", n_sources=3, systems=("plain", "cot"))
    user = get_user_model().objects.create_user("res", password="pw", is_staff=True)
    study.researchers.add(user)
    client.force_login(user)
    response = client.get("/dashboard/mcsv/metrics.csv")
    assert response.status_code == 200
    frame = pd.read_csv(io.StringIO(response.content.decode()))
    assert len(frame[frame.level == "simplification"]) == 6
    assert set(frame[frame.level == "system"].system) == {"plain", "cot"}
    assert frame["fkgl"].notna().all()
    out = tmp_path / "metrics.csv"
    call_command(
        "analyze",
        "--study",
        "mcsv",
        "--json",
        str(tmp_path / "a.json"),
        "--no-correlations",
        "--metrics-csv",
        str(out),
        stdout=StringIO(),
        stderr=StringIO(),
    )
    assert pd.read_csv(out).shape == frame.shape


def test_other_researchers_cannot_download(client):
    build_study(slug="mcsv2", n_sources=1, systems=("plain",))
    client.force_login(get_user_model().objects.create_user("other", password="pw", is_staff=True))
    assert client.get("/dashboard/mcsv2/metrics.csv").status_code == 404
