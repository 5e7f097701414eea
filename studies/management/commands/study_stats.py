import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.selectors import study_counts


class Command(BaseCommand):
    help = "Print a JSON object of a study's counts."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)

    def handle(self, *args, study: str, **options):
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study with slug {study!r}.")
        self.stdout.write(json.dumps(study_counts(study=target), indent=2))
