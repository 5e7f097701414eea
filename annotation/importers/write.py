"""Writes importer records to the database, all or nothing (one transaction)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation import services
from annotation.importers.errors import ImportFormatError
from annotation.importers.records import ReleaseRecords, StudyRecords
from annotation.models import LayItem, Participant, Simplification, SimplificationText, Source, Study, System


def study_records_write(*, study: Study, records: StudyRecords, file: str = "") -> dict[str, int]:
    """Add or update sources, systems and simplifications of `study`; never duplicates."""
    with transaction.atomic():
        sources: dict[str, Source] = {}
        for record in records.sources:
            sources[record.key] = services.source_upsert(
                study=study,
                key=record.key,
                text=record.text,
                reference_severity=record.reference_severity,
                metadata=record.metadata or None,
            )
        systems: dict[str, System] = {
            key: services.system_upsert(study=study, key=key, label=records.system_labels.get(key, ""))
            for key in records.systems
        }
        for record in records.simplifications:
            services.simplification_upsert(
                source=sources[record.source_key],
                system=systems[record.system],
                text=record.text,
                provenance={"origin": "import", "backend": "", "parameters": {"file": file} if file else {}},
            )
    return {"sources": len(sources), "systems": len(systems), "simplifications": len(records.simplifications)}


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
                participant = services.participant_create(
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
        services.expert_item_create(participant=participant, source=sources[key], position=position)
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
        services.expert_rating_save(
            participant=participant, shown_text=shown, scores=scores, comment="\n\n".join(comments)
        )
    for judgement in person.expert_judgements:
        services.expert_source_judgement_save(
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
            item = services.lay_item_create(
                participant=participant,
                source=source,
                position=record.position,
                shown_text=shown,
                assigned_system=systems[record.systems[0]],
                preference_order=order,
            )
        services.lay_answer_save(item=item, phase="original", answers=record.original)
        services.lay_item_lock_original(item=item)
        services.lay_answer_save(item=item, phase="assisted", answers=record.assisted)
        if (
            record.most is not None
            or record.least is not None
            or record.most_justification
            or record.least_justification
        ):
            services.lay_preference_save(
                item=item,
                most=[text_of[(record.source_key, k)].pk for k in record.most or []],
                least=[text_of[(record.source_key, k)].pk for k in record.least or []],
                most_justification=record.most_justification,
                least_justification=record.least_justification,
            )
        item.stage = LayItem.Stage.DONE
        item.completed_at = item.completed_at or participant.completed_at
        item.save(update_fields=["stage", "completed_at"])
