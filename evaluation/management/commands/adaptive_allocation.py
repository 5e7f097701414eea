"""`manage.py adaptive_allocation`: adaptive allocation with a stopping rule for a study's laypeople.

    manage.py adaptive_allocation --study demo --outcome understanding --system cot_sc \
        --against plain_bs --target-width 0.5 --max-participants 60 [--close-recruitment] [--pilot release]
    manage.py adaptive_allocation --study demo --status
    manage.py adaptive_allocation --study demo --off

The option is the console's (/console/<slug>/adaptive/): the same service, the same refusals
(a target the planner cannot reach is refused with the width it can), recorded in the activity log.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study, System
from evaluation.planning.adaptive import adaptive_allocation_off, adaptive_allocation_set, adaptive_progress

ACTOR = "manage.py adaptive_allocation"


class Command(BaseCommand):
    help = "Turn adaptive allocation (with its stopping rule) on or off for a study, or show where it stands."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--outcome", help="a lay outcome of the planner, e.g. understanding")
        parser.add_argument("--system", help="key of the compared system")
        parser.add_argument("--against", help="key of its baseline system")
        parser.add_argument("--target-width", help="full width of the 95 %% interval at which to close")
        parser.add_argument("--max-participants", help="the most laypeople the study can recruit")
        parser.add_argument("--close-recruitment", action="store_true", help="close recruitment itself")
        parser.add_argument("--pilot", help="slug of the study whose answers give the variances")
        parser.add_argument("--off", action="store_true", help="back to the fixed square")
        parser.add_argument("--status", action="store_true", help="where the primary comparison stands")

    def _system(self, study: Study, key: str | None, option: str) -> System:
        system = System.objects.filter(study=study, key=key).first() if key else None
        if system is None:
            raise CommandError(f"{option}: no system {key!r} in study {study.slug!r}")
        return system

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        if options["off"]:
            changed = adaptive_allocation_off(study=study, actor=ACTOR)
            self.stdout.write(f"{study.slug}: adaptive allocation {'off' if changed else 'was not on'}")
            return
        if options["status"]:
            shown = adaptive_progress(study=study)
            if shown is None:
                self.stdout.write(f"{study.slug}: adaptive allocation was never set")
                return
            self.stdout.write(
                f"{study.slug}: {shown['comparison']}: estimate {shown.get('estimate')}, interval "
                f"[{shown.get('low')}, {shown.get('high')}], projected width {shown.get('projected_width')} "
                f"against target {shown['target_width']}: "
                + ("can close" if shown.get("can_close") else "keep recruiting")
            )
            return
        missing = [
            name
            for name in ("outcome", "system", "against", "target_width", "max_participants")
            if not options[name]
        ]
        if missing:
            raise CommandError(
                "required (or --off / --status): "
                + ", ".join("--" + name.replace("_", "-") for name in missing)
            )
        pilot = None
        if options["pilot"]:
            pilot = Study.objects.filter(slug=options["pilot"]).first()
            if pilot is None:
                raise CommandError(f"--pilot: no study {options['pilot']!r}")
        try:
            option = adaptive_allocation_set(
                study=study,
                outcome=options["outcome"],
                system_a=self._system(study, options["system"], "--system"),
                system_b=self._system(study, options["against"], "--against"),
                target_width=options["target_width"],
                max_participants=options["max_participants"],
                close_recruitment=options["close_recruitment"],
                pilot=pilot,
                actor=ACTOR,
            )
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            ) from None
        self.stdout.write(
            f"{study.slug}: adaptive allocation on, {option.system_a.key} − {option.system_b.key} on "
            f"{option.outcome}, target width {option.target_width} (the fixed square reaches "
            f"{option.components.get('width_at_max')} at {option.max_participants} participants)"
        )
