"""manage.py export_study_archive --study SLUG --out FILE: the whole study, every answer included,
as one archive file (evaluation/study_archive.py) that import_study_archive reads on another
radlay."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.study_archive import study_archive_write


class Command(BaseCommand):
    help = "Write a study with all its answers to one archive file (a zip of JSON with a manifest)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--out", required=True, help="the archive file to write (.zip)")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        with open(options["out"], "wb") as out:
            counts = study_archive_write(study=study, out=out)
        rows = ", ".join(f"{n} {table.split('.')[1]}" for table, n in counts.items() if n)
        self.stdout.write(f"wrote {options['out']}: {rows}")
