"""Set up the embedded demo: the demo study (12 radiology sentences written for radlay, three
systems), a researcher login, and invite links for one radiologist and four laypeople. Safe to run
again: it reuses what exists and prints the same links."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from annotation.activity_services import activity_record
from annotation.models import Participant, Study
from annotation.participant_services import participants_invite
from studies.importers.study_file import read_study_file
from studies.importers.write import study_records_write
from studies.study_services import study_get_or_create, study_set_status

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "demo_study.csv"
DEMO_SLUG = "demo"
DEMO_USER = "researcher"
DEMO_PASSWORD = "radlay-demo"
COMMAND = "manage.py demo"
WANTED = {Participant.Role.RADIOLOGIST: 1, Participant.Role.LAYPERSON: 4}


class Command(BaseCommand):
    help = "Create (or reuse) the demo study, a researcher login and invite links, and print them."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        if settings.RADLAY_PRODUCTION:
            raise CommandError(
                "manage.py demo creates a superuser with a published password; it does not run "
                "under production settings."
            )
        with transaction.atomic():
            study, created = study_get_or_create(
                slug=DEMO_SLUG, title="radlay demo: simplifying radiology findings"
            )
            if created:
                study_records_write(study=study, records=read_study_file(DEMO_FILE), file=DEMO_FILE.name)
                study.description = (
                    "Demo study shipped with radlay: 12 sentences written for radlay, 3 systems."
                )
                study.save(update_fields=["description"])
                study_set_status(study=study, status=Study.Status.OPEN)
                # The same entry a study created in the console gets, so the demo's Activity page
                # starts where a researcher's own study would.
                activity_record(
                    study=study, actor=COMMAND, verb="study.created", obj=study, details={"slug": study.slug}
                )
            user, user_created = get_user_model().objects.get_or_create(
                username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True}
            )
            if user_created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            study.researchers.add(user)
            for role, count in WANTED.items():
                missing = count - study.participants.filter(role=role, recruitment={}).count()
                if missing > 0:
                    participants_invite(study=study, role=role, count=missing)
        base = base_url.rstrip("/")
        self.stdout.write("")
        self.stdout.write("radlay demo is ready")
        # Researchers work in the dashboard (they need not be staff); the admin is for set-up.
        login = base + reverse("evaluation:login")
        self.stdout.write(f"  Researcher login: {login}   user {DEMO_USER}   password {DEMO_PASSWORD}")
        self.stdout.write(
            f"  Dashboard:        {base}{reverse('evaluation:study-detail', args=[study.slug])}"
        )
        self.stdout.write(
            f"  Study set-up:     {base}{reverse('console:study-setup', args=[study.slug])}"
            "   (texts, questions, sources, invites)"
        )
        self.stdout.write(f"  New study:        {base}{reverse('console:study-new')}")
        self.stdout.write(f"  Admin (set-up):   {base}{reverse('admin:index')}")
        for role in WANTED:
            for participant in study.participants.filter(role=role, recruitment={}).order_by("id")[
                : WANTED[role]
            ]:
                link = base + reverse("surveys:entry", args=[participant.token])
                self.stdout.write(f"  {role.capitalize():<12} {participant.pseudonym}: {link}")
        self.stdout.write(f"  Open recruitment: {base}/join/{study.slug}/?PROLIFIC_PID=demo-1")
        self.stdout.write("")
