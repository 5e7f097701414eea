import pytest

from measures.metrics import registry
from measures.metrics.registry import (
    FAMILY_MODULES,
    MetricFamily,
    MetricRecord,
    MetricUnavailable,
    compute_all,
    families,
    get_family,
    register,
)

RECORDS = [
    MetricRecord(
        source_text="Cardiomegaly.",
        candidate_text="The heart is big.",
        reference_text="Big heart.",
        system="a",
    ),
    MetricRecord(source_text="No effusion.", candidate_text="No fluid.", system="b"),
]


def test_every_family_module_registers_itself():
    registered = families()
    assert set(registered) == {"readability", "semantic", "reference", "jargon", "diversity", "erasure"}
    assert len(FAMILY_MODULES) == len(registered)
    for family in registered.values():
        assert family.text_metrics or family.corpus_metrics
    assert get_family("reference").needs_reference and get_family("semantic").needs_embeddings
    with pytest.raises(KeyError):
        get_family("nope")


def test_metric_names_are_unique_across_families():
    names = [
        name for family in families().values() for name in (*family.text_metrics, *family.corpus_metrics)
    ]
    assert len(names) == len(set(names))


def test_register_refuses_a_second_family_with_the_same_name():
    with pytest.raises(ValueError):
        register(
            MetricFamily(name="readability", description="dup", corpus_metrics=("x",), compute_corpus=len)
        )


def test_family_declaration_is_checked():
    with pytest.raises(ValueError):
        MetricFamily(name="broken", description="names without a function", text_metrics=("x",))
    with pytest.raises(ValueError, match="no definition"):
        MetricFamily(
            name="undefined", description="no definitions", corpus_metrics=("x",), compute_corpus=len
        )


def test_every_registered_metric_has_a_definition_for_the_methods_section():
    definitions = registry.metric_definitions()
    for family in families().values():
        for metric in (*family.text_metrics, *family.corpus_metrics):
            assert len(definitions[metric]) > 20, metric
    assert "EASSE" in definitions["corpus_sari"] and "Xu" in definitions["sentence_sari"]
    assert "per item" in definitions["ascore_item"] and "per system" in definitions["ascore"].lower()


def test_compute_all_aligns_rows_and_groups_systems():
    report = compute_all(RECORDS, families=["readability", "reference", "diversity"])
    assert len(report.texts) == 2
    assert set(report.texts[0]) == {
        *get_family("readability").text_metrics,
        *get_family("reference").text_metrics,
    }
    assert report.texts[0]["bleu"] is not None and report.texts[1]["bleu"] is None
    assert list(report.systems) == ["a", "b"]
    assert report.systems["a"]["template_diversity"] == 1.0
    assert report.systems["b"]["corpus_bleu"] is None  # system b has no reference


def test_a_new_family_is_one_registration(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(families()))

    def lengths(records, context):
        return [
            {"length": len(record.candidate_text), "scaled": context.option("scale", 1) * 2}
            for record in records
        ]

    def unavailable(records, context, texts):
        raise MetricUnavailable("no data for corpus_length here")

    register(
        MetricFamily(
            name="length",
            description="test family",
            text_metrics=("length", "scaled"),
            compute_texts=lengths,
            corpus_metrics=("corpus_length",),
            compute_corpus=unavailable,
            definitions={"length": "characters", "scaled": "twice the scale", "corpus_length": "sum"},
            settings=lambda context: {"scale": context.option("scale", 1)},
        )
    )
    report = compute_all(RECORDS, families=["length"], options={"scale": 3})
    assert [row["length"] for row in report.texts] == [17.0, 9.0]
    assert report.texts[0]["scaled"] == 6.0
    assert report.systems == {"a": {"corpus_length": None}, "b": {"corpus_length": None}}
    assert report.unavailable == {"corpus_length": "no data for corpus_length here"}
    assert report.settings == {"length": {"scale": 3}}
    assert registry.metric_definitions(["length"])["scaled"] == "twice the scale"


def test_undeclared_metric_names_are_an_error(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(families()))
    register(
        MetricFamily(
            name="sloppy",
            description="returns a name it did not declare",
            text_metrics=("a",),
            compute_texts=lambda records, context: [{"b": 1.0} for _ in records],
            definitions={"a": "a"},
        )
    )
    with pytest.raises(ValueError):
        compute_all(RECORDS, families=["sloppy"])


def test_nan_becomes_none(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(families()))
    register(
        MetricFamily(
            name="nan",
            description="nan",
            text_metrics=("a",),
            compute_texts=lambda records, context: [{"a": float("nan")} for _ in records],
            definitions={"a": "a"},
        )
    )
    assert compute_all(RECORDS, families=["nan"]).texts == [{"a": None}, {"a": None}]
