from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.importers.errors import ImportFormatError
from annotation.importers.study_file import read_study_file
from annotation.importers.write import study_records_write
from annotation.services import study_get_or_create


class Command(BaseCommand):
    help = "Import a study's sources and (optionally) simplifications from a wide/long CSV or JSONL file."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="study slug (created if new)")
        parser.add_argument("--title", default="", help="study title")

    def handle(self, *args, file: Path, study: str, title: str, **options):
        if not file.is_file():
            raise CommandError(f"{file}: no such file.")
        try:
            records = read_study_file(file)
            target, created = study_get_or_create(slug=study, title=title)
            counts = study_records_write(study=target, records=records, file=file.name)
        except (ImportFormatError, ValidationError) as exc:
            raise CommandError(f"Nothing was imported. {exc}") from exc
        verb = "Created" if created else "Updated"
        self.stdout.write(
            f"{verb} study {target.slug}: {counts['sources']} sources, {counts['systems']} systems, "
            f"{counts['simplifications']} simplifications."
        )
