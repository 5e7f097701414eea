"""`manage.py deidentify --study SLUG [--again] [--approve]`: find the identifiers of the study's
sources not yet de-identified (all of them with --again), print a summary per kind, and with
--approve approve the study's de-identification (refused, naming the sources, while a finding is
still to review)."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from privacy.selectors import unresolved_sources
from privacy.services import deidentification_approve, study_deidentify

ACTOR = "manage.py deidentify"


class Command(BaseCommand):
    help = "De-identify a study's sources, print the findings per kind, and optionally approve."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument(
            "--again", action="store_true", help="detect again in every source (edits are lost)"
        )
        parser.add_argument("--approve", action="store_true", help="approve the study's de-identification")

    def handle(self, *args, study: str, again: bool, approve: bool, **options):
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study with slug {study!r}.")
        counts = study_deidentify(study=target, actor=ACTOR, again=again)
        self.stdout.write(f"{'kind':<10} {'hidden':>7} {'to review':>10} {'removed':>8} {'edited':>7}")
        for kind, row in counts.items():
            self.stdout.write(
                f"{kind:<10} {row['accepted']:>7} {row['review']:>10} {row['removed']:>8} {row['edited']:>7}"
            )
        if not counts:
            self.stdout.write("(no identifiers found)")
        blocked = unresolved_sources(study=target)
        if blocked:
            self.stdout.write(f"Sources with findings to review: {', '.join(blocked)}")
        if approve:
            try:
                policy = deidentification_approve(study=target, actor=ACTOR)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
            self.stdout.write(
                self.style.SUCCESS(
                    f"De-identification of {target.slug!r} approved: {policy.approved_findings} findings, "
                    f"{policy.approved_edited} edited by reviewers."
                )
            )
