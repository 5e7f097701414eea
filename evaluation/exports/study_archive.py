"""The whole-study archive: one zip file that moves a study, with every answer, between radlay
servers (the export_study_archive / import_study_archive commands, the dashboard's download and
the console's import page).

Format (version 2): `manifest.json` (format name, version, the study's slug, the tables in the
order they are written, their row counts, and the tables left out with the reason) and one
`<app>.<model>.jsonl` per table (evaluation/exports/study_archive_tables.py), one row a line in Django's
JSON serialization. Version 1 archives (one JSON array per table, fewer tables) still import, and
so do archives from before the one answer store, whose typed answer tables are mapped into item
answers (evaluation/exports/study_archive_legacy.py).

Import streams each member row by row within the limits of evaluation/exports/study_archive_reader.py,
gives every row a new primary key, points its references (foreign keys and the keys JSON columns
hold) at the new keys, and inserts the rows in batches, all in one transaction: a broken archive
leaves nothing behind. A row the archive gets wrong is named by table and row; a refusal of the
database (a constraint, a lost connection) is reported as the database's, with its table.
Participants keep their label in the analysis and the exports (`P<old key>` becomes their
pseudonym where they had none) and their invite links (a token already taken on the receiving
server gets a new one). Accounts are not moved: the importing user becomes the study's owner, and
links to accounts are dropped. A judge run unfinished when archived arrives cancelled.

Privacy (privacy/): by default the archive hands out de-identified sources. Each source's
`text` is its de-identified text (where it was de-identified), its de-identification row is
rewritten to match that text (the copy's de-identification counts as done, with no findings to
review), and the findings, which hold the identifiers, stay out (named in the manifest's
`excluded`). Only when an owner asks for the originals (`originals=True`, recorded by the caller
with privacy.services.originals_release_record) do the original texts and the findings travel;
the manifest says which (`originals`). Either way the copy's data policy arrives with its
de-identification approval withdrawn: an approval is an owner's statement on the exporting
server, so an owner of the copy approves again before its text reaches an external backend.
"""

from __future__ import annotations

import datetime
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.core import serializers
from django.core.exceptions import ValidationError
from django.core.serializers.base import DeserializationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.instrument_services import study_instruments_stamp_refresh
from annotation.models import (
    AnswerRevision,
    ItemAnswer,
    Participant,
    SimplificationText,
    Source,
    Study,
    new_participant_token,
    text_hash,
)
from evaluation.exports.study_archive_legacy import (
    LEGACY_REVISION_TYPES,
    LegacyAnswers,
    LegacyDatabaseError,
    LegacyError,
)
from evaluation.exports.study_archive_reader import ArchiveError, ArchiveLimits, BoundedArchive
from evaluation.exports.study_archive_tables import (
    ARCHIVED,
    REVISION_TYPES,
    Table,
    account_model,
    archived_tables,
    excluded_tables,
)
from privacy.models import DataPolicy, SourceDeidentification
from privacy.selectors import source_texts
from work.scheduler import CANCELLED, PENDING, RUNNING

FORMAT = "radlay-study-archive"
VERSION = 2
READABLE_VERSIONS = (1, 2)
BATCH = 1000
# Version 1 archived these tables only; the others are empty in its archives.
VERSION_1_TABLES = frozenset(
    {
        "annotation.study",
        "annotation.source",
        "annotation.system",
        "annotation.simplificationtext",
        "annotation.simplification",
        "annotation.attentioncheck",
        "annotation.participant",
        "annotation.expertitem",
        "annotation.expertrating",
        "annotation.expertsourcejudgement",
        "annotation.layitem",
        "annotation.layanswer",
        "annotation.laypreference",
        "annotation.attentioncheckresponse",
        "annotation.consentrefusal",
    }
)

__all__ = [
    "ArchiveDatabaseError",
    "ArchiveError",
    "ArchiveManifest",
    "study_archive_import",
    "study_archive_manifest",
    "study_archive_write",
]


# The lay panel 3 items whose answers are lists of text keys.
CHOSEN = ("most", "least")


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


class ArchiveDatabaseError(Exception):
    """The database refused the import (a constraint, a lost connection): not the archive's fault
    row by row; the message names the table being written and the database's reason."""


class _ExactEncoder(DjangoJSONEncoder):
    """Django's JSON encoder, but timestamps to the microsecond (it cuts them to milliseconds):
    the answers' created_at/updated_at travel exactly, so the exports on the receiving server match."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime.datetime):
            return o.isoformat()
        return super().default(o)


# --- writing ---------------------------------------------------------------------------------------


def _rows(table: Table, study: Study) -> Iterator[models.Model]:
    rows = table.model._default_manager.filter(**{table.study_path: study.pk}).order_by("pk")
    many = [f.name for f in table.model._meta.many_to_many]
    if many:
        rows = rows.prefetch_related(*many)
    return rows.iterator(chunk_size=BATCH)


def _batches(rows: Iterator[models.Model]) -> Iterator[list[models.Model]]:
    batch: list[models.Model] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _handed_out(batch: list[models.Model], serialized: list[dict], originals: bool) -> list[dict]:
    """The rows as the archive hands them out: sources with the text an export gets
    (privacy.selectors.source_texts), their de-identification matching that text."""
    if originals or not batch:
        return serialized
    if isinstance(batch[0], Source):
        texts = source_texts(sources=[row for row in batch if isinstance(row, Source)], audience="export")
        for row in serialized:
            row["fields"]["text"] = texts[row["pk"]]
    elif isinstance(batch[0], SourceDeidentification):
        for row in serialized:
            row["fields"]["source_hash"] = text_hash(row["fields"]["text"])
    return serialized


def study_archive_write(*, study: Study, out: IO[bytes], originals: bool = False) -> dict[str, int]:
    """Write `study`'s archive to the binary file `out`, table by table in batches (never a whole
    table in memory); returns the row count per table. The sources are de-identified unless
    `originals` (an owner's request, recorded by the caller: privacy.services.originals_release_record)."""
    counts: dict[str, int] = {}
    python = serializers.get_serializer("python")
    tables = archived_tables(originals=originals)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for table in tables:
            counts[table.label] = 0
            with archive.open(f"{table.label}.jsonl", "w", force_zip64=True) as member:
                for batch in _batches(_rows(table, study)):
                    lines = [
                        json.dumps(row, cls=_ExactEncoder, ensure_ascii=False)
                        for row in _handed_out(batch, python().serialize(batch), originals)
                    ]
                    member.write(("\n".join(lines) + "\n").encode())
                    counts[table.label] += len(batch)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "study": study.slug,
            "title": study.title,
            "exported_at": timezone.now().isoformat(),
            "tables": [table.label for table in tables],
            "counts": counts,
            "originals": originals,
            "excluded": excluded_tables(originals=originals),
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
    return counts


# --- the manifest ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveManifest:
    """What an archive says it holds, checked: shown before an import is confirmed."""

    version: int
    study: str
    title: str
    exported_at: str
    counts: dict[str, int]
    excluded: dict[str, str] = field(default_factory=dict)
    # The tables it holds (None: an archive that does not list them, which then holds them all).
    written: tuple[str, ...] | None = None
    # Whether it carries the original reports and their identifiers (an owner asked for them).
    originals: bool = False

    @property
    def tables(self) -> list[tuple[str, int]]:
        """(table, rows) in the order they are imported, this server's tables only."""
        return [
            (table.label, self.counts.get(table.label, 0))
            for table in ARCHIVED
            if self.written is None or table.label in self.written
        ]


def _manifest_check(archive: BoundedArchive) -> ArchiveManifest:
    if not archive.has("manifest.json"):
        raise ArchiveError("not a radlay study archive: it has no manifest.json")
    manifest = archive.json_document("manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"not a radlay study archive: manifest.json's format is not {FORMAT!r}")
    version = manifest.get("version")
    if version not in READABLE_VERSIONS:
        raise ArchiveError(
            f"archive format version {version!r}; this radlay reads versions "
            + ", ".join(map(str, READABLE_VERSIONS))
        )
    counts = manifest.get("counts", {})
    if not isinstance(counts, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()
    ):
        raise ArchiveError("manifest.json's counts are not a table → row count mapping")
    excluded = manifest.get("excluded", {})
    written = manifest.get("tables")
    if written is not None and not (isinstance(written, list) and all(isinstance(t, str) for t in written)):
        raise ArchiveError("manifest.json's tables are not a list of table names")
    return ArchiveManifest(
        version=version,
        study=str(manifest.get("study", "")),
        title=str(manifest.get("title", "")),
        exported_at=str(manifest.get("exported_at", "")),
        counts={str(k): v for k, v in counts.items()},
        excluded={str(k): str(v) for k, v in excluded.items()} if isinstance(excluded, dict) else {},
        written=tuple(written) if version >= 2 and written is not None else None,
        originals=manifest.get("originals") is True,
    )


def study_archive_manifest(
    *, archive_file: IO[bytes], limits: ArchiveLimits | None = None
) -> ArchiveManifest:
    """The archive's checked manifest (its sizes checked against the limits), nothing imported."""
    with BoundedArchive(archive_file, limits) as archive:
        return _manifest_check(archive)


# --- importing -------------------------------------------------------------------------------------


def study_archive_import(
    *,
    archive_file: IO[bytes],
    slug: str | None = None,
    researcher=None,
    actor: Any = None,
    limits: ArchiveLimits | None = None,
) -> Study:
    """Create the archived study (under `slug`, else its own) with all its rows; all or nothing.
    `researcher` becomes its owner; the import is the first event of its activity log, by `actor`
    (a user or the command's name). Raises ArchiveError with the table and row at fault,
    ArchiveDatabaseError when the database refuses."""
    with BoundedArchive(archive_file, limits) as archive:
        manifest = _manifest_check(archive)
        try:
            with transaction.atomic():
                importer = _Importer(archive=archive, manifest=manifest, slug=slug)
                for table in ARCHIVED:
                    importer.table_import(table)
                if not importer.keys[Study]:
                    raise ArchiveError("the archive holds no study")
                study = Study.objects.get(pk=next(iter(importer.keys[Study].values())))
                study_instruments_stamp_refresh(study=study)
                if researcher is not None:
                    study.researchers.add(researcher)
                details: dict[str, Any] = {"from": manifest.study, "archive_version": manifest.version}
                if manifest.version >= 2:
                    details["originals"] = manifest.originals
                if importer.approval_withdrawn:
                    details["deidentification_approved_on_export"] = importer.approval_withdrawn
                activity_record(
                    study=study,
                    actor=actor if actor is not None else researcher,
                    verb="study.imported",
                    details=details,
                )
        except DatabaseError as exc:
            # Outside the batched inserts (which name their table): the database, not the archive.
            raise ArchiveDatabaseError(f"the database refused the import: {str(exc).strip()}") from exc
    return study


class _Importer:
    def __init__(self, *, archive: BoundedArchive, manifest: ArchiveManifest, slug: str | None):
        self.archive = archive
        self.manifest = manifest
        self.slug = slug
        self.keys: dict[type[models.Model], dict[Any, Any]] = {}
        self.accounts = account_model()
        self.now = timezone.now()
        # The exporting server's approval of the de-identification, withdrawn in the copy.
        self.approval_withdrawn: dict[str, str] = {}

    def table_import(self, table: Table) -> None:
        model = table.model
        self.keys[model] = {}
        suffix = "jsonl" if self.manifest.version >= 2 else "json"
        name = f"{table.label}.{suffix}"
        if model is AnswerRevision:
            # An archive from before the one answer store: its typed answers first (their
            # revisions follow).
            self._legacy_import(suffix)
        if not self.archive.has(name):
            if self.manifest.version == 1 and table.label not in VERSION_1_TABLES:
                return
            if self.manifest.written is not None and table.label not in self.manifest.written:
                return  # left out (the findings of a de-identified archive) or newer than it
            raise ArchiveError(f"the archive has no {name}")
        batch: list[tuple[Any, models.Model, dict[str, list[Any]]]] = []
        number = 0
        for number, row in enumerate(self.archive.rows(name), start=1):
            where = f"{name}, row {number}"
            if model is Study and number > 1:
                raise ArchiveError(f"{where}: an archive holds one study, this one holds more")
            if model is AnswerRevision and self._legacy_revision(row):
                batch += self._legacy_revisions(row, where)
            else:
                batch.append(self._row_object(table, row, where))
            if len(batch) >= BATCH:
                self._insert(table, batch)
                batch = []
        if batch:
            self._insert(table, batch)
        expected = self.manifest.counts.get(table.label)
        if expected is not None and expected != number:
            raise ArchiveError(f"{name} holds {number} rows, the manifest says {expected}")

    def _legacy_import(self, suffix: str) -> None:
        self.legacy = LegacyAnswers(archive=self.archive, suffix=suffix, keys=self.keys)
        if not self.legacy.present():
            return
        study = Study.objects.get(pk=next(iter(self.keys[Study].values())))
        study_instruments_stamp_refresh(study=study)
        try:
            self.legacy.import_all(study=study)
        except LegacyError as exc:
            raise ArchiveError(str(exc)) from None
        except LegacyDatabaseError as exc:
            raise ArchiveDatabaseError(
                f"the database refused the answers of the typed tables: {exc}"
            ) from exc
        for label, number in self.legacy.counts.items():
            expected = self.manifest.counts.get(label)
            if expected is not None and expected != number:
                raise ArchiveError(f"{label} holds {number} rows, the manifest says {expected}")

    @staticmethod
    def _legacy_revision(row: Any) -> bool:
        fields = row.get("fields") if isinstance(row, dict) else None
        return isinstance(fields, dict) and fields.get("answer_type") in LEGACY_REVISION_TYPES

    def _legacy_revisions(self, row: dict, where: str) -> list[tuple[Any, models.Model, dict]]:
        fields = dict(row["fields"])
        fields["participant"] = self._key(Participant, fields.get("participant"), where, "participant")
        try:
            revisions = self.legacy.revisions(fields, where)
        except LegacyError as exc:
            raise ArchiveError(str(exc)) from None
        return [(row.get("pk"), revision, {}) for revision in revisions]

    def _row_object(self, table: Table, row: dict, where: str) -> tuple[Any, models.Model, dict]:
        model = table.model
        if row.get("model") != model._meta.label_lower:
            raise ArchiveError(f"{where}: a row of {row.get('model')!r}, not of {model._meta.label_lower}")
        try:
            (deserialized,) = serializers.deserialize("python", [row], ignorenonexistent=True)
        except (DeserializationError, ValidationError, ValueError, TypeError) as exc:
            raise ArchiveError(f"{where}: {exc}") from None
        obj = deserialized.object
        old_pk = obj.pk
        if old_pk is None:
            raise ArchiveError(f"{where}: the row has no key")
        relations = []
        for f in model._meta.concrete_fields:
            if not (f.is_relation and (f.many_to_one or f.one_to_one)):
                continue
            relations.append(f.name)
            old = getattr(obj, f.attname)
            if old is None:
                continue
            if f.related_model in self.keys:
                setattr(obj, f.attname, self._key(f.related_model, old, where, f.name))
            elif f.related_model is self.accounts:
                setattr(obj, f.attname, None)  # an account of the exporting server: not moved
            else:
                raise ArchiveError(f"{where}: {f.name} refers to a table the archive does not move")
        for column, (shape, target) in table.json_keys.items():
            setattr(obj, column, self._json_keys(getattr(obj, column), shape, target, where, column))
        self._adjust(obj, old_pk, where)
        obj.pk = None
        # Empty values are kept as the exporting server stored them (an error-span answer with no
        # marks is []); the others are checked field by field (choices, lengths) and by clean().
        empty = [f.name for f in model._meta.concrete_fields if getattr(obj, f.attname) in f.empty_values]
        try:
            obj.clean_fields(exclude=[*relations, *empty, *table.unchecked])
            obj.clean()
        except ValidationError as exc:
            raise ArchiveError(f"{where}: {exc}") from None
        m2m = {}
        for name, old_ids in (deserialized.m2m_data or {}).items():
            many: Any = model._meta.get_field(name)
            m2m[name] = [self._key(many.related_model, old, where, name) for old in old_ids]
        return old_pk, obj, m2m

    def _key(self, model: type[models.Model], old: Any, where: str, name: str) -> Any:
        try:
            return self.keys[model][old]
        except (KeyError, TypeError):
            raise ArchiveError(f"{where}: {name} refers to a row the archive does not hold") from None

    def _json_keys(self, value: Any, shape: str, target, where: str, column: str) -> Any:
        if value in (None, ""):
            return value
        if not isinstance(value, list):
            raise ArchiveError(f"{where}: {column} is not a list")
        if shape == "list":
            return [self._key(target, old, where, column) for old in value]
        slots = []
        for slot in value:
            if not (isinstance(slot, list) and len(slot) == 2):
                raise ArchiveError(f"{where}: {column} holds {slot!r}, not an [index, key] pair")
            slots.append([slot[0], self._key(target, slot[1], where, column)])
        return slots

    def _adjust(self, obj: models.Model, old_pk: Any, where: str) -> None:
        """What a copy changes besides its keys."""
        if isinstance(obj, Study):
            obj.slug = self.slug or obj.slug
            if Study.objects.filter(slug=obj.slug).exists():
                raise ArchiveError(f"a study with slug {obj.slug!r} exists here: import under another slug")
        elif isinstance(obj, DataPolicy):
            if obj.approved_at is not None:
                self.approval_withdrawn = {
                    "at": obj.approved_at.isoformat(),
                    "by": obj.approved_by_label,
                    "findings": str(obj.approved_findings),
                    "edited": str(obj.approved_edited),
                }
            obj.approved_at = None
            obj.approved_by_label = ""
            obj.approved_findings = obj.approved_edited = 0
        elif isinstance(obj, Participant):
            obj.pseudonym = obj.pseudonym or f"P{old_pk}"
        elif (
            isinstance(obj, ItemAnswer)
            and obj.phase == ItemAnswer.Phase.PREFERENCE
            and obj.item_key in CHOSEN
        ):
            # Panel 3's choices name texts by key (as text): the copy's keys.
            if not isinstance(obj.value, list):
                raise ArchiveError(f"{where}: value of {obj.item_key} is not a list of texts")
            obj.value = sorted(
                str(self._key(SimplificationText, _int(old), where, "value")) for old in obj.value
            )
        elif isinstance(obj, AnswerRevision):
            answered = REVISION_TYPES.get(obj.answer_type)
            if answered is None:
                raise ArchiveError(f"{where}: answer_type {obj.answer_type!r} is not an answer table")
            obj.answer_id = self._key(answered, obj.answer_id, where, "answer_id")
        elif obj._meta.label in ("judging.JudgeRun", "judging.JudgeItem"):
            self._judge_work_stop(obj)

    def _judge_work_stop(self, work: Any) -> None:
        """A judge run or item unfinished when archived arrives stopped (resumed here by hand).
        The judges' models are read by label: evaluation imports no judging."""
        if work._meta.label == "judging.JudgeRun":
            if work.finished_at is None and work.cancelled_at is None:
                work.cancelled_at = self.now  # unfinished when archived: resume it here
        elif work.status in (PENDING, RUNNING):
            work.status = CANCELLED
            work.dispatched_at = work.heartbeat_at = None
            work.task_id = ""

    def _tokens_free(self, batch: list) -> None:
        """A participant whose token is already taken here gets a new one."""
        tokens = [obj.token for _, obj, _ in batch if obj.token]
        taken = set(Participant.objects.filter(token__in=tokens).values_list("token", flat=True))
        for _, obj, _ in batch:
            if not obj.token or obj.token in taken:
                obj.token = new_participant_token()

    def _insert(self, table: Table, batch: list) -> None:
        model = table.model
        if model is Participant:
            self._tokens_free(batch)
        opts = model._meta
        fields = [f for f in opts.concrete_fields if f is not opts.pk and not f.generated]
        size = max(1, connection.ops.bulk_batch_size(fields, batch) or len(batch))
        for start in range(0, len(batch), size):
            self._insert_rows(table, fields, batch[start : start + size])

    def _insert_rows(self, table: Table, fields: list, batch: list) -> None:
        model, opts = table.model, table.model._meta
        objs = [obj for _, obj, _ in batch]
        try:
            with transaction.atomic(savepoint=False):
                # raw: the stored timestamps (created_at, updated_at) are kept, not replaced by now.
                manager: Any = model._base_manager
                returned = manager._insert(
                    objs,
                    fields=fields,
                    returning_fields=opts.db_returning_fields,
                    raw=True,
                    using=connection.alias,
                )
                for (old_pk, obj, _), values in zip(batch, returned, strict=True):
                    obj.pk = values[0]
                    obj._state.adding = False
                    self.keys[model][old_pk] = obj.pk
                for name in {name for _, _, m2m in batch for name in m2m}:
                    many: Any = opts.get_field(name)
                    through = many.remote_field.through
                    own, other = many.m2m_field_name(), many.m2m_reverse_field_name()
                    through._base_manager.bulk_create(
                        [
                            through(**{f"{own}_id": obj.pk, f"{other}_id": target})
                            for _, obj, m2m in batch
                            for target in m2m.get(name, ())
                        ],
                        batch_size=BATCH,
                    )
        except DatabaseError as exc:
            raise ArchiveDatabaseError(
                f"the database refused the rows of {table.label}: {str(exc).strip()}"
            ) from exc
