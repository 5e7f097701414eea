"""The whole judge path on the authors' release (skips when the release is absent): import it, run
the glossary heuristic judge, and read the judge–radiologist table over the one radiologist's 160
ratings."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import ExpertRating, Simplification, Study
from judging.report import judge_report_context

pytestmark = [pytest.mark.release, pytest.mark.django_db]


def test_the_glossary_judge_on_the_release(release_dir, launch, settings):
    settings.RADLAY_JUDGE_BOOTSTRAP_RESAMPLES = 20
    call_command("import_release", str(release_dir), "--study", "release-judged", stdout=io.StringIO())
    study = Study.objects.get(slug="release-judged")
    run = launch(study=study, backend="glossary")
    assert run.items.exclude(status="succeeded").count() == 0
    per_field = {(r["field"], r["comparison"]): r for r in run.agreement["per_field"]}
    (rater,) = {comparison for _, comparison in per_field}
    # 160 simplifications (40 sources × 4 systems) shown as 156 distinct texts: 4 pairs of systems gave
    # the same text, rated once by the radiologist and judged once, counting for both systems.
    assert Simplification.objects.filter(source__study=study).count() == 160
    assert ExpertRating.objects.filter(participant__study=study).count() == 156
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
