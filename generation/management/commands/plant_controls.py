"""`manage.py plant_controls`: plant degraded copies of a study's simplifications into
radiologists' pages (docs/guide/planted-controls.md).

    manage.py plant_controls --study demo --rate 0.2 [--seed 0]
    manage.py plant_controls --study demo --rate 0        # remove them (before any page is made)
    manage.py plant_controls --study demo --rate 0.2 --preview   # what would be planted; nothing written

Idempotent: the same rate and seed plant the same controls. Refused once radiologists' pages exist
and the controls would change.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from generation.services.controls import study_controls_plan, study_controls_plant


class Command(BaseCommand):
    help = "Plant degraded copies of a study's simplifications (controls) into radiologists' pages."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--rate", type=float, required=True, help="share of rows that are planted, 0-0.5")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--preview", action="store_true", help="print what would be planted, plant nothing"
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        if options.get("preview"):
            try:
                texts, plan = study_controls_plan(study=study, rate=options["rate"], seed=options["seed"])
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
            self.stdout.write(f"{study.slug}: {len(plan)} controls among {texts} texts would be planted:")
            for _text_id, control in sorted(plan.items()):
                self.stdout.write(
                    f"  {control.kind}\t{control.category}\t{control.severity}\t{control.text[:100]}"
                )
            return
        try:
            result = study_controls_plant(
                study=study, rate=options["rate"], seed=options["seed"], actor="manage.py plant_controls"
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        state = "planted" if result.changed else "unchanged:"
        self.stdout.write(
            f"{study.slug}: {state} {result.planted} controls among {result.texts} texts "
            f"(wanted {result.wanted}; {result.share:.1%} of rows planted, seed {result.seed})."
        )
