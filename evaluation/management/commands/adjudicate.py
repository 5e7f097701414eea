"""`manage.py adjudicate list SLUG [--all]`: the study's adjudication queue (most disagreement
first; --all adds the units already adjudicated), as JSON.

`manage.py adjudicate record SLUG UNIT VALUE --reason misread|guideline_unclear|genuine_ambiguity
--as USERNAME [--guideline-gap] [--note TEXT]`: record the consensus of UNIT (a token of the list)
as the member USERNAME, whose role must allow adjudicating; the same service and refusals as the
console page and the API."""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study, StudyMembership
from annotation.selectors import study_role
from evaluation.adjudication_selectors import adjudication_queue, unit_records
from evaluation.adjudication_services import REASONS, adjudication_record
from studies.team_services import user_by_username


class Command(BaseCommand):
    help = "List a study's adjudication queue, or record a consensus label."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["list", "record"])
        parser.add_argument("slug")
        parser.add_argument("unit", nargs="?", default="", help="record: the unit's token (from list)")
        parser.add_argument("value", nargs="?", default=None, help="record: the consensus value")
        parser.add_argument("--all", action="store_true", help="list: the decided units too")
        parser.add_argument("--reason", default="", help=f"record: one of {', '.join(REASONS.values)}")
        parser.add_argument("--as", dest="username", default="", help="record: the adjudicating member")
        parser.add_argument(
            "--guideline-gap", action="store_true", help="record: the guideline lacks this case"
        )
        parser.add_argument("--note", default="", help="record: a note kept with the label")

    def handle(self, *args, action: str, slug: str, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"No study with slug {slug!r}.")
        if action == "list":
            units = adjudication_queue(study=study, include_decided=options["all"])
            self.stdout.write(json.dumps(unit_records(study=study, units=units), indent=2, default=str))
            return
        if not options["unit"] or options["value"] is None:
            raise CommandError("record: give the UNIT (from `adjudicate list`) and the VALUE.")
        try:
            user = user_by_username(username=options["username"])
        except ValidationError as exc:
            raise CommandError(f"--as: {' '.join(exc.messages)}") from None
        role = study_role(user=user, study=study)
        if role is None or not StudyMembership.Role(role).allows("adjudicate"):
            raise CommandError(f"--as: {user.get_username()!r} is not a member who may adjudicate {slug!r}.")
        try:
            label = adjudication_record(
                study=study,
                unit=options["unit"],
                value=options["value"],
                reason=options["reason"],
                adjudicator=user,
                guideline_gap=options["guideline_gap"],
                note=options["note"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(
            self.style.SUCCESS(f"Recorded {label.item_key} = {json.dumps(label.value)} ({label.reason}).")
        )
