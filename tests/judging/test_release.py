"""The whole judge path on the authors' release (skips when the release is absent): import it, run
the glossary heuristic judge, and read the judge–radiologist table over the one radiologist's 160
ratings."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from django.core.management import call_command

from annotation.models import Simplification, Study
from evaluation.analysis.document import ORIGINAL
from evaluation.analysis.protocol import lay_table
from evaluation.analysis.study_frames import study_frames
from evaluation.pages.report import fmt
from judging.report import judge_report_context
from tests.annotation import answers

pytestmark = [pytest.mark.release, pytest.mark.django_db]


def test_the_glossary_judge_on_the_release(release_dir, launch, settings):
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    call_command("import_release", str(release_dir), "--study", "release-judged", stdout=io.StringIO())
    study = Study.objects.get(slug="release-judged")
    run = launch(study=study, backend="glossary")
    assert run.items.exclude(status="succeeded").count() == 0
    per_field = {(r["field"], r["comparison"]): r for r in run.agreement["per_field"]}
    (rater,) = {comparison for _, comparison in per_field}
    # 160 simplifications (40 sources × 4 systems) shown as 156 distinct texts: 4 pairs of systems gave
    # the same text, rated once by the radiologist and judged once, counting for both systems.
    assert Simplification.objects.filter(source__study=study).count() == 160
    assert len(answers.ratings(study=study)) == 156
    for aspect in ("correctness", "completeness", "hallucination", "structure", "simplicity"):
        assert per_field[(aspect, rater)]["n"] == 160
        assert per_field[(aspect, rater)]["n_sources"] == 40
    assert per_field[("severity", rater)]["n"] == 40
    assert run.agreement["human_ceiling"] == []  # one radiologist
    assert {r["field"] for r in run.agreement["system_ranking"]} == {
        "correctness",
        "completeness",
        "hallucination",
        "structure",
        "simplicity",
    }
    lay = run.agreement["lay_severity"]
    assert lay["laypeople"]["original"]["n"] > 0 and lay["judge"]["assisted"]["n"] == 160
    section = judge_report_context(study=study)
    assert section["selected"]["per_field"][0]["n"] == 160


def test_the_judge_pages_laypeople_are_table_1(release_dir, launch, settings):
    """Before, the judge page counted a shared text's lay answers for the one system the
    Latin square assigned (cot_sc: n 72, MSE 1.292, accuracy 0.431); Table 1 counts them for every
    system that produced the text (cot_sc: 88 / 1.341 / 0.420, checked against the release's CSV files
    in tests/evaluation/analysis/test_release.py). Both now read the same rule."""
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    call_command("import_release", str(release_dir), "--study", "release-lay", stdout=io.StringIO())
    study = Study.objects.get(slug="release-lay")
    run = launch(study=study, backend="glossary", instruments=["lay"])
    laypeople = run.agreement["lay_severity"]["laypeople"]
    table = lay_table(study_frames(study=study))

    cot_sc = table["cot_sc"]
    assert (
        cot_sc["n_severity"],
        round(cot_sc["severity_mse"], 3),
        round(cot_sc["severity_accuracy"], 3),
    ) == (
        88,
        1.341,
        0.420,
    )
    after = laypeople["assisted"]["by_system"]
    assert set(after) == {"plain_bs", "plain_sc", "cot_bs", "cot_sc"}
    for system, figures in after.items():
        expected = (
            table[system]["severity_mse"],
            table[system]["severity_accuracy"],
            table[system]["n_severity"],
        )
        assert (figures["mse"], figures["accuracy"], figures["n"]) == expected, system
    original = table[ORIGINAL]
    assert (laypeople["original"]["mse"], laypeople["original"]["accuracy"], laypeople["original"]["n"]) == (
        original["severity_mse"],
        original["severity_accuracy"],
        original["n_severity"],
    )
    # Panel 2 as a whole: every credited answer (a shared text's answer once per system), like the judge's.
    assert laypeople["assisted"]["n"] == sum(table[system]["n_severity"] for system in after)

    # The page shows the same figures as the report's Table 1 (the same rounding).
    rows = {
        row["system"]: row["laypeople"]
        for row in judge_report_context(study=study)["selected"]["lay_systems"]
    }
    for system, row in rows.items():
        assert (row["mse"], row["accuracy"], row["n"]) == (
            fmt(table[system]["severity_mse"]),
            fmt(table[system]["severity_accuracy"]),
            table[system]["n_severity"],
        )
    assert rows["cot_sc"] == {"mse": "1.341", "accuracy": "0.420", "n": 88}
