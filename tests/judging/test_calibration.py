"""A judge run's calibration (judging.calibration): computed with the agreement, shown in the report
section with the leaderboard's columns, refused with the reason for a one-sample run."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string

from annotation.models import Study
from evaluation import services as evaluation_services
from evaluation.analysis.protocol import AnalysisOptions
from judging.calibration import ALL_FIELDS
from judging.management.commands.judge import Command
from judging.report import judge_report_context

FAST = AnalysisOptions(n_resamples=20, correlations=False, metric_families=())


def test_a_three_sample_glossary_run_is_calibrated(study, launch):
    run = launch(study=study, backend="glossary", instruments=["radiologist"], samples=3)
    section = run.agreement["calibration"]
    assert section["available"] and "never see human answers" in section["methods"]
    fields = {row["field"]: row for row in section["per_field"]}
    assert {"correctness", "severity", ALL_FIELDS} <= set(fields)
    # 4 sources × 4 systems' texts, each rated by R1; severity once per source.
    assert fields["severity"]["n"] == 4 and fields["severity"]["n_sources"] == 4
    pooled = fields[ALL_FIELDS]
    assert pooled["n"] == sum(row["n"] for name, row in fields.items() if name != ALL_FIELDS)
    for row in section["per_field"]:
        for name, high in (("ece", 1), ("brier", 2), ("accuracy", 1), ("mean_confidence", 1)):
            cell = row[name]
            assert 0 <= cell["estimate"] <= high
            assert cell["low"] is None or 0 <= cell["low"] <= cell["high"] <= high
        assert sum(b["n"] for b in row["reliability"]) == row["n"]
    # Later samples at the prompts' temperature differ from the first: confidences below 1 exist.
    assert pooled["mean_confidence"]["estimate"] < 1
    assert run.agreement["summary"]["ece"] == pooled["ece"]["estimate"]

    context = judge_report_context(study=study)
    (row,) = [r for r in context["leaderboard"] if r.get("run") == run]
    assert row["ece"] == f"{pooled['ece']['estimate']:.3f}"
    html = render_to_string("judging/_report_section.html", {"judges": context})
    assert "reliability-diagram" in html and "Expected calibration error over 10 equal-width bins" in html
    assert html.count("<circle") == sum(len(r["reliability"]) for r in section["per_field"])

    # The study's analysis document carries it per judge, with the reliability diagram's bins.
    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
    (judge,) = analysis["judges"]
    assert judge["run"] == run.pk and judge["samples"] == 3
    assert judge["calibration"]["per_field"] == section["per_field"]
    json.dumps(analysis, allow_nan=False, default=str)


def test_a_one_sample_run_says_why_it_cannot_be_calibrated(study, launch):
    run = launch(study=study, backend="glossary", instruments=["radiologist"])
    section = run.agreement["calibration"]
    assert not section["available"] and "k = 1" in section["reason"]
    assert run.agreement["summary"]["ece"] is None
    html = render_to_string("judging/_report_section.html", {"judges": judge_report_context(study=study)})
    assert "k = 1" in html


@pytest.mark.release
@pytest.mark.django_db
def test_the_glossary_judge_with_three_samples_on_the_release(release_dir, launch, settings):
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    call_command("import_release", str(release_dir), "--study", "release-calibrated", stdout=io.StringIO())
    study = Study.objects.get(slug="release-calibrated")
    # What `manage.py judge --study … --backend glossary --samples 3` launches.
    launch(study=study, backend="glossary", samples=3, instruments=["radiologist"])
    run = study.judge_runs.get()
    fields = {row["field"]: row for row in run.agreement["calibration"]["per_field"]}
    # 156 distinct texts rated by the one radiologist, 40 originals.
    assert fields["correctness"]["n"] == 156 and fields["severity"]["n"] == 40
    assert fields["correctness"]["n_sources"] == 40
    out = io.StringIO()
    Command(stdout=out)._print_agreement(run)
    assert "ECE=" in out.getvalue() and "10 equal-width bins" in out.getvalue()
    html = render_to_string("judging/_report_section.html", {"judges": judge_report_context(study=study)})
    assert html.count('class="reliability-diagram"') == len(fields)
    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
    calibrated = {row["field"]: row for row in analysis["judges"][0]["calibration"]["per_field"]}
    assert calibrated["correctness"]["ece"] == fields["correctness"]["ece"]
    assert calibrated["severity"]["reliability"] and calibrated["severity"]["brier"]["estimate"] is not None


@pytest.mark.django_db
def test_an_instruments_items_are_calibrated_per_item(launch):
    from tests.evaluation.instrument_studies import seed002_study
    from tests.judging.test_instrument_items import CRITERIA

    study, _instrument, _raters = seed002_study(slug="calibrated-items", n_sources=6)
    run = launch(study=study, backend="glossary", instruments=["medlaybench_002"], samples=3)
    fields = {row["field"]: row for row in run.agreement["calibration"]["per_field"]}
    for criterion in CRITERIA:
        row = fields[f"medlaybench_002 · {criterion}"]
        # Every (lay caption, expert caption) pair the humans answered, once.
        assert row["n"] == 6 * 2 and row["n_sources"] == 6
        assert 0 <= row["ece"]["estimate"] <= 1 and 0 <= row["brier"]["estimate"] <= 2
    assert fields[ALL_FIELDS]["n"] == 6 * 2 * len(CRITERIA)
