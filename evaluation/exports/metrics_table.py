"""The automatic metrics of an analysis as a flat table: one row per simplification (source,
system, text id, every per-text metric), then one row per system with its per-system and corpus
metrics. A metric that could not be computed is an empty cell; its reason is in the analysis JSON
(`metrics.unavailable`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from typing import Any

from evaluation.exports.cells import csv_cell


def metrics_table_rows(analysis: Mapping[str, Any]) -> Iterator[list[Any]]:
    metrics = analysis.get("metrics", {})
    text_metrics = list(metrics.get("text_metrics", []))
    per_system = metrics.get("per_system", {})
    system_metrics = sorted({name for values in per_system.values() for name in values} - set(text_metrics))
    yield ["level", "source", "system", "text_id", *text_metrics, *system_metrics]
    for record in metrics.get("per_simplification", []):
        yield [
            "simplification",
            record.get("source"),
            record.get("system"),
            record.get("text_id"),
            *[_cell(record.get(name)) for name in text_metrics],
            *[""] * len(system_metrics),
        ]
    for system in analysis.get("systems", []):
        values = per_system.get(system, {})
        yield [
            "system",
            "",
            system,
            "",
            *[_cell(values.get(name)) for name in text_metrics],
            *[_cell(values.get(name)) for name in system_metrics],
        ]


def metrics_csv(analysis: Mapping[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerows([csv_cell(value) for value in row] for row in metrics_table_rows(analysis))
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    return "" if value is None else value
