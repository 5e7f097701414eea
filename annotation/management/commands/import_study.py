from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.importers.errors import ImportFormatError
from annotation.importers.study_file import StudyFile
from annotation.importers.write import study_file_import


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
            target, created, counts = study_file_import(slug=study, title=title, study_file=StudyFile(file))
        except ImportFormatError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from exc
        except ValidationError as exc:
            raise CommandError(f"Nothing was imported. {validation_message(exc)}") from exc
        verb = "Created" if created else "Updated"
        self.stdout.write(
            f"{verb} study {target.slug}: {counts['sources']} sources, {counts['systems']} systems, "
            f"{counts['simplifications']} simplifications."
        )


def validation_message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items())
    return " ".join(exc.messages)
