"""compute_all with a TextMetricStore: stored values are read instead of computed, and computed
again exactly when the texts, the options or the family's version change."""

import contextlib
import dataclasses
import hashlib
import math

import numpy as np
import pytest

from measures.metrics import registry
from measures.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    compute_all,
    families,
    record_digest,
    register,
    text_configuration,
)


class MemoryStore:
    """What services.TextMetricsStore does, in dicts."""

    def __init__(self):
        self.texts = {}
        self.corpus = {}
        self.saves = []
        self.discarded = []

    def load(self, kind, family, configuration):
        return {d: dict(v) for (k, c, d), v in self.texts.items() if (k, c) == (kind, configuration)}

    def save(self, kind, family, configuration, rows):
        self.saves.append(len(rows))
        for _record, digest, values in rows:
            self.texts[(kind, configuration, digest)] = dict(values)

    def discard(self, kind, family, configuration, digests):
        self.discarded.extend(digests)
        for digest in digests:
            del self.texts[(kind, configuration, digest)]

    def load_corpus(self, family, configuration):
        return {system: value for (c, system), value in self.corpus.items() if c == configuration}

    def save_corpus(self, family, configuration, system, inputs, values):
        self.corpus[(configuration, system)] = (inputs, dict(values))


def records(*candidates, system="a"):
    return [
        MetricRecord(source_text=f"Source {i}.", candidate_text=text, system=system, source=f"s{i}")
        for i, text in enumerate(candidates)
    ]


@pytest.fixture
def counted(monkeypatch):
    """A registered family "length" that counts the records it computes; returns the list of
    computed candidate texts and the corpus calls."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(families()))
    calls = {"texts": [], "corpus": 0}

    def lengths(batch, context):
        calls["texts"].extend(record.candidate_text for record in batch)
        return [{"length": len(r.candidate_text) * context.option("scale", 1)} for r in batch]

    def total(batch, context, texts):
        calls["corpus"] += 1
        return {"total": sum(text["length"] for text in texts)}

    register(
        MetricFamily(
            name="length",
            description="test family",
            text_options=("scale",),
            text_metrics=("length",),
            compute_texts=lengths,
            corpus_metrics=("total",),
            compute_corpus=total,
            definitions={"length": "characters", "total": "sum of lengths"},
        )
    )
    return calls


def test_stored_values_are_read_instead_of_computed(counted):
    store = MemoryStore()
    # Two systems' records of one text of one source: computed once.
    batch = [*records("one", "three"), dataclasses.replace(records("one", "three")[1], system="b")]
    first = compute_all(batch, families=["length"], store=store)
    assert counted["texts"] == ["one", "three"]
    assert [row["length"] for row in first.texts] == [3.0, 5.0, 5.0]
    assert first.systems == {"a": {"total": 8.0}, "b": {"total": 5.0}}

    counted["texts"].clear()
    counted["corpus"] = 0
    again = compute_all(batch, families=["length"], store=store)
    assert counted["texts"] == [] and counted["corpus"] == 0
    assert again.texts == first.texts and again.systems == first.systems

    # What is read is what the store holds (not a recomputation that happens to agree).
    digest = record_digest(batch[0])
    configuration = text_configuration(registry.get_family("length"), MetricContext())
    store.texts[("simplification", configuration, digest)] = {"length": 42.0}
    assert compute_all(batch, families=["length"], store=store).texts[0]["length"] == 42.0


def test_an_edited_text_is_computed_again_and_its_old_values_forgotten(counted):
    store = MemoryStore()
    compute_all(records("one", "two"), families=["length"], store=store)
    old = record_digest(records("one", "two")[1])
    counted["texts"].clear()
    counted["corpus"] = 0
    edited = compute_all(records("one", "four!"), families=["length"], store=store)
    assert counted["texts"] == ["four!"]
    assert [row["length"] for row in edited.texts] == [3.0, 5.0]
    assert store.discarded == [old]
    # The system's corpus value was computed from other texts: computed again.
    assert counted["corpus"] == 1 and edited.systems["a"]["total"] == 8.0


def test_a_changed_reference_or_source_is_another_record():
    record = records("same")[0]
    assert record_digest(record) != record_digest(dataclasses.replace(record, reference_text=""))
    assert record_digest(dataclasses.replace(record, reference_text="")) != record_digest(
        dataclasses.replace(record, reference_text="x")
    )
    assert record_digest(record) != record_digest(dataclasses.replace(record, source_text="Source 1"))
    # Field boundaries count: moving text from one field to the next is another record.
    a = MetricRecord(source_text="ab", candidate_text="c")
    b = MetricRecord(source_text="a", candidate_text="bc")
    assert record_digest(a) != record_digest(b)
    # The system and the source key do not change the values: they are not part of the digest.
    assert record_digest(record) == record_digest(dataclasses.replace(record, system="b", source="s9"))


def test_a_declared_option_or_a_new_version_computes_everything_again(counted):
    store = MemoryStore()
    batch = records("one", "two")
    compute_all(batch, families=["length"], store=store)
    counted["texts"].clear()
    scaled = compute_all(batch, families=["length"], store=store, options={"scale": 2})
    assert sorted(counted["texts"]) == ["one", "two"]
    assert [row["length"] for row in scaled.texts] == [6.0, 6.0]

    counted["texts"].clear()
    registry._REGISTRY["length"] = dataclasses.replace(registry._REGISTRY["length"], version="2")
    compute_all(batch, families=["length"], store=store)
    assert sorted(counted["texts"]) == ["one", "two"]


def test_an_option_that_is_not_plain_data_is_computed_and_never_stored(counted):
    store = MemoryStore()
    batch = records("one")
    compute_all(batch, families=["length"], store=store, options={"scale": _Scale()})
    compute_all(batch, families=["length"], store=store, options={"scale": _Scale()})
    # Nor the corpus values computed from such per-text values.
    assert store.texts == {} and store.corpus == {}
    assert counted["texts"] == ["one", "one"]


class _Scale:
    """An option object (like a glossary): no content digest."""

    def __rmul__(self, other):
        return other * 2


def test_values_are_stored_chunk_by_chunk_and_a_failure_keeps_the_chunks_before(counted, monkeypatch):
    monkeypatch.setattr(registry, "TEXT_CHUNK", 2)
    store = MemoryStore()
    family = registry._REGISTRY["length"]

    def failing(batch, context):
        if any(record.candidate_text == "boom" for record in batch):
            raise RuntimeError("worker died")
        return family.compute_texts(batch, context)

    registry._REGISTRY["length"] = dataclasses.replace(family, compute_texts=failing)
    with pytest.raises(RuntimeError):
        compute_all(records("a", "bb", "ccc", "dddd", "boom"), families=["length"], store=store)
    assert store.saves == [2, 2]
    registry._REGISTRY["length"] = family
    counted["texts"].clear()
    compute_all(records("a", "bb", "ccc", "dddd", "eeeee"), families=["length"], store=store)
    assert counted["texts"] == ["eeeee"]


def _fake_embedder(texts):
    vectors = np.array(
        [np.frombuffer(hashlib.sha256(text.encode()).digest(), dtype=np.uint8)[:8] for text in texts],
        dtype=np.float64,
    )
    vectors += 1.0
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


_fake_embedder.model_id = "fake@1"


class _Recording(dict):
    def __init__(self):
        super().__init__()
        self.read = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


SAMPLE = [
    MetricRecord(
        source_text="Mild cardiomegaly. No pleural effusion.",
        candidate_text="The heart is a bit big. There is no fluid around the lungs.",
        reference_text="Your heart is slightly enlarged. No fluid.",
        source_metadata={"sex": "F"},
        system=system,
        source=f"s{i}",
    )
    for i, system in enumerate(["a", "a", "b", "b"])
]


def test_every_family_reads_only_the_options_it_declares():
    """The options a family's functions read are part of its stored values' configuration: one it
    reads without declaring would let values of other options be used."""
    for family in families().values():
        context_options = _Recording()
        context = MetricContext(embedder=_fake_embedder, reference_available=True, options=context_options)
        if family.compute_texts is not None:
            family.compute_texts(SAMPLE, context)
            assert context_options.read <= set(family.text_options), family.name
        context_options.read.clear()
        if family.compute_corpus is not None:
            texts = family.compute_texts(SAMPLE, context) if family.compute_texts else [{} for _ in SAMPLE]
            context_options.read.clear()
            with contextlib.suppress(registry.MetricUnavailable):
                family.compute_corpus(SAMPLE, context, texts)
            assert context_options.read <= set(family.corpus_options), family.name


def test_every_registered_family_gives_the_same_values_stored_and_read_back():
    store = MemoryStore()
    fresh = compute_all(SAMPLE, embedder=_fake_embedder)
    first = compute_all(SAMPLE, embedder=_fake_embedder, store=store)
    again = compute_all(SAMPLE, embedder=_fake_embedder, store=store)

    def same(a, b):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))

    for report in (first, again):
        assert report.unavailable == fresh.unavailable
        for row, expected in zip(report.texts, fresh.texts, strict=True):
            assert row.keys() == expected.keys()
            assert all(same(row[k], expected[k]) for k in row)
        assert report.systems == fresh.systems
    assert store.texts and store.corpus
