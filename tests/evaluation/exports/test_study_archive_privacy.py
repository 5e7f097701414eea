"""The study archive and the privacy tables: by default an archive carries the de-identified
sources and none of the identifiers (every member of the zip is scanned for them), the findings
left out with the reason in the manifest; an owner may ask for the originals (recorded), and then
the copy reproduces the original texts and every finding. Either way the copy's approval of the
de-identification is withdrawn: an owner of the copy approves again."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import ActivityEvent, Source
from evaluation.exports.study_archive import study_archive_import, study_archive_manifest, study_archive_write
from evaluation.exports.study_archive_tables import ARCHIVED
from privacy.models import DataPolicy, DeidFinding, SourceDeidentification
from privacy.selectors import data_policy_of, source_texts, unresolved_sources
from privacy.services import deidentification_approve
from tests.evaluation.identified_studies import identified_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]

FINDING_FIELDS = (
    "start", "end", "kind", "original", "replacement", "status", "score", "recognizer", "edited",
)  # fmt: skip


def _archive(study, *, originals: bool = False) -> bytes:
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer, originals=originals)
    return buffer.getvalue()


def _leaks(archive: bytes, words: list[str]) -> dict[str, list[str]]:
    """Every member of the zip that holds an identifier, with the identifiers it holds."""
    found = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as members:
        for name in members.namelist():
            text = members.read(name).decode("utf-8")
            hits = [word for word in words if word in text]
            if hits:
                found[name] = hits
    return found


def _findings(study) -> dict[str, list[tuple]]:
    rows: dict[str, list[tuple]] = {}
    for finding in DeidFinding.objects.filter(source__study=study).select_related("source"):
        rows.setdefault(finding.source.key, []).append(tuple(getattr(finding, f) for f in FINDING_FIELDS))
    return rows


def test_a_default_archive_carries_deidentified_sources_and_no_identifier(django_user_model):
    study, _, words = identified_study(slug="priv-orig")
    archive = _archive(study)
    assert _leaks(archive, words) == {}
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(archive)).read("manifest.json"))
    assert manifest["originals"] is False
    assert "privacy.deidfinding" not in manifest["tables"]
    assert "identifiers" in manifest["excluded"]["privacy.deidfinding"]
    assert {"privacy.datapolicy", "privacy.sourcedeidentification"} <= set(manifest["tables"])

    importer = django_user_model.objects.create_user("receiver", password="pw")
    copy = study_archive_import(archive_file=io.BytesIO(archive), slug="priv-copy", researcher=importer)
    shown = source_texts(sources=study.sources.all(), audience="export")
    expected = {study.sources.get(pk=pk).key: text for pk, text in shown.items()}
    assert dict(Source.objects.filter(study=copy).values_list("key", "text")) == expected
    # The copy's de-identification counts as done for the text it holds: nothing to review...
    assert SourceDeidentification.objects.filter(source__study=copy).count() == 4
    assert not DeidFinding.objects.filter(source__study=copy).exists()
    assert unresolved_sources(study=copy) == []
    # ...but the exporting owner's approval does not travel: the copy's owner approves again.
    policy = DataPolicy.objects.get(study=copy)
    assert policy.policy == "deidentified" and not policy.is_approved
    imported = ActivityEvent.objects.get(study=copy, verb="study.imported")
    assert imported.details["originals"] is False
    assert imported.details["deidentification_approved_on_export"]["by"] == "priv-orig-owner"
    assert deidentification_approve(study=copy, actor=importer).is_approved
    # The copy's own exports and archive stay free of identifiers too.
    assert _leaks(_archive(copy, originals=True), words) == {}


def test_an_owners_archive_with_originals_reproduces_the_texts_and_findings(django_user_model):
    study, _, words = identified_study(slug="origs-orig")
    archive = _archive(study, originals=True)
    assert set(_leaks(archive, words)) == {"annotation.source.jsonl", "privacy.deidfinding.jsonl"}
    manifest = study_archive_manifest(archive_file=io.BytesIO(archive))
    assert manifest.originals and "privacy.deidfinding" not in manifest.excluded
    assert [label for label, _ in manifest.tables] == [table.label for table in ARCHIVED]

    copy = study_archive_import(archive_file=io.BytesIO(archive), slug="origs-copy")
    assert dict(Source.objects.filter(study=copy).values_list("key", "text")) == dict(
        study.sources.values_list("key", "text")
    )
    assert _findings(copy) == _findings(study) != {}
    deidentified = SourceDeidentification.objects.values_list("source__key", "text")
    assert dict(deidentified.filter(source__study=copy)) == dict(deidentified.filter(source__study=study))
    assert unresolved_sources(study=copy) == []
    assert not data_policy_of(study=copy).is_approved
    assert ActivityEvent.objects.get(study=copy, verb="study.imported").details["originals"] is True


def test_only_an_owner_downloads_the_originals_and_the_release_is_recorded(client, django_user_model):
    from studies.team_services import study_member_add

    study, owner, words = identified_study(slug="dl")
    editor = django_user_model.objects.create_user("dl-editor", password="pw")
    study_member_add(study=study, user=editor, role="editor", actor="test")
    url = reverse("evaluation:study-archive", args=[study.slug])
    client.force_login(editor)
    response = client.get(url)
    assert response.status_code == 200
    assert _leaks(b"".join(response.streaming_content), words) == {}
    assert client.get(url + "?originals=1").status_code == 403
    assert not ActivityEvent.objects.filter(study=study, verb="sources.originals_released").exists()
    client.force_login(owner)
    response = client.get(url + "?originals=1")
    assert response.status_code == 200
    assert "annotation.source.jsonl" in _leaks(b"".join(response.streaming_content), words)
    released = ActivityEvent.objects.get(study=study, verb="sources.originals_released")
    assert released.details == {"purpose": "study archive"}


def test_the_command_releases_originals_only_when_asked_and_records_it(tmp_path, capsys):
    study, _, words = identified_study(slug="cmd")
    plain, full = tmp_path / "plain.zip", tmp_path / "full.zip"
    call_command("export_study_archive", study="cmd", out=str(plain))
    assert "de-identified sources" in capsys.readouterr().out
    assert _leaks(plain.read_bytes(), words) == {}
    assert not ActivityEvent.objects.filter(study=study, verb="sources.originals_released").exists()
    call_command("export_study_archive", study="cmd", out=str(full), originals=True)
    assert "original reports" in capsys.readouterr().out
    assert "privacy.deidfinding.jsonl" in _leaks(full.read_bytes(), words)
    assert ActivityEvent.objects.filter(study=study, verb="sources.originals_released").count() == 1
