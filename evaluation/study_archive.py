"""The whole-study archive: one zip file that moves a study, with every answer, between radlay
servers (the export_study_archive / import_study_archive commands and the dashboard's download).

Format (version 1): `manifest.json` (format name, version, the study's slug, the tables in the
order they are written and their row counts) and one `<app>.<model>.json` per table, in Django's
JSON serialization. Import reads them in that order, gives every row a new primary key, points its
references at the new keys, and writes everything in one transaction: a broken archive leaves
nothing behind. Participants keep their label in the analysis and the exports (`P<old key>`
becomes their pseudonym where they had none) and their invite links (a token already taken on the
receiving server gets a new one). Accounts are not moved: the importing user becomes the study's
researcher, and radiologists' links to accounts are dropped. Computed rows (snapshots, metrics,
plans, generation batches, judge runs) are not archived; the receiving server computes them.
"""

from __future__ import annotations

import datetime
import json
import zipfile
from collections.abc import Iterable
from typing import IO, Any

from django.core import serializers
from django.core.serializers.base import DeserializationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.utils import timezone

from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    ConsentRefusal,
    ExpertItem,
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    LayItem,
    LayPreference,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
    new_participant_token,
)

FORMAT = "radlay-study-archive"
VERSION = 1

# Parents before children, so that every reference is known when a row is written.
TABLES: tuple[tuple[type[models.Model], str], ...] = (
    (Study, "pk"),
    (Source, "study"),
    (System, "study"),
    (SimplificationText, "source__study"),
    (Simplification, "source__study"),
    (AttentionCheck, "study"),
    (Participant, "study"),
    (ExpertItem, "participant__study"),
    (ExpertRating, "participant__study"),
    (ExpertSourceJudgement, "participant__study"),
    (LayItem, "participant__study"),
    (LayAnswer, "item__participant__study"),
    (LayPreference, "item__participant__study"),
    (AttentionCheckResponse, "participant__study"),
    (ConsentRefusal, "study"),
)


class ArchiveError(ValueError):
    """The file is not a radlay study archive this version can read; the message says what."""


class _ExactEncoder(DjangoJSONEncoder):
    """Django's JSON encoder, but timestamps to the microsecond (it cuts them to milliseconds):
    the answers' created_at/updated_at travel exactly, so the exports on the receiving server match."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime.datetime):
            return o.isoformat()
        return super().default(o)


def _label(model: type[models.Model]) -> str:
    return model._meta.label_lower


def study_archive_write(*, study: Study, out: IO[bytes]) -> dict[str, int]:
    """Write `study`'s archive to the binary file `out`; returns the row count per table."""
    counts: dict[str, int] = {}
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for model, path in TABLES:
            rows = model._default_manager.filter(**{path: study.pk}).order_by("pk")
            text = serializers.serialize("json", rows, cls=_ExactEncoder)
            counts[_label(model)] = rows.count()
            archive.writestr(f"{_label(model)}.json", text)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "study": study.slug,
            "exported_at": timezone.now().isoformat(),
            "tables": [_label(model) for model, _ in TABLES],
            "counts": counts,
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
    return counts


def _manifest(archive: zipfile.ZipFile) -> dict[str, Any]:
    try:
        manifest = json.loads(archive.read("manifest.json"))
    except KeyError:
        raise ArchiveError("not a radlay study archive: it has no manifest.json") from None
    except ValueError as exc:
        raise ArchiveError(f"manifest.json is not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"not a radlay study archive: manifest.json's format is not {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise ArchiveError(
            f"archive format version {manifest.get('version')!r}; this radlay reads version {VERSION}"
        )
    return manifest


def _references(model: type[models.Model]) -> Iterable[models.ForeignKey]:
    return (f for f in model._meta.concrete_fields if isinstance(f, models.ForeignKey))


def study_archive_import(*, archive_file: IO[bytes], slug: str | None = None, researcher=None) -> Study:
    """Create the archived study (under `slug`, else its own) with all its rows; all or nothing.
    Raises ArchiveError with the table and row at fault."""
    try:
        archive = zipfile.ZipFile(archive_file)
    except zipfile.BadZipFile:
        raise ArchiveError("not a radlay study archive: the file is not a zip file") from None
    with archive:
        manifest = _manifest(archive)
        keys: dict[type[models.Model], dict[Any, Any]] = {}
        with transaction.atomic():
            for model, _ in TABLES:
                name = f"{_label(model)}.json"
                try:
                    text = archive.read(name)
                except KeyError:
                    raise ArchiveError(f"the archive has no {name}") from None
                try:
                    rows = list(serializers.deserialize("json", text, ignorenonexistent=True))
                except DeserializationError as exc:
                    raise ArchiveError(f"{name}: {exc}") from None
                expected = manifest.get("counts", {}).get(_label(model))
                if expected is not None and expected != len(rows):
                    raise ArchiveError(f"{name} holds {len(rows)} rows, the manifest says {expected}")
                keys[model] = {}
                for number, row in enumerate(rows, start=1):
                    old_pk = row.object.pk
                    keys[model][old_pk] = _row_import(
                        row, keys=keys, slug=slug, where=f"{name}, row {number}"
                    )
            study = Study.objects.get(pk=keys[Study][next(iter(keys[Study]))])
            if researcher is not None:
                study.researchers.add(researcher)
    return study


def _row_import(row, *, keys: dict, slug: str | None, where: str) -> Any:
    obj = row.object
    model = type(obj)
    old_pk = obj.pk
    for field in _references(model):
        old = getattr(obj, field.attname)
        if old is None:
            continue
        if field.related_model in keys:
            try:
                setattr(obj, field.attname, keys[field.related_model][old])
            except KeyError:
                raise ArchiveError(
                    f"{where}: {field.name} refers to a row the archive does not hold"
                ) from None
        else:
            # An account of the exporting server: not moved.
            setattr(obj, field.attname, None)
    if model is Study:
        obj.slug = slug or obj.slug
        if Study.objects.filter(slug=obj.slug).exists():
            raise ArchiveError(f"a study with slug {obj.slug!r} exists here: import under another --slug")
    if model is Participant:
        obj.pseudonym = obj.pseudonym or f"P{old_pk}"
        if not obj.token or Participant.objects.filter(token=obj.token).exists():
            obj.token = new_participant_token()
    obj.pk = None
    try:
        obj.full_clean(validate_unique=False, validate_constraints=False)
    except Exception as exc:  # noqa: BLE001 - ValidationError's message names the field
        raise ArchiveError(f"{where}: {exc}") from None
    # raw: the stored timestamps (created_at, updated_at) are kept, not replaced by now.
    obj.save_base(raw=True, force_insert=True)
    for name, old_ids in row.m2m_data.items():
        field = model._meta.get_field(name)
        if field.related_model not in keys:
            continue  # accounts (Study.researchers)
        getattr(obj, name).set([keys[field.related_model][old] for old in old_ids])
    return obj.pk
