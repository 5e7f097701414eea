"""Everything by which a study's data leaves radlay: its answers as exports (one module per
format, registered here: csv, xlsx, json; the layouts in answers, wide, items, spans, suggestions,
final_labels), its preference pairs (preferences) and the whole-study archive (study_archive*)."""

from __future__ import annotations

from types import ModuleType

from evaluation.exports import csv, json, xlsx

FORMATS: dict[str, ModuleType] = {"csv": csv, "xlsx": xlsx, "json": json}
