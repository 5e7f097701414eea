"""The adjudicator's pages, the API and `manage.py adjudicate`: each calls the one service, shows the
raters blind and refuses bad input on its field (never a 500)."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import StudyMembership
from evaluation.adjudication_selectors import UnitKey
from evaluation.models import AdjudicatedLabel
from tests.evaluation.adjudication_studies import disagreeing_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    return disagreeing_study(slug="pages")


def _token(setup) -> str:
    text = setup["text"]
    return UnitKey(setup["protocol"].pk, "correctness", text.source_id, text.pk).token


def test_the_queue_page_lists_the_disagreements(client, setup):
    client.force_login(setup["adjudicator"])
    page = client.get(reverse("console:adjudication", args=["pages"])).content.decode()
    assert "correctness" in page and "error_spans" in page
    # The study list leads an adjudicator to the queue.
    listing = client.get(reverse("evaluation:study-list")).content.decode()
    assert reverse("console:adjudication", args=["pages"]) in listing


def test_the_unit_page_shows_the_raters_blind_and_records(client, setup):
    client.force_login(setup["adjudicator"])
    url = reverse("console:adjudication-unit", args=["pages", _token(setup)])
    page = client.get(url).content.decode()
    assert "Rater 1" in page and "Rater 2" in page and "R1 thinks 2" in page
    # Pseudonyms appear only inside the raters' own comments (a word, not a run of a random token).
    assert not re.search(r"\bR2\b", page.replace("R2 thinks", ""))
    refused = client.post(url, {"value": "4"})
    assert refused.status_code == 400 and "is not one of" in refused.content.decode()
    done = client.post(url, {"value": "4", "reason": "misread", "guideline_gap": "1", "elapsed_ms": "2500"})
    assert done.status_code == 302
    label = AdjudicatedLabel.objects.get()
    assert (label.value, label.guideline_gap, label.time_spent_ms) == (4, True, 2500)


def test_htmx_errors_swap_the_unit_and_success_redirects(client, setup):
    client.force_login(setup["adjudicator"])
    url = reverse("console:adjudication-unit", args=["pages", _token(setup)])
    partial = client.post(url, {"value": "9", "reason": "misread"}, HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    assert partial.status_code == 200 and "<html" not in body and "is not a point of the scale" in body
    done = client.post(url, {"value": "3", "reason": "misread"}, HTTP_HX_REQUEST="true")
    assert done.status_code == 200 and "HX-Redirect" in done.headers


def test_a_rater_member_is_refused_with_the_reason(client, setup):
    StudyMembership.objects.create(study=setup["study"], user=setup["rater_user"], role="adjudicator")
    client.force_login(setup["rater_user"])
    url = reverse("console:adjudication-unit", args=["pages", _token(setup)])
    refused = client.post(url, {"value": "4", "reason": "misread"})
    assert refused.status_code == 400 and "you rated this item" in refused.content.decode()


def test_an_unknown_unit_is_not_found(client, setup):
    client.force_login(setup["adjudicator"])
    assert client.get(reverse("console:adjudication-unit", args=["pages", "1.x.2.3."])).status_code == 404
    assert client.get(reverse("console:adjudication-unit", args=["pages", "garbage"])).status_code == 404


def test_the_api_reads_the_queue_and_records(client, setup):
    client.force_login(setup["adjudicator"])
    url = reverse("api:adjudication-queue", args=["pages"])
    queue = client.get(url).json()
    assert [unit["item"] for unit in queue] == ["error_spans", "correctness"]
    assert [a["rater"] for a in queue[1]["answers"]] == ["Rater 1", "Rater 2"]
    refused = client.post(
        url, json.dumps({"unit": _token(setup), "value": 4}), content_type="application/json"
    )
    assert refused.status_code == 400 and "reason" in refused.json()["errors"]
    wrong = client.post(url, json.dumps([1]), content_type="application/json")
    assert wrong.status_code == 400
    body = {"unit": _token(setup), "value": 4, "reason": "genuine_ambiguity"}
    done = client.post(url, json.dumps(body), content_type="application/json")
    assert done.status_code == 201 and done.json()["value"] == 4
    assert [unit["item"] for unit in client.get(url).json()] == ["error_spans"]
    decided = client.get(url, {"all": "1"}).json()
    assert {unit["provenance"] for unit in decided} == {"adjudicated", "unresolved"}


def test_the_command_lists_and_records(setup):
    out = StringIO()
    call_command("adjudicate", "list", "pages", stdout=out)
    assert [unit["item"] for unit in json.loads(out.getvalue())] == ["error_spans", "correctness"]
    record = ("adjudicate", "record", "pages", _token(setup), "4", "--reason", "misread", "--as")
    with pytest.raises(CommandError, match="no account named"):
        call_command(*record, "ghost-x")
    with pytest.raises(CommandError, match="not a member who may adjudicate"):
        call_command(*record, setup["rater_user"].username)
    with pytest.raises(CommandError, match="not a point of the scale"):
        call_command(
            "adjudicate",
            "record",
            "pages",
            _token(setup),
            "7",
            "--reason",
            "misread",
            "--as",
            setup["adjudicator"].username,
        )
    call_command(
        "adjudicate",
        "record",
        "pages",
        _token(setup),
        "4",
        "--reason",
        "misread",
        "--as",
        setup["adjudicator"].username,
        stdout=StringIO(),
    )
    assert AdjudicatedLabel.objects.get().value == 4


def _record(setup, value=4):
    from evaluation.adjudication_services import adjudication_record

    return adjudication_record(
        study=setup["study"],
        unit=_token(setup),
        value=value,
        reason="misread",
        adjudicator=setup["adjudicator"],
    )


def test_the_summary_sets_raw_beside_adjudicated(setup):
    from evaluation.analysis.adjudication_summary import adjudication_summary

    before = adjudication_summary(study=setup["study"])
    correctness = next(row for row in before["items"] if row["item"] == "correctness")
    # Two texts per source, two sources: four targets, one where the raters disagree (2 vs 5).
    assert correctness["targets"] == 4 and correctness["provenance"]["unresolved"] == 1
    assert correctness["agreement"].unanimous_share == pytest.approx(3 / 4)
    # raw: (3.5 + 4 + 4 + 4) / 4; the unresolved target keeps its raters' mean
    assert correctness["raw_mean"] == pytest.approx(15.5 / 4) == correctness["adjudicated_mean"]
    _record(setup, value=2)
    after = next(
        row for row in adjudication_summary(study=setup["study"])["items"] if row["item"] == "correctness"
    )
    assert after["provenance"]["adjudicated"] == 1 and after["agreement"].resolved_share == 1
    assert after["raw_mean"] == pytest.approx(15.5 / 4)
    assert after["adjudicated_mean"] == pytest.approx(14 / 4)


@pytest.mark.parametrize("file_format", ["csv", "xlsx", "json"])
def test_the_final_labels_export_says_where_each_label_came_from(client, setup, file_format):
    import csv
    import io

    import openpyxl

    _record(setup)
    owner = setup["adjudicator"]
    StudyMembership.objects.filter(user=owner).update(role="viewer")
    client.force_login(owner)
    for url in (
        reverse("evaluation:study-item-export", args=["pages", file_format]),
        reverse("api:item-export", args=["pages", file_format]),
    ):
        response = client.get(url, {"layout": "final_labels", "include_external_ids": "1"})
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        if file_format == "csv":
            rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
        elif file_format == "xlsx":
            sheet = openpyxl.load_workbook(io.BytesIO(body)).active
            header, *values = [list(row) for row in sheet.iter_rows(values_only=True)]
            rows = [dict(zip(header, row, strict=False)) for row in values]
        else:
            rows = json.loads(body)
        assert "participant" not in rows[0] and "external_id" not in rows[0]
        text = str(setup["text"].pk)
        found = {(row["item"], str(row["text_id"])): row for row in rows}
        assert found[("correctness", text)]["provenance"] == "adjudicated"
        assert str(found[("correctness", text)]["final_value"]) == "4"
        assert found[("correctness", text)]["adjudication_reason"] == "misread"
        assert found[("completeness", text)]["provenance"] == "agreement"
        assert found[("error_spans", text)]["provenance"] == "unresolved"
        assert found[("error_spans", text)]["final_value"] in ("", None)


def test_the_dashboard_page_and_the_report_show_both_views(client, setup):
    from evaluation.pages.report_sections import report_sections_render

    _record(setup)
    StudyMembership.objects.filter(user=setup["adjudicator"]).update(role="viewer")
    client.force_login(setup["adjudicator"])
    page = client.get(reverse("evaluation:study-adjudication", args=["pages"])).content.decode()
    # 25 targets with two raters (4 texts x 5 aspects, 2 sources x 2 judgements, 1 span answer):
    # 23 agreed before; after, 24 have a final label (one adjudicated, the spans unresolved).
    assert 'id="agreement-before">0.92<' in page
    assert 'id="agreement-after">0.96<' in page
    assert "final_labels" in page
    (section,) = [s for s in report_sections_render(study=setup["study"]) if s["key"] == "adjudication"]
    assert "agreement-before" in section["html"]
