"""What one sources file may cost (studies/importers/import_limits.py): a header past
RADLAY_FILE_LIMITS.import_columns and a file or study past its import_systems are refused before
anything is written, within a second and in bounded memory; the systems a file names are written in
bulk (a few queries, whatever their number)."""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Source, Study, System
from studies.importers.errors import ImportFormatError
from studies.importers.study_file import StudyFile
from studies.importers.write import study_file_import

pytestmark = pytest.mark.django_db


def _wide(tmp_path: Path, n_systems: int, *, name: str = "wide.csv", prefix: str = "s") -> Path:
    """A wide CSV of two sources with `n_systems` system columns (20,000 systems: about 170 KB)."""
    systems = [f"{prefix}{i}" for i in range(n_systems)]
    lines = [",".join(["source_key", "source_text", *systems])]
    for row in range(2):
        lines.append(",".join([f"r{row}", f"Report {row}.", *(["t"] * n_systems)]))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _refused_cheaply(run) -> ImportFormatError:
    """The refusal `run` raises, asserted to come within a second and 20 MB of Python allocations."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ImportFormatError) as caught:
            run()
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0, f"refused after {elapsed:.2f} s"
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    return caught.value


def test_twenty_thousand_system_columns_are_refused_within_a_second_and_nothing_is_written(tmp_path):
    path = _wide(tmp_path, 20_000)
    assert 150_000 < path.stat().st_size < 250_000
    error = _refused_cheaply(
        lambda: study_file_import(slug="wide", title="", study_file=StudyFile(path), actor="test")
    )
    assert (
        error.row == 1
        and "20,002 columns" in str(error)
        and "RADLAY_FILE_LIMITS.import_columns" in str(error)
    )
    assert not Study.objects.filter(slug="wide").exists() and not System.objects.exists()


def test_the_column_limit_is_a_setting(tmp_path, settings):
    settings.RADLAY_FILE_LIMITS = replace(settings.RADLAY_FILE_LIMITS, import_columns=6)
    study_file_import(slug="four", title="", study_file=StudyFile(_wide(tmp_path, 4)), actor="test")
    assert System.objects.filter(study__slug="four").count() == 4
    error = _refused_cheaply(lambda: StudyFile(_wide(tmp_path, 5, name="five.csv")).check())
    assert "7 columns; at most 6" in str(error)


def test_systems_past_the_limit_are_refused_in_a_wide_file_a_long_file_and_a_study(tmp_path, settings):
    settings.RADLAY_FILE_LIMITS = replace(settings.RADLAY_FILE_LIMITS, import_systems=3)
    error = _refused_cheaply(lambda: StudyFile(_wide(tmp_path, 4)).check())
    assert "names 4 systems; at most 3" in str(error) and "RADLAY_FILE_LIMITS.import_systems" in str(error)

    long = tmp_path / "long.jsonl"
    long.write_text(
        "".join(
            f'{{"source_key": "r1", "source_text": "Report.", "system": "s{i}", "text": "t{i}"}}\n'
            for i in range(5)
        )
    )
    error = _refused_cheaply(lambda: StudyFile(long).check())
    assert error.row == 4 and error.column == "system"

    study_file_import(slug="grows", title="", study_file=StudyFile(_wide(tmp_path, 2)), actor="test")
    more = _wide(tmp_path, 2, name="more.csv", prefix="x")
    error = _refused_cheaply(
        lambda: study_file_import(slug="grows", title="", study_file=StudyFile(more), actor="test")
    )
    assert "study 'grows' would have 4 systems" in str(error)
    assert sorted(System.objects.filter(study__slug="grows").values_list("key", flat=True)) == ["s0", "s1"]


def test_the_systems_of_a_file_are_written_in_a_few_queries(tmp_path, settings):
    settings.RADLAY_FILE_LIMITS = replace(
        settings.RADLAY_FILE_LIMITS, import_systems=1000, import_columns=1000
    )
    small, large = _wide(tmp_path, 5, name="small.csv"), _wide(tmp_path, 500, name="large.csv")
    counts = []
    for slug, path in (("small", small), ("large", large)):
        with CaptureQueriesContext(connection) as queries:
            study_file_import(slug=slug, title="", study_file=StudyFile(path), actor="test")
        counts.append(len(queries))
    # 500 systems × 2 sources: the same statements as 5 systems, batched.
    assert counts[1] <= counts[0] + 3
    systems = list(
        System.objects.filter(study__slug="large").order_by("position").values_list("key", "label")
    )
    assert systems == [(f"s{i}", f"s{i}") for i in range(500)]
    assert Source.objects.filter(study__slug="large").count() == 2
    # A second import relabels nothing and adds none.
    study_file_import(slug="large", title="", study_file=StudyFile(large), actor="test")
    assert System.objects.filter(study__slug="large").count() == 500
