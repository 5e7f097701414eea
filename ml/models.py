"""Local models radlay knows about, the jobs that fine-tune them, and the embedding cache.

A `ModelArtifact.path` is a local Hugging Face model directory: exactly what
`ml.inference.load_model` and the `transformers` generation backend take.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class ModelArtifact(models.Model):
    class Kind(models.TextChoices):
        BASE = "base", "Base model"
        FINE_TUNED = "fine_tuned", "Fine-tuned"

    class Architecture(models.TextChoices):
        SEQ2SEQ = "seq2seq", "Encoder-decoder (T5, BART)"
        CAUSAL = "causal", "Decoder-only (causal LM)"

    name = models.CharField(max_length=200, unique=True)
    path = models.CharField(
        max_length=1000, help_text="Local model directory (config.json, weights, tokenizer)."
    )
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.BASE)
    architecture = models.CharField(max_length=8, choices=Architecture.choices)
    base_model = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="derived_models"
    )
    training_job = models.ForeignKey(
        "TrainingJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="artifacts"
    )
    training_data = models.TextField(blank=True, help_text="What it was fine-tuned on, in words.")
    training_filter = models.JSONField(default=dict, blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    validation_metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name


class TrainingJob(models.Model):
    class Method(models.TextChoices):
        SFT = "sft", "Supervised fine-tuning on (source, simplification) pairs"
        DPO = "dpo", "Direct preference optimisation on (chosen, rejected) pairs"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    study = models.ForeignKey(
        "annotation.Study", null=True, blank=True, on_delete=models.SET_NULL, related_name="training_jobs"
    )
    corpus_path = models.CharField(
        max_length=1000, blank=True, help_text="MedLane .txt or JSONL corpus file."
    )
    pair_filter = models.JSONField(
        default=dict,
        blank=True,
        help_text='How study pairs are chosen, e.g. {"kind": "expert_min", "min_score": 4}.',
    )
    method = models.CharField(max_length=3, choices=Method.choices, default=Method.SFT)
    base_artifact = models.ForeignKey(
        ModelArtifact, null=True, blank=True, on_delete=models.PROTECT, related_name="training_jobs"
    )
    base_model_path = models.CharField(max_length=1000, blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    output_dir = models.CharField(
        max_length=1000, blank=True, help_text="Empty: RADLAY_MODEL_DIR/fine-tuned-<id>."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.JSONField(
        default=dict, blank=True, help_text="{step, total_steps, epoch, loss, eta_s, phase}"
    )
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    output_artifact = models.ForeignKey(
        ModelArtifact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    celery_task_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The job layer's lease (work.single_jobs): when the task was last sent (and why the broker
    # refused it), its heartbeat while it trains, and how many tasks took it.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.TextField(blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(study__isnull=False) | ~Q(corpus_path=""), name="training_job_has_data"
            ),
            models.CheckConstraint(
                condition=Q(base_artifact__isnull=False) | ~Q(base_model_path=""),
                name="training_job_has_base",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed", "cancelled"]),
                name="training_job_status_known",
            ),
            models.CheckConstraint(condition=Q(method__in=["sft", "dpo"]), name="training_job_method_known"),
        ]

    def __str__(self) -> str:
        return f"training job {self.pk} ({self.status})"

    @property
    def base_path(self) -> str:
        return self.base_artifact.path if self.base_artifact is not None else self.base_model_path

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class EmbeddingCacheEntry(models.Model):
    """One cached sentence embedding; `key` is sha256(model_id + "\\n" + text) (ml.embeddings)."""

    key = models.CharField(max_length=64, unique=True)
    model_id = models.CharField(max_length=200, db_index=True)
    dimension = models.PositiveIntegerField()
    vector = models.BinaryField(help_text="float32, little-endian")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "embedding cache entries"

    def __str__(self) -> str:
        return f"{self.model_id}:{self.key[:12]}"
