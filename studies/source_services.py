"""Writes of a study's material: sources, systems, simplification texts and simplifications
(idempotent upserts, as the importers and the generation batches need them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError

from annotation import scales
from annotation.answer_selectors import answered_text_ids
from annotation.data_policy_hooks import sources_imported
from annotation.models import (
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
    normalize_text,
    text_hash,
)

if TYPE_CHECKING:
    pass


def source_upsert(
    *,
    study: Study,
    key: str,
    text: str,
    reference_severity: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Source:
    """Create the source `key` of `study` or update its text/severity/metadata. New sources take
    the next free position (the fixed index the Latin square uses)."""
    if reference_severity and reference_severity not in scales.SEVERITY.names:
        raise ValidationError(
            {
                "reference_severity": f"{reference_severity!r} is not a severity level "
                f"({', '.join(scales.SEVERITY.names)})."
            }
        )
    text = text.strip()
    if not key.strip() or not text:
        raise ValidationError("A source needs a non-empty key and text.")
    source = Source.objects.filter(study=study, key=key).first()
    if source is None:
        last = (
            Source.objects.filter(study=study)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        source = Source(study=study, key=key, position=0 if last is None else last + 1)
    source.text = text
    if reference_severity is not None:
        source.reference_severity = reference_severity
    if metadata is not None:
        source.metadata = {**source.metadata, **dict(metadata)}
    source.full_clean(validate_unique=False, validate_constraints=False)
    source.save()
    sources_deidentify_on_import(study=study, sources=[source])
    return source


def sources_deidentify_on_import(*, study: Study, sources: list[Source]) -> None:
    """De-identify new or changed sources as they are written (RADLAY_DEIDENTIFY_ON_IMPORT): every
    import — files, the console's upload, the release importer, reports from hospital systems —
    writes its sources through this module or studies.importers.write, which calls this. Call
    inside the import's transaction, so that a failed import leaves no findings either."""
    if not settings.RADLAY_DEIDENTIFY_ON_IMPORT or not sources:
        return
    sources_imported(study=study, sources=sources)


def system_upsert(
    *,
    study: Study,
    key: str,
    label: str = "",
    config: Mapping[str, Any] | None = None,
    is_reference: bool | None = None,
) -> System:
    system = System.objects.filter(study=study, key=key).first()
    if system is None:
        last = (
            System.objects.filter(study=study)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        system = System(study=study, key=key, position=0 if last is None else last + 1)
    if label:
        system.label = label
    elif not system.label:
        system.label = key
    if config is not None:
        system.config = dict(config)
    if is_reference is not None:
        system.is_reference = is_reference
    system.full_clean(validate_unique=False, validate_constraints=False)
    system.save()
    return system


def simplification_text_get_or_create(*, source: Source, text: str) -> SimplificationText:
    digest = text_hash(text)
    shown, _ = SimplificationText.objects.get_or_create(
        source=source, text_hash=digest, defaults={"text": normalize_text(text)}
    )
    return shown


def simplification_upsert(
    *, source: Source, system: System, text: str, provenance: Mapping[str, Any] | None = None
) -> Simplification:
    """Set the (source, system) simplification. Identical texts of a source share one
    SimplificationText, so answers on it count for every system that produced it."""
    if system.study_id != source.study_id:
        raise ValidationError("The system and the source belong to different studies.")
    if not text or not text.strip():
        raise ValidationError(
            {"text": f"Empty simplification for source {source.key!r}, system {system.key!r}."}
        )
    shown = simplification_text_get_or_create(source=source, text=text)
    simplification = Simplification.objects.filter(source=source, system=system).first()
    previous_text_id = simplification.shown_text_id if simplification else None
    if simplification is None:
        simplification = Simplification(source=source, system=system)
    simplification.shown_text = shown
    for field, value in (provenance or {}).items():
        if not hasattr(Simplification, field):
            raise ValidationError(f"Unknown provenance field {field!r}.")
        setattr(simplification, field, value)
    simplification.save()
    if previous_text_id and previous_text_id != shown.pk:
        _text_delete_if_unused(previous_text_id)
    return simplification


def _text_delete_if_unused(text_id: int) -> None:
    shown = SimplificationText.objects.filter(pk=text_id).first()
    if shown is None:
        return
    in_use = (
        shown.simplifications.exists()
        or shown.lay_items.exists()
        # An answer about it (error spans are offsets into this very text) keeps it.
        or bool(answered_text_ids([shown.pk]))
    )
    if not in_use:
        shown.delete()
