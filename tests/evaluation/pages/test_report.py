"""The report's display rows (Django-free part of evaluation/pages/report.py)."""

from __future__ import annotations

import pytest

from evaluation.pages import report
from measures.stats import interval_methods
from tests.evaluation.analysis.test_analysis import FAST, make_frames


@pytest.fixture(scope="module")
def analysis():
    from evaluation.analysis.study import study_analysis

    return study_analysis(make_frames(), options=FAST)


@pytest.mark.parametrize(
    ("value", "kwargs", "text"),
    [
        (8.8125, {}, "8.813"),  # half up, as printed in seed 003 (Python's format would give 8.812)
        (7.01, {}, "7.010"),
        (0.3875, {"percent": True}, "38.8%"),
        (0.52272727, {"percent": True}, "52.3%"),
        (None, {}, "—"),
        (1.23456, {"digits": 2}, "1.23"),
    ],
)
def test_fmt_rounds_like_the_paper(value, kwargs, text):
    assert report.fmt(value, **kwargs) == text


def test_pfmt_never_prints_zero():
    assert report.pfmt(3.6e-7) == "3.6e-07"
    assert report.pfmt(0.04567) == "0.0457"
    assert report.pfmt(None) == "—"


def test_table1_cells_carry_the_intervals(analysis):
    table = report.table1(analysis)
    assert table["columns"] == ["Original", "A", "B", "C"]
    lay = next(s for s in table["sections"] if s["title"].startswith("Laypeople"))
    understanding = lay["rows"][0]
    assert understanding["label"].startswith("Q1")
    original = understanding["cells"][0]
    assert original["value"] == "1.500"
    # Two laypeople: the estimate with the reason instead of an interval, and the method as tooltip.
    ci = analysis["confidence_intervals"]["lay"]["original"]["understanding"]
    assert ci["low"] is None and original["ci"] == ci["reason"] == interval_methods.TOO_FEW
    assert original["method"] == ci["method"] == interval_methods.METHOD_WILSON
    shown = report.cell(2.0, {"low": 1.5, "high": 2.5, "method": interval_methods.METHOD_T})
    assert shown["ci"] == "[1.500, 2.500]" and shown["method"] == interval_methods.METHOD_T
    accuracy = next(r for r in lay["rows"] if r["label"] == "Q3 accuracy")
    assert accuracy["cells"][1]["value"] == "100.0%"  # system a: both guesses right
    helpfulness = next(r for r in lay["rows"] if r["label"].startswith("Q4"))
    assert helpfulness["cells"][0]["missing"]


def test_table3_and_agreement_rows(analysis):
    table = report.table3(analysis)
    assert table["rows"][0]["cells"] == [str(analysis["preferences"]["most"][s]) for s in ("a", "b", "c")]
    labels = [row["label"] for row in report.agreement_rows(analysis)]
    assert any("MASI" in label for label in labels)


def test_correlation_rows_group_the_three_methods(analysis):
    rows = report.correlation_rows(analysis)
    assert rows
    for row in rows:
        assert {"pearson", "spearman", "kendall"} <= set(row)
    n_records = len(analysis["correlations"])
    assert len(rows) * 3 == n_records


def test_audit_display_formats_values():
    result = {
        "rows": [
            {"value": 4.72500001, "difference": 1e-8, "tolerance": 0.0005},
            {"value": None, "difference": None, "tolerance": None},
        ]
    }
    rows = report.audit_display(result)["rows"]
    assert rows[0]["value_text"] == "4.725" and rows[0]["tolerance_text"] == "0.0005"
    assert rows[1]["value_text"] == "—"
    assert report.audit_display(None) is None


def test_metric_table_lists_every_metric_per_system_or_why_not():
    from evaluation.pages.report import metric_table

    analysis = {
        "systems": ["a", "b"],
        "system_details": {"a": {"label": "A"}, "b": {"label": "B"}},
        "metrics": {
            "families": {
                "readability": {"text_metrics": ["fkgl"], "corpus_metrics": ["fkgl_share_at_or_below_grade"]},
                "reference": {"text_metrics": ["bleu"], "corpus_metrics": []},
            },
            "text_metrics": ["fkgl", "bleu"],
            "original": {"fkgl": 12.3456},
            "per_system": {
                "a": {"fkgl": 7.25, "fkgl_share_at_or_below_grade": 0.5, "bleu": None},
                "b": {"fkgl": 6.0, "fkgl_share_at_or_below_grade": 1.0, "bleu": None},
            },
            "per_simplification": [{"source": "s1", "system": "a", "fkgl": 7.25, "bleu": None}],
            "unavailable": {"bleu": "no reference system"},
        },
    }
    table = metric_table(analysis)
    assert table["columns"] == ["A", "B"]
    by_name = {row["metric"]: row for row in table["rows"]}
    assert by_name["fkgl"]["cells"] == ["7.250", "6.000"]
    assert by_name["fkgl"]["original"] == "12.346"
    assert by_name["fkgl_share_at_or_below_grade"]["cells"] == ["0.500", "1.000"]
    assert by_name["bleu"]["reason"] == "no reference system"
    assert table["per_text"][0]["source"] == "s1"


def test_difference_rows_show_each_pair_with_its_interval(analysis):
    rows = [r for r in report.difference_rows(analysis) if r["measure"] == "Q1 understanding"]
    assert [r["pair"] for r in rows] == ["A − B", "A − C", "B − C"]
    means = {s: analysis["lay"][s]["understanding"] for s in ("a", "b", "c")}
    assert rows[0]["difference"]["value"] == report.fmt(means["a"] - means["b"])
    record = analysis["confidence_intervals"]["differences"]["understanding"][0]
    # Two laypeople: no interval, so nothing can exclude 0; the cell says why.
    assert record["low"] is None and record["reason"] == interval_methods.TOO_FEW
    assert rows[0]["excludes_zero"] is False and rows[0]["difference"]["ci"] == interval_methods.TOO_FEW


def test_correlation_heatmap_is_metrics_by_measures_of_spearman_items(analysis):
    heat = report.correlation_heatmap(analysis)
    records = [r for r in analysis["correlations"] if r["level"] == "item" and r["method"] == "spearman"]
    metrics = list(dict.fromkeys(r["metric"] for r in records))
    measures = list(dict.fromkeys(r["measure"] for r in records))
    assert len(heat["rows"]) == len(metrics) and len(heat["measures"]) == len(measures)
    first = next(r for r in records if r["metric"] == metrics[0] and r["measure"] == measures[0])
    assert heat["rows"][0]["cells"][0]["text"] == report.fmt(first["r"], digits=2)
    # five steps of size each way, 0 and missing apart
    assert [report._heat(v) for v in (1.0, 0.5, 0.05, -0.31, -1.0, None)] == [
        "heat-p5",
        "heat-p3",
        "heat-0",
        "heat-n2",
        "heat-n5",
        "heat-na",
    ]


def test_report_tables_can_be_built_section_by_section(analysis):
    tables = report.report_tables(analysis, ("metrics",))
    assert set(tables) == {"metrics", "severity_distribution", "severity_unrated", "intervals"}
    assert tables["metrics"] == report.report_tables(analysis)["metrics"]


def test_captions_name_the_intervals_computed(analysis):
    captions = report.report_tables(analysis, ("metrics",))["intervals"]
    assert "percentile bootstrap over texts" in captions["table1"]
    assert "crossed-design" in captions["table1"] and "Satterthwaite" in captions["table1"]
    assert interval_methods.TOO_FEW in captions["table1"]
    assert "percentile-bootstrap intervals" not in captions["table1"]
    assert "participant × system interaction" in captions["differences"]
    assert str(interval_methods.POOLING_P) in captions["differences"]
