"""`manage.py analyze --study SLUG --json FILE`: the whole analysis of a study as one JSON file
(the same document as GET /api/studies/<slug>/analysis/)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.exports.metrics_table import metrics_csv
from evaluation.services import study_analysis_compute


class Command(BaseCommand):
    help = "Compute Tables 1–3, agreement, correlations, intervals and comparisons of a study as JSON."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--json", dest="json_path", default="-", help="output file ('-' = stdout)")
        parser.add_argument(
            "--resamples", type=int, default=AnalysisOptions.n_resamples, help="bootstrap resamples per mean"
        )
        parser.add_argument(
            "--correlation-resamples",
            type=int,
            default=AnalysisOptions.correlation_resamples,
            help="bootstrap resamples per correlation coefficient",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of every bootstrap")
        parser.add_argument(
            "--metrics", default="", help="comma-separated metric families (default: every registered family)"
        )
        parser.add_argument(
            "--no-correlations", action="store_true", help="skip the metric–human correlations"
        )
        parser.add_argument(
            "--embeddings",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="embed texts (ml.embeddings, local model, cached in the database) for the semantic metrics "
            "(default: RADLAY_ANALYSIS.embeddings, on unless RADLAY_ANALYSIS=embeddings=off)",
        )
        parser.add_argument("--embedding-model", default=None, help="local sentence-transformers directory")
        parser.add_argument(
            "--expert-z-scores",
            action="store_true",
            help="Table 1's radiologist scores as each radiologist's z-scores (planted controls never enter)",
        )
        parser.add_argument(
            "--metrics-csv",
            default=None,
            help="also write the automatic metrics (per simplification, per system)",
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        families = tuple(f.strip() for f in options["metrics"].split(",") if f.strip()) or None
        embedder = None
        wanted = options["embeddings"]
        if wanted is None:
            wanted = bool(
                settings.RADLAY_ANALYSIS_OPTIONS.get("embeddings", settings.RADLAY_ANALYSIS.embeddings)
            )
        if wanted or options["embedding_model"]:
            from ml.services import embedder_get

            embedder = embedder_get(model=options["embedding_model"])
        analysis_options = AnalysisOptions(
            embedder=embedder,
            n_resamples=options["resamples"],
            correlation_resamples=options["correlation_resamples"],
            seed=options["seed"],
            metric_families=families,
            correlations=not options["no_correlations"],
            expert_z_scores=options["expert_z_scores"],
        )
        analysis = study_analysis_compute(study=study, options=analysis_options)
        if options["metrics_csv"]:
            Path(options["metrics_csv"]).write_text(metrics_csv(analysis), encoding="utf-8")
        text = json.dumps(analysis, indent=2, ensure_ascii=False, default=str, allow_nan=False)
        if options["json_path"] == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(options["json_path"]).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"Wrote the analysis of {study.slug} to {options['json_path']}.")
