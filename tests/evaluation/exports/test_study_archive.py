"""The whole-study archive: export a study with every answer, import it under another slug, and
the analysis and the answer exports come out identical; a broken archive imports nothing and says
what is wrong."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import AnswerRevision, Participant, Study
from evaluation import services
from evaluation.exports.study_archive import ArchiveError, study_archive_import, study_archive_write
from tests.annotation import answers
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.evaluation.legacy_archives import typed_archive

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]


def without_text_ids(value):
    """The analysis with its `text_id`s (database keys of the texts, which the receiving server
    assigns afresh) left out; everything else must be identical."""
    if isinstance(value, dict):
        return {k: without_text_ids(v) for k, v in value.items() if k != "text_id"}
    if isinstance(value, list):
        return [without_text_ids(v) for v in value]
    return value


def canonical(document: dict) -> str:
    return json.dumps(without_text_ids(document), sort_keys=True, default=str)


def exported(slug: str, file_format: str, tmp_path) -> bytes:
    out = tmp_path / f"{slug}.{file_format}"
    call_command("export", study=slug, format=file_format, out=out)
    return out.read_bytes()


@pytest.mark.heavy
def test_an_archive_reproduces_the_analysis_and_the_exports(tmp_path, capsys):
    original = build_answered_study(slug="moved")
    archive = tmp_path / "moved.zip"
    call_command("export_study_archive", study="moved", out=str(archive))
    call_command("import_study_archive", str(archive), slug="arrived")
    assert "imported study 'arrived'" in capsys.readouterr().out
    arrived = Study.objects.get(slug="arrived")
    assert arrived.pk != original.pk
    for typed in (answers.lay_answers, answers.preferences):
        assert len(typed(study=arrived)) == len(typed(study=original)) > 0
    # Every participant keeps the label the analysis and the exports name them by.
    assert Participant.objects.filter(study=arrived, pseudonym="").count() == 0

    before = services.study_analysis_compute(study=original)
    after = services.study_analysis_compute(study=arrived)
    assert (before["study"], after["study"]) == ("moved", "arrived")
    assert canonical({**after, "study": "moved"}) == canonical(before)
    assert json.dumps(after).count('"text_id"') == json.dumps(before).count('"text_id"') > 0
    for file_format in ("csv", "json"):
        # Identical but for the study's slug and the texts' database keys (text_id), which the
        # receiving server assigns afresh.
        moved_rows = exported("moved", file_format, tmp_path).decode()
        arrived_rows = exported("arrived", file_format, tmp_path).decode().replace("arrived", "moved")
        if file_format == "csv":
            moved_table, arrived_table = (
                list(csv.DictReader(io.StringIO(t))) for t in (moved_rows, arrived_rows)
            )
            assert len(moved_table) == len(arrived_table) > 0
            for a, b in zip(moved_table, arrived_table, strict=True):
                assert {**a, "text_id": ""} == {**b, "text_id": ""}
        else:
            assert canonical(json.loads(arrived_rows)) == canonical(json.loads(moved_rows))


def test_a_researcher_downloads_the_archive(client, tmp_path):
    study = build_answered_study(slug="mine")
    user = get_user_model().objects.create_user("ada", password="pw")
    study.researchers.add(user)
    client.force_login(user)
    response = client.get(reverse("evaluation:study-archive", args=["mine"]))
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")
    body = b"".join(response.streaming_content) if response.streaming else response.content
    imported = study_archive_import(archive_file=io.BytesIO(body), slug="copy", researcher=user)
    assert imported.researchers.filter(pk=user.pk).exists()
    other = get_user_model().objects.create_user("eve", password="pw")
    client.force_login(other)
    assert client.get(reverse("evaluation:study-archive", args=["mine"])).status_code == 404


def test_a_broken_archive_imports_nothing_and_says_what_is_wrong(tmp_path):
    study = build_answered_study(slug="broken")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    studies = Study.objects.count()
    # An answer that refers to a source the archive does not hold: found after most rows are written.
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "annotation.itemanswer.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                rows[-1]["fields"]["source"] = 10**9
                data = "\n".join(map(json.dumps, rows)).encode()
            out.writestr(name, data)
    with pytest.raises(ArchiveError, match=r"annotation.itemanswer.jsonl, row \d+: source refers to a row"):
        study_archive_import(archive_file=io.BytesIO(damaged.getvalue()), slug="half")
    assert Study.objects.count() == studies and not Study.objects.filter(slug="half").exists()
    with pytest.raises(ArchiveError, match="a study with slug 'broken' exists here"):
        study_archive_import(archive_file=io.BytesIO(buffer.getvalue()))
    not_zip = tmp_path / "answers.csv"
    not_zip.write_text("source_key,source_text\n")
    with pytest.raises(CommandError, match="not a zip file; nothing was imported"):
        call_command("import_study_archive", str(not_zip))


def test_import_study_points_an_answer_export_to_the_archive(tmp_path):
    build_answered_study(slug="exported")
    answers = tmp_path / "answers.csv"
    call_command("export", study="exported", format="csv", out=answers)
    with pytest.raises(CommandError, match="missing required column 'source_key'.*use export_study_archive"):
        call_command("import_study", str(answers), "--study", "again", "--title", "T")


def test_a_version_1_archive_still_imports():
    study = build_answered_study(slug="old")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    v1 = typed_archive(buffer.getvalue(), study, version=1)
    copy = study_archive_import(archive_file=io.BytesIO(v1), slug="old-copy")
    assert len(answers.lay_answers(study=copy)) == (len(answers.lay_answers(study=study)))
    before, after = (services.study_analysis_compute(study=s) for s in (study, copy))
    assert canonical({**after, "study": "old"}) == canonical(before)


def test_judge_runs_travel_and_an_unfinished_one_arrives_cancelled():
    from judging import services as judging_services
    from judging.models import JudgeAnswer, JudgeItem

    study = build_answered_study(slug="judged")
    run = judging_services.judge_run_create(study=study, backend="glossary")
    items = list(run.items.order_by("pk"))
    assert len(items) > 1
    done = items[0]
    JudgeItem.objects.filter(pk=done.pk).update(status="succeeded", calls=1)
    JudgeAnswer.objects.create(item=done, correctness=4.0, n_samples=1, samples=[{"correctness": 4}])
    buffer = io.BytesIO()
    counts = study_archive_write(study=study, out=buffer)
    assert counts["judging.judgerun"] == 1 and counts["judging.judgeanswer"] == 1
    copy = study_archive_import(archive_file=io.BytesIO(buffer.getvalue()), slug="judged-copy")
    (copied,) = copy.judge_runs.all()
    assert copied.cancelled_at is not None and copied.model_name == run.model_name
    statuses = list(copied.items.order_by("pk").values_list("status", flat=True))
    assert statuses == ["succeeded", *["cancelled"] * (len(items) - 1)]
    answer = JudgeAnswer.objects.get(item__run=copied)
    assert (answer.correctness, answer.item.source.study_id) == (4.0, copy.pk)


def test_the_command_reports_a_database_error_as_one(tmp_path):
    """Rows that each pass but break a constraint together: the database's refusal, named so."""
    study = build_answered_study(slug="twice")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    path = tmp_path / "twice.zip"
    with zipfile.ZipFile(path, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "annotation.itemanswer.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                data = "\n".join(map(json.dumps, [*rows, {**rows[0], "pk": 10**9}])).encode()
            if name == "manifest.json":
                manifest = json.loads(data)
                manifest["counts"]["annotation.itemanswer"] += 1
                data = json.dumps(manifest).encode()
            out.writestr(name, data)
    with pytest.raises(
        CommandError, match=r"^database error while importing .*annotation.itemanswer"
    ) as caught:
        call_command("import_study_archive", str(path), slug="twice-copy")
    assert ", row " not in str(caught.value) and "nothing was imported" in str(caught.value)
    assert not Study.objects.filter(slug="twice-copy").exists()


def test_an_archive_from_before_the_one_answer_store_imports_its_typed_tables():
    """A version 2 archive whose protocol answers, planted-control answers and their revisions are
    in the typed tables: mapped into item answers, the analysis, the exports and the revisions as
    the original's."""
    from tests.evaluation.archive_studies import protocol_study

    study = protocol_study("typed")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    legacy = typed_archive(buffer.getvalue(), study, version=2)
    names = zipfile.ZipFile(io.BytesIO(legacy)).namelist()
    assert "annotation.expertrating.jsonl" in names and "annotation.plantedcontrolanswer.jsonl" in names
    copy = study_archive_import(archive_file=io.BytesIO(legacy), slug="typed-copy")
    for typed in (answers.ratings, answers.judgements, answers.control_answers):
        before, after = typed(study=study), typed(study=copy)
        assert len(after) == len(before) > 0
    key = lambda r: (r.participant_id, r.source_id, r.time_spent_ms)  # noqa: E731
    assert sorted(map(key, answers.control_answers(study=copy))) != []
    scores = [
        sorted(json.dumps(c.scores, sort_keys=True) for c in answers.control_answers(study=s))
        for s in (study, copy)
    ]
    assert scores[0] == scores[1]
    assert AnswerRevision.objects.filter(participant__study=copy).count() == (
        AnswerRevision.objects.filter(participant__study=study).count()
    )
    assert set(
        AnswerRevision.objects.filter(participant__study=copy).values_list("answer_type", flat=True)
    ) == {"annotation.ItemAnswer"}
    before, after = (services.study_analysis_compute(study=s) for s in (study, copy))
    # The protocol's tables and counts are the original's (the text metrics' bootstrap intervals
    # follow the order the copy's rows were written in).
    for key in ("expert", "lay", "n"):
        assert canonical(after[key]) == canonical(before[key]), key


def test_a_typed_row_the_services_would_refuse_is_named_and_nothing_imported():
    study = build_answered_study(slug="typed-bad")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    legacy = zipfile.ZipFile(io.BytesIO(typed_archive(buffer.getvalue(), study, version=2)))
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as out:
        for name in legacy.namelist():
            data = legacy.read(name)
            if name == "annotation.expertrating.jsonl":
                rows = [json.loads(line) for line in data.splitlines()]
                rows[1]["fields"]["correctness"] = 9
                data = "\n".join(map(json.dumps, rows)).encode()
            out.writestr(name, data)
    with pytest.raises(ArchiveError, match=r"annotation.expertrating.jsonl, row 2: correctness must be"):
        study_archive_import(archive_file=io.BytesIO(damaged.getvalue()), slug="typed-bad-copy")
    assert not Study.objects.filter(slug="typed-bad-copy").exists()
