"""`manage.py export --study SLUG --format csv|xlsx|json --out PATH [--include-external-ids]`:
every raw answer of a study in long format (one row per answer), written as it is read.

`--format preferences --out pairs.jsonl` writes the study's preference pairs (prompt, chosen,
rejected, where the preference came from, rater count) for preference training; `--format
hf-dataset --out FOLDER` writes them as a `datasets` folder with a dataset card
(evaluation/exports/preferences.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.exports import FORMATS
from evaluation.exports.answers import AnswerExport

PAIR_FORMATS = ("preferences", "hf-dataset")


class Command(BaseCommand):
    help = "Export every raw answer of a study (pseudonymous unless --include-external-ids)."
    # A read-only export needs none of the project checks, which import every URLconf and view
    # (seconds of a command that otherwise takes a few).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, help="slug of the study")
        parser.add_argument("--format", required=True, choices=sorted([*FORMATS, *PAIR_FORMATS]))
        parser.add_argument(
            "--out", required=True, type=Path, help="file to write (hf-dataset: a new folder)"
        )
        parser.add_argument(
            "--prompt-family",
            default="plain",
            choices=["plain", "cot"],
            help="preferences/hf-dataset: the generation prompt each pair's prompt is rendered with",
        )
        parser.add_argument("--prompt-version", default=None, help="preferences/hf-dataset: prompt version")
        parser.add_argument(
            "--rating-threshold",
            type=float,
            default=1.0,
            help="preferences/hf-dataset: least gap of two texts' mean radiologist scores (1-5)",
        )
        parser.add_argument(
            "--originals",
            action="store_true",
            help="preferences/hf-dataset: the original reports instead of the de-identified sentences; "
            "recorded in the study's activity log",
        )
        parser.add_argument(
            "--include-external-ids",
            action="store_true",
            help="add the recruiter's participant ids (e.g. Prolific PIDs): personal data",
        )

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        if options["format"] in PAIR_FORMATS:
            self._pairs(study, options)
            return
        if options["originals"]:
            raise CommandError(
                "--originals: the answer exports hold no source text; it is for preferences/hf-dataset."
            )
        export = AnswerExport(
            study=study, file_format=options["format"], include_external_ids=options["include_external_ids"]
        )
        with options["out"].open("wb") as out:
            export.write(out)
        self.stderr.write(f"Wrote {export.rows} answers of {study.slug} to {options['out']}.")

    def _pairs(self, study: Study, options) -> None:
        from evaluation.exports import preferences
        from generation.prompts.registry import PromptError

        out: Path = options["out"]
        if options["rating_threshold"] <= 0:
            raise CommandError("--rating-threshold must be positive.")
        if options["format"] == "hf-dataset" and out.exists() and any(out.iterdir()):
            raise CommandError(f"{out} exists and is not empty; give a new folder for the dataset.")
        try:
            records, found = preferences.preference_records(
                study=study,
                prompt_family=options["prompt_family"],
                prompt_version=options["prompt_version"],
                rating_threshold=options["rating_threshold"],
                originals=options["originals"],
            )
        except (preferences.NoPreferencesError, PromptError, ValueError) as exc:
            raise CommandError(str(exc).strip('"')) from None
        if options["originals"]:
            from privacy.services import originals_release_record

            originals_release_record(
                study=study, actor="manage.py export --originals", purpose=f"{options['format']} export"
            )
        if options["format"] == "preferences":
            preferences.write_jsonl(records, out)
        else:
            preferences.write_hf_dataset(
                records, out, study=study, found=found, rating_threshold=options["rating_threshold"]
            )
        kinds = ", ".join(f"{found.summary.count(kind)} {kind}" for kind in preferences.KINDS)
        self.stderr.write(f"Wrote {len(records)} preference pairs of {study.slug} ({kinds}) to {out}.")
