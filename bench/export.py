"""Export every raw answer of a large study to CSV: the command, the streamed download, a reference.

    DATABASE_URL=postgres://… .venv/bin/python bench/export.py       # 5 556 sources × 20 laypeople + 1
    .venv/bin/python bench/export.py --sources 500                    # no DATABASE_URL: throwaway SQLite

With a PostgreSQL `DATABASE_URL` the benchmark creates a scratch database on that server
(`radlay_bench_export_<pid>`, dropped at the end; the configured database itself is not touched),
migrates it and bulk-creates bench/analyze.py's synthetic study: `--sources` sources × 4 systems,
`--radiologists` radiologists rating every distinct text and `--laypeople` laypeople answering both
panels and panel 3 (the defaults give about 1.12 million answer rows). Then, each in a fresh
process so that peak RSS belongs to it alone:

- command:   `manage.py export --format csv` (on PostgreSQL the database writes the CSV with
             COPY, evaluation/exports/csv_copy.py; elsewhere answer_rows → csv_chunks);
- download:  GET /dashboard/<study>/export.csv through the Django test client, the streamed body
             read chunk by chunk as a web server would send it;
- python:    the streamed Python path (answer_rows → csv_chunks → file), which SQLite uses;
- reference: the same rows first collected into a list, then written with `csv.writer.writerows`
             (what a non-streaming export costs; the same bytes).

Prints rows, time and peak RSS of each, whether all wrote the same bytes, and the ratios of each to
the reference. The target is ≤ 10 s for 1.12 M rows with memory that does not grow with the study.
`--skip-python` leaves out the python and reference runs (then the ratios are to the command).

Then the answers API (GET /api/studies/<study>/answers/?limit=1000, cursor pagination): the
first page and the page at row 1,000,000 (its cursor found by walking the export in pages of
5,000, itself timed), best of three requests each, against what the page at row 1,000,000 cost
with offsets (the rows before it built and skipped: `islice(answer_rows(…), 1_000_000, …)`).
`--skip-pages` leaves this out.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from scratch import bench_database  # noqa: E402

SLUG = "bench-export"


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()


def child(which: str, out: Path) -> None:
    setup_django()
    import csv

    from annotation.models import Study
    from evaluation.exports.rows import answer_columns, answer_rows

    started = time.perf_counter()
    if which == "command":
        from django.core.management import call_command

        with open(os.devnull, "w") as devnull:
            call_command("export", "--study", SLUG, "--format", "csv", "--out", str(out), stderr=devnull)
    elif which == "download":
        from django.contrib.auth import get_user_model
        from django.test import Client

        user = get_user_model().objects.get(username="bench-researcher")
        client = Client()
        client.force_login(user)
        response = client.get(f"/dashboard/{SLUG}/export.csv")
        assert response.status_code == 200, response.status_code
        with out.open("wb") as handle:
            for chunk in response.streaming_content:
                handle.write(chunk)
    elif which == "python":
        from evaluation.exports.csv import write

        with out.open("wb") as handle:
            write(answer_rows(study=Study.objects.get(slug=SLUG)), answer_columns(), handle)
    elif which == "pages":
        pages(out)
        return
    else:
        from evaluation.exports.cells import csv_cell

        rows = list(answer_rows(study=Study.objects.get(slug=SLUG)))
        with out.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\r\n")
            writer.writerow(answer_columns())
            writer.writerows([csv_cell(value) for value in row] for row in rows)
    seconds = time.perf_counter() - started
    print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


DEEP = 1_000_000
PAGE = 1000


def pages(out: Path) -> None:
    """Time API pages (see the module docstring); writes the figures to `out` as JSON."""
    import json
    from itertools import islice

    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from annotation.models import Study
    from evaluation.api_pagination import cursor_text
    from evaluation.exports.keyset_pages import answer_page
    from evaluation.exports.rows import answer_rows

    study = Study.objects.get(slug=SLUG)
    started = time.perf_counter()
    page, before, walked = answer_page(study=study, limit=5000), 0, 1
    while page.next is not None and before + len(page.rows) <= DEEP:
        before += len(page.rows)
        page = answer_page(study=study, limit=5000, start=page.next)
        walked += 1
    walk = time.perf_counter() - started
    # The page at row DEEP: from the position of the first row of the walked page, skip to it.
    start = page.previous
    skip = DEEP - before
    while skip:
        step = answer_page(study=study, limit=min(skip, 5000), start=start)
        skip -= len(step.rows)
        start = step.next
    client = APIClient()
    user = get_user_model().objects.get(username="bench-researcher")
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    url = f"/api/studies/{SLUG}/answers/"

    def best(params: dict[str, str]) -> tuple[float, list]:
        times, results = [], []
        for _ in range(3):
            began = time.perf_counter()
            response = client.get(url, params)
            results = response.json()["results"]
            times.append(time.perf_counter() - began)
        return min(times), results

    first, _ = best({"limit": str(PAGE)})
    cursor = cursor_text([start.section, list(start.key), start.n, False])
    deep, deep_rows = best({"limit": str(PAGE), "cursor": cursor})
    began = time.perf_counter()
    offset_rows = list(islice(answer_rows(study=study), DEEP, DEEP + PAGE + 1))
    offset = time.perf_counter() - began
    same = [tuple(row.values()) for row in deep_rows] == [tuple(row) for row in offset_rows[:PAGE]]
    out.write_text(
        json.dumps(
            {"first": first, "deep": deep, "offset": offset, "same": same, "walk": walk, "walked": walked}
        )
    )
    print(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def measure(which: str, out: Path, env: dict[str, str]) -> tuple[float, int]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", which, "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    seconds, peak = result.stdout.split()[-2:]
    return float(seconds), int(peak)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sources", type=int, default=5556)
    parser.add_argument("--laypeople", type=int, default=20)
    parser.add_argument("--radiologists", type=int, default=1)
    parser.add_argument("--skip-python", action="store_true", help="measure only the command and download")
    parser.add_argument("--skip-pages", action="store_true", help="leave out the answers API pages")
    parser.add_argument(
        "--child", choices=["command", "download", "python", "reference", "pages"], help=argparse.SUPPRESS
    )
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.out)
        return

    with tempfile.TemporaryDirectory() as tmp, bench_database("export", Path(tmp)) as where:
        setup_django()
        from analyze import synthetic_study
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        study = synthetic_study(
            n_sources=args.sources, n_lay=args.laypeople, n_radiologists=args.radiologists, slug=SLUG
        )
        study.researchers.add(get_user_model().objects.create_user("bench-researcher"))
        print(
            f"built {args.sources} sources × {args.laypeople} laypeople + {args.radiologists} "
            f"radiologist(s) in {where} in {time.perf_counter() - started:.0f} s"
        )
        from django.db import connections

        connections.close_all()
        env = dict(os.environ)  # DATABASE_URL: the scratch database
        results, outputs = {}, {}
        runs = ("command", "download") if args.skip_python else ("command", "download", "python", "reference")
        for which in runs:
            outputs[which] = Path(tmp) / f"{which}.csv"
            results[which] = measure(which, outputs[which], env)
        with outputs["command"].open("rb") as handle:
            rows = sum(1 for _ in csv.reader(io.TextIOWrapper(handle, encoding="utf-8", newline=""))) - 1
        reference = outputs[runs[-1]].read_bytes()
        same = all(outputs[w].read_bytes() == reference for w in runs)
        paging = None
        if not args.skip_pages:
            measure("pages", Path(tmp) / "pages.json", env)
            paging = json.loads((Path(tmp) / "pages.json").read_text())
    mib = 1024 * 1024
    print(f"{rows:,} answer rows; {', '.join(results)} wrote identical bytes: {same}")
    for which, (seconds, peak) in results.items():
        print(
            f"  {which:<10} {seconds:7.1f} s  {rows / seconds:>10,.0f} rows/s  peak RSS {peak / mib:6.0f} MiB"
        )
    reference = list(results)[-1]
    ref_s, ref_m = results[reference]
    for which, (seconds, peak) in list(results.items())[:-1]:
        print(f"ratio {which} / {reference}: time {seconds / ref_s:.2f}×, peak RSS {peak / ref_m:.2f}×")
    if paging:
        print(
            f"answers API, {PAGE} rows a page: first page {paging['first'] * 1000:.0f} ms, page at row "
            f"{DEEP:,} {paging['deep'] * 1000:.0f} ms (ratio {paging['deep'] / paging['first']:.2f}×); "
            f"with offsets that page cost {paging['offset']:.1f} s (cursor / offset "
            f"{paging['deep'] / paging['offset']:.4f}×); same rows: {paging['same']}; walking "
            f"{paging['walked']} pages of 5,000 to it took {paging['walk']:.1f} s"
        )


if __name__ == "__main__":
    main()
