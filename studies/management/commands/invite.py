from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from annotation.models import Participant, Study
from annotation.participant_services import participants_invite
from surveys.rate_each_pair.services import pairs_participants_invite


class Command(BaseCommand):
    help = "Create participants of a study and print one survey link per line."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--role", choices=Participant.Role.values)
        parser.add_argument(
            "--rater-group",
            default="",
            help="a rater group of the study's instrument (rate-each-pair flow), e.g. annotator; "
            "--role then says whether they are radiologists or laypeople where the group is neither",
        )
        parser.add_argument("--count", type=int, default=1)
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(
        self, *args, study: str, role: str | None, rater_group: str, count: int, base_url: str, **options
    ):
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study with slug {study!r}.")
        if not role and not rater_group:
            raise CommandError("Give --role, --rater-group, or both.")
        actor = "manage.py invite"
        try:
            if rater_group:
                participants = pairs_participants_invite(
                    study=target, rater_group=rater_group, role=role or "", count=count, actor=actor
                )
            else:
                participants = participants_invite(study=target, role=role or "", count=count, actor=actor)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        for participant in participants:
            self.stdout.write(base_url.rstrip("/") + reverse("surveys:entry", args=[participant.token]))
