"""manage.py import_study_archive FILE [--slug NEW] [--researcher USERNAME]: create the study of an
archive written by export_study_archive (or the dashboard's "Study archive" download), with every
answer; all or nothing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.answer_selectors import protocol_answers, typed_answer_coverage
from annotation.models import ItemAnswer
from evaluation.exports.study_archive import ArchiveDatabaseError, ArchiveError, study_archive_import


class Command(BaseCommand):
    help = "Create a study, with all its answers, from a radlay study archive (all or nothing)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("archive", help="the archive file (.zip)")
        parser.add_argument("--slug", help="import under this slug instead of the archived one")
        parser.add_argument("--researcher", help="username to add as the study's researcher")

    def handle(self, *args, **options) -> None:
        researcher = None
        if options["researcher"]:
            researcher = get_user_model().objects.filter(username=options["researcher"]).first()
            if researcher is None:
                raise CommandError(f"no user {options['researcher']!r}")
        try:
            with open(options["archive"], "rb") as archive_file:
                study = study_archive_import(
                    archive_file=archive_file,
                    slug=options["slug"],
                    researcher=researcher,
                    actor="manage.py import_study_archive",
                )
        except OSError as exc:
            raise CommandError(f"cannot read {options['archive']}: {exc.strerror}") from None
        except ArchiveError as exc:
            raise CommandError(f"{options['archive']}: {exc}; nothing was imported") from None
        except ArchiveDatabaseError as exc:
            raise CommandError(
                f"database error while importing {options['archive']}: {exc}; nothing was imported"
            ) from None
        typed = typed_answer_coverage(study=study)
        answers = typed["lay_answers"][0] + typed["expert_ratings"][0]
        answers += (
            ItemAnswer.objects.filter(participant__study=study, control__isnull=True)
            .exclude(protocol_answers())
            .count()
        )
        participants = study.participants.count()
        self.stdout.write(
            f"imported study {study.slug!r} ({participants} participants, {answers} answers and ratings)"
        )
