"""`manage.py audit --study SLUG --reported FILE`: a paper's reported figures next to radlay's,
figure by figure, with whether they agree within the reported rounding."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.analysis.audit import ReportedFileError, audit, audit_text, load_reported, reported_files
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.services import study_analysis_compute


class Command(BaseCommand):
    help = (
        "Compare a study's figures with the figures a paper reported "
        "(YAML/JSON, see evaluation/analysis/reported/)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument(
            "--reported",
            required=True,
            help=f"reported-figures file, or the name of a shipped one ({', '.join(reported_files())})",
        )
        parser.add_argument(
            "--analysis", default="", help="use this `analyze --json` file instead of recomputing"
        )
        parser.add_argument("--json", dest="json_path", default="", help="also write the audit as JSON here")
        parser.add_argument(
            "--mismatches", action="store_true", help="list only the figures that do not agree"
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        path = reported_files().get(options["reported"]) or Path(options["reported"])
        if not path.is_file():
            raise CommandError(f"reported-figures file {options['reported']!r} not found")
        try:
            reported = load_reported(path)
        except ReportedFileError as exc:
            raise CommandError(str(exc)) from exc
        if options["analysis"]:
            analysis = json.loads(Path(options["analysis"]).read_text(encoding="utf-8"))
            if analysis.get("study") != study.slug:
                raise CommandError(
                    f"{options['analysis']} is the analysis of {analysis.get('study')!r}, "
                    f"not of {study.slug!r}"
                )
        else:
            # Reported figures are means and counts: the correlations are not needed here.
            analysis = study_analysis_compute(study=study, options=AnalysisOptions(correlations=False))
        result = audit(analysis, reported)
        result["study"] = study.slug
        result["reported_file"] = path.name
        self.stdout.write(audit_text(result, only_mismatches=options["mismatches"]))
        if options["json_path"]:
            Path(options["json_path"]).write_text(
                json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
