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


class AdjudicatedLabel(models.Model):
    """The consensus an adjudicator recorded for one item on one target that several raters
    answered and disagreed on (evaluation/adjudication_services.py). Stored beside the raters'
    answers, never over them: the analysis's "raw" view reads the answers, its "adjudicated" view
    reads these where they exist. Keyed as an answer is: instrument version, item key and target
    (the source, a shown text, or a shown text and its reference); one per key (three partial
    unique constraints, since NULLs never collide). `value` is the answer as
    `instruments.answers.item_value_validate` accepts it (its JSON form), `score` its numeric
    coding; `disagreement` and `raters` record the queue's figures when it was decided."""

    class Reason(models.TextChoices):
        MISREAD = "misread", "A rater misread the text"
        GUIDELINE_UNCLEAR = "guideline_unclear", "The guideline is unclear"
        GENUINE_AMBIGUITY = "genuine_ambiguity", "Genuine ambiguity"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="adjudications")
    instrument = models.ForeignKey(
        "annotation.StudyInstrument", on_delete=models.PROTECT, related_name="adjudications"
    )
    item_key = models.SlugField(max_length=60)
    source = models.ForeignKey("annotation.Source", on_delete=models.CASCADE, related_name="adjudications")
    shown_text = models.ForeignKey(
        "annotation.SimplificationText",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="adjudications",
    )
    reference_text = models.ForeignKey(
        "annotation.SimplificationText", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    value = models.JSONField()
    score = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=20, choices=Reason.choices)
    guideline_gap = models.BooleanField(default=False, help_text="the guideline does not cover this case")
    note = models.TextField(blank=True)
    disagreement = models.FloatField(help_text="the queue's disagreement score (0..1) when decided")
    raters = models.PositiveSmallIntegerField(help_text="how many raters had answered")
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    # SET_NULL keeps the label when the account goes (adjudicator_label stays); an archive's copy
    # has no account of the exporting server.
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adjudicator_label = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["instrument", "item_key", "source"],
                condition=models.Q(shown_text__isnull=True),
                name="adjudicated_label_unique_source",
            ),
            models.UniqueConstraint(
                fields=["instrument", "item_key", "shown_text"],
                condition=models.Q(shown_text__isnull=False, reference_text__isnull=True),
                name="adjudicated_label_unique_text",
            ),
            models.UniqueConstraint(
                fields=["instrument", "item_key", "shown_text", "reference_text"],
                condition=models.Q(shown_text__isnull=False, reference_text__isnull=False),
                name="adjudicated_label_unique_pair",
            ),
            models.CheckConstraint(
                condition=models.Q(reference_text__isnull=True) | models.Q(shown_text__isnull=False),
                name="adjudicated_label_reference_needs_text",
            ),
            models.CheckConstraint(
                condition=models.Q(reason__in=["misread", "guideline_unclear", "genuine_ambiguity"]),
                name="adjudicated_label_reason",
            ),
            models.CheckConstraint(
                condition=models.Q(disagreement__gte=0) & models.Q(disagreement__lte=1),
                name="adjudicated_label_disagreement_0_1",
            ),
            models.CheckConstraint(condition=models.Q(raters__gte=2), name="adjudicated_label_two_raters"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} {self.item_key} {self.value!r} ({self.reason})"


class AdaptiveAllocation(models.Model):
    """A study's adaptive allocation and stopping rule (evaluation/planning/adaptive.py; the computation in
    measures/stats/adaptive_allocation.py): off by default; when on, each new layperson gets the
    Latin-square row whose answers most narrow the interval of the primary comparison
    (`system_a` − `system_b` on `outcome`), and the study can close once that interval's
    projected width is at most `target_width`. The planner's components (from `pilot`) are kept
    as they were when the option was set."""

    study = models.OneToOneField(
        "annotation.Study", on_delete=models.CASCADE, related_name="adaptive_allocation"
    )
    enabled = models.BooleanField(default=False)
    outcome = models.CharField(max_length=40, help_text="the planner's outcome key (a lay outcome)")
    system_a = models.ForeignKey("annotation.System", on_delete=models.CASCADE, related_name="+")
    system_b = models.ForeignKey("annotation.System", on_delete=models.CASCADE, related_name="+")
    target_width = models.FloatField(help_text="full width of the 95 % interval at which the study can close")
    max_participants = models.PositiveIntegerField()
    close_recruitment = models.BooleanField(
        default=False, help_text="stop handing out rows to newcomers once the target is reached"
    )
    components = models.JSONField(default=dict, help_text="the planner's components from the pilot")
    recruitment_closed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(target_width__gt=0), name="adaptive_target_positive"),
            models.CheckConstraint(
                condition=~models.Q(system_a=models.F("system_b")), name="adaptive_two_systems"
            ),
        ]

    def __str__(self) -> str:
        return f"adaptive allocation of study {self.study_id}"
