from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.models import StudyMembership
from studies.importers.errors import ImportFormatError
from studies.importers.release import read_release
from studies.importers.study_file import study_slug_check
from studies.importers.write import release_records_write
from studies.management.commands.import_study import (
    add_owner_argument,
    owner_get,
    validation_message,
    warn_if_ownerless,
)
from studies.study_services import study_get_or_create
from studies.team_services import study_member_add

ACTOR = "manage.py import_release"


class Command(BaseCommand):
    help = "Import the authors' release of seed 003 (Yang, Cherian & Vucetic 2024) from its directory."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument("--study", required=True)
        parser.add_argument(
            "--title", default="Two-pronged evaluation of ChatGPT self-correction (2024 release)"
        )
        add_owner_argument(parser)

    def handle(self, *args, directory: Path, study: str, title: str, owner: str | None, **options):
        owner_user = owner_get(owner)
        try:
            study_slug_check(study)
            records = read_release(directory)
            with transaction.atomic():
                target, created = study_get_or_create(slug=study, title=title)
                if created:
                    activity_record(study=target, actor=ACTOR, verb="study.created", obj=target)
                if owner_user is not None:
                    study_member_add(
                        study=target, user=owner_user, role=StudyMembership.Role.OWNER, actor=ACTOR
                    )
                counts = release_records_write(study=target, records=records)
                activity_record(
                    study=target,
                    actor=ACTOR,
                    verb="release.imported",
                    details={"directory": directory.name, **counts},
                )
        except ImportFormatError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from exc
        except ValidationError as exc:
            raise CommandError(f"Nothing was imported. {validation_message(exc)}") from exc
        self.stdout.write(
            f"Imported the release into {study}: {counts['sources']} sources, {counts['systems']} systems, "
            f"{counts['simplifications']} simplifications, {counts['participants']} participants."
        )
        warn_if_ownerless(self, target)
