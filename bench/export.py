"""Stream 1 000 000 raw-answer rows to CSV and compare with writing them from a list.

    .venv/bin/python bench/export.py                   # 1 000 000 rows
    .venv/bin/python bench/export.py --rows 200000

Builds a synthetic study in a throwaway SQLite database (bench/analyze.py's generator) with at
least `--rows` answer rows, then exports the first `--rows` of them twice, both under tracemalloc:

- radlay: `answer_rows` (querysets read with .iterator()) → `csv_chunks` → file, as the export
  command and the download views do;
- reference: the same rows first collected into a list, then written with `csv.writer.writerows`.

Prints time and peak traced memory of both and their ratios (radlay / reference).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
import tracemalloc
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analyze import setup_django, synthetic_study  # noqa: E402

ROWS_PER_LAY_ITEM = 9  # panel 1: 3 answers, panel 2: 4, panel 3: one most + one least choice


def measure(function) -> tuple[float, int]:
    tracemalloc.start()
    started = time.perf_counter()
    function()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--laypeople", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        from evaluation.exporters.csv import csv_chunks
        from evaluation.exporters.rows import answer_columns, answer_rows

        n_sources = math.ceil(args.rows / (args.laypeople * ROWS_PER_LAY_ITEM))
        started = time.perf_counter()
        study = synthetic_study(n_sources=n_sources, n_lay=args.laypeople, n_radiologists=1)
        print(
            f"built {n_sources} sources × {args.laypeople} laypeople (+1 radiologist) in "
            f"{time.perf_counter() - started:.1f} s"
        )
        columns = answer_columns()
        streamed_path, reference_path = Path(tmp) / "streamed.csv", Path(tmp) / "reference.csv"

        def streamed() -> None:
            with streamed_path.open("wb") as out:
                for chunk in csv_chunks(islice(answer_rows(study=study), args.rows), columns):
                    out.write(chunk)

        def reference() -> None:
            rows = list(islice(answer_rows(study=study), args.rows))
            with reference_path.open("w", newline="", encoding="utf-8") as out:
                writer = csv.writer(out, lineterminator="\r\n")
                writer.writerow(columns)
                writer.writerows(rows)

        stream_seconds, stream_peak = measure(streamed)
        reference_seconds, reference_peak = measure(reference)
        with streamed_path.open("rb") as handle:
            lines = sum(1 for _ in handle) - 1
        same = streamed_path.read_bytes() == reference_path.read_bytes()
        mib = 1024 * 1024
        print(
            f"{lines} rows, {streamed_path.stat().st_size / mib:.0f} MiB of CSV; "
            f"identical to the reference: {same}"
        )
        print(f"  streamed (radlay):  {stream_seconds:7.1f} s, peak {stream_peak / mib:8.1f} MiB")
        print(f"  list + csv.writer:  {reference_seconds:7.1f} s, peak {reference_peak / mib:8.1f} MiB")
        print(
            f"ratio radlay / reference: time {stream_seconds / reference_seconds:.2f}×, "
            f"peak memory {stream_peak / reference_peak:.3f}×"
        )


if __name__ == "__main__":
    main()
