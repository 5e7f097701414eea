"""Round trips of the study archive for every kind of study radlay runs: a protocol study with
error spans and planted controls, seed 002's pairs against the reference, seed 000's sentence
matching and a pairwise study. Each is archived and imported as a copy under a new slug; the copy
reproduces the analysis, every export (answers and instrument items, CSV/XLSX/JSON, long and wide;
the metrics table) apart from database keys and the slug, and the instruments, which the copy's
console shows and asks a newcomer."""

from __future__ import annotations

import csv
import io
import json
import re

import openpyxl
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import participant_services
from annotation.models import (
    AnswerRevision,
    ExpertItem,
    PairwiseTask,
    Participant,
    StudyInstrument,
)
from evaluation import services
from evaluation.exports import FORMATS
from evaluation.exports.study_archive import study_archive_import, study_archive_write
from evaluation.exports.study_archive_tables import ARCHIVED, REVISION_TYPES
from surveys.radiologist import assignment
from tests.evaluation.archive_studies import KINDS, pairwise_study, protocol_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]
INSTRUMENT_COLUMNS = (
    "key", "version", "flow", "definition", "fingerprint", "structure_fingerprint", "preset",
    "is_current", "change_note",
)  # fmt: skip


# --- what must come out the same ------------------------------------------------------------------

KEY = re.compile(r"(^|_)(id|pk)$")


def _without_keys(value, slug: str):
    """`value` with its database keys left out and the study's slugs replaced (a copy keeps the
    original's title, which names the original's slug)."""
    if isinstance(value, dict):
        return {k: _without_keys(v, slug) for k, v in value.items() if not KEY.search(str(k))}
    if isinstance(value, list):
        return [_without_keys(v, slug) for v in value]
    if isinstance(value, str):
        return re.sub(rf"{slug.rsplit('-', 1)[0]}-(orig|copy)", "SLUG", value)
    return value


def _table(rows: list[list], slug: str) -> list:
    """Rows of a CSV/XLSX export with its key columns left out and the slug replaced."""
    if not rows:
        return rows
    header = [str(h) for h in rows[0]]
    keep = [i for i, name in enumerate(header) if not KEY.search(name)]
    return [[_without_keys(row[i] if i < len(row) else None, slug) for i in keep] for row in rows]


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def surfaces(client, slug: str) -> dict[str, object]:
    got: dict[str, object] = {}
    urls = {f"export.{f}": reverse("evaluation:study-export", args=[slug, f]) for f in FORMATS}
    for f in FORMATS:
        for layout in ("long", "wide"):
            urls[f"items.{f}?{layout}"] = (
                reverse("evaluation:study-item-export", args=[slug, f]) + f"?layout={layout}"
            )
    urls["metrics.csv"] = reverse("evaluation:study-metrics-csv", args=[slug])
    for name, url in urls.items():
        response = client.get(url)
        body = _body(response)
        if response.status_code != 200:
            got[name] = (response.status_code, _without_keys(body.decode(), slug))
        elif ".csv" in name:
            got[name] = _table(list(csv.reader(io.StringIO(body.decode("utf-8-sig")))), slug)
        elif ".xlsx" in name:
            book = openpyxl.load_workbook(io.BytesIO(body), read_only=True)
            got[name] = {sheet.title: _table([list(r) for r in sheet.iter_rows(values_only=True)], slug)
                         for sheet in book.worksheets}  # fmt: skip
        else:
            got[name] = _without_keys(json.loads(body), slug)
    return got


def instruments(study) -> list[tuple]:
    return list(
        StudyInstrument.objects.filter(study=study)
        .order_by("key", "version")
        .values_list(*INSTRUMENT_COLUMNS)
    )


@pytest.mark.heavy
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_copy_reproduces_the_analysis_the_exports_and_the_instruments(kind, client):
    original = KINDS[kind](f"{kind}-orig")
    user = get_user_model().objects.create_user("owner", password="pw")
    original.researchers.add(user)
    buffer = io.BytesIO()
    # With the originals (an owner's request): the copy's analysis of the originals' readability
    # is the original's. The default, de-identified archive:
    # tests/evaluation/exports/test_study_archive_privacy.py.
    counts = study_archive_write(study=original, out=buffer, originals=True)
    copy = study_archive_import(
        archive_file=io.BytesIO(buffer.getvalue()), slug=f"{kind}-copy", researcher=user
    )
    # Every table's rows, counted in the copy as in the original.
    for table in ARCHIVED:
        rows = table.model._default_manager.filter(**{table.study_path: copy.pk}).count()
        assert rows == counts[table.label], table.label
    assert counts["annotation.studyinstrument"] > 0 and counts["annotation.itemanswer"] > 0
    assert instruments(copy) == instruments(original)
    assert copy.instruments_stamp and copy.instruments_stamp != original.instruments_stamp

    before = services.study_analysis_compute(study=original)
    after = services.study_analysis_compute(study=copy)
    assert _without_keys(after, copy.slug) == _without_keys(before, original.slug)

    client.force_login(user)
    exported = surfaces(client, original.slug)
    assert len(exported["items.csv?long"]) > 1 and len(exported["export.csv"]) > (kind == "protocol")
    assert surfaces(client, copy.slug) == exported
    # The console's Instruments page shows the copy's instruments.
    html = client.get(reverse("console:instruments", args=[copy.slug])).content.decode()
    assert "asks no instrument" not in html
    for key in set(StudyInstrument.objects.filter(study=copy).values_list("key", flat=True)):
        assert key in html


def test_a_newcomer_in_the_copy_of_a_protocol_study_gets_the_added_items_and_controls(client):
    original = protocol_study("newcomer-orig")
    buffer = io.BytesIO()
    study_archive_write(study=original, out=buffer)
    copy = study_archive_import(archive_file=io.BytesIO(buffer.getvalue()), slug="newcomer-copy")
    # The copy's pages point at the copy's texts and controls, never the original's.
    for item in ExpertItem.objects.filter(participant__study=copy):
        texts = set(item.source.simplifications.values_list("shown_text_id", flat=True))
        assert set(item.text_order) <= texts
        assert {c for _, c in item.control_slots} <= set(copy.planted_controls.values_list("pk", flat=True))
    newcomer = participant_services.participant_create(study=copy, role=Participant.Role.RADIOLOGIST)
    item = assignment.expert_items_ensure(participant=newcomer)[0]
    client.get(reverse("surveys:entry", args=[newcomer.token]))
    client.post(reverse("surveys:expert-instructions", args=[newcomer.token]))
    html = client.get(reverse("surveys:expert-page", args=[newcomer.token, item.pk])).content.decode()
    assert "data-span-item" in html
    # Revisions point at the copy's answers.
    revisions = AnswerRevision.objects.filter(participant__study=copy)
    assert revisions.count() == AnswerRevision.objects.filter(participant__study=original).count() > 0
    for revision in revisions:
        answered = REVISION_TYPES[revision.answer_type]
        assert answered.objects.filter(pk=revision.answer_id, participant=revision.participant).exists()


def test_pairwise_tasks_of_the_copy_compare_the_copys_texts():
    original = pairwise_study("pw-orig")
    buffer = io.BytesIO()
    study_archive_write(study=original, out=buffer)
    copy = study_archive_import(archive_file=io.BytesIO(buffer.getvalue()), slug="pw-copy")
    tasks = PairwiseTask.objects.filter(participant__study=copy)
    assert tasks.count() == PairwiseTask.objects.filter(participant__study=original).count() > 0
    assert not tasks.exclude(left__source__study=copy).exists()
    assert not tasks.exclude(instrument__study=copy).exists()


def test_adjudicated_labels_travel_with_the_copys_keys(client):
    from evaluation.adjudication_selectors import UnitKey, adjudication_queue
    from evaluation.adjudication_services import adjudication_record
    from evaluation.models import AdjudicatedLabel
    from tests.evaluation.adjudication_studies import disagreeing_study

    setup = disagreeing_study(slug="adj-orig")
    original, text = setup["study"], setup["text"]
    unit = UnitKey(setup["protocol"].pk, "correctness", text.source_id, text.pk).token
    adjudication_record(
        study=original, unit=unit, value=4, reason="guideline_unclear", guideline_gap=True,
        adjudicator=setup["adjudicator"],
    )  # fmt: skip
    buffer = io.BytesIO()
    counts = study_archive_write(study=original, out=buffer)
    assert counts["evaluation.adjudicatedlabel"] == 1
    user = get_user_model().objects.create_user("adj-owner", password="pw")
    copy = study_archive_import(archive_file=io.BytesIO(buffer.getvalue()), slug="adj-copy", researcher=user)
    label = AdjudicatedLabel.objects.get(study=copy)
    assert (label.value, label.reason, label.guideline_gap) == (4, "guideline_unclear", True)
    assert label.adjudicator is None and label.adjudicator_label == setup["adjudicator"].username
    assert (
        label.instrument.study == copy
        and label.source.study == copy
        and label.shown_text.source.study == copy
    )
    # The copy's queue and final labels are the original's.
    assert [u.item.key for u in adjudication_queue(study=copy)] == ["error_spans"]
    original.researchers.add(user)
    client.force_login(user)
    exported = {}
    for slug in ("adj-orig", "adj-copy"):
        url = reverse("evaluation:study-item-export", args=[slug, "csv"]) + "?layout=final_labels"
        body = _body(client.get(url)).decode("utf-8-sig")
        exported[slug] = _table(list(csv.reader(io.StringIO(body))), slug)
    assert exported["adj-copy"] == exported["adj-orig"] and len(exported["adj-orig"]) > 20
