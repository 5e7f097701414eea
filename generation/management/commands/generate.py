"""`manage.py generate`: launch a generation batch for a study (or cancel/resume one) from the shell.

    manage.py generate --study demo --systems plain_bs,plain_sc,cot_bs,cot_sc,scgr --backend glossary --wait
    manage.py generate --study demo --systems plain_bs,plain_sc --backend openai --model gpt-3.5-turbo
    manage.py generate --study demo --systems cot_bs --backend transformers --model-artifact my-finetuned-t5
    manage.py generate --study demo --systems plain_bs --backend vllm --model-artifact m-dpo --system-tag dpo
    manage.py generate --resume 12 --wait
    manage.py generate --resume 12 --retry-failed --wait

Jobs run on the Celery workers (or in-process in the embedded mode without REDIS_URL, where the
command returns when the batch is done). --wait polls the batch until it finishes, printing its
progress; the exit status is then 1 when any job failed. A plain --resume sends again every job
that is not done and not running live; failed jobs run again only with --retry-failed (or --force).
When the task queue is down, a launch still creates the batch and says so (exit status 2); the
batch starts by itself once the queue is back. --wait outlives a database restart (it reports the
outage and goes on).
"""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from generation import selectors
from generation.backends.registry import backend_help, offered
from generation.models import GENERATED_SYSTEMS, GenerationBatch, GenerationJob
from generation.prompts.registry import DEFAULT_VERSION
from generation.services import batches
from work.launch_options import add_launch_options, command_error, launch_arguments, wait
from work.scheduler import TaskQueueUnreachable


class Command(BaseCommand):
    help = "Generate simplifications for a study (one Celery job per source and prompt family)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", help="study slug")
        parser.add_argument("--systems", help=f"comma-separated, among {','.join(GENERATED_SYSTEMS)}")
        parser.add_argument(
            "--backend",
            choices=[value for value, _ in offered(GenerationBatch.Backend.choices)],
            help=backend_help() or None,
        )
        parser.add_argument(
            "--model-artifact", default="", help="name or id of an ml ModelArtifact (transformers)"
        )
        parser.add_argument(
            "--system-tag",
            default="",
            help="write to new systems <key>-<tag> beside the study's own (e.g. dpo-1: a fine-tuned model)",
        )
        parser.add_argument("--max-rounds", type=int, default=5)
        parser.add_argument(
            "--sample-index",
            type=int,
            default=0,
            help="raise to draw fresh samples instead of cached answers",
        )
        add_launch_options(
            parser,
            noun="batch",
            items="jobs",
            temperature=0.8,
            max_tokens=512,
            prompt_version=DEFAULT_VERSION,
        )
        parser.add_argument(
            "--replace-uploaded",
            action="store_true",
            help="write over the uploaded texts of the chosen systems (refused without it)",
        )
        parser.add_argument("--force", action="store_true", help="with --resume: the same as --retry-failed")
        parser.add_argument(
            "--cancel", type=int, metavar="BATCH", help="cancel the pending jobs of this batch"
        )

    def handle(self, *args, **options) -> None:
        if options["cancel"]:
            batch = self._batch(options["cancel"])
            count = batches.generation_batch_cancel(batch=batch)
            self.stdout.write(f"batch {batch.pk}: {count} pending job(s) cancelled")
            return
        try:
            if options["resume"]:
                batch = self._batch(options["resume"])
                sent = batches.generation_batch_resume(
                    batch=batch, retry_failed=options["retry_failed"] or options["force"]
                )
                self.stdout.write(f"batch {batch.pk}: resumed, {len(sent)} job(s) sent")
            else:
                batch = self._launch(options)
        except TaskQueueUnreachable as exc:
            raise CommandError(str(exc), returncode=2) from None
        if options["wait"]:
            self._wait(batch, poll=options["poll"])

    def _batch(self, batch_id: int) -> GenerationBatch:
        try:
            return GenerationBatch.objects.get(pk=batch_id)
        except GenerationBatch.DoesNotExist:
            raise CommandError(f"No generation batch {batch_id}.") from None

    def _launch(self, options) -> GenerationBatch:
        for required in ("study", "systems", "backend"):
            if not options[required]:
                raise CommandError(f"--{required} is required to launch a batch.")
        try:
            study = Study.objects.get(slug=options["study"])
        except Study.DoesNotExist:
            raise CommandError(f"No study {options['study']!r}.") from None
        artifact = None
        if options["model_artifact"]:
            artifact = self._artifact(options["model_artifact"])
        try:
            batch = batches.generation_batch_create(
                study=study,
                systems=[key.strip() for key in options["systems"].split(",") if key.strip()],
                backend=options["backend"],
                model_artifact=artifact,
                max_rounds=options["max_rounds"],
                sample_index=options["sample_index"],
                system_tag=options["system_tag"],
                replace_uploaded=options["replace_uploaded"],
                **launch_arguments(options),
            )
        except ValidationError as exc:
            raise command_error(exc) from exc
        self.stdout.write(
            f"batch {batch.pk}: {batch.jobs.count()} job(s) for {study.slug} "
            f"({', '.join(batch.systems)}) on {batch.backend} {batch.model_label}"
        )
        return batch

    def _artifact(self, name_or_id: str):
        ModelArtifact = apps.get_model("ml", "ModelArtifact")  # noqa: N806 - a model class
        found = ModelArtifact.objects.filter(name=name_or_id).first()
        if found is None and name_or_id.isdigit():
            found = ModelArtifact.objects.filter(pk=int(name_or_id)).first()
        if found is None:
            raise CommandError(f"No model artifact {name_or_id!r}.")
        return found

    def _wait(self, batch: GenerationBatch, *, poll: float) -> None:
        wait(
            self,
            batch=batch,
            progress=lambda: selectors.batch_progress(batch=batch),
            heal=lambda: batches.generation_batches_heal(batch=batch),
            poll=poll,
            label=f"batch {batch.pk}",
        )
        failed = list(selectors.batch_jobs(batch=batch, status=GenerationJob.Status.FAILED))
        for job in failed:
            self.stderr.write(f"  failed: {job.source.key} {job.family}: {job.error}")
        if failed:
            raise CommandError(f"{len(failed)} job(s) of batch {batch.pk} failed.", returncode=1)
        self.stdout.write(self.style.SUCCESS(f"batch {batch.pk} finished"))
