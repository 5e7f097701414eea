"""Import a study archive of 260 participants and 10 000 item answers; the target is ≤ 30 s on two
cores.

    DATABASE_URL=postgres://… .venv/bin/python bench/study_archive.py
    DATABASE_URL=postgres://… .venv/bin/python bench/study_archive.py --no-reference
    .venv/bin/python bench/study_archive.py --participants 60 --answers 2000      # throwaway SQLite

Builds (with bulk_create) a seed-002-like study: 40 sources, four systems and a reference system,
the medlaybench_002 instrument, `--participants` raters and `--answers` item answers spread over
them (with a revision for one answer in twenty), writes its archive with `export_study_archive`,
then imports it, each in a fresh process against a scratch database (bench/scratch.py):

- radlay: `manage.py import_study_archive FILE --slug …` (streamed rows, batched inserts, one
  transaction);
- reference: the previous importer's way, row by row: every row validated with full_clean (a
  query per foreign key) and inserted with its own INSERT, in one transaction (skip it with
  --no-reference: it takes minutes).

Prints the wall time, the importing process's CPU time, its peak RSS and the number of SQL
statements of each, the ratio of radlay's time to the 30 s target, and the load average.
"""

from __future__ import annotations

import argparse
import io
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
TARGET_SECONDS = 30.0
SYSTEMS = ("scgr", "baseline", "cot", "plain")
N_SOURCES = 40


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()


def build_study(slug: str, participants: int, answers: int) -> None:
    """The study, written with bulk_create (not through the survey: the bench times the import)."""
    from django.db import transaction

    from annotation.models import (
        AnswerRevision,
        ItemAnswer,
        Participant,
        Simplification,
        SimplificationText,
        Source,
        Study,
        StudyInstrument,
        System,
        text_hash,
    )
    from instruments.presets import preset_load
    from instruments.validation import instrument_to_data
    from instruments.versioning import instrument_fingerprint, instrument_structure_fingerprint

    rng = random.Random(0)
    instrument = preset_load("medlaybench_002")
    with transaction.atomic():
        study = Study.objects.create(slug=slug, title="Archive bench", status=Study.Status.OPEN)
        reference = System.objects.create(study=study, key="expert", is_reference=True)
        systems = [
            System.objects.create(study=study, key=key, position=i + 1) for i, key in enumerate(SYSTEMS)
        ]
        sources = Source.objects.bulk_create(
            Source(study=study, key=f"s{i:03d}", text=f"Finding {i}: a {i} mm nodule.", position=i)
            for i in range(N_SOURCES)
        )
        texts, simplifications = [], []
        for source in sources:
            for system in (reference, *systems):
                text = f"{system.key} says: a small {source.position} mm spot in the lung."
                texts.append(SimplificationText(source=source, text=text, text_hash=text_hash(text)))
        SimplificationText.objects.bulk_create(texts)
        per_source = len(SYSTEMS) + 1
        pairs = []
        for s, source in enumerate(sources):
            group = texts[s * per_source : (s + 1) * per_source]
            for system, text in zip((reference, *systems), group, strict=True):
                simplifications.append(Simplification(source=source, system=system, shown_text=text))
            pairs += [(source, shown, group[0]) for shown in group[1:]]
        Simplification.objects.bulk_create(simplifications)
        row = StudyInstrument.objects.create(
            study=study,
            key=instrument.key,
            version=instrument.version,
            flow="pairs",
            definition=instrument_to_data(instrument),
            fingerprint=instrument_fingerprint(instrument),
            structure_fingerprint=instrument_structure_fingerprint(instrument),
            preset="medlaybench_002",
        )
        people = Participant.objects.bulk_create(
            Participant(
                study=study,
                role="radiologist" if p % 3 else "layperson",
                pseudonym=f"R{p:03d}",
                token=f"bench-{slug}-{p}",
                language="en",
            )
            for p in range(participants)
        )
        cells = [(pair, item.key) for pair in pairs for item in instrument.items]
        rows = []
        for i in range(answers):
            p, j = i % participants, i // participants
            (source, shown, ref), item_key = cells[(p * 7 + j) % len(cells)]
            score = rng.randint(1, 5)
            rows.append(
                ItemAnswer(
                    participant=people[p], instrument=row, item_key=item_key, source=source,
                    shown_text=shown, reference_text=ref, value=score, score=float(score),
                    language="en", time_spent_ms=rng.randint(500, 9000),
                )
            )  # fmt: skip
        ItemAnswer.objects.bulk_create(rows, batch_size=2000)
        AnswerRevision.objects.bulk_create(
            AnswerRevision(
                participant_id=answer.participant_id, answer_type="annotation.ItemAnswer",
                answer_id=answer.pk, previous={"value": 3}, previous_at=answer.created_at,
                revised_at=answer.updated_at,
            )
            for answer in rows[::20]
        )  # fmt: skip


def run_radlay(path: Path, slug: str) -> None:
    from django.core.management import call_command

    call_command("import_study_archive", str(path), "--slug", slug, stdout=io.StringIO())


def run_reference(path: Path, slug: str) -> None:
    """The previous importer: each row deserialized, full_clean'ed and saved on its own."""
    from django.core import serializers
    from django.db import transaction

    from annotation.models import AnswerRevision, Participant, Study
    from evaluation.exports.study_archive_reader import BoundedArchive
    from evaluation.exports.study_archive_tables import ARCHIVED, REVISION_TYPES

    keys: dict = {}
    with open(path, "rb") as handle, BoundedArchive(handle) as archive, transaction.atomic():
        for table in ARCHIVED:
            keys[table.model] = {}
            for row in archive.rows(f"{table.label}.jsonl"):
                (item,) = serializers.deserialize("python", [row], ignorenonexistent=True)
                obj = item.object
                old = obj.pk
                for f in table.model._meta.concrete_fields:
                    if f.is_relation and getattr(obj, f.attname) is not None:
                        mapped = keys.get(f.related_model, {}).get(getattr(obj, f.attname))
                        setattr(obj, f.attname, mapped)
                for column, (_, target) in table.json_keys.items():
                    value = getattr(obj, column) or []
                    setattr(
                        obj, column, [keys[target].get(v if not isinstance(v, list) else v[1]) for v in value]
                    )
                if isinstance(obj, Study):
                    obj.slug = slug
                if isinstance(obj, Participant):
                    obj.token = f"{obj.token}-ref"
                if isinstance(obj, AnswerRevision):
                    obj.answer_id = keys[REVISION_TYPES[obj.answer_type]][obj.answer_id]
                obj.pk = None
                obj.full_clean(validate_unique=False, validate_constraints=False)
                obj.save_base(raw=True, force_insert=True)
                keys[table.model][old] = obj.pk


def child(which: str, path: Path, slug: str) -> None:
    setup_django()
    from django.db import connection

    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    started, cpu_started = time.perf_counter(), time.process_time()
    with connection.execute_wrapper(count):
        (run_radlay if which == "radlay" else run_reference)(path, slug)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{seconds} {cpu} {peak} {statements}")


def measure(which: str, path: Path, slug: str) -> tuple[float, float, int, int]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", which, "--file", str(path), "--slug", slug],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, cpu, peak, statements = result.stdout.split()[-4:]
    return float(seconds), float(cpu), int(peak), int(statements)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--participants", type=int, default=260)
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--no-reference", action="store_true", help="skip the row-by-row reference")
    parser.add_argument("--child", choices=["radlay", "reference"], help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--slug", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.file, args.slug)
        return

    with tempfile.TemporaryDirectory() as tmp, bench_database("archive", Path(tmp)) as where:
        setup_django()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        build_study("bench-archive", args.participants, args.answers)
        path = Path(tmp) / "archive.zip"
        call_command(
            "export_study_archive", "--study", "bench-archive", "--out", str(path), stdout=io.StringIO()
        )
        connections.close_all()
        print(
            f"{args.participants} participants, {args.answers} item answers: an archive of "
            f"{path.stat().st_size / 1e6:.1f} MB, imported in {where}"
        )
        load_before = os.getloadavg()[0]
        runs = (
            {"radlay": "bench-copy"}
            if args.no_reference
            else {"radlay": "bench-copy", "reference": "bench-ref"}
        )
        results = {which: measure(which, path, slug) for which, slug in runs.items()}
        load_after = os.getloadavg()[0]
        from annotation.models import ItemAnswer

        imported = ItemAnswer.objects.filter(participant__study__slug="bench-copy").count()
        assert imported == args.answers, f"imported {imported} answers of {args.answers}"
    mib = 1024 * 1024
    for which, (seconds, cpu, peak, statements) in results.items():
        print(
            f"  {which:<10} {seconds:7.1f} s (process CPU {cpu:5.1f} s), peak RSS {peak / mib:5.0f} MiB, "
            f"{statements} SQL statements"
        )
    seconds = results["radlay"][0]
    print(f"ratio radlay / target ({TARGET_SECONDS:.0f} s): {seconds / TARGET_SECONDS:.2f}")
    if "reference" in results:
        print(f"ratio radlay / row-by-row reference: {seconds / results['reference'][0]:.3f}")
    print(f"load average (1 min) {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
