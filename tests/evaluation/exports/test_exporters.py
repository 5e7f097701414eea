"""Exports of every raw answer: CSV, XLSX and JSON, streamed, pseudonymous by default."""

from __future__ import annotations

import io
import json

import openpyxl
import pandas as pd
import pytest
from django.core.management import call_command

from annotation import scales
from evaluation.exports import FORMATS
from evaluation.exports.csv import csv_chunks
from evaluation.exports.json import json_chunks
from evaluation.exports.rows import answer_columns, answer_rows
from tests.annotation import answers
from tests.evaluation.analysis.test_study_frames import build_answered_study


def expected_answer_count(study) -> int:
    """Counted straight from the tables: one per answered question, chosen text, non-empty free
    text, rated aspect and judged property."""
    n = 0
    for answer in answers.lay_answers(study=study):
        n += sum(
            bool(getattr(answer, q))
            for q in ("understanding", "confidence", "urgency_confidence", "severity_guess", "helpfulness")
        )
    for preference in answers.preferences(study=study):
        n += len(preference.most) + len(preference.least)
        n += bool(preference.most_justification) + bool(preference.least_justification)
    for rating in answers.ratings(study=study):
        n += sum(getattr(rating, a) is not None for a in scales.EXPERT_ASPECTS) + bool(rating.comment)
    for judgement in answers.judgements(study=study):
        n += bool(judgement.severity) + (judgement.simplicity is not None) + bool(judgement.comment)
    return n


@pytest.fixture
def study(db):
    return build_answered_study(slug="exported", external_ids=True)


def test_csv_parses_with_pandas_and_has_one_row_per_answer(study, tmp_path):
    out = tmp_path / "answers.csv"
    call_command("export", "--study", "exported", "--format", "csv", "--out", str(out))
    frame = pd.read_csv(out)
    assert len(frame) == expected_answer_count(study)
    assert list(frame.columns) == list(answer_columns())
    assert "external_id" not in frame.columns
    assert not frame.astype(str).apply(lambda c: c.str.contains("PROLIFIC")).any().any()
    # value and value_number agree with the scales, for every lay question.
    for question, scale in scales.LAY_SCALES.items():
        rows = frame[frame["question"] == question]
        assert (rows["value"].map(scale.value_of) == rows["value_number"]).all()
    severity = frame[(frame["question"] == "severity") & (frame["phase"] == "original")]
    assert set(severity["value_number"]) <= {1, 2, 3, 4, 5}
    # a vote for the shared text names both systems
    shared_votes = frame[(frame["question"].str.endswith("_preferred")) & (frame["value"] == "cot_bs;cot_sc")]
    assert (shared_votes["systems"] == "cot_bs;cot_sc").all()


def test_external_ids_only_when_asked(study, tmp_path):
    out = tmp_path / "answers.csv"
    call_command(
        "export", "--study", "exported", "--format", "csv", "--out", str(out), "--include-external-ids"
    )
    frame = pd.read_csv(out)
    lay = frame[frame["role"] == "layperson"]
    assert lay["external_id"].str.startswith("PROLIFIC").all()


def test_xlsx_opens_with_openpyxl_and_pandas(study, tmp_path):
    out = tmp_path / "answers.xlsx"
    call_command("export", "--study", "exported", "--format", "xlsx", "--out", str(out))
    workbook = openpyxl.load_workbook(out, read_only=True)
    sheet = workbook.worksheets[0]
    header = next(sheet.iter_rows(values_only=True))
    assert list(header) == list(answer_columns())
    assert len(pd.read_excel(out)) == expected_answer_count(study)


def test_json_loads_as_an_array_of_objects(study, tmp_path):
    out = tmp_path / "answers.json"
    call_command("export", "--study", "exported", "--format", "json", "--out", str(out))
    records = json.loads(out.read_text())
    assert len(records) == expected_answer_count(study)
    assert set(records[0]) == set(answer_columns())


def test_every_format_writes_an_empty_study(db, tmp_path):
    from tests.annotation.factories import build_study

    build_study(slug="quiet", n_sources=1)
    for name in FORMATS:
        out = tmp_path / f"quiet.{name}"
        call_command("export", "--study", "quiet", "--format", name, "--out", str(out))
    assert json.loads((tmp_path / "quiet.json").read_text()) == []
    assert pd.read_csv(tmp_path / "quiet.csv").empty


def _rows_then_fail(n: int):
    for i in range(n):
        yield (
            "s",
            f"P{i}",
            "layperson",
            "es",
            "s01",
            "a",
            "a",
            1,
            "original",
            "understanding",
            "Completely",
            4,
            0,
            "",
            "",
        )
    raise RuntimeError("the generator was read past the first chunks")


@pytest.mark.parametrize("chunks", [csv_chunks, json_chunks])
def test_streams_are_lazy(chunks):
    """The first chunk comes out before the rows are exhausted: nothing is collected in memory."""
    stream = chunks(_rows_then_fail(5000), answer_columns())
    first = next(stream)
    assert first
    with pytest.raises(RuntimeError):
        for _ in stream:
            pass


def test_json_stream_is_valid_json_for_many_rows():
    rows = [
        ("s", f"P{i}", "layperson", "es", "s01", "a", "a", 1, "original", "q", 'v, "quoted"', i, 0, "", "")
        for i in range(1234)
    ]
    text = b"".join(json_chunks(rows, answer_columns())).decode()
    assert [r["value_number"] for r in json.loads(text)] == list(range(1234))


def test_csv_quotes_free_text(db):
    rows = [
        (
            "s",
            "P1",
            "layperson",
            "es",
            "s01",
            "a",
            "a",
            1,
            "preference",
            "most_justification",
            'short, "simple"\nand clear',
            None,
            0,
            "",
            "",
        )
    ]
    frame = pd.read_csv(io.BytesIO(b"".join(csv_chunks(rows, answer_columns()))))
    assert frame.loc[0, "value"] == 'short, "simple"\nand clear'


@pytest.mark.django_db
def test_answer_rows_are_a_generator(study):
    rows = answer_rows(study=study)
    assert iter(rows) is rows


def test_answer_serializer_documents_every_export_column(study):
    """The API's AnswerSerializer and the export's rows describe the same columns, and every row
    of a real study validates against the serializer's types."""
    from evaluation.serializers import AnswerSerializer

    columns = answer_columns()
    assert list(AnswerSerializer().fields) == list(columns)
    rows = [dict(zip(columns, row, strict=True)) for row in answer_rows(study=study)]
    assert {r["phase"] for r in rows} >= {"original", "assisted", "preference", "expert"}
    serializer = AnswerSerializer(data=rows, many=True)
    assert serializer.is_valid(), [e for e in serializer.errors if e][:3]
    assert all(isinstance(r["text_id"], int) or r["text_id"] is None for r in rows)


def test_external_ids_follow_their_participant(study):
    from annotation.models import Participant

    columns = answer_columns(include_external_ids=True)
    expected = {(p.pseudonym or f"P{p.pk}"): p.external_id for p in Participant.objects.filter(study=study)}
    rows = [
        dict(zip(columns, row, strict=True)) for row in answer_rows(study=study, include_external_ids=True)
    ]
    assert rows and all(r["external_id"] == expected[r["participant"]] for r in rows)
    plain = list(answer_rows(study=study))
    assert [tuple(v for k, v in r.items() if k != "external_id") for r in rows] == [tuple(r) for r in plain]


def test_timestamps_are_iso_8601_utc_as_python_writes_them(study):
    """On PostgreSQL the database formats the timestamps; they must read as Python's isoformat."""
    from datetime import UTC

    answer = answers.lay_answers(study=study)[0]
    expected = answer.created_at.astimezone(UTC).isoformat(timespec="microseconds")
    rows = [r for r in answer_rows(study=study) if r.created_at == expected]
    assert rows, expected
    assert {r.updated_at for r in rows} == {
        answer.updated_at.astimezone(UTC).isoformat(timespec="microseconds")
    }


def _with_background(study):
    """Background answers of two laypeople of `study` (the lay flow's service writes them)."""
    from annotation.models import Participant
    from surveys.lay.entry import lay_background_save

    study.background_questions = [
        {"key": "age", "question": "Your age?", "options": ["18-29", "30-49", "50+"]},
        {"key": "education", "question": "Highest education?"},
    ]
    study.save(update_fields=["background_questions"])
    first, second = Participant.objects.filter(study=study, role="layperson").order_by("pk")[:2]
    lay_background_save(participant=first, data={"age": "30-49", "education": "=HYPERLINK(1)"})
    lay_background_save(participant=second, data={"age": "18-29"})  # education left unanswered
    return first, second


def _background(rows: list[dict]) -> set[tuple[str, str, str]]:
    return {
        (str(r["participant"]), r["question"], str(r["value"])) for r in rows if r["phase"] == "background"
    }


@pytest.mark.parametrize("file_format", ["csv", "xlsx", "json"])
def test_background_answers_are_in_every_format(study, tmp_path, file_format):
    first, second = _with_background(study)
    out = tmp_path / f"answers.{file_format}"
    call_command("export", "--study", study.slug, "--format", file_format, "--out", str(out))
    if file_format == "csv":
        rows = pd.read_csv(out, dtype=str, keep_default_na=False).to_dict("records")
    elif file_format == "xlsx":
        rows = pd.read_excel(out, dtype=str, keep_default_na=False).to_dict("records")
    else:
        rows = json.loads(out.read_text())
    expected = {
        (first.pseudonym, "age", "30-49"),
        # A spreadsheet would run it: prefixed in CSV, as every free text is (XLSX stores it as text).
        (first.pseudonym, "education", "'=HYPERLINK(1)" if file_format == "csv" else "=HYPERLINK(1)"),
        (second.pseudonym, "age", "18-29"),
    }
    assert _background(rows) == expected


def test_background_answers_are_in_the_api_pages(study, client):
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    first, second = _with_background(study)
    owner = get_user_model().objects.create_user("bg-owner")
    study.researchers.add(owner)
    client.force_login(owner)
    url, rows = reverse("api:answer-list", args=[study.slug]) + "?limit=7", []
    while url:
        page = client.get(url).json()
        rows += page["results"]
        url = page["next"]
    assert _background(rows) == {
        (first.pseudonym, "age", "30-49"),
        (first.pseudonym, "education", "=HYPERLINK(1)"),
        (second.pseudonym, "age", "18-29"),
    }
    assert all(r["role"] == "layperson" and r["source"] == "" for r in rows if r["phase"] == "background")
