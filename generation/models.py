"""Generation batches: what an admin launched, one job per (source, prompt family), and the cache of
identical LLM calls (DESIGN.md "Generation").

A *family* is one run of the pipeline on one source; it yields the systems of that family:
"plain" → plain_bs (the Generator's first answer) and plain_sc (after self-correction), "cot" →
cot_bs and cot_sc, "scgr" → scgr. A job asked only for BS systems skips the self-correction loop.

Job states: pending → running → succeeded | failed, or pending → cancelled. A pending job that was
handed to the queue carries `dispatched_at` (it holds one of the batch's concurrency slots); a running
job carries the id of the Celery task that claimed it, so that a redelivered message of that task
(the worker died before acknowledging it) may take the job over, and a heartbeat that its worker
stamps while it runs: a job whose heartbeat stopped lost its worker (work.scheduler).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.urls import reverse

from work.models import ScheduledBatch, ScheduledJob

# System key → the family that produces it, and the label a new System row gets.
SYSTEM_FAMILY: dict[str, str] = {
    "plain_bs": "plain",
    "plain_sc": "plain",
    "cot_bs": "cot",
    "cot_sc": "cot",
    "scgr": "scgr",
}
SYSTEM_LABELS: dict[str, str] = {
    "plain_bs": "Plain_BS",
    "plain_sc": "Plain_SC",
    "cot_bs": "CoT_BS",
    "cot_sc": "CoT_SC",
    "scgr": "SCGR",
}
GENERATED_SYSTEMS: tuple[str, ...] = tuple(SYSTEM_FAMILY)


class GenerationBatch(ScheduledBatch):
    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible API"
        TRANSFORMERS = "transformers", "Local model (transformers, GPU)"
        VLLM = "vllm", "Local model (vLLM engine, GPU; optional install)"
        GLOSSARY = "glossary", "Offline glossary (deterministic)"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="generation_batches")
    systems = models.JSONField(
        default=list, help_text='System keys to generate, e.g. ["plain_bs", "plain_sc"].'
    )
    backend = models.CharField(max_length=20, choices=Backend.choices)
    model_name = models.CharField(
        max_length=300,
        blank=True,
        help_text="API model name, or the local directory of a transformers model "
        "(empty when an artifact is chosen).",
    )
    model_artifact = models.ForeignKey(
        "ml.ModelArtifact",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="generation_batches",
        help_text="A registered local or fine-tuned model (transformers backend only).",
    )
    prompt_version = models.CharField(max_length=60)
    # temperature, max_tokens, seed, top_p, sample_index (GenerationParams) + max_rounds, scgr_max_attempts.
    parameters = models.JSONField(default=dict, blank=True)
    concurrency = models.PositiveIntegerField(
        help_text="At most this many tasks of the batch queued or running: jobs for API backends, chunks of "
        "RADLAY_LOCAL_MODELS.batch_size jobs for local models."
    )

    class Meta:
        verbose_name_plural = "generation batches"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(concurrency__gte=1), name="generation_batch_concurrency_positive"
            ),
            models.CheckConstraint(
                condition=Q(backend__in=["openai", "transformers", "glossary", "vllm"]),
                name="generation_batch_backend",
            ),
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} · {self.study.slug} · {self.backend}"

    @property
    def model_label(self) -> str:
        if self.model_artifact is not None:
            return f"{self.model_artifact.name} ({self.model_artifact.path})"
        return self.model_name

    def get_absolute_url(self) -> str:
        return reverse("generation:batch_detail", args=[self.pk])


class GenerationJob(ScheduledJob):
    class Family(models.TextChoices):
        PLAIN = "plain", "Plain prompt"
        COT = "cot", "Chain-of-thought prompt"
        SCGR = "scgr", "SCGR"

    batch = models.ForeignKey(GenerationBatch, on_delete=models.CASCADE, related_name="jobs")
    source = models.ForeignKey("annotation.Source", on_delete=models.CASCADE, related_name="generation_jobs")
    family = models.CharField(max_length=10, choices=Family.choices)
    systems = models.JSONField(default=list, help_text="The system keys of this family the job writes.")
    simplifications = models.ManyToManyField(
        "annotation.Simplification", blank=True, related_name="generation_jobs"
    )

    class Meta:
        ordering = ["batch", "source__position", "family"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "source", "family"], name="generation_job_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "running", "succeeded", "failed", "cancelled"]),
                name="generation_job_status",
            ),
            models.CheckConstraint(
                condition=Q(family__in=["plain", "cot", "scgr"]), name="generation_job_family"
            ),
        ]
        indexes = [models.Index(fields=["batch", "status"], name="generation_job_batch_status")]

    def __str__(self) -> str:
        return f"job {self.pk} · {self.source} · {self.family}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED)


class LLMCallCache(models.Model):
    """One completed backend call, keyed by the sha256 of everything that defines it
    (generation.backends.cache.call_cache_key)."""

    key = models.CharField(max_length=64, unique=True)
    backend = models.CharField(max_length=40, blank=True)
    model_name = models.CharField(max_length=300, blank=True)
    completion = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "LLM call cache entry"
        verbose_name_plural = "LLM call cache"

    def __str__(self) -> str:
        return f"{self.backend}/{self.model_name} {self.key[:12]}"
