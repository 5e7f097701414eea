"""Putting the clinical error-span typology into a study: the `clinical_error_spans`
preset's item is added to the study's current radiologist instrument, so that every radiologist
page asks it under each simplification (surveys/radiologist/pages.py, the partial
templates/surveys/items/_error_spans.html). The write goes through study_instrument_save, so the
version rule holds: before any answer the instrument is edited in place; once answers exist the
addition is a new recorded version with its change note.

The command line (`manage.py instrument --study S --add-error-spans`) and the Study admin's action
call `study_error_spans_add`."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.instrument_selectors import EXPERT, PROTOCOL_PRESETS
from annotation.instrument_services import instrument_has_answers, study_instrument_save
from annotation.models import Study, StudyInstrument
from instruments.presets import preset_load
from instruments.schema import ItemKind
from instruments.validation import InstrumentError, instrument_from_data, instrument_to_data

ERROR_SPANS_PRESET = "clinical_error_spans"


def _in_languages(data: Any, offered: tuple[str, ...], kept: tuple[str, ...]) -> Any:
    """`data` (an item as instrument_to_data writes it) with each text reduced to the `kept`
    languages: a study instrument offers its own languages, and every text must offer exactly those."""
    if isinstance(data, dict):
        if data and set(data) <= set(offered) and all(isinstance(v, str) for v in data.values()):
            return {language: text for language, text in data.items() if language in kept}
        return {key: _in_languages(value, offered, kept) for key, value in data.items()}
    if isinstance(data, list):
        return [_in_languages(value, offered, kept) for value in data]
    return data


def study_error_spans_add(
    *, study: Study, actor: Any, note: str = "", preset_name: str = ERROR_SPANS_PRESET
) -> StudyInstrument:
    """Add the error-span item(s) of preset `preset_name` to `study`'s current radiologist
    instrument and return its current row. Refused with a ValidationError (key "instrument") when
    the instrument already asks an error-span item, when an item key would repeat, or when the
    instrument offers a language the typology has no wording in."""
    typology = preset_load(preset_name)
    with transaction.atomic():
        # One writer of a study's instruments: whether answers exist is read under the same lock
        # that study_instrument_save takes.
        Study.objects.select_for_update().filter(pk=study.pk).exists()
        row = StudyInstrument.objects.filter(study=study, flow=EXPERT, is_current=True).first()
        current = (
            instrument_from_data(row.definition) if row is not None else preset_load(PROTOCOL_PRESETS[EXPERT])
        )
        asked = [item.key for item in current.items if item.kind is ItemKind.ERROR_SPANS]
        if asked:
            raise ValidationError(
                {
                    "instrument": (
                        f"{study.slug}: the radiologist instrument {current.key!r} (version "
                        f"{current.version}) already asks error spans (item {asked[0]!r}); nothing changed"
                    )
                }
            )
        taken = {item.key for item in current.items} & {item.key for item in typology.items}
        if taken:
            raise ValidationError(
                {
                    "instrument": (
                        f"{study.slug}: the radiologist instrument already has an item {sorted(taken)[0]!r}"
                    )
                }
            )
        missing = [language for language in current.languages if language not in typology.languages]
        if missing:
            raise ValidationError(
                {
                    "instrument": (
                        f"{study.slug}: the typology {preset_name!r} has no wording in {', '.join(missing)}, "
                        f"which the radiologist instrument offers; add the item with its wording "
                        f"through `manage.py instrument --save`"
                    )
                }
            )
        has_answers = row is not None and instrument_has_answers(row=row)
        data = instrument_to_data(current)
        data["version"] = current.version + 1 if has_answers else current.version
        data["items"] = [
            *data["items"],
            *(
                _in_languages(item, typology.languages, current.languages)
                for item in instrument_to_data(typology)["items"]
            ),
        ]
        try:
            instrument = instrument_from_data(data)
        except InstrumentError as exc:
            raise ValidationError(
                {"instrument": [f"{study.slug}: {error}" for error in exc.errors]}
            ) from None
        return study_instrument_save(
            study=study,
            instrument=instrument,
            actor=actor,
            note=note or f"added the error-span typology {preset_name} (version {typology.version})",
            flow=EXPERT,
        )
