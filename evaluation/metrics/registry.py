"""One place that knows every automatic metric family.

A family module builds a :class:`MetricFamily` and calls :func:`register` at import
time; :data:`FAMILY_MODULES` lists those modules, so adding a metric family is one new
module plus one line here. :func:`compute_all` runs the chosen families over a batch
of :class:`MetricRecord` and returns per-text values (aligned with the records) and
per-system corpus values, with the reason for every metric it could not compute.

Pure computation: no Django. A selector turns simplifications into records.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "FAMILY_MODULES",
    "Embedder",
    "MetricContext",
    "MetricFamily",
    "MetricRecord",
    "MetricReport",
    "MetricUnavailable",
    "MetricValue",
    "compute_all",
    "families",
    "get_family",
    "metric_definitions",
    "register",
]

MetricValue = float | None
# encode(list of texts) -> array (n, d) of L2-normalised embeddings; ml/embeddings.py supplies one.
Embedder = Callable[[list[str]], np.ndarray]

FAMILY_MODULES: tuple[str, ...] = (
    "evaluation.metrics.readability",
    "evaluation.metrics.semantic",
    "evaluation.metrics.reference",
    "evaluation.metrics.jargon",
    "evaluation.metrics.diversity",
    "evaluation.metrics.erasure",
)


class MetricUnavailable(Exception):
    """Raised by a family's function when it cannot compute its metrics here (missing data,
    model or input); compute_all reports the reason and leaves the values None."""


@dataclass(frozen=True)
class MetricRecord:
    """One simplification to score: the source it simplifies, the text shown, and an
    optional human reference simplification. ``system`` groups records for corpus-level
    metrics; ``source_metadata`` carries e.g. the group attribute CAD/WAE need."""

    source_text: str
    candidate_text: str
    reference_text: str | None = None
    source_metadata: Mapping[str, Any] = field(default_factory=dict)
    system: str = ""


@dataclass(frozen=True)
class MetricContext:
    """What every family function receives besides the records."""

    embedder: Embedder | None = None
    reference_available: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


TextMetricsFunction = Callable[[Sequence[MetricRecord], MetricContext], list[dict[str, MetricValue]]]
CorpusMetricsFunction = Callable[[Sequence[MetricRecord], MetricContext], dict[str, MetricValue]]


def _nothing_unavailable(context: MetricContext) -> dict[str, str]:
    return {}


def _no_settings(context: MetricContext) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class MetricFamily:
    """A family of metrics computed together.

    ``compute_texts`` returns one dict per record (metric name -> value, None where
    undefined). ``compute_corpus`` returns one dict for all records of one system.
    ``unavailable`` names metrics this environment or context cannot compute, with the
    reason (e.g. METEOR without WordNet data); those values are always None.
    ``needs_reference`` families only see records that have a reference text.
    ``definitions`` gives each metric a sentence for a report's Methods section (every declared
    metric has one); ``settings`` names the choices a context made (a threshold, a test rule)
    so they are reported with the values.
    """

    name: str
    description: str
    text_metrics: tuple[str, ...] = ()
    compute_texts: TextMetricsFunction | None = None
    corpus_metrics: tuple[str, ...] = ()
    compute_corpus: CorpusMetricsFunction | None = None
    needs_reference: bool = False
    needs_source: bool = False
    needs_embeddings: bool = False
    unavailable: Callable[[MetricContext], dict[str, str]] = _nothing_unavailable
    definitions: Mapping[str, str] = field(default_factory=dict)
    settings: Callable[[MetricContext], dict[str, Any]] = _no_settings
    # Why a metric is None where it does not apply (SMOG below three sentences, AScore without a
    # reference): the reason compute_all reports when the metric came out None everywhere.
    undefined: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        undefined = set(self.text_metrics) | set(self.corpus_metrics)
        undefined -= {name for name, text in self.definitions.items() if text.strip()}
        if undefined:
            raise ValueError(f"{self.name}: no definition for {sorted(undefined)}")
        if bool(self.text_metrics) != (self.compute_texts is not None):
            raise ValueError(f"{self.name}: text_metrics and compute_texts go together")
        if bool(self.corpus_metrics) != (self.compute_corpus is not None):
            raise ValueError(f"{self.name}: corpus_metrics and compute_corpus go together")


@dataclass
class MetricReport:
    """``texts[i]`` holds record i's per-text metrics; ``systems[key]`` the corpus-level
    metrics of that system; ``unavailable`` maps a metric name to why it is None; ``settings``
    maps a family name to the choices its values were computed with (e.g. the semantic
    threshold and the CAD rule)."""

    texts: list[dict[str, MetricValue]]
    systems: dict[str, dict[str, MetricValue]]
    unavailable: dict[str, str]
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)


_REGISTRY: dict[str, MetricFamily] = {}
_LOADED = False


def register(family: MetricFamily) -> MetricFamily:
    """Add ``family`` to the registry (idempotent for the same object)."""
    existing = _REGISTRY.get(family.name)
    if existing is not None and existing is not family:
        raise ValueError(f"a metric family named {family.name!r} is already registered")
    _REGISTRY[family.name] = family
    return family


def families() -> dict[str, MetricFamily]:
    """All registered families, importing the modules in FAMILY_MODULES first."""
    global _LOADED
    if not _LOADED:
        for module in FAMILY_MODULES:
            importlib.import_module(module)
        _LOADED = True
    return dict(_REGISTRY)


def metric_definitions(names: Iterable[str] | None = None) -> dict[str, str]:
    """Metric name -> its definition, for every registered metric (or the given families)."""
    registry = families()
    chosen = list(names) if names is not None else list(registry)
    return {metric: text for name in chosen for metric, text in get_family(name).definitions.items()}


def get_family(name: str) -> MetricFamily:
    try:
        return families()[name]
    except KeyError:
        raise KeyError(f"unknown metric family {name!r}; known: {sorted(families())}") from None


def _checked_row(family: MetricFamily, row: Mapping[str, MetricValue]) -> dict[str, MetricValue]:
    unknown = set(row) - set(family.text_metrics)
    if unknown:
        raise ValueError(f"{family.name} returned undeclared metrics {sorted(unknown)}")
    return {name: _as_value(row.get(name)) for name in family.text_metrics}


def _as_value(value: Any) -> MetricValue:
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) else value


def _family_blockers(family: MetricFamily, context: MetricContext) -> str | None:
    if family.needs_embeddings and context.embedder is None:
        return f"{family.name} needs an embedder (pass embedder=...)"
    if family.needs_reference and not context.reference_available:
        return f"{family.name} needs reference texts and none are available"
    return None


def _systems_in_order(records: Sequence[MetricRecord]) -> dict[str, list[MetricRecord]]:
    grouped: dict[str, list[MetricRecord]] = {}
    for record in records:
        grouped.setdefault(record.system, []).append(record)
    return grouped


def compute_all(
    records: Sequence[MetricRecord],
    *,
    families: Iterable[str] | None = None,
    embedder: Embedder | None = None,
    reference_available: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> MetricReport:
    """Compute the chosen families (all by default) for ``records``.

    ``reference_available`` defaults to "some record has a reference text"; passing
    False skips reference-based families. ``options`` are family settings
    (``semantic_theta``, ``semantic_pool``, ``find_terms``, ``erasure_group_key``, ...;
    each family module documents its own).
    """
    records = list(records)
    if reference_available is None:
        reference_available = any(record.reference_text for record in records)
    context = MetricContext(embedder=embedder, reference_available=reference_available, options=options or {})
    registry = _all_families()
    chosen = [get_family(name) for name in families] if families is not None else list(registry.values())

    texts: list[dict[str, MetricValue]] = [{} for _ in records]
    systems: dict[str, dict[str, MetricValue]] = {key: {} for key in _systems_in_order(records)}
    unavailable: dict[str, str] = {}
    settings: dict[str, dict[str, Any]] = {}

    for family in chosen:
        blocker = _family_blockers(family, context)
        if not blocker:
            family_settings = family.settings(context)
            if family_settings:
                settings[family.name] = dict(family_settings)
        reasons = {} if blocker else dict(family.unavailable(context))
        if blocker:
            reasons = {name: blocker for name in (*family.text_metrics, *family.corpus_metrics)}
        unavailable.update(reasons)

        if family.compute_texts is not None:
            # Every record gets each of the family's metrics, None unless computed; the values go
            # straight into `texts` (no second list of a dict per record: 80 000 texts at 20 000
            # sources).
            for text in texts:
                text.update(dict.fromkeys(family.text_metrics))
            if not blocker:
                indices = [
                    i
                    for i, record in enumerate(records)
                    if not family.needs_reference or record.reference_text
                ]
                try:
                    computed = family.compute_texts([records[i] for i in indices], context) if indices else []
                except MetricUnavailable as exc:
                    unavailable.update(dict.fromkeys(family.text_metrics, str(exc)))
                    computed = [{} for _ in indices]
                if len(computed) != len(indices):
                    raise ValueError(
                        f"{family.name} returned {len(computed)} rows for {len(indices)} records"
                    )
                kept = [name for name in family.text_metrics if name not in reasons]
                for i, row in zip(indices, computed, strict=True):
                    checked = _checked_row(family, row)
                    texts[i].update((name, checked[name]) for name in kept)
                del computed

        if family.compute_corpus is not None:
            for system, system_records in _systems_in_order(records).items():
                values: dict[str, MetricValue] = dict.fromkeys(family.corpus_metrics)
                if not blocker:
                    try:
                        result = family.compute_corpus(system_records, context)
                    except MetricUnavailable as exc:
                        unavailable.update(dict.fromkeys(family.corpus_metrics, str(exc)))
                        result = {}
                    unknown = set(result) - set(family.corpus_metrics)
                    if unknown:
                        raise ValueError(f"{family.name} returned undeclared metrics {sorted(unknown)}")
                    values = {name: _as_value(result.get(name)) for name in family.corpus_metrics}
                for name in family.corpus_metrics:
                    systems[system][name] = None if name in reasons else values[name]

        for name, why in family.undefined.items():
            if name in unavailable:
                continue
            if name in family.text_metrics:
                values_of_name = [row[name] for row in texts]
            else:
                values_of_name = [per_system[name] for per_system in systems.values()]
            if all(value is None for value in values_of_name):
                unavailable[name] = why

    return MetricReport(texts=texts, systems=systems, unavailable=unavailable, settings=settings)


# compute_all's ``families`` argument shadows the module-level function inside it.
_all_families = families
