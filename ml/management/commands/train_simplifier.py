"""Fine-tune a seq2seq simplifier on a study's human-approved pairs or on a corpus file, or (with
--method dpo) a decoder-only chat model on the study's human preference pairs.

    manage.py train_simplifier --study demo --filter expert_min:4 --base-model /models/flan-t5-base --wait
    manage.py train_simplifier --corpus medlane/train.txt --base-model flan-t5-base --epochs 5 --lr 3e-4
    manage.py train_simplifier --method dpo --study demo --base-model /models/qwen2.5-1.5b --lora --wait
    manage.py train_simplifier --method dpo --corpus pairs.jsonl --base-model /models/qwen2.5-1.5b --beta 0.1

DPO trains on the pairs `export --format preferences` writes (--corpus takes such a file); the
trained model is registered as a ModelArtifact: `generate --model-artifact NAME --system-tag dpo`
then writes its simplifications as new systems of the study, beside the old ones.

Without --wait the job goes to the Celery `gpu` queue (or runs at once in the embedded mode,
where tasks are eager); with --wait it runs in this process, printing progress.
"""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from ml import services
from ml.models import ModelArtifact, TrainingJob


class Command(BaseCommand):
    help = (
        "Fine-tune a seq2seq simplifier (T5/BART) on study pairs or a corpus, or a chat model by DPO on "
        "preference pairs (--method dpo); registers a ModelArtifact."
    )

    def add_arguments(self, parser):
        data = parser.add_mutually_exclusive_group(required=True)
        data.add_argument("--study", help="study slug: train on its simplifications chosen by --filter")
        data.add_argument(
            "--corpus", help="MedLane .txt or JSONL {source, target} file (dpo: a preference JSONL export)"
        )
        parser.add_argument("--method", choices=["sft", "dpo"], default="sft", help="sft (default) or dpo")
        parser.add_argument("--beta", type=float, help="dpo: KL strength (default 0.1)")
        parser.add_argument("--lora", action="store_true", help="dpo: train LoRA adapters, merged when saved")
        parser.add_argument("--max-steps", type=int, help="stop after this many optimiser steps")
        parser.add_argument(
            "--rating-threshold", type=float, default=1.0, help="dpo: radiologist score gap for a pair"
        )
        parser.add_argument("--prompt-family", choices=["plain", "cot"], default="plain", help="dpo: prompt")
        parser.add_argument("--filter", default="expert_min:4", help="all | expert_min:K | lay_preferred")
        parser.add_argument("--base-model", required=True, help="model directory, or a ModelArtifact name")
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--lr", type=float, help="learning rate")
        parser.add_argument("--batch-size", type=int)
        parser.add_argument("--hyperparameters", default="{}", help="more TrainingConfig fields as JSON")
        parser.add_argument(
            "--out", default="", help="output directory (default RADLAY_MODEL_DIR/fine-tuned-<id>)"
        )
        parser.add_argument(
            "--wait", action="store_true", help="train in this process and wait for the result"
        )
        parser.add_argument(
            "--device", default=None, help="cpu or cuda (with --wait; default: cuda if available)"
        )

    def handle(self, *args, **options):
        try:
            hyperparameters = json.loads(options["hyperparameters"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--hyperparameters is not JSON: {exc}") from None
        for option, name in (
            ("epochs", "epochs"),
            ("lr", "learning_rate"),
            ("batch_size", "batch_size"),
            ("max_steps", "max_steps"),
            ("beta", "beta"),
        ):
            if options[option] is not None:
                hyperparameters[name] = options[option]
        dpo = options["method"] == "dpo"
        if options["lora"]:
            if not dpo:
                raise CommandError("--lora is for --method dpo.")
            hyperparameters["lora"] = True
        if options["beta"] is not None and not dpo:
            raise CommandError("--beta is for --method dpo.")
        pair_filter = options["filter"]
        if dpo:
            pair_filter = {
                "rating_threshold": options["rating_threshold"],
                "prompt_family": options["prompt_family"],
            }

        study = None
        if options["study"]:
            study = Study.objects.filter(slug=options["study"]).first()
            if study is None:
                raise CommandError(f"no study with slug {options['study']!r}")
        base_artifact = ModelArtifact.objects.filter(name=options["base_model"]).first()
        try:
            job = services.training_job_create(
                study=study,
                corpus_path=options["corpus"] or "",
                pair_filter=pair_filter if study is not None else None,
                base_artifact=base_artifact,
                base_model_path="" if base_artifact else options["base_model"],
                hyperparameters=hyperparameters,
                output_dir=options["out"],
                enqueue=not options["wait"],
                method=options["method"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"training job {job.pk} created")

        if options["wait"]:
            job = services.training_job_run(job=job, device=options["device"])
        else:
            job.refresh_from_db()
            if not job.is_finished:
                self.stdout.write(
                    f"queued on the gpu queue (task {job.celery_task_id}); follow it in the admin"
                )
                return
        self._report(job)

    def _report(self, job: TrainingJob) -> None:
        if job.status != TrainingJob.Status.SUCCEEDED:
            raise CommandError(f"training job {job.pk} {job.status}: {job.error.strip().splitlines()[-1:]}")
        artifact = job.output_artifact
        if artifact is None:
            raise CommandError(f"training job {job.pk} succeeded without a model artifact")
        metrics = ", ".join(
            f"{k} {v:.3f}" for k, v in artifact.validation_metrics.items() if isinstance(v, int | float)
        )
        self.stdout.write(self.style.SUCCESS(f"model artifact {artifact.name}: {artifact.path}"))
        self.stdout.write(f"{artifact.training_data}")
        if metrics:
            self.stdout.write(f"validation: {metrics}")
