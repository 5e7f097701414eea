"""Show or change a study's instruments from the command line; the console's instrument editor
(console/instrument_views.py) does the same in the browser, through the same service,
study_instrument_save, and its version rule. `--add-error-spans` puts the clinical error-span
typology into the study's radiologist instrument (studies/error_span_services.py)."""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.instrument_selectors import study_instrument_current
from annotation.instrument_services import study_instrument_save
from annotation.models import Study, StudyInstrument
from instruments.validation import InstrumentError, instrument_read, instrument_to_yaml
from studies.error_span_services import study_error_spans_add


class Command(BaseCommand):
    help = (
        "Print a study's current instrument of a flow as YAML (--flow), list its versions (--versions), "
        "save an instrument file as its new definition (--save FILE --note WHY), or add the clinical "
        "error-span typology to the radiologist instrument (--add-error-spans [--note WHY])."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument(
            "--flow", choices=StudyInstrument.Flow.values, default=StudyInstrument.Flow.EXPERT
        )
        parser.add_argument(
            "--versions", action="store_true", help="list every version of the study's instruments"
        )
        parser.add_argument("--save", type=Path, metavar="FILE", help="a .yaml, .yml or .json instrument")
        parser.add_argument("--note", default="", help="why it changed (kept with a new version)")
        parser.add_argument(
            "--add-error-spans",
            action="store_true",
            help="add the clinical error-span typology (preset clinical_error_spans) to the radiologist "
            "instrument: in place before any answer, as a new version once answers exist",
        )

    def handle(
        self,
        *args,
        study: str,
        flow: str,
        versions: bool,
        save: Path | None,
        note: str,
        add_error_spans: bool,
        **options,
    ):
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study with slug {study!r}.")
        if versions:
            for row in StudyInstrument.objects.filter(study=target).order_by("flow", "key", "version"):
                mark = "current" if row.is_current else "kept"
                self.stdout.write(f"{row.flow}\t{row.key}\tv{row.version}\t{mark}\t{row.change_note}")
            return
        if add_error_spans:
            if save is not None:
                raise CommandError("--add-error-spans and --save are two changes: make one at a time.")
            try:
                row = study_error_spans_add(study=target, actor="manage.py instrument", note=note)
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from exc
            self.stdout.write(
                f"{target.slug}: error spans added; {row.key} version {row.version} is current ({row.flow})."
            )
            return
        if save is None:
            self.stdout.write(
                instrument_to_yaml(study_instrument_current(study=target, flow=flow).instrument)
            )
            return
        try:
            instrument = instrument_read(save)
            row = study_instrument_save(
                study=target, instrument=instrument, actor="manage.py instrument", note=note, flow=flow
            )
        except InstrumentError as exc:
            raise CommandError(f"{save}: " + "; ".join(exc.errors)) from exc
        except (OSError, ValueError) as exc:
            raise CommandError(f"{save}: {exc}") from exc
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"{target.slug}: {row.key} version {row.version} is current ({row.flow}).")
