"""Import a 105 000-row (about 50 MB) study file and compare with a bare bulk_create of the same rows.

    DATABASE_URL=postgres://… .venv/bin/python bench/import_study.py            # 105 000 rows
    DATABASE_URL=postgres://… .venv/bin/python bench/import_study.py --rows 20000
    .venv/bin/python bench/import_study.py --rows 20000                         # throwaway SQLite

Writes a long-format CSV (source_key, source_text, system, text; four systems per source, texts of
about 200 characters) to a temporary directory. With a PostgreSQL `DATABASE_URL` the benchmark
works in a scratch database on that server (`radlay_bench_import_<pid>`, dropped at the end; the
configured database itself is not touched), otherwise in a throwaway SQLite file. Then, each in a
fresh process against that database (migrated first):

- radlay: `manage.py import_study FILE --study …`: a streamed validation pass over every row, then
  one transaction (the study row included) with a second streamed pass writing in batches (COPY on
  PostgreSQL, bulk_create elsewhere);
- reference: the same rows parsed with `csv.DictReader` into a list, then `bulk_create` of the
  sources, texts and simplifications, with no validation and no checks against existing rows.

Prints wall time and peak RSS of both, their ratios (radlay / reference) and the load average. The
target is ≤ 60 s for 105 000 rows on two cores, with memory that does not grow with the texts.

Measured on a 2-core machine shared with other jobs (load average about 5), PostgreSQL 15 with
fsync on, 105 000 rows: radlay 25.9 s (importing process CPU 6.5 s), peak RSS 215 MiB; reference
67.7 s, 463 MiB; ratio 0.38× in time, 0.46× in memory. The same run before rows went through COPY:
53.6 s vs 52.7 s (1.02×; load 5-8), process CPU 27.4 s.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import bench_database  # bench/ is the script's own folder, first on sys.path

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("plain_bs", "plain_sc", "cot_bs", "cot_sc")
WORDS = (
    "mild moderate small large left right lower upper lobe lung liver kidney cyst nodule effusion "
    "fracture opacity consolidation atelectasis without with stable since prior study no acute "
    "finding there is a little fluid near the which may be from an old injury likely benign"
).split()


def write_file(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source_key", "source_text", "system", "text", "reference_severity"])
        for i in range(rows):
            n, system = divmod(i, len(SYSTEMS))
            source_text = f"Finding {n}: " + " ".join(random.Random(n).choices(WORDS, k=30)) + "."
            text = " ".join(rng.choices(WORDS, k=38)) + "."
            writer.writerow([f"s{n:06d}", source_text, SYSTEMS[system], text, "Mild" if n % 5 else ""])


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()


def run_radlay(path: Path, slug: str) -> None:
    from django.core.management import call_command

    call_command("import_study", str(path), "--study", slug)


def run_reference(path: Path, slug: str) -> None:
    from django.db import transaction

    from annotation.models import Simplification, SimplificationText, Source, Study, System, text_hash

    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with transaction.atomic():
        study = Study.objects.create(slug=slug, title=slug)
        systems = {
            key: System.objects.create(study=study, key=key, label=key, position=i)
            for i, key in enumerate(SYSTEMS)
        }
        sources: dict[str, Source] = {}
        for row in rows:
            if row["source_key"] not in sources:
                sources[row["source_key"]] = Source(
                    study=study,
                    key=row["source_key"],
                    text=row["source_text"],
                    position=len(sources),
                    reference_severity=row["reference_severity"],
                )
        Source.objects.bulk_create(sources.values(), batch_size=2000)
        texts = [
            SimplificationText(
                source=sources[r["source_key"]], text=r["text"], text_hash=text_hash(r["text"])
            )
            for r in rows
        ]
        SimplificationText.objects.bulk_create(texts, batch_size=2000)
        Simplification.objects.bulk_create(
            [
                Simplification(source=sources[r["source_key"]], system=systems[r["system"]], shown_text=t)
                for r, t in zip(rows, texts, strict=True)
            ],
            batch_size=2000,
        )


def child(which: str, path: Path, slug: str) -> None:
    setup_django()
    started, cpu_started = time.perf_counter(), time.process_time()
    (run_radlay if which == "radlay" else run_reference)(path, slug)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{seconds} {cpu} {peak}")


def measure(which: str, path: Path, slug: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds of the importing process (the database server's are not in it:
    a steadier figure than wall time on a loaded machine) and peak RSS in bytes."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", which, "--file", str(path), "--slug", slug],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, cpu, peak = result.stdout.split()[-3:]
    return float(seconds), float(cpu), int(peak)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=105_000)
    parser.add_argument("--child", choices=["radlay", "reference"], help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--slug", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.file, args.slug)
        return

    slugs = {"radlay": "bench-import", "reference": "bench-import-ref"}
    with tempfile.TemporaryDirectory() as tmp, bench_database("import", Path(tmp)) as where:
        setup_django()
        from django.core.management import call_command
        from django.db import connections

        from annotation.models import Simplification, Study

        call_command("migrate", verbosity=0)
        connections.close_all()
        path = Path(tmp) / "study.csv"
        write_file(path, args.rows)
        print(f"{args.rows} rows, {path.stat().st_size / 1e6:.0f} MB of long CSV, in {where}")
        load_before = os.getloadavg()[0]
        results = {which: measure(which, path, slug) for which, slug in slugs.items()}
        load_after = os.getloadavg()[0]
        study = Study.objects.get(slug=slugs["radlay"])
        print(
            f"radlay stored {study.sources.count()} sources, "
            f"{Simplification.objects.filter(source__study=study).count()} simplifications"
        )
    mib = 1024 * 1024
    for which, (seconds, cpu, peak) in results.items():
        print(f"  {which:<10} {seconds:7.1f} s (process CPU {cpu:5.1f} s), peak RSS {peak / mib:7.0f} MiB")
    (radlay_s, radlay_c, radlay_m), (ref_s, ref_c, ref_m) = results["radlay"], results["reference"]
    print(
        f"ratio radlay / reference: time {radlay_s / ref_s:.2f}×, process CPU {radlay_c / ref_c:.2f}×, "
        f"peak RSS {radlay_m / ref_m:.2f}×"
    )
    print(f"load average (1 min) {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
