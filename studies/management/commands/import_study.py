from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Study, System
from studies.importers.errors import ImportFormatError
from studies.importers.report_file import study_file_open
from studies.importers.write import study_file_import
from studies.team_services import user_by_username
from surveys.rate_each_pair.services import study_instrument_attach


class Command(BaseCommand):
    help = (
        "Import a study's sources and (optionally) simplifications from a wide/long CSV or JSONL file, "
        "or whole reports from a FHIR R4 Bundle (.json, .ndjson) or HL7 v2 ORU^R01 messages (.hl7)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="study slug (created if new)")
        parser.add_argument("--title", default="", help="study title")
        parser.add_argument(
            "--instrument",
            metavar="PRESET",
            help="attach this shipped instrument for the rate-each-pair flow (e.g. medlaybench_002)",
        )
        parser.add_argument(
            "--reference-system",
            metavar="KEY",
            help="the system whose texts are the references of the rate-each-pair flow (System.is_reference)",
        )
        parser.add_argument(
            "--language",
            default="",
            help="the language participants see (one of settings.LANGUAGES, e.g. en, es); "
            "default: unchanged, English for a new study",
        )
        parser.add_argument(
            "--split-sentences",
            action="store_true",
            help="FHIR/HL7 only: one source per sentence of each report (Source.report_key names the report)",
        )
        add_owner_argument(parser)

    def handle(
        self,
        *args,
        file: Path,
        study: str,
        title: str,
        owner: str | None,
        instrument: str | None = None,
        reference_system: str | None = None,
        language: str = "",
        split_sentences: bool = False,
        **options,
    ):
        if not file.is_file():
            raise CommandError(f"{file}: no such file.")
        owner_user = owner_get(owner)
        actor = "manage.py import_study"
        try:
            # One transaction: a refused instrument or reference leaves nothing imported either.
            with transaction.atomic():
                target, created, counts = study_file_import(
                    slug=study,
                    title=title,
                    study_file=study_file_open(file, split_sentences=split_sentences),
                    owner=owner_user,
                    actor=actor,
                    language=language,
                )
                if reference_system:
                    reference_mark(study=target, key=reference_system)
                if instrument:
                    study_instrument_attach(study=target, preset_name=instrument, actor=actor)
        except ImportFormatError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from exc
        except ValidationError as exc:
            raise CommandError(f"Nothing was imported. {validation_message(exc)}") from exc
        verb = "Created" if created else "Updated"
        self.stdout.write(
            f"{verb} study {target.slug}: {counts['sources']} sources, {counts['systems']} systems, "
            f"{counts['simplifications']} simplifications."
        )
        warn_if_ownerless(self, target)


def reference_mark(*, study: Study, key: str) -> None:
    """Make `key` the study's one reference system (surveys/rate_each_pair/selectors.py reads it)."""
    if not System.objects.filter(study=study, key=key).exists():
        raise ValidationError({"reference_system": f"the study has no system {key!r}."})
    System.objects.filter(study=study).exclude(key=key).filter(is_reference=True).update(is_reference=False)
    System.objects.filter(study=study, key=key).update(is_reference=True)


def add_owner_argument(parser) -> None:
    parser.add_argument(
        "--owner",
        metavar="USERNAME",
        help="the account that owns the study (sees it on the dashboard and manages its team)",
    )


def owner_get(username: str | None):
    """The `--owner` account, looked up before anything is written."""
    if username is None:
        return None
    try:
        return user_by_username(username=username)
    except ValidationError as exc:
        raise CommandError(f"Nothing was imported. --owner: {' '.join(exc.messages)}") from exc


def warn_if_ownerless(command: BaseCommand, study: Study) -> None:
    if not study.memberships.exists():
        command.stderr.write(
            f"Study {study.slug} has no team yet: only superusers see it. "
            "Pass --owner USERNAME to give it one."
        )


def validation_message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items())
    return " ".join(exc.messages)
