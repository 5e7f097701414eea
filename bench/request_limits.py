"""What a refusal costs for the request limits (instrument documents, sources files), against what
the same input cost before the limits, measured in the same run.

    .venv/bin/python bench/request_limits.py            # DJANGO_SETTINGS_MODULE defaults to test

- YAML: radlay's instrument_from_yaml (size and nesting bounded before parsing) on a 100,000-deep
  flow list, against the reference: PyYAML's yaml.safe_load, which radlay called before, on a
  5,000-deep one (a twentieth of the depth: its cost grows with the square of it, so the full
  depth would take minutes; the printed ratio therefore understates the gain by about 400).
- CSV: StudyFile.check() refusing a wide file of 20,000 system columns (about 170 KB) at its
  header, against the reference: the header's duplicate-column scan radlay ran before the column
  cap (a list.count per column), on the same header. Before the cap the import then went on to
  insert the 20,000 systems one at a time (35+ minutes); that part is not re-run here.

Prints each time, peak traced memory and the ratio radlay / reference.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")


def _run(run) -> None:
    with contextlib.suppress(Exception):  # a refusal is the expected outcome here
        run()


def measure(run, *, memory: bool = True) -> tuple[float, float]:
    """(seconds, peak traced MB): the time without tracemalloc (which slows Python code several
    times over), then the memory in a second run where asked."""
    started = time.perf_counter()
    _run(run)
    elapsed = time.perf_counter() - started
    if not memory:
        return elapsed, float("nan")
    tracemalloc.start()
    _run(run)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak / 1e6


def main() -> None:
    import django

    django.setup()
    import yaml

    from instruments.validation import instrument_from_yaml
    from studies.importers.study_file import StudyFile

    deep = "[" * 100_000 + "]" * 100_000
    reference_deep = "[" * 5_000 + "]" * 5_000
    ours = measure(lambda: instrument_from_yaml(deep, max_bytes=1_000_000))
    ref = measure(lambda: yaml.safe_load(reference_deep), memory=False)
    print(f"YAML 100,000-deep refusal: {ours[0] * 1000:.1f} ms, peak {ours[1]:.1f} MB")
    print(f"reference safe_load 5,000-deep: {ref[0] * 1000:.1f} ms")
    print(f"ratio radlay/reference: {ours[0] / ref[0]:.4f} in time (at a twentieth of the depth)")

    header = ["source_key", "source_text", *(f"s{i}" for i in range(20_000))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.csv"
        path.write_text(",".join(header) + "\n" + ",".join(["r", "Report.", *["t"] * 20_000]) + "\n")
        ours = measure(lambda: StudyFile(path).check())
        ref = measure(lambda: {h for h in header if header.count(h) > 1}, memory=False)
    print(f"CSV 20,000 columns refusal: {ours[0] * 1000:.1f} ms, peak {ours[1]:.1f} MB")
    print(f"reference duplicate scan of the same header: {ref[0] * 1000:.1f} ms")
    print(f"ratio radlay/reference: {ours[0] / ref[0]:.4f} in time")


if __name__ == "__main__":
    main()
