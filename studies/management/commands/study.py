"""`manage.py study open|close|status SLUG`: studies are imported as drafts, so a scripted set-up
opens them here; the same checks and messages as the admin's actions.

`manage.py study policy SLUG [local-only|deidentified|external-approved] [--endpoint URL]
--reason TEXT` sets the study's data policy, or prints it without a policy (privacy/study_policy_command.py,
registered through annotation/data_policy_hooks.py)."""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.data_policy_hooks import study_policy_action
from annotation.models import Study
from annotation.selectors import study_counts
from studies.study_services import study_close, study_open


class Command(BaseCommand):
    help = "Open or close a study for participants, or print its status and counts."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["open", "close", "status", "policy"])
        parser.add_argument("slug")
        parser.add_argument(
            "policy", nargs="?", choices=["local-only", "deidentified", "external-approved"], default=None
        )
        parser.add_argument(
            "--endpoint", default="", help="policy: the approved endpoint (external-approved)"
        )
        parser.add_argument("--reason", default="", help="policy: why it changes (kept in the activity log)")

    def handle(self, *args, action: str, slug: str, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"No study with slug {slug!r}.")
        if action == "policy":
            study_policy_action(
                study,
                options["policy"],
                endpoint=options["endpoint"],
                reason=options["reason"],
                stdout=self.stdout,
            )
            return
        if options["policy"]:
            raise CommandError(f"`study {action}` takes no policy; did you mean `study policy {slug} ...`?")
        if action == "status":
            self.stdout.write(
                json.dumps(
                    {"study": study.slug, "status": study.status, **study_counts(study=study)}, indent=2
                )
            )
            return
        try:
            service = study_open if action == "open" else study_close
            changed = service(study=study, actor=f"manage.py study {action}")
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        state = "open" if action == "open" else "closed"
        if changed:
            self.stdout.write(self.style.SUCCESS(f"Study {study.slug!r} is now {state}."))
        else:
            self.stdout.write(f"Study {study.slug!r} was already {state}; nothing changed.")
