"""How study imports write: COPY on PostgreSQL and bulk_create elsewhere store the same rows, and
the number of queries does not grow with the number of rows."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import bulk_insert
from annotation.models import Simplification, SimplificationText, Source, Study, System
from studies.importers.records import SimplificationRecord, SourceRecord, StudyRecords
from studies.importers.write import study_records_write

pytestmark = pytest.mark.django_db

TABLES = (Source, System, SimplificationText, Simplification)


def long_file(tmp_path: Path, name: str, n_sources: int, *, changed: str = "") -> Path:
    """Two systems per source; every third source gets the same text from both (one shared row);
    `changed` is appended to the first system's text of every even source."""
    lines = ["source_key,source_text,system,text,reference_severity"]
    for i in range(n_sources):
        severity = ("Mild", "", "Critical")[i % 3]
        suffix = changed if i % 2 == 0 else ""
        lines.append(f"s{i},Finding {i}.,plain,Plain  {i}.{suffix},{severity}")
        lines.append(f"s{i},Finding {i}.,cot,{'Plain' if i % 3 == 0 else 'Cot'} {i}.,")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def snapshot(study: Study, started, finished) -> dict[str, list[dict]]:
    """Every column of the study's rows, ids replaced by the natural keys they point at, and the
    auto_now timestamps checked to lie within the import."""
    natural = {
        Study: {study.pk: "the study"},
        Source: dict(Source.objects.filter(study=study).values_list("pk", "key")),
        System: dict(System.objects.filter(study=study).values_list("pk", "key")),
        SimplificationText: dict(
            SimplificationText.objects.filter(source__study=study).values_list("pk", "text_hash")
        ),
    }
    querysets = {
        Source: Source.objects.filter(study=study),
        System: System.objects.filter(study=study),
        SimplificationText: SimplificationText.objects.filter(source__study=study),
        Simplification: Simplification.objects.filter(source__study=study),
    }
    tables = {}
    for model in TABLES:
        rows = []
        for obj in querysets[model]:
            row = {}
            for field in model._meta.concrete_fields:
                if field.primary_key:
                    continue
                value = getattr(obj, field.attname)
                if field.is_relation:
                    value = natural[field.related_model][value]
                elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                    assert started <= value <= finished, (model.__name__, field.name, value)
                    value = "during the import"
                row[field.name] = value
            rows.append(row)
        tables[model.__name__] = sorted(rows, key=repr)
    return tables


def import_both_ways(monkeypatch, run) -> tuple[dict, dict]:
    """`run(slug)` once through COPY and once through bulk_create; both snapshots."""
    snapshots = []
    for slug, copy in (("via-copy", True), ("via-orm", False)):
        monkeypatch.setattr(bulk_insert, "copy_available", lambda copy=copy: copy)
        started = timezone.now()
        with CaptureQueriesContext(connection) as queries:
            run(slug)
        copies = [q["sql"] for q in queries if q["sql"].startswith("COPY")]
        assert bool(copies) == copy, copies
        snapshots.append(snapshot(Study.objects.get(slug=slug), started, timezone.now()))
    return snapshots[0], snapshots[1]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")
def test_copy_and_bulk_create_store_the_same_rows(tmp_path, monkeypatch):
    first = long_file(tmp_path, "study.csv", 12)
    # Re-import: the even sources' first texts change (the old ones no longer used are removed, the
    # ones still shared stay), six new sources are appended.
    second = long_file(tmp_path, "study.csv", 18, changed=" Now")

    def run(slug: str) -> None:
        call_command("import_study", str(first), "--study", slug, "--title", "T", stdout=StringIO())
        call_command("import_study", str(second), "--study", slug, stdout=StringIO())

    via_copy, via_orm = import_both_ways(monkeypatch, run)
    assert via_copy == via_orm
    assert len(via_copy["Source"]) == 18
    assert len(via_copy["Simplification"]) == 36
    # Shared after the re-import: s3, s9 and s15 only.
    assert len(via_copy["SimplificationText"]) == 36 - 3
    assert {row["position"] for row in via_copy["Source"]} == set(range(18))
    assert {row["parameters"]["file"] for row in via_copy["Simplification"]} == {"study.csv"}
    assert {row["origin"] for row in via_copy["Simplification"]} == {"import"}
    assert {row["reference_severity"] for row in via_copy["Source"]} == {"Mild", "", "Critical"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")
def test_copy_and_bulk_create_store_the_same_json_and_text(monkeypatch):
    """JSON metadata per source, and texts with the characters COPY's text format escapes."""
    awkward = 'tab\there, back\\slash, new\nline, \\N, quote " and é'
    records = StudyRecords(
        systems=["plain"],
        sources=[
            SourceRecord(key="a", text=awkward, metadata={"release_row": 1, "note": awkward}),
            SourceRecord(key="b", text="Plain.", reference_severity="Healthy"),
        ],
        simplifications=[
            SimplificationRecord("a", "plain", awkward),
            SimplificationRecord("b", "plain", "Fine."),
        ],
    )

    def run(slug: str) -> None:
        study = Study.objects.create(slug=slug, title=slug)
        study_records_write(study=study, records=records, file="release")

    via_copy, via_orm = import_both_ways(monkeypatch, run)
    assert via_copy == via_orm
    a = next(row for row in via_copy["Source"] if row["key"] == "a")
    assert a["text"] == awkward and a["metadata"] == {"release_row": 1, "note": awkward}
    assert {row["text"] for row in via_copy["SimplificationText"]} == {
        'tab here, back\\slash, new line, \\N, quote " and é',
        "Fine.",
    }


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bulk_create"])
def test_import_queries_do_not_grow_with_rows(tmp_path, monkeypatch, copy):
    if copy and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    monkeypatch.setattr(bulk_insert, "copy_available", lambda: copy)

    def queries(path: Path, slug: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            call_command("import_study", str(path), "--study", slug, stdout=StringIO())
        return len(captured)

    few, many = long_file(tmp_path, "few.csv", 3), long_file(tmp_path, "many.csv", 300)
    assert queries(few, "few") == queries(many, "many")
    # Re-imports with changed texts: lookups of the existing rows and updates, still per batch.
    few = long_file(tmp_path, "few.csv", 3, changed="!")
    many = long_file(tmp_path, "many.csv", 300, changed="!")
    assert queries(few, "few") == queries(many, "many")
    assert Simplification.objects.filter(source__study__slug="many").count() == 600


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bulk_create"])
def test_rows_insert_returns_the_ids_in_row_order_and_raises_django_errors(monkeypatch, copy):
    from django.db import IntegrityError, transaction

    if copy and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    monkeypatch.setattr(bulk_insert, "copy_available", lambda: copy)
    study = Study.objects.create(slug="ids", title="ids")
    rows = [(f"k{i}", f"Text {i}.", 10 - i) for i in range(10)]
    ids = bulk_insert.rows_insert(
        Source, columns=("key", "text", "position"), rows=rows, fixed={"study_id": study.pk}
    )
    stored = {s.pk: (s.key, s.text, s.position) for s in Source.objects.filter(study=study)}
    assert [stored[pk] for pk in ids] == rows
    assert Source.objects.get(pk=ids[3]).metadata == {}  # the field's default, as the ORM gives it
    with pytest.raises(IntegrityError), transaction.atomic():  # Django's, not the driver's
        bulk_insert.rows_insert(
            Source,
            columns=("key", "text", "position"),
            rows=[("k1", "Again.", 99)],
            fixed={"study_id": study.pk},
        )
    assert Source.objects.filter(study=study).count() == 10


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bulk_create"])
def test_a_text_repeated_in_a_later_batch_is_stored_once(tmp_path, monkeypatch, copy):
    """Sources new to the study are looked up again only once an earlier batch wrote to them."""
    from studies.importers import write as writer

    if copy and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    monkeypatch.setattr(bulk_insert, "copy_available", lambda: copy)
    monkeypatch.setattr(writer, "BATCH", 3)
    lines = ["source_key,source_text,system,text", "s0,Finding 0.,plain,Same words."]
    lines += [f"s{i},Finding {i}.,plain,Text {i}." for i in range(1, 8)]
    lines += ["s0,Finding 0.,cot,Same  words.", "s5,Finding 5.,cot,Other 5."]
    path = tmp_path / "late.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    call_command("import_study", str(path), "--study", "late", stdout=StringIO())
    s0 = Source.objects.get(study__slug="late", key="s0")
    assert list(s0.texts.values_list("text", flat=True)) == ["Same words."]
    assert set(s0.simplifications.values_list("system__key", flat=True)) == {"plain", "cot"}
    assert SimplificationText.objects.filter(source__study__slug="late").count() == 9
