"""`manage.py export --study SLUG --format csv|xlsx|json --out PATH [--include-external-ids]`:
every raw answer of a study in long format (one row per answer), written as it is read."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.exporters import FORMATS
from evaluation.exporters.answers import AnswerExport


class Command(BaseCommand):
    help = "Export every raw answer of a study (pseudonymous unless --include-external-ids)."
    # A read-only export needs none of the project checks, which import every URLconf and view
    # (seconds of a command that otherwise takes a few).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS))
        parser.add_argument("--out", required=True, type=Path, help="file to write")
        parser.add_argument(
            "--include-external-ids",
            action="store_true",
            help="add the recruiter's participant ids (e.g. Prolific PIDs): personal data",
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        export = AnswerExport(
            study=study, file_format=options["format"], include_external_ids=options["include_external_ids"]
        )
        with options["out"].open("wb") as out:
            export.write(out)
        self.stderr.write(f"Wrote {export.rows} answers of {study.slug} to {options['out']}.")
