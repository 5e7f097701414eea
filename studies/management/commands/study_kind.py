"""`manage.py study_kind`: what the console's new-study form and Flows page do, from a shell, through
the same services (studies/study_kind_services.py).

    manage.py study_kind --list
    manage.py study_kind --study s002 --create --title "Seed 002" --kind medlaybench_002
    manage.py study_kind --study s000 --file my_instrument.yaml
    manage.py study_kind --study s000 --reference-system human     # '' for none
    manage.py study_kind --study pw --kind pairwise_clinical --launch
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotation.models import Study
from instruments.validation import InstrumentError, instrument_read
from studies.management.commands.import_study import validation_message
from studies.study_kind_services import (
    study_create_as,
    study_flows_launch,
    study_instrument_file_attach,
    study_kind_attach,
    study_launch_problems,
    study_reference_set,
)
from studies.study_kinds import KIND_PRESETS, study_kinds

ACTOR = "manage.py study_kind"


class Command(BaseCommand):
    help = "Set a study up as one of radlay's kinds of study (a shipped preset or an instrument file)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--list", action="store_true", help="list the kinds, what each asks, its paper")
        parser.add_argument("--study", help="study slug")
        parser.add_argument("--create", action="store_true", help="create the study (with --title)")
        parser.add_argument("--title", default="")
        parser.add_argument("--kind", choices=KIND_PRESETS)
        parser.add_argument("--file", type=Path, help="the team's own instrument (.yaml, .yml, .json)")
        parser.add_argument("--reference-system", metavar="KEY", help="the reference system ('' for none)")
        parser.add_argument("--launch", action="store_true", help="check the set-up and open the study")

    def handle(self, *args, **options) -> None:
        if options["list"]:
            for kind in study_kinds():
                self.stdout.write(f"{kind.key}\t{kind.flow}\t{kind.title}\tasks {', '.join(kind.groups)}")
                self.stdout.write(f"\t{kind.citation_text}")
            return
        if not options["study"]:
            raise CommandError("--study is required (or --list).")
        if options["kind"] and options["file"]:
            raise CommandError("--kind and --file are two instruments: give one.")
        instrument = None
        if options["file"]:
            try:
                instrument = instrument_read(options["file"])
            except (InstrumentError, OSError) as exc:
                raise CommandError(f"{options['file']}: {exc}") from None
        try:
            with transaction.atomic():
                study = self._study(options, instrument)
                if not options["create"]:
                    if instrument is not None:
                        study_instrument_file_attach(study=study, instrument=instrument, actor=ACTOR)
                    elif options["kind"]:
                        study_kind_attach(study=study, kind=options["kind"], actor=ACTOR)
                if options["reference_system"] is not None:
                    study_reference_set(study=study, key=options["reference_system"], actor=ACTOR)
            if options["launch"]:
                study_flows_launch(study=study, actor=ACTOR)
        except ValidationError as exc:
            raise CommandError(validation_message(exc)) from None
        asked = ", ".join(
            f"{row.key} v{row.version} ({row.flow})" for row in study.instruments.filter(is_current=True)
        )
        self.stdout.write(f"{study.slug} ({study.get_status_display()}): asks {asked}.")
        for field, problems in study_launch_problems(study=study).items():
            for problem in problems:
                self.stdout.write(f"  before launching, {field}: {problem}")

    def _study(self, options, instrument) -> Study:
        slug = options["study"]
        if options["create"]:
            return study_create_as(
                slug=slug,
                title=options["title"] or slug,
                actor=ACTOR,
                settings={},
                kind=options["kind"] or KIND_PRESETS[0],
                instrument=instrument,
            )
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"No study {slug!r} (add --create to create it).")
        return study
