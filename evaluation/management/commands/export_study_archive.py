"""manage.py export_study_archive --study SLUG --out FILE: the whole study, every answer included,
as one archive file (evaluation/exports/study_archive.py) that import_study_archive reads on another
radlay. The sources are de-identified (privacy/) unless --originals: the operator's request for the
original reports and their identifiers, recorded in the study's activity log."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.exports.study_archive import study_archive_write
from privacy.services import originals_release_record


class Command(BaseCommand):
    help = "Write a study with all its answers to one archive file (a zip of JSON with a manifest)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--out", required=True, help="the archive file to write (.zip)")
        parser.add_argument(
            "--originals",
            action="store_true",
            help="carry the original reports and the de-identification findings (their identifiers) "
            "instead of the de-identified text; recorded in the study's activity log",
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        if options["originals"]:
            originals_release_record(
                study=study, actor="manage.py export_study_archive --originals", purpose="study archive"
            )
        with open(options["out"], "wb") as out:
            counts = study_archive_write(study=study, out=out, originals=options["originals"])
        rows = ", ".join(f"{n} {table.split('.')[1]}" for table, n in counts.items() if n)
        sources = "original reports" if options["originals"] else "de-identified sources"
        self.stdout.write(f"wrote {options['out']} ({sources}): {rows}")
