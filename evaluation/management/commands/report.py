"""`manage.py report --study SLUG --out FILE.html`: the study's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.analysis.audit import reported_files
from evaluation.pages.context import study_report_html
from evaluation.services import analysis_snapshot_compute_here


class Command(BaseCommand):
    help = "Write a self-contained HTML report (tables, agreement, correlations, figures, audit, methods)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--out", required=True, type=Path, help="the HTML file to write")
        parser.add_argument(
            "--reported",
            default="auto",
            help=f"reported figures to audit against ({', '.join(reported_files())}; 'auto' = the file that "
            "fits the study's systems; '' = none)",
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        if options["reported"] not in ("", "auto", *reported_files()):
            raise CommandError(f"unknown reported-figures file {options['reported']!r}")
        # Not a web process: the report shows the data as they are now, computed here.
        snapshot = analysis_snapshot_compute_here(study=study)
        if snapshot.result is None:
            raise CommandError(f"the analysis of {study.slug} failed: {snapshot.error}")
        html = study_report_html(study=study, reported=options["reported"] or None)
        options["out"].write_text(html, encoding="utf-8")
        self.stderr.write(f"Wrote the report of {study.slug} to {options['out']}.")
