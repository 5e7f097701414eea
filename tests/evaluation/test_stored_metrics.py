"""The automatic metrics kept in TextMetrics / SystemMetrics: stored by the analysis, read by the
next one, computed again when a text or the family's version changes."""

import dataclasses
import math
from decimal import Decimal

import pytest
import textstat

from annotation.models import Simplification, Source
from evaluation import analysis as evaluation_analysis
from evaluation.analysis import AnalysisOptions, study_analysis
from evaluation.analysis_inputs import study_frames
from evaluation.models import AnalysisSnapshot, SystemMetrics, TextMetrics
from evaluation.services import TextMetricsStore, analysis_snapshot_compute_here, study_analysis_compute
from measures.metrics import registry
from measures.metrics.registry import MetricRecord
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

OPTIONS = AnalysisOptions(
    n_resamples=20,
    correlation_resamples=10,
    metric_families=("readability", "jargon", "diversity"),
    correlations=False,
)


@pytest.fixture
def study():
    return build_study(slug="stored", n_sources=4, shared=((1, "plain_bs", "plain_sc"),))


def analyse(study):
    """A fresh worker's analysis: nothing kept in this process."""
    evaluation_analysis._METRIC_TABLES.clear()
    return study_analysis_compute(study=study, options=OPTIONS)


def fkgl(analysis, source, system):
    (row,) = [
        row
        for row in analysis["metrics"]["per_simplification"]
        if (row["source"], row["system"]) == (source, system)
    ]
    return row["fkgl"]


def tamper(queryset, **values):
    for row in queryset:
        row.scores = {**row.scores, **values}
        row.save(update_fields=["scores"])


def test_the_analysis_stores_every_text_and_system_and_reads_them_back_unchanged(study):
    first = analyse(study)
    evaluation_analysis._METRIC_TABLES.clear()
    # The computed analysis adds the pairwise ranking (read from the pairs, not from the frames).
    assert {k: v for k, v in first.items() if k != "pairwise"} == study_analysis(
        study_frames(study=study), options=OPTIONS
    )
    counts = {}
    for kind, family in TextMetrics.objects.values_list("kind", "family"):
        counts[(kind, family)] = counts.get((kind, family), 0) + 1
    # 4 sources × 4 systems, one text shared by two systems: 15 distinct texts; 4 originals.
    assert counts == {
        ("simplification", "readability"): 15,
        ("simplification", "jargon"): 15,
        ("original", "readability"): 4,
    }
    assert SystemMetrics.objects.count() == 4 * 3
    assert analyse(study) == first


def test_a_later_analysis_reads_the_stored_values(study):
    analyse(study)
    s01 = Source.objects.get(study=study, key="s01")
    tamper(TextMetrics.objects.filter(source=s01, kind="simplification", family="readability"), fkgl=99.0)
    tamper(
        SystemMetrics.objects.filter(system__key="cot_bs", family="readability"),
        fkgl_share_at_or_below_grade=0.125,
    )
    analysis = analyse(study)
    assert {fkgl(analysis, "s01", system) for system in ("plain_bs", "plain_sc", "cot_bs", "cot_sc")} == {
        99.0
    }
    assert fkgl(analysis, "s02", "plain_bs") != 99.0
    assert analysis["metrics"]["per_system"]["cot_bs"]["fkgl_share_at_or_below_grade"] == 0.125


def test_an_edited_text_is_computed_again_and_its_old_row_deleted(study):
    analyse(study)
    s01 = Source.objects.get(study=study, key="s01")
    readability = TextMetrics.objects.filter(source=s01, kind="simplification", family="readability")
    tamper(readability, fkgl=99.0)
    tamper(SystemMetrics.objects.filter(family="readability"), fkgl_share_at_or_below_grade=0.125)
    shown = Simplification.objects.get(source=s01, system__key="cot_sc").shown_text
    shown.text = (
        "Your liver has one small spot. It is a harmless bubble of fluid that needs no treatment at all."
    )
    shown.save()

    analysis = analyse(study)
    assert fkgl(analysis, "s01", "cot_sc") == pytest.approx(textstat.flesch_kincaid_grade(shown.text))
    assert fkgl(analysis, "s01", "cot_bs") == 99.0  # unchanged text: still read from the store
    assert readability.count() == 4  # the edited text's old row is gone, its new one stored
    # cot_sc's corpus value came from other texts now: computed again from its per-text values;
    # the other systems' texts did not change.
    per_system = analysis["metrics"]["per_system"]
    values = [fkgl(analysis, f"s0{i}", "cot_sc") for i in range(1, 5)]
    assert per_system["cot_sc"]["fkgl_share_at_or_below_grade"] == sum(v <= 8 for v in values) / 4
    assert per_system["plain_bs"]["fkgl_share_at_or_below_grade"] == 0.125


def test_a_new_version_of_a_family_computes_its_values_again(study, monkeypatch):
    analyse(study)
    tamper(TextMetrics.objects.filter(family="readability"), fkgl=99.0)
    family = registry.get_family("readability")
    monkeypatch.setitem(registry._REGISTRY, "readability", dataclasses.replace(family, version="test 2"))
    analysis = analyse(study)
    text = Simplification.objects.get(source__key="s03", system__key="plain_bs").shown_text.text
    assert fkgl(analysis, "s03", "plain_bs") == pytest.approx(textstat.flesch_kincaid_grade(text))
    configurations = set(
        TextMetrics.objects.filter(family="readability").values_list("configuration", flat=True)
    )
    assert len(configurations) == 2  # the old version's rows are not used (nor overwritten)


def test_a_chunk_is_stored_all_or_nothing(study, monkeypatch):
    monkeypatch.setattr("evaluation.services._TEXT_METRICS_BATCH", 1)
    record = MetricRecord(source_text="x", candidate_text="y", source="s01")
    rows = [(record, "a" * 32, {"fkgl": 1.0}), (record, "b" * 32, {"fkgl": Decimal("1.5")})]
    with pytest.raises(TypeError):
        TextMetricsStore(study).save("simplification", "readability", "c" * 32, rows)
    assert not TextMetrics.objects.exists()


def test_infinite_and_missing_values_come_back_as_stored(study):
    store = TextMetricsStore(study)
    values = {"fkgl": math.inf, "ari": -math.inf, "smog": None, "dale_chall": 1.5}
    store.save(
        "original", "readability", "c" * 32, [(MetricRecord("x", "x", source="s02"), "d" * 32, values)]
    )
    assert store.load("original", "readability", "c" * 32) == {"d" * 32: values}
    assert store.load("simplification", "readability", "c" * 32) == {}
    store.save_corpus("readability", "e" * 32, "cot_bs", "f" * 32, {"fkgl_share_at_or_below_grade": math.inf})
    assert store.load_corpus("readability", "e" * 32) == {
        "cot_bs": ("f" * 32, {"fkgl_share_at_or_below_grade": math.inf})
    }


def test_the_snapshot_computation_stores_the_metrics(study, settings):
    settings.RADLAY_ANALYSIS_OPTIONS = {
        "n_resamples": 20,
        "correlation_resamples": 10,
        "metric_families": ["readability"],
    }
    snapshot = analysis_snapshot_compute_here(study=study)
    assert isinstance(snapshot, AnalysisSnapshot) and snapshot.result is not None
    assert TextMetrics.objects.filter(source__study=study, family="readability").count() == 15 + 4
