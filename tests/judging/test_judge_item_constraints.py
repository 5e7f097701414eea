"""JudgeItem's one-task-per-instrument-and-target rule, written as partial unique indexes (one per
combination of the nullable target columns) so that SQLite creates it too: the same rule as the
former `nulls_distinct=False` constraint, and `manage.py check` on the default SQLite settings
reports no warning (it reported models.W047 before)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction

from annotation.models import StudyInstrument
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeItem, JudgeRun
from tests.evaluation.instrument_studies import seed002_study

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.heavy
def test_manage_py_check_on_the_default_sqlite_settings_reports_no_warning(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    # --database runs the checks that depend on the database's features (W047 is one of them).
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "check", "--database", "default"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout, done.stdout + done.stderr
    assert "W047" not in done.stdout + done.stderr


@pytest.mark.django_db
def test_one_instrument_task_per_target_nulls_counting_as_equal():
    study, _, _ = seed002_study(slug="judge-unique", n_sources=2)
    instrument = StudyInstrument.objects.get(study=study, key="medlaybench_002")
    run = JudgeRun.objects.create(
        study=study, backend="glossary", model_name="glossary", prompt_version="t", instruments=[]
    )
    texts = list(study.sources.order_by("position").first().simplifications.select_related("shown_text"))
    source = texts[0].source
    shown, reference = texts[0].shown_text, texts[1].shown_text
    targets = [
        {"shown_text": None, "reference_text": None},
        {"shown_text": shown, "reference_text": None},
        {"shown_text": shown, "reference_text": reference},
        {"shown_text": None, "reference_text": reference},
        {"shown_text": reference, "reference_text": shown},
    ]
    for target in targets:
        JudgeItem.objects.create(run=run, task=ITEM_TASK, instrument=instrument, source=source, **target)
    for target in targets:
        with pytest.raises(IntegrityError), transaction.atomic():
            JudgeItem.objects.create(run=run, task=ITEM_TASK, instrument=instrument, source=source, **target)
    # Another run (or instrument version) may ask the same targets.
    other = JudgeRun.objects.create(
        study=study, backend="glossary", model_name="glossary", prompt_version="t", instruments=[]
    )
    for target in targets:
        JudgeItem.objects.create(run=other, task=ITEM_TASK, instrument=instrument, source=source, **target)
    assert JudgeItem.objects.filter(task=ITEM_TASK).count() == 2 * len(targets)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "values",
    [{}, {"correctness": 0}, {"simplicity": 5.5, "severity": -1}, {"correctness": 1, "simplicity": 5}],
)
def test_the_bounds_checked_in_python_are_the_constraints_full_clean_checks(values):
    # The judge's answers are checked by answer_bounds_errors, not by a query per constraint.
    from django.core.exceptions import ValidationError

    from judging.models import JudgeAnswer, answer_bounds_errors

    answer = JudgeAnswer(**values)
    try:
        answer.validate_constraints()
        expected = []
    except ValidationError as error:
        expected = error.messages
    assert answer_bounds_errors(answer) == expected
