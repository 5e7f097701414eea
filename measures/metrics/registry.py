"""One place that knows every automatic metric family.

A family module builds a :class:`MetricFamily` and calls :func:`register` at import
time; :data:`FAMILY_MODULES` lists those modules, so adding a metric family is one new
module plus one line here. :func:`compute_all` runs the chosen families over a batch
of :class:`MetricRecord` and returns per-text values (aligned with the records) and
per-system corpus values, with the reason for every metric it could not compute. Given a
:class:`TextMetricStore`, it computes a family's per-text values only for records whose values the
store lacks, chunk by chunk, and hands each chunk to the store as soon as it is computed.

Stored values are found again by two digests. :func:`text_configuration` names what a family's
per-text values depend on besides the texts (its name, ``version`` — bumped when its computation or
the data and libraries it uses change —, its metric names, the options it declares in
``text_options``, the embedder, which of its metrics are unavailable); :func:`record_digest` names
the texts (source, candidate, reference). A stored value is used only where both are equal to the
current ones: an edited text, a new version or other options compute afresh.

Pure computation: no Django. A selector turns simplifications into records.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

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
    "TextMetricStore",
    "compute_all",
    "families",
    "family_version",
    "get_family",
    "metric_definitions",
    "corpus_configuration",
    "corpus_inputs",
    "record_digest",
    "register",
    "text_configuration",
]

MetricValue = float | None
# encode(list of texts) -> array (n, d) of L2-normalised embeddings; ml/embeddings.py supplies one.
Embedder = Callable[[list[str]], np.ndarray]

FAMILY_MODULES: tuple[str, ...] = (
    "measures.metrics.readability",
    "measures.metrics.semantic",
    "measures.metrics.reference",
    "measures.metrics.jargon",
    "measures.metrics.diversity",
    "measures.metrics.erasure",
)


class MetricUnavailable(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
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
    # The source's key in its study: where a TextMetricStore files the record's values.
    source: str = ""

    @functools.cached_property
    def digest(self) -> str:
        """The digest of what the record's per-text values are computed from: its source,
        candidate and reference texts (exactly, case and spacing included). Computed once per
        record (an analysis asks for it once per family)."""
        # Three length-prefixed fields (a missing reference is not an empty one): no two different
        # records give the same bytes.
        fields = (self.source_text, self.candidate_text, self.reference_text)
        encoded = "".join("-\n" if text is None else f"{len(text)}\n{text}" for text in fields)
        return hashlib.blake2b(encoded.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class MetricContext:
    """What every family function receives besides the records."""

    embedder: Embedder | None = None
    reference_available: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


TextMetricsFunction = Callable[[Sequence[MetricRecord], MetricContext], list[dict[str, MetricValue]]]
# (records of one system, context, the records' per-text values) -> the system's values.
CorpusMetricsFunction = Callable[
    [Sequence[MetricRecord], MetricContext, Sequence[Mapping[str, MetricValue]]], dict[str, MetricValue]
]


def _nothing_unavailable(context: MetricContext) -> dict[str, str]:
    return {}


def _no_settings(context: MetricContext) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class MetricFamily:
    """A family of metrics computed together.

    ``compute_texts`` returns one dict per record (metric name -> value, None where
    undefined), each computed from that record's source, candidate and reference texts and the
    options named in ``text_options`` alone (so that it can be stored and found again by them).
    ``compute_corpus`` returns one dict for all records of one system from the records (texts
    and source metadata), their per-text values (so it need not compute them again) and the
    options named in ``corpus_options``. ``version`` changes whenever the
    per-text values would (new code, data or library): stored values of another version are not
    used.
    ``unavailable`` names metrics this environment or context cannot compute, with the
    reason (e.g. METEOR without WordNet data); those values are always None.
    ``needs_reference`` families only see records that have a reference text.
    ``definitions`` gives each metric a sentence for a report's Methods section (every declared
    metric has one); ``settings`` names the choices a context made (a threshold, a test rule)
    so they are reported with the values.
    """

    name: str
    description: str
    version: str = "1"
    text_options: tuple[str, ...] = ()
    corpus_options: tuple[str, ...] = ()
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


def _systems_in_order(records: Sequence[MetricRecord]) -> dict[str, list[int]]:
    """{system: the indices of its records}, systems in order of first appearance."""
    grouped: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        grouped.setdefault(record.system, []).append(i)
    return grouped


class TextMetricStore(Protocol):
    """Metric values kept between analyses (evaluation.services.TextMetricsStore keeps a study's in
    the database): per-text values filed by kind (what compute_all was given: the
    "simplification"s of a study, or its "original"s), family, configuration and record digest;
    each system's corpus values filed by family and configuration, with the digest of the inputs
    they were computed from."""

    def load(self, kind: str, family: str, configuration: str) -> Mapping[str, Mapping[str, MetricValue]]:
        """{record digest: values} of everything of that kind stored under this configuration."""
        ...

    def save(
        self,
        kind: str,
        family: str,
        configuration: str,
        rows: Sequence[tuple[MetricRecord, str, Mapping[str, MetricValue]]],
    ) -> None:
        """Keep (record, its digest, its values) rows: all of them or, on an error, none."""
        ...

    def discard(self, kind: str, family: str, configuration: str, digests: Collection[str]) -> None:
        """Forget values of records of that kind no longer analysed (an edited or deleted text)."""
        ...

    def load_corpus(
        self, family: str, configuration: str
    ) -> Mapping[str, tuple[str, Mapping[str, MetricValue]]]:
        """{system: (its inputs digest, its values)} stored under this family and configuration."""
        ...

    def save_corpus(
        self, family: str, configuration: str, system: str, inputs: str, values: Mapping[str, MetricValue]
    ) -> None:
        """Keep a system's corpus values (replacing what it kept for that system and configuration)."""
        ...


# Per-text values computed and handed to the store at a time: the memory of one chunk is all a
# computation of a large study holds beyond its results.
TEXT_CHUNK = 4000
_PLAIN = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    return isinstance(value, _PLAIN)


def family_version(code: str, *, libraries: Iterable[str] = (), data: Iterable[Path] = ()) -> str:
    """A family's ``version``: its own code version (bump it when the computation changes), the
    installed versions of the `libraries` (distribution names) it computes with, and a digest of
    the `data` files it reads (a glossary, a word list), so that new data or a new library is a
    new version without anyone remembering to bump it."""
    parts = [code]
    parts += [f"{name} {importlib.metadata.version(name)}" for name in libraries]
    files = sorted(Path(path) for path in data)
    if files:
        digest = hashlib.blake2b(digest_size=8)
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        parts.append(f"data {digest.hexdigest()}")
    return "; ".join(parts)


def _digest(parts: Sequence[Any]) -> str:
    return hashlib.blake2b(json.dumps(parts, ensure_ascii=False).encode(), digest_size=16).hexdigest()


def record_digest(record: MetricRecord) -> str:
    """The digest of what a record's per-text values are computed from (MetricRecord.digest)."""
    return record.digest


def _configuration(
    family: MetricFamily,
    context: MetricContext,
    level: str,
    names: Sequence[str],
    option_names: Sequence[str],
) -> str | None:
    options = {name: context.option(name) for name in option_names}
    if not all(_plain(value) for value in options.values()):
        return None
    embedder = ""
    # Per text only the families that need embeddings read the embedder; a corpus metric may use
    # one whenever it is given (semantic diversity).
    if context.embedder is not None and (family.needs_embeddings or level == "corpus"):
        model_id = getattr(context.embedder, "model_id", None)
        if not isinstance(model_id, str) or not model_id:
            return None
        embedder = model_id
    return _digest(
        [
            level,
            family.name,
            family.version,
            list(names),
            sorted(options.items()),
            embedder,
            sorted(family.unavailable(context)),
        ]
    )


def text_configuration(family: MetricFamily, context: MetricContext) -> str | None:
    """The digest of what `family`'s per-text values depend on besides the texts, or None when
    that cannot be named (an option that is not plain data, such as a glossary object, or an
    embedder without a ``model_id``): such values are computed and never stored."""
    return _configuration(family, context, "text", family.text_metrics, family.text_options)


def corpus_configuration(family: MetricFamily, context: MetricContext) -> str | None:
    """As text_configuration, for `family`'s corpus values (its ``corpus_options``)."""
    return _configuration(family, context, "corpus", family.corpus_metrics, family.corpus_options)


def corpus_inputs(
    records: Sequence[MetricRecord], digests: Sequence[str], text_configuration: str | None
) -> str:
    """The digest of what one system's corpus values are computed from: its records in order
    (their digests and their sources' metadata) and the configuration of the per-text values
    the corpus function receives."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{text_configuration}\n".encode())
    metadata: dict[int, bytes] = {}
    for record, record_digest_ in zip(records, digests, strict=True):
        # A source's records share one metadata mapping: encoded once.
        encoded = metadata.get(id(record.source_metadata))
        if encoded is None:
            encoded = (
                json.dumps(record.source_metadata, sort_keys=True, default=str).encode()
                if record.source_metadata
                else b"{}"
            )
            metadata[id(record.source_metadata)] = encoded
        digest.update(record_digest_.encode() + b"\n" + encoded + b"\n")
    return digest.hexdigest()


def _texts_of_family(
    family: MetricFamily,
    records: Sequence[MetricRecord],
    indices: Sequence[int],
    context: MetricContext,
    store: TextMetricStore | None,
    kind: str,
    all_digests: Sequence[str],
) -> tuple[dict[int, Mapping[str, MetricValue]], str | None]:
    """{record index: the family's values} for `indices`, from the store where it has them, and
    the reason the family could not compute (MetricUnavailable), if any. Computed values are
    handed to the store chunk by chunk; a record digest shared by several records (a text several
    systems produced) is computed once."""
    compute_texts = family.compute_texts
    assert compute_texts is not None, f"{family.name} has no per-text metrics"
    configuration = text_configuration(family, context) if store is not None else None
    if configuration is None:
        try:
            computed = compute_texts([records[i] for i in indices], context) if indices else []
        except MetricUnavailable as exc:
            return {}, str(exc)
        if len(computed) != len(indices):
            raise ValueError(f"{family.name} returned {len(computed)} rows for {len(indices)} records")
        return {i: _checked_row(family, row) for i, row in zip(indices, computed, strict=True)}, None

    assert store is not None
    stored = store.load(kind, family.name, configuration)
    digests = [all_digests[i] for i in indices]
    names = family.text_metrics
    values: dict[int, Mapping[str, MetricValue]] = {}
    first_of: dict[str, int] = {}
    for i, digest in zip(indices, digests, strict=True):
        found = stored.get(digest)
        if found is not None:
            # The store's own dict when it holds exactly the family's metrics (it always does for
            # what compute_all stored): shared, never changed.
            values[i] = found if len(found) == len(names) else {name: found.get(name) for name in names}
        else:
            first_of.setdefault(digest, i)
    stale = set(stored).difference(digests)
    del stored
    missing = list(first_of.items())
    for start in range(0, len(missing), TEXT_CHUNK):
        chunk = missing[start : start + TEXT_CHUNK]
        try:
            computed = compute_texts([records[i] for _, i in chunk], context)
        except MetricUnavailable as exc:
            return values, str(exc)
        if len(computed) != len(chunk):
            raise ValueError(f"{family.name} returned {len(computed)} rows for {len(chunk)} records")
        rows = [
            (records[i], digest, _checked_row(family, row))
            for (digest, i), row in zip(chunk, computed, strict=True)
        ]
        store.save(kind, family.name, configuration, rows)
        for _, digest, row in rows:
            values[first_of[digest]] = row
    for i, digest in zip(indices, digests, strict=True):
        if i not in values:
            values[i] = values[first_of[digest]]
    if stale:
        store.discard(kind, family.name, configuration, stale)
    return values, None


def compute_all(
    records: Sequence[MetricRecord],
    *,
    families: Iterable[str] | None = None,
    embedder: Embedder | None = None,
    reference_available: bool | None = None,
    options: Mapping[str, Any] | None = None,
    store: TextMetricStore | None = None,
    kind: str = "simplification",
) -> MetricReport:
    """Compute the chosen families (all by default) for ``records``.

    ``reference_available`` defaults to "some record has a reference text"; passing
    False skips reference-based families. ``options`` are family settings
    (``semantic_theta``, ``semantic_pool``, ``find_terms``, ``erasure_group_key``, ...;
    each family module documents its own). With a ``store``, per-text values it holds are
    read from it and those it lacks are computed and given to it (see the module docstring),
    filed under ``kind``: the records of one call are all the texts of that kind the store
    keeps, and it forgets the others.
    """
    records = list(records)
    if reference_available is None:
        reference_available = any(record.reference_text for record in records)
    context = MetricContext(embedder=embedder, reference_available=reference_available, options=options or {})
    registry = _all_families()
    chosen = [get_family(name) for name in families] if families is not None else list(registry.values())

    by_system = _systems_in_order(records)
    run = _Computation(
        records=records,
        context=context,
        store=store,
        kind=kind,
        digests=[record_digest(record) for record in records] if store is not None else [],
        by_system=by_system,
        texts=[{} for _ in records],
        systems={key: {} for key in by_system},
    )
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
        run.unavailable.update(reasons)
        if family.compute_texts is not None:
            _texts_filled(run, family, blocker=blocker, reasons=reasons)
        if family.compute_corpus is not None:
            _systems_filled(run, family, family.compute_corpus, blocker=blocker, reasons=reasons)
        _undefined_marked(run, family)

    texts, systems, unavailable = run.texts, run.systems, run.unavailable
    return MetricReport(texts=texts, systems=systems, unavailable=unavailable, settings=settings)


@dataclass
class _Computation:
    """compute_all's inputs and what it has filled in so far, family after family."""

    records: list[MetricRecord]
    context: MetricContext
    store: TextMetricStore | None
    kind: str
    digests: list[str]
    by_system: dict[str, list[int]]
    texts: list[dict[str, MetricValue]]
    systems: dict[str, dict[str, MetricValue]]
    unavailable: dict[str, str] = field(default_factory=dict)


def _texts_filled(
    run: _Computation, family: MetricFamily, *, blocker: str | None, reasons: Mapping[str, str]
) -> None:
    """Every record gets each of the family's per-text metrics, None unless computed; the values go
    straight into `run.texts` (no second list of a dict per record: 80 000 texts at 20 000
    sources)."""
    for text in run.texts:
        text.update(dict.fromkeys(family.text_metrics))
    if blocker:
        return
    indices = [
        i for i, record in enumerate(run.records) if not family.needs_reference or record.reference_text
    ]
    computed, failure = _texts_of_family(
        family, run.records, indices, run.context, run.store, run.kind, run.digests
    )
    if failure is not None:
        run.unavailable.update(dict.fromkeys(family.text_metrics, failure))
        computed = {}
    kept = [name for name in family.text_metrics if name not in reasons]
    for i, row in computed.items():
        run.texts[i].update((name, row[name]) for name in kept)


def _systems_filled(
    run: _Computation,
    family: MetricFamily,
    compute_corpus: CorpusMetricsFunction,
    *,
    blocker: str | None,
    reasons: Mapping[str, str],
) -> None:
    """The family's corpus metrics of every system into `run.systems`, stored per system for the
    simplifications (the originals' corpus values are not kept: a "system" that is no System of
    the study)."""
    configuration = texts_configuration = None
    if run.store is not None and run.kind == "simplification" and not blocker:
        configuration = corpus_configuration(family, run.context)
        if family.compute_texts is not None:
            # The corpus function reads the per-text values: unnamed, nothing is stored.
            texts_configuration = text_configuration(family, run.context)
            configuration = configuration if texts_configuration else None
    stored_corpus = (
        run.store.load_corpus(family.name, configuration) if run.store is not None and configuration else {}
    )
    for system, system_indices in run.by_system.items():
        values: dict[str, MetricValue] = dict.fromkeys(family.corpus_metrics)
        if not blocker:
            values = _system_values(
                run,
                family,
                compute_corpus,
                system=system,
                indices=system_indices,
                configuration=configuration,
                texts_configuration=texts_configuration,
                found=stored_corpus.get(system),
            )
        for name in family.corpus_metrics:
            run.systems[system][name] = None if name in reasons else values[name]


def _system_values(
    run: _Computation,
    family: MetricFamily,
    compute_corpus: CorpusMetricsFunction,
    *,
    system: str,
    indices: Sequence[int],
    configuration: str | None,
    texts_configuration: str | None,
    found: tuple[str, Mapping[str, MetricValue]] | None,
) -> dict[str, MetricValue]:
    """One system's corpus values: the stored ones when their inputs are unchanged, else computed
    (and handed to the store under `configuration`, when there is one)."""
    system_records = [run.records[i] for i in indices]
    inputs = None
    if configuration:
        inputs = corpus_inputs(system_records, [run.digests[i] for i in indices], texts_configuration)
    if found is not None and found[0] == inputs:
        return {name: found[1].get(name) for name in family.corpus_metrics}
    try:
        result = compute_corpus(system_records, run.context, [run.texts[i] for i in indices])
    except MetricUnavailable as exc:
        run.unavailable.update(dict.fromkeys(family.corpus_metrics, str(exc)))
        result = {}
        inputs = None  # not stored: the reason is reported again next time
    unknown = set(result) - set(family.corpus_metrics)
    if unknown:
        raise ValueError(f"{family.name} returned undeclared metrics {sorted(unknown)}")
    values = {name: _as_value(result.get(name)) for name in family.corpus_metrics}
    if inputs is not None:
        assert run.store is not None and configuration is not None
        run.store.save_corpus(family.name, configuration, system, inputs, values)
    return values


def _undefined_marked(run: _Computation, family: MetricFamily) -> None:
    """A metric the family declares possibly undefined is reported unavailable, with the family's
    reason, when it came out None everywhere."""
    for name, why in family.undefined.items():
        if name in run.unavailable:
            continue
        if name in family.text_metrics:
            values_of_name = [row[name] for row in run.texts]
        else:
            values_of_name = [per_system[name] for per_system in run.systems.values()]
        if all(value is None for value in values_of_name):
            run.unavailable[name] = why


# compute_all's ``families`` argument shadows the module-level function inside it.
_all_families = families
