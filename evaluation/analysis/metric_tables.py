"""The automatic metrics of a study's texts (every registered metric family, measures/metrics):
per simplification and per original, averaged per system, with each system's corpus metrics;
Table 1's readability rows and the analysis document's `metrics` key. The tables of the same
texts and options are kept in the process (the last few), so a second analysis reads nothing.
Pure computation: no Django."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation.analysis.document import ORIGINAL
from evaluation.analysis.protocol import READABILITY_FAMILY, AnalysisOptions, StudyFrames, _mean, system_keys
from measures.metrics import registry as metric_registry

# The metric tables of the last analysed studies, by the texts and options they were computed
# from: a study's texts rarely change between two analyses (new answers do), and its metrics are
# most of a recomputation. A few entries of tens of MB each at 20 000 sources.
_METRIC_TABLES: OrderedDict[bytes, tuple[Any, dict[str, Any]]] = OrderedDict()
_METRIC_TABLES_KEPT = 4
_PLAIN_OPTION = (str, int, float, bool, type(None))


def _metric_tables_key(frames: StudyFrames, options: AnalysisOptions) -> bytes | None:
    """A digest of everything metric_tables reads, or None when an option is not plain data
    (an object such as a custom glossary has no content digest, so it is never cached)."""
    metric_options = dict(options.metric_options)
    if not all(isinstance(value, _PLAIN_OPTION) for value in metric_options.values()):
        return None
    digest = hashlib.blake2b(digest_size=32)

    def add(*parts: Any) -> None:
        digest.update(json.dumps(parts, sort_keys=True, default=str).encode())
        digest.update(b"\0")

    add(options.metric_families, sorted(metric_options.items()))
    simplifications, sources, systems = frames.simplifications, frames.sources, frames.systems
    add(systems["system"].tolist(), systems["is_reference"].astype(bool).tolist())
    for column in ("source", "system", "text"):
        add(simplifications[column].tolist())
    add(simplifications["text_id"].astype(np.int64).tolist())
    for column in ("source", "text", "metadata"):
        add(sources[column].tolist())
    return digest.digest()


def metric_tables(
    frames: StudyFrames, options: AnalysisOptions, store: metric_registry.TextMetricStore | None = None
) -> dict[str, Any]:
    """Every registered metric family over the study's simplifications (and, for the families
    that judge a text on its own, over the originals). Per-text values are averaged per system
    over the study's simplifications (a shared text counts once for each of its systems).

    Per-text values are read from `store` where it has them and given to it where it does not
    (registry.compute_all). The tables of the same texts, families, options and embedder are
    also kept in this process (the last few): a second analysis in a worker reads nothing;
    callers get copies of the frames."""
    key = _metric_tables_key(frames, options)
    cached = _METRIC_TABLES.get(key) if key is not None else None
    if cached is not None and cached[0] is options.embedder:
        _METRIC_TABLES.move_to_end(key)
        tables = cached[1]
    else:
        tables = _metric_tables_computed(frames, options, store)
        if key is not None:
            _METRIC_TABLES[key] = (options.embedder, tables)
            while len(_METRIC_TABLES) > _METRIC_TABLES_KEPT:
                _METRIC_TABLES.popitem(last=False)
    return {
        **copy.deepcopy({k: v for k, v in tables.items() if k not in ("per_text", "per_original")}),
        "per_text": tables["per_text"].copy(),
        "per_original": tables["per_original"].copy(),
    }


@dataclass
class _Columns:
    """compute_all's report with the per-text values as one float64 column per metric."""

    texts: dict[str, np.ndarray]
    systems: dict[str, dict[str, Any]]
    unavailable: dict[str, str]


def _family_by_family(
    records: Sequence[metric_registry.MetricRecord],
    chosen: Sequence[str],
    options: AnalysisOptions,
    store: metric_registry.TextMetricStore | None,
    kind: str,
) -> _Columns:
    """registry.compute_all of the `chosen` families, one family at a time, each family's values
    turned into columns at once: a dict per record holds one family's metrics, not all of them
    (80 000 dicts at 20 000 sources)."""
    texts: dict[str, np.ndarray] = {}
    systems: dict[str, dict[str, Any]] = {}
    unavailable: dict[str, str] = {}
    for name in chosen:
        report = metric_registry.compute_all(
            records,
            families=[name],
            embedder=options.embedder,
            options=dict(options.metric_options),
            store=store,
            kind=kind,
        )
        for metric in metric_registry.get_family(name).text_metrics:
            texts[metric] = np.array([row[metric] for row in report.texts], dtype=np.float64)
        for system, values in report.systems.items():
            systems.setdefault(system, {}).update(values)
        unavailable.update(report.unavailable)
        del report
    return _Columns(texts=texts, systems=systems, unavailable=unavailable)


def _metric_tables_computed(
    frames: StudyFrames, options: AnalysisOptions, store: metric_registry.TextMetricStore | None
) -> dict[str, Any]:
    simplifications = frames.simplifications.merge(
        frames.sources[["source", "text", "metadata"]].rename(columns={"text": "source_text"}), on="source"
    )
    reference_systems = set(frames.systems.loc[frames.systems["is_reference"].astype(bool), "system"])
    references: dict[str, str] = {}
    if reference_systems:
        for row in simplifications[simplifications["system"].isin(reference_systems)].itertuples():
            references.setdefault(row.source, row.text)
    no_metadata: dict[str, Any] = {}  # shared (never changed) by the sources without metadata
    records = [
        metric_registry.MetricRecord(
            source_text=source_text,
            candidate_text=text,
            reference_text=None if system in reference_systems else references.get(source),
            source_metadata=metadata or no_metadata,
            system=system,
            source=source,
        )
        for source_text, text, system, source, metadata in zip(
            simplifications["source_text"].tolist(),
            simplifications["text"].tolist(),
            simplifications["system"].tolist(),
            simplifications["source"].tolist(),
            simplifications["metadata"].tolist(),
            strict=True,
        )
    ]
    available = metric_registry.families()
    chosen = list(options.metric_families) if options.metric_families is not None else list(available)
    text_metric_names = [name for family in chosen for name in available[family].text_metrics]
    report = _family_by_family(records, chosen, options, store, "simplification")
    del records
    per_text = pd.DataFrame(
        report.texts, columns=text_metric_names, index=pd.RangeIndex(len(simplifications))
    )
    per_text.insert(0, "system", simplifications["system"].to_numpy())
    per_text.insert(0, "text_id", simplifications["text_id"].to_numpy())
    per_text.insert(0, "source", simplifications["source"].to_numpy())

    # The original is a text on its own: only families that need neither a source nor a reference.
    standalone = [
        f
        for f in chosen
        if not available[f].needs_source
        and not available[f].needs_reference
        and available[f].compute_texts is not None
    ]
    original_records = [
        metric_registry.MetricRecord(
            source_text=row.text, candidate_text=row.text, system=ORIGINAL, source=row.source
        )
        for row in frames.sources.itertuples()
    ]
    standalone_names = [name for family in standalone for name in available[family].text_metrics]
    original_report = (
        _family_by_family(original_records, standalone, options, store, "original")
        if standalone and original_records
        else None
    )
    per_original = pd.DataFrame(
        original_report.texts if original_report else {name: [] for name in standalone_names},
        columns=standalone_names,
        index=pd.RangeIndex(len(original_records) if original_report else 0),
        dtype="float64",
    )
    per_original.insert(0, "source", frames.sources["source"].to_numpy()[: len(per_original)])

    families_info = {
        name: {
            "description": available[name].description,
            "text_metrics": list(available[name].text_metrics),
            "corpus_metrics": list(available[name].corpus_metrics),
            "definitions": dict(available[name].definitions),
        }
        for name in chosen
    }
    return {
        "per_text": per_text,
        "per_original": per_original,
        "text_metrics": text_metric_names,
        "original_metrics": standalone_names,
        "corpus": report.systems,
        "unavailable": report.unavailable,
        "families": families_info,
    }


def readability_table(metrics: Mapping[str, Any], frames: StudyFrames) -> dict[str, dict[str, float | None]]:
    """Table 1 (top): mean per-text readability of the originals and of each system's texts."""
    names = list(metric_registry.get_family(READABILITY_FAMILY).text_metrics)
    table: dict[str, dict[str, float | None]] = {}
    per_original = metrics["per_original"]
    table[ORIGINAL] = {
        name: _mean(per_original[name]) if name in per_original else None for name in names
    } | {"n": len(per_original)}
    per_text = metrics["per_text"]
    for system in system_keys(frames):
        rows = per_text[per_text["system"] == system]
        table[system] = {name: _mean(rows[name]) if name in rows else None for name in names} | {
            "n": len(rows)
        }
    return table


def metrics_summary(metrics: Mapping[str, Any], frames: StudyFrames) -> dict[str, Any]:
    """The `metrics` key: every registered per-text metric averaged per system (and for the
    original), each system's corpus-level metrics, and the values per simplification."""
    per_text = metrics["per_text"]
    names = metrics["text_metrics"]
    per_system: dict[str, dict[str, float | None]] = {}
    for system in system_keys(frames):
        rows = per_text[per_text["system"] == system]
        per_system[system] = {name: _mean(rows[name]) for name in names}
        per_system[system].update(metrics["corpus"].get(system, {}))
    per_original = metrics["per_original"]
    # Column by column (the rows of a 20 000-source study are 80 000 dicts): metric values as
    # _float gives them (None where not finite), the other columns as to_dict("records").
    metric_names = set(names)
    values = [
        [None if not math.isfinite(v) else v for v in per_text[k].to_numpy(np.float64).tolist()]
        if k in metric_names
        else per_text[k].tolist()
        for k in per_text.columns
    ]
    keys = list(per_text.columns)
    records = [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)]
    return {
        "families": metrics["families"],
        "text_metrics": names,
        "original": {name: _mean(per_original[name]) for name in metrics["original_metrics"]},
        "per_system": per_system,
        "per_simplification": records,
        "unavailable": metrics["unavailable"],
    }
