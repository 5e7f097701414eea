"""Stored results of evaluation: power plans, the latest analysis snapshot of each study and the
automatic metrics of its texts and systems."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PowerPlan(models.Model):
    """A sample-size plan for a follow-up study, computed from this study's answers as the pilot
    (evaluation/planning/). The simulation runs in a task; the page and the API read this row."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="power_plans")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=40)
    parameters = models.JSONField(help_text="The validated request (PlanForm's cleaned data).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The job layer's lease (work.single_jobs): when the task was last sent (and why the broker
    # refused it), the task that holds the plan, its heartbeat, and how many tasks took it.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "power plan"
        verbose_name_plural = "power plans"

    def __str__(self) -> str:
        return f"Power plan {self.pk} for {self.study} ({self.outcome}, {self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class AnalysisSnapshot(models.Model):
    """The latest computed analysis of a study, shared by every web worker, and the state of its
    recomputation.

    One row per study. `status` is the recomputation's: idle (nothing queued), queued (a task is
    on its way) or running; a request while one is queued or running only sets `dirty`, so at
    most one recomputation is queued or running per study, and a dirty one runs once more when it
    ends. The result fields keep the last successful computation while a newer one runs.
    """

    class Status(models.TextChoices):
        IDLE = "idle", "idle"
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"

    study = models.OneToOneField(
        "annotation.Study", on_delete=models.CASCADE, related_name="analysis_snapshot"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    dirty = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # The recomputation's lease. A queued one was handed to the broker at `sent_at` (None: the send
    # failed, `send_error` says why, and the healing check sends it again); a running one is held by
    # the task whose claim wrote `runner`, which stamps `heartbeat_at` while it computes. A lapsed
    # heartbeat means its worker is gone: the healing check (services.analysis_snapshots_heal)
    # queues it again.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.TextField(blank=True)
    runner = models.CharField(max_length=36, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # How many times the healing check took this recomputation over from a lost worker or message.
    healed = models.PositiveIntegerField(default=0)
    # How many tasks took this recomputation (a new request starts over): one whose worker was lost
    # RADLAY_JOB_ATTEMPTS times is given up (work.single_jobs).
    attempts = models.PositiveIntegerField(default=0)

    # What the stored result covers (evaluation.selectors.analysis_coverage at its start).
    computed_at = models.DateTimeField(null=True, blank=True)
    coverage = models.JSONField(default=dict, blank=True)
    n_answers = models.PositiveIntegerField(default=0)
    last_answer_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    # The analysis document without its long per-item sections (`details`), so that the
    # dashboard loads a small row; `details` and the SVG figures are read only where shown.
    result = models.JSONField(null=True, blank=True)
    details = models.JSONField(null=True, blank=True)
    figures = models.JSONField(default=dict, blank=True)
    # The whole document (result with its details) as the JSON text the API serves: decoding and
    # encoding again the megabytes of details of a large study would cost seconds per request.
    # Empty where it could not be written as strict JSON (the API then renders `result` + `details`).
    document = models.TextField(blank=True, default="")

    error = models.TextField(blank=True)
    error_at = models.DateTimeField(null=True, blank=True)
    # The data the failed computation saw: the same data are not tried again automatically.
    error_coverage = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["idle", "queued", "running"]), name="analysis_snapshot_status"
            )
        ]

    def __str__(self) -> str:
        return f"analysis of {self.study_id} ({self.status}, {self.computed_at})"


class TextMetrics(models.Model):
    """One metric family's automatic per-text values for one text of a study (a simplification's
    text, or an original), computed once by the analysis (never in a web request) and read by
    every later one: measures.metrics.registry.compute_all with services.TextMetricsStore.

    The invalidation rule: a row is used only while its `configuration` (the family, its version —
    code, libraries and data —, metric names, options and embedder: registry.text_configuration)
    and its `inputs` (the source, candidate and reference texts: registry.record_digest) equal the
    current ones. An edited text or reference, a new version or other options therefore compute
    afresh; the rows of texts the study no longer analyses are deleted by the next analysis that
    stores that configuration's values for that kind of text; deleting a source deletes its rows.
    """

    class Kind(models.TextChoices):
        SIMPLIFICATION = "simplification", "a simplification's text"
        ORIGINAL = "original", "the source's own text"

    source = models.ForeignKey("annotation.Source", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    family = models.CharField(max_length=40)
    configuration = models.CharField(max_length=32)
    inputs = models.CharField(max_length=32)
    # {metric: value}; None where undefined, "inf"/"-inf" for an infinite value (not JSON).
    scores = models.JSONField()
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "text metrics"
        verbose_name_plural = "text metrics"
        constraints = [
            models.UniqueConstraint(
                fields=["source", "kind", "configuration", "inputs"], name="text_metrics_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["simplification", "original"]), name="text_metrics_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.family} of a text of source {self.source_id}"


class SystemMetrics(models.Model):
    """One metric family's corpus values for one system of a study (type-token ratio, self-BLEU,
    corpus SARI, ...), computed from all of the system's texts and kept beside TextMetrics.

    The same rule: the row is used only while its `configuration` (registry.corpus_configuration)
    and its `inputs` (the system's texts in order, their sources' metadata and the configuration
    of the per-text values: registry.corpus_inputs) equal the current ones; a computation with
    other inputs replaces it.
    """

    system = models.ForeignKey("annotation.System", on_delete=models.CASCADE, related_name="+")
    family = models.CharField(max_length=40)
    configuration = models.CharField(max_length=32)
    inputs = models.CharField(max_length=32)
    scores = models.JSONField()  # as TextMetrics.scores
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "system metrics"
        verbose_name_plural = "system metrics"
        constraints = [
            models.UniqueConstraint(fields=["system", "configuration"], name="system_metrics_unique")
        ]

    def __str__(self) -> str:
        return f"{self.family} of system {self.system_id}"
