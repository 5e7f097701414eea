"""Every table that belongs to a study is in its archive or left out with a reason: the app
registry is walked for every model a chain of foreign keys leads from to Study, so a model added
later fails here until it is archived (evaluation/exports/study_archive_tables.py ARCHIVED) or excluded
with its reason (EXCLUDED), which the manifest then carries."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.apps import apps

from annotation.models import ItemAnswer, Study
from evaluation.exports.study_archive import study_archive_write
from evaluation.exports.study_archive_tables import (
    ARCHIVED,
    EXCLUDED,
    archive_coverage,
    study_reaching_models,
)


def test_every_model_that_reaches_a_study_is_archived_or_excluded_with_a_reason():
    coverage = archive_coverage()
    missing = sorted(label for label, how in coverage.items() if how is None)
    assert not missing, (
        f"{missing} reach a study but are neither archived nor excluded: add each to ARCHIVED or, "
        "with the reason, to EXCLUDED in evaluation/exports/study_archive_tables.py"
    )
    # The walk finds what it must: answers two and three foreign keys away (every flow's answers,
    # planted-control rows included, are item answers), and m2m tables.
    for label in ("annotation.itemanswer", "judging.judgeanswer", "qualification.practiceanswer",
                  "annotation.answerrevision"):  # fmt: skip
        assert coverage[label] and coverage[label].startswith("archived"), label
    assert coverage["generation.generationjob_simplifications"], "an m2m table is walked"
    assert all(reason.strip() for reason in EXCLUDED.values())
    # Nothing archived and excluded at once; nothing listed that does not exist or reach a study.
    archived = {table.label for table in ARCHIVED}
    assert not archived & set(EXCLUDED)
    reaching = {m._meta.label_lower for m in study_reaching_models()}
    assert archived | set(EXCLUDED) <= reaching


def test_the_walk_fails_for_a_new_model_that_reaches_a_study(monkeypatch):
    """A model added with a foreign key to an answer table is found and reported as neither."""
    from django.db import models

    class NewNote(models.Model):  # noqa: DJ008 - a throwaway model the walk must find
        answer = models.ForeignKey(ItemAnswer, on_delete=models.CASCADE)

        class Meta:
            app_label = "annotation"

    try:
        assert archive_coverage()["annotation.newnote"] is None
    finally:
        del apps.all_models["annotation"]["newnote"]
        apps.clear_cache()


def test_parents_come_before_the_rows_that_refer_to_them():
    seen: set = set()
    for table in ARCHIVED:
        for f in table.model._meta.concrete_fields:
            if f.is_relation and f.related_model in {t.model for t in ARCHIVED}:
                assert f.related_model in seen or f.related_model is table.model, (table.label, f.name)
        for _, target in table.json_keys.values():
            assert target in seen, (table.label, target)
        seen.add(table.model)


@pytest.mark.django_db
def test_the_manifest_lists_every_table_and_every_exclusion_with_its_reason():
    study = Study.objects.create(slug="manifest", title="M")
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    manifest = json.loads(archive.read("manifest.json"))
    # By default the tables that hold identifiers (the de-identification's findings) stay out,
    # named with their reason; an owner's archive with the originals holds every table.
    withheld = {t.label: t.originals_only for t in ARCHIVED if t.originals_only}
    assert "privacy.deidfinding" in withheld
    written = [table.label for table in ARCHIVED if table.label not in withheld]
    assert manifest["tables"] == written
    assert manifest["excluded"] == {**EXCLUDED, **withheld}
    assert set(archive.namelist()) == {"manifest.json", *(f"{label}.jsonl" for label in written)}
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer, originals=True)
    archive = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["tables"] == [table.label for table in ARCHIVED]
    assert manifest["excluded"] == EXCLUDED
    assert set(archive.namelist()) == {"manifest.json", *(f"{t.label}.jsonl" for t in ARCHIVED)}
