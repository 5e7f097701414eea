"""A study's final labels, the "final_labels" layout of the instrument-item export
(evaluation/exports/items.py): one row per item and target that raters answered on the
adjudicated items (evaluation/adjudication_selectors.py), with the raters' values (blind: in the
order of their answers, never who), how much they disagree, the final label and where it came
from: `single rater`, `agreement` (every rater gave it), `adjudicated` (an adjudicator's consensus,
with its reason and whether it flags a guideline gap) or `unresolved` (the raters disagree and no
one adjudicated yet: no final value)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotation.models import Source, Study
from annotation.selectors import systems_by_text
from evaluation.exports.rows import flat_cell

FINAL_LABEL_COLUMNS = (
    "study",
    "instrument",
    "instrument_version",
    "item",
    "item_kind",
    "source",
    "systems",
    "text_id",
    "reference_text_id",
    "raters",
    "rater_values",
    "disagreement",
    "final_value",
    "final_score",
    "provenance",
    "adjudication_reason",
    "guideline_gap",
    "adjudicated_at",
)


def _score(kind: str, value: Any) -> float | None:
    if value is None:
        return None
    if kind == "ordinal" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "error_spans":
        return float(len(value))
    return None


def final_label_rows(*, study: Study, flat: bool) -> Iterator[tuple[Any, ...]]:
    """FINAL_LABEL_COLUMNS rows; `flat`: lists and mappings as JSON text (CSV, XLSX)."""
    from evaluation.adjudication_selectors import study_units, unit_records

    units = study_units(study=study)
    systems = {text: ";".join(keys) for text, keys in systems_by_text(study=study).items()}
    sources = dict(Source.objects.filter(study=study).values_list("pk", "key"))
    cell = flat_cell if flat else (lambda value: value)
    for unit, record in zip(units, unit_records(study=study, units=units), strict=True):
        adjudication = unit.adjudication
        text = unit.key.shown_text_id
        yield (
            study.slug,
            record["instrument"],
            record["version"],
            record["item"],
            record["item_kind"],
            sources.get(unit.key.source_id, ""),
            systems.get(text, "") if text else "",
            text,
            unit.key.reference_text_id,
            record["raters"],
            cell([answer["value"] for answer in record["answers"]]),
            record["disagreement"],
            cell(record["final_value"]),
            _score(record["item_kind"], record["final_value"]),
            record["provenance"],
            adjudication.reason if adjudication else "",
            adjudication.guideline_gap if adjudication else None,
            adjudication.updated_at.isoformat() if adjudication else "",
        )
