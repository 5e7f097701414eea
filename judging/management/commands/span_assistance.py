"""`manage.py span_assistance`: AI-assisted error-span marking for a study's radiologists.

    manage.py span_assistance --study demo --run 4 --planted-rate 0.2
    manage.py span_assistance --study demo --run 4 --planted-rate 0.2 --assisted-share 0.5 --seed 7
    manage.py span_assistance --study demo --off

The span widget is pre-filled with judge run 4's error spans and a seeded share (--planted-rate, in
(0, 0.5]) of planted wrong suggestions; --assisted-share randomises assistance per page.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from judging.models import JudgeRun
from judging.span_assistance import span_assistance_off, span_assistance_set

ACTOR = "manage.py span_assistance"


class Command(BaseCommand):
    help = "Turn AI-assisted error-span marking on (from a judge run) or off for a study."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--run", type=int, help="the judge run whose error spans are suggested")
        parser.add_argument("--planted-rate", help="share of planted wrong suggestions, in (0, 0.5]")
        parser.add_argument("--assisted-share", default="1", help="share of pages with suggestions, [0, 1]")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--off", action="store_true", help="turn the suggestions off")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        if options["off"]:
            changed = span_assistance_off(study=study, actor=ACTOR)
            self.stdout.write(f"{study.slug}: span suggestions {'off' if changed else 'were not on'}")
            return
        if options["run"] is None or options["planted_rate"] is None:
            raise CommandError("--run and --planted-rate are required (or --off)")
        run = JudgeRun.objects.filter(pk=options["run"]).first()
        if run is None:
            raise CommandError(f"no judge run {options['run']}")
        try:
            option = span_assistance_set(
                study=study,
                run=run,
                planted_rate=options["planted_rate"],
                assisted_share=options["assisted_share"],
                seed=options["seed"],
                actor=ACTOR,
            )
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            ) from None
        self.stdout.write(
            f"{study.slug}: span suggestions from {run.label}, planted rate {option.planted_rate}, "
            f"assisted share {option.assisted_share}, seed {option.seed}"
        )
