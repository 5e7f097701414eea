"""Writes importer records to the database, all or nothing (one transaction), in bulk."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation import participant_services
from annotation.activity_services import activity_record
from annotation.answer_selectors import answered_text_ids
from annotation.bulk_insert import rows_insert
from annotation.models import (
    LayItem,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    StudyMembership,
    System,
    normalize_text,
    text_hash,
)
from studies import source_services, study_services
from studies.importers.errors import ImportFormatError
from studies.importers.records import (
    ReleaseRecords,
    SimplificationRecord,
    SourceRecord,
    StudyRecords,
)
from studies.importers.report_file import ReportFile
from studies.importers.study_file import StudyFile, study_slug_check
from studies.importers.systems_write import systems_bulk_upsert
from studies.team_services import study_member_add
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers

BATCH = 2000


def study_file_import(
    *,
    slug: str,
    title: str,
    study_file: StudyFile | ReportFile,
    owner=None,
    actor: Any = None,
    language: str = "",
) -> tuple[Study, bool, dict[str, int]]:
    """Validate the whole file, then create or update the study and write the file's records, in
    one transaction: a failed import leaves nothing, not even a new study or a changed title.
    `owner` (a user) becomes an owner of the study; `language` (one of settings.LANGUAGES; empty
    leaves it as it is) is the language its participants see."""
    study_slug_check(slug)
    summary = study_file.check()
    with transaction.atomic():
        study, created = study_services.study_get_or_create(slug=slug, title=title, language=language)
        if created:
            activity_record(study=study, actor=actor, verb="study.created", obj=study)
        if owner is not None:
            study_member_add(study=study, user=owner, role=StudyMembership.Role.OWNER, actor=actor)
        writer = StudyBulkWriter(study=study, systems=summary.systems, file=study_file.name)
        for row in study_file.rows():
            row.source.reference_severity = summary.severities.get(row.source.key)
            writer.add(row.source, row.simplifications)
        writer.flush()
        counts = {"sources": summary.sources, "systems": len(summary.systems)}
        counts["simplifications"] = summary.simplifications
        activity_record(
            study=study, actor=actor, verb="sources.imported", details={"file": study_file.name, **counts}
        )
    return study, created, counts


def study_records_write(*, study: Study, records: StudyRecords, file: str = "") -> dict[str, int]:
    """Add or update sources, systems and simplifications of `study`; never duplicates."""
    by_source: dict[str, list[SimplificationRecord]] = {}
    for record in records.simplifications:
        by_source.setdefault(record.source_key, []).append(record)
    with transaction.atomic():
        writer = StudyBulkWriter(
            study=study, systems=records.systems, labels=records.system_labels, file=file
        )
        for source in records.sources:
            writer.add(source, by_source.pop(source.key, []))
        if by_source:
            raise ImportFormatError(f"simplifications of unknown sources {sorted(by_source)}.", file=file)
        writer.flush()
    return {
        "sources": len(records.sources),
        "systems": len(records.systems),
        "simplifications": len(records.simplifications),
    }


class StudyBulkWriter:
    """Adds or updates sources and simplifications in batches: a few queries per `BATCH` rows,
    whatever the study's size. Same rules as studies.source_services' source_upsert and
    simplification_upsert (new sources take the next free position; identical texts of a source
    share one SimplificationText; a text no longer used by anything is removed). Call inside a
    transaction."""

    def __init__(self, *, study: Study, systems: list[str], labels: dict[str, str] | None = None, file: str):
        self.study = study
        self.systems = systems_bulk_upsert(study=study, keys=systems, labels=labels or {}, file=file)
        self.provenance = {"origin": "import", "backend": "", "parameters": {"file": file} if file else {}}
        last = Source.objects.filter(study=study).aggregate(last=Max("position"))["last"]
        self.next_position = 0 if last is None else last + 1
        # The study's sources before this import, by key (keys only, never their texts): a batch
        # reads the rows of its keys among them by primary key, and asks nothing about the keys
        # this import adds. (A batch's `key IN (…)` over a study the import is filling cost a
        # scan of its sources so far per batch: minutes for 100,000 rows.)
        self.existing_ids: dict[str, int] = (
            dict(Source.objects.filter(study=study).values_list("key", "pk")) if last is not None else {}
        )
        self.source_ids: dict[str, int] = {}
        # Sources that may already have texts and simplifications in the database: those from
        # before this import and those an earlier batch wrote to. Only theirs are looked up.
        self.sources_with_rows: set[int] = set()
        self.pending: list[tuple[SourceRecord, list[SimplificationRecord]]] = []
        self.replaced_texts: set[int] = set()
        # Sources added or changed by the batch being written: de-identified with it (collected
        # only when imports are de-identified: a model instance per row is most of a batch's time).
        self.deidentify = settings.RADLAY_DEIDENTIFY_ON_IMPORT
        self.written: list[Source] = []

    def add(self, source: SourceRecord, simplifications: list[SimplificationRecord]) -> None:
        self.pending.append((source, simplifications))
        if len(self.pending) >= BATCH:
            self._write()

    def flush(self) -> None:
        self._write()
        if self.replaced_texts:
            SimplificationText.objects.filter(
                pk__in=self.replaced_texts - answered_text_ids(self.replaced_texts),
                simplifications__isnull=True,
                lay_items__isnull=True,
            ).delete()
            self.replaced_texts.clear()

    def _write(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        self._write_sources([source for source, _ in batch])
        self._write_simplifications([record for _, records in batch for record in records])
        written, self.written = self.written, []
        source_services.sources_deidentify_on_import(study=self.study, sources=written)

    def _write_sources(self, records: list[SourceRecord]) -> None:
        records = list({r.key: r for r in records if r.key not in self.source_ids}.values())
        known = [self.existing_ids[r.key] for r in records if r.key in self.existing_ids]
        existing = {s.key: s for s in Source.objects.filter(pk__in=known)} if known else {}
        new, changed = [], []
        for record in records:
            source = existing.get(record.key)
            if source is None:
                new.append(
                    (
                        record.key,
                        record.text.strip(),
                        self.next_position,
                        record.reference_severity or "",
                        dict(record.metadata),
                        record.report_key,
                    )
                )
                self.next_position += 1
                continue
            before = (source.text, source.reference_severity, source.metadata, source.report_key)
            source.text = record.text.strip()
            if record.report_key:
                source.report_key = record.report_key
            if record.reference_severity is not None:
                source.reference_severity = record.reference_severity
            if record.metadata:
                source.metadata = {**source.metadata, **record.metadata}
            if before != (source.text, source.reference_severity, source.metadata, source.report_key):
                changed.append(source)
        ids = rows_insert(
            Source,
            columns=("key", "text", "position", "reference_severity", "metadata", "report_key"),
            rows=new,
            fixed={"study_id": self.study.pk},
        )
        Source.objects.bulk_update(
            changed, ["text", "reference_severity", "metadata", "report_key"], batch_size=BATCH
        )
        for source in existing.values():
            self.source_ids[source.key] = source.pk
            self.sources_with_rows.add(source.pk)
        self.source_ids.update(zip((row[0] for row in new), ids, strict=True))
        if self.deidentify:
            self.written.extend(
                Source(pk=pk, study=self.study, key=row[0], text=row[1])
                for row, pk in zip(new, ids, strict=True)
            )
            self.written.extend(changed)

    def _write_simplifications(self, records: list[SimplificationRecord]) -> None:
        if not records:
            return
        source_ids = {self.source_ids[r.source_key] for r in records}
        known = source_ids & self.sources_with_rows
        texts = {}
        if known:
            texts = {
                (source_id, digest): pk
                for pk, source_id, digest in SimplificationText.objects.filter(
                    source_id__in=known
                ).values_list("pk", "source_id", "text_hash")
            }
        wanted: dict[tuple[int, int], tuple[int, str]] = {}
        new_texts: dict[tuple[int, str], tuple[int, str, str]] = {}
        for record in records:
            source_id = self.source_ids[record.source_key]
            text = normalize_text(record.text)
            digest = text_hash(text)
            if (source_id, digest) not in texts and (source_id, digest) not in new_texts:
                new_texts[(source_id, digest)] = (source_id, text, digest)
            wanted[(source_id, self.systems[record.system])] = (source_id, digest)
        ids = rows_insert(
            SimplificationText, columns=("source_id", "text", "text_hash"), rows=list(new_texts.values())
        )
        texts.update(zip(new_texts, ids, strict=True))

        existing = {}
        if known:
            existing = {
                (s.source_id, s.system_id): s
                for s in Simplification.objects.filter(source_id__in=known).only(
                    "pk", "source_id", "system_id", "shown_text_id", *self.provenance
                )
            }
        new, changed = [], []
        now = timezone.now()
        for (source_id, system_id), text_key in wanted.items():
            text_id = texts[text_key]
            simplification = existing.get((source_id, system_id))
            if simplification is None:
                new.append((source_id, system_id, text_id))
                continue
            same = simplification.shown_text_id == text_id and all(
                getattr(simplification, name) == value for name, value in self.provenance.items()
            )
            if same:
                continue
            if simplification.shown_text_id != text_id:
                self.replaced_texts.add(simplification.shown_text_id)
            simplification.shown_text_id = text_id
            for name, value in self.provenance.items():
                setattr(simplification, name, value)
            simplification.updated_at = now
            changed.append(simplification)
        rows_insert(
            Simplification,
            columns=("source_id", "system_id", "shown_text_id"),
            rows=new,
            fixed=self.provenance,
        )
        Simplification.objects.bulk_update(
            changed, ["shown_text", "updated_at", *self.provenance], batch_size=BATCH
        )
        self.sources_with_rows |= source_ids


def release_records_write(*, study: Study, records: ReleaseRecords) -> dict[str, int]:
    with transaction.atomic():
        counts = study_records_write(study=study, records=records.study, file="release")
        sources = {s.key: s for s in Source.objects.filter(study=study)}
        text_of = {
            (s.source.key, s.system.key): s.shown_text
            for s in Simplification.objects.filter(source__study=study).select_related(
                "source", "system", "shown_text"
            )
        }
        systems = {s.key: s for s in System.objects.filter(study=study)}
        now = timezone.now()
        for person in records.participants:
            participant = Participant.objects.filter(study=study, pseudonym=person.pseudonym).first()
            if participant is None:
                participant = participant_services.participant_create(
                    study=study,
                    role=person.role,
                    pseudonym=person.pseudonym,
                    recruitment={"imported_from": "seed003 release"},
                )
            elif participant.role != person.role:
                raise ImportFormatError(
                    f"participant {person.pseudonym} exists in study {study.slug} "
                    f"with role {participant.role}.",
                    file="release",
                )
            participant.consented_at = participant.consented_at or now
            participant.started_at = participant.started_at or now
            participant.completed_at = participant.completed_at or now
            participant.save(update_fields=["consented_at", "started_at", "completed_at"])
            _write_expert(participant, person, sources, text_of)
            _write_lay(participant, person, sources, text_of, systems)
        counts["participants"] = len(records.participants)
    return counts


def _write_expert(participant, person, sources, text_of) -> None:
    merged: dict[int, tuple[SimplificationText, dict[str, int], list[str]]] = {}
    for position, key in enumerate(dict.fromkeys(r.source_key for r in person.expert_ratings)):
        expert_answers.expert_item_create(participant=participant, source=sources[key], position=position)
    for record in person.expert_ratings:
        shown = text_of[(record.source_key, record.system)]
        if shown.pk in merged:
            _, scores, comments = merged[shown.pk]
            if scores != record.scores:
                raise ImportFormatError(
                    f"source {record.source_key}: two systems share one text but were rated differently "
                    f"({scores} vs {record.scores}); radlay stores one rating per distinct text.",
                    file="release",
                )
            if record.comment and record.comment not in comments:
                comments.append(record.comment)
        else:
            merged[shown.pk] = (shown, dict(record.scores), [record.comment] if record.comment else [])
    for shown, scores, comments in merged.values():
        expert_answers.expert_rating_save(
            participant=participant, shown_text=shown, scores=scores, comment="\n\n".join(comments)
        )
    for judgement in person.expert_judgements:
        expert_answers.expert_source_judgement_save(
            participant=participant,
            source=sources[judgement.source_key],
            severity=judgement.severity,
            simplicity=judgement.simplicity,
            comment=judgement.comment or None,
        )


def _write_lay(participant, person, sources, text_of, systems) -> None:
    for record in person.lay_items:
        source = sources[record.source_key]
        shown = text_of[(record.source_key, record.systems[0])]
        item = LayItem.objects.filter(participant=participant, source=source).first()
        if item is None:
            # The release does not record panel 3's display order: texts in system order.
            order = list(dict.fromkeys(text_of[(record.source_key, k)].pk for k in systems))
            item = lay_answers.lay_item_create(
                participant=participant,
                source=source,
                position=record.position,
                shown_text=shown,
                assigned_system=systems[record.systems[0]],
                preference_order=order,
            )
        lay_answers.lay_answer_save(item=item, phase="original", answers=record.original)
        lay_answers.lay_item_lock_original(item=item)
        lay_answers.lay_answer_save(item=item, phase="assisted", answers=record.assisted)
        if (
            record.most is not None
            or record.least is not None
            or record.most_justification
            or record.least_justification
        ):
            lay_answers.lay_preference_save(
                item=item,
                most=[text_of[(record.source_key, k)].pk for k in record.most or []],
                least=[text_of[(record.source_key, k)].pk for k in record.least or []],
                most_justification=record.most_justification,
                least_justification=record.least_justification,
            )
        item.stage = LayItem.Stage.DONE
        item.completed_at = item.completed_at or participant.completed_at
        item.save(update_fields=["stage", "completed_at"])
