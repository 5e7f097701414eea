"""Judge runs, kept apart from the human answers (DESIGN.md "Evaluation": LLM judges).

A judge is not a Participant: its answers live in these tables only, so no human table, export or
inter-rater statistic (all of which read annotation's Participant and ItemAnswer) can pick
them up. Every answer carries its provenance through its run (backend, model, prompt version and
digest, parameters) and keeps the raw model outputs it was built from.

JudgeRun — one launch: a study, a backend and model, a prompt version, K samples per item.
JudgeItem — one unit of work of a run (a judge task on one source or one simplification text): its
  lifecycle (pending → running → succeeded | failed, or cancelled), attempts, calls, tokens, cost,
  the transcript of every call, and the error when it failed. Failures stay here, never as answers.
JudgeAnswer — the validated answer of a succeeded item: the median of its K samples per field (in
  the analysis coding of annotation.scales: severity Critical = 1 … Healthy = 5), the spread, and the
  K parsed samples.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.urls import reverse

from judging.heuristic import HEURISTIC_LABEL
from judging.instrument import INSTRUMENT_TASKS, TASKS
from judging.instrument_items import ITEM_TASK
from work.models import ScheduledBatch, ScheduledJob

# Field → (low, high) of its coding, for the database checks.
ANSWER_BOUNDS: dict[str, tuple[int, int]] = {
    answer_field.name: answer_field.bounds for fields in TASKS.values() for answer_field in fields
}


class JudgeRun(ScheduledBatch):
    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible API"
        TRANSFORMERS = "transformers", "Local model (transformers, GPU)"
        VLLM = "vllm", "Local model (vLLM engine, GPU; optional install)"
        GLOSSARY = "glossary", "Glossary heuristic (offline, not an LLM)"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="judge_runs")
    backend = models.CharField(max_length=20, choices=Backend.choices)
    model_name = models.CharField(max_length=300, help_text="API model name or local model directory.")
    prompt_version = models.CharField(max_length=60)
    prompt_digest = models.CharField(max_length=64, blank=True)
    instruments = models.JSONField(default=list, help_text='["radiologist", "lay"] or one of them.')
    # temperature, max_tokens, samples (K), seed.
    parameters = models.JSONField(default=dict, blank=True)
    concurrency = models.PositiveIntegerField(default=8)
    # The judge–human agreement of this run, computed by a task when the run finishes or on demand
    # (judging.services.judge_run_agreement_compute), so that pages only read it.
    agreement = models.JSONField(default=dict, blank=True)
    agreement_computed_at = models.DateTimeField(null=True, blank=True)
    # The lease of a pending agreement computation, healed like an item (judging.services).
    agreement_sent_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a computation of the agreement was last sent (empty: none pending).",
    )
    agreement_heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Stamped every few seconds while a worker computes the agreement."
    )
    agreement_error = models.TextField(blank=True, help_text="Why the last computation failed.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="judge_run_concurrency_positive"),
            models.CheckConstraint(
                condition=Q(backend__in=["openai", "transformers", "glossary", "vllm"]),
                name="judge_run_backend",
            ),
        ]

    def __str__(self) -> str:
        return f"judge run {self.pk} · {self.study.slug} · {self.label}"

    @property
    def is_heuristic(self) -> bool:
        return self.backend == self.Backend.GLOSSARY

    @property
    def label(self) -> str:
        """How the judge is named on every page: a heuristic never passes for an LLM."""
        if self.is_heuristic:
            return f"{HEURISTIC_LABEL} [{self.model_name}]"
        return f"{self.backend}:{self.model_name}"

    @property
    def samples(self) -> int:
        return int(self.parameters.get("samples", 1))

    def get_absolute_url(self) -> str:
        return reverse("judging:run-detail", args=[self.study.slug, self.pk])


class JudgeItem(ScheduledJob):
    Task = models.TextChoices("Task", [(task, task.replace("_", " ")) for task in (*TASKS, ITEM_TASK)])

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="items")
    task = models.CharField(max_length=24, choices=Task.choices)
    source = models.ForeignKey("annotation.Source", on_delete=models.CASCADE, related_name="judge_items")
    shown_text = models.ForeignKey(
        "annotation.SimplificationText",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="judge_items",
        help_text="The simplification judged; empty for a question on the original sentence.",
    )
    # An instrument-items task (judging/instrument_items.py): the instrument version asked, and the
    # reference text of a (simplification, reference) pair.
    instrument = models.ForeignKey(
        "annotation.StudyInstrument",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="judge_items",
    )
    reference_text = models.ForeignKey(
        "annotation.SimplificationText",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    # Raised when failed items are retried on purpose, so their calls are new samples, not cache hits.
    retry_round = models.PositiveIntegerField(default=0)
    failure_kind = models.CharField(
        max_length=20,
        blank=True,
        help_text="malformed | refusal | out_of_range | schema | backend | database",
    )

    class Meta:
        ordering = ["run", "source__position", "task", "shown_text_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task", "shown_text"],
                condition=Q(shown_text__isnull=False, instrument__isnull=True),
                name="judge_item_unique_text",
            ),
            models.UniqueConstraint(
                fields=["run", "task", "source"],
                condition=Q(shown_text__isnull=True, instrument__isnull=True),
                name="judge_item_unique_source",
            ),
            # One instrument-items task per instrument and target: the source alone, a text alone,
            # a text and its reference (and, for completeness, a reference without a text). NULLs
            # count as equal, written as one partial index per combination of the nullable columns
            # rather than with nulls_distinct=False, which SQLite cannot create (models.W047).
            *(
                models.UniqueConstraint(
                    fields=["run", "instrument", "source", *nullable],
                    condition=Q(
                        instrument__isnull=False,
                        shown_text__isnull="shown_text" not in nullable,
                        reference_text__isnull="reference_text" not in nullable,
                    ),
                    name=f"judge_item_unique_instrument_{target}",
                )
                for target, nullable in (
                    ("source", ()),
                    ("text", ("shown_text",)),
                    ("pair", ("shown_text", "reference_text")),
                    ("reference", ("reference_text",)),
                )
            ),
            models.CheckConstraint(
                condition=Q(task=ITEM_TASK, instrument__isnull=False)
                | (~Q(task=ITEM_TASK) & Q(instrument__isnull=True, reference_text__isnull=True)),
                name="judge_item_instrument_task",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "running", "succeeded", "failed", "cancelled"]),
                name="judge_item_status",
            ),
            models.CheckConstraint(condition=Q(task__in=[*TASKS, ITEM_TASK]), name="judge_item_task"),
        ]
        indexes = [models.Index(fields=["run", "status"], name="judge_item_run_status")]

    def __str__(self) -> str:
        return f"judge item {self.pk} · {self.task} · {self.source}"


def _bounds_check(name: str) -> models.CheckConstraint:
    low, high = ANSWER_BOUNDS[name]
    return models.CheckConstraint(
        condition=Q(**{f"{name}__isnull": True}) | Q(**{f"{name}__gte": low, f"{name}__lte": high}),
        name=f"judge_answer_{name}_range",
    )


# JudgeAnswer's bounds, one constraint per answer field.
BOUNDS_CONSTRAINTS = {name: _bounds_check(name) for name in ANSWER_BOUNDS}


def answer_bounds_errors(answer: JudgeAnswer) -> list[str]:
    """The messages of the bounds constraints `answer` violates, as `full_clean` words them, checked
    here: `full_clean` asks the database once per constraint (eleven queries per answer)."""
    errors = []
    for name, constraint in BOUNDS_CONSTRAINTS.items():
        low, high = ANSWER_BOUNDS[name]
        value = getattr(answer, name)
        if value is not None and not low <= value <= high:
            errors.append(str(constraint.get_violation_error_message()))
    return errors


class JudgeAnswer(models.Model):
    item = models.OneToOneField(JudgeItem, on_delete=models.CASCADE, related_name="answer")
    # Medians of the K samples (a median of an even K may fall half-way between two levels).
    correctness = models.FloatField(null=True, blank=True)
    completeness = models.FloatField(null=True, blank=True)
    hallucination = models.FloatField(null=True, blank=True)
    structure = models.FloatField(null=True, blank=True)
    simplicity = models.FloatField(null=True, blank=True)
    severity = models.FloatField(null=True, blank=True, help_text="Critical = 1 … Healthy = 5")
    original_simplicity = models.FloatField(null=True, blank=True)
    understanding = models.FloatField(null=True, blank=True, help_text="Not at all = 1 … Completely = 4")
    confidence = models.FloatField(
        null=True, blank=True, help_text="Not at all = 1 … With high confidence = 3"
    )
    severity_guess = models.FloatField(null=True, blank=True, help_text="Critical = 1 … Healthy = 5")
    helpfulness = models.FloatField(
        null=True, blank=True, help_text="It further confused me = -1 … I understand much better = 2"
    )
    n_samples = models.PositiveIntegerField()
    spread = models.JSONField(default=dict, blank=True)
    samples = models.JSONField(default=list, blank=True, help_text="The K validated answers as given.")
    raw_outputs = models.JSONField(
        default=list, blank=True, help_text="The model text each sample came from."
    )
    # An instrument-items task's answer per item key: the stored value (as
    # instruments.answers.item_value_validate accepts it; the modal one of K samples) and its
    # numeric coding (the median of K; null where the item has none). Empty for the protocol's tasks.
    item_values = models.JSONField(default=dict, blank=True)
    item_scores = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    FIELDS = tuple(ANSWER_BOUNDS)

    class Meta:
        constraints = list(BOUNDS_CONSTRAINTS.values())

    def __str__(self) -> str:
        return f"answer of {self.item}"


class SpanAssistance(models.Model):
    """A study's AI-assisted error-span marking: the radiologists' span widget is pre-filled with the
    error spans `run` gave each text, plus a seeded share `planted_rate` of planted wrong suggestions
    (annotation/span_suggestions.py), on a seeded share `assisted_share` of the pages."""

    study = models.OneToOneField("annotation.Study", on_delete=models.CASCADE, related_name="span_assistance")
    run = models.ForeignKey(JudgeRun, on_delete=models.PROTECT, related_name="+")
    planted_rate = models.FloatField(
        help_text="Share of the suggestions a rater sees that are planted wrong, in (0, 0.5]."
    )
    assisted_share = models.FloatField(
        default=1.0, help_text="Share of the pages with suggestions, in [0, 1]."
    )
    seed = models.IntegerField(default=0)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(planted_rate__gt=0, planted_rate__lte=0.5), name="span_assistance_planted_rate"
            ),
            models.CheckConstraint(
                condition=Q(assisted_share__gte=0, assisted_share__lte=1), name="span_assistance_share"
            ),
        ]

    def __str__(self) -> str:
        return f"span assistance of {self.study_id} from run {self.run_id}"


__all__ = ["INSTRUMENT_TASKS", "JudgeAnswer", "JudgeItem", "JudgeRun", "SpanAssistance"]
