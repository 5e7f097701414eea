"""A study's data policy and the de-identification of its sources.

The original text of a source stays in `Source.text`, in radlay's database only; what leaves it
(external backends, laypeople's pages, exports unless an owner asks for originals) is
`SourceDeidentification.text`, built from the source's `DeidFinding` spans.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.models import Source, Study
from privacy.detection.spans import KINDS


class DataPolicy(models.Model):
    """What a study's text may reach. A study without a row has the default, `deidentified`."""

    class Policy(models.TextChoices):
        # No text of the study ever goes to an external backend: local models and the glossary only.
        LOCAL_ONLY = "local-only", "Local only"
        # External backends receive de-identified text, once an owner approved the de-identification.
        DEIDENTIFIED = "deidentified", "De-identified"
        # The data's agreement allows this one endpoint (e.g. the hospital's own deployment).
        EXTERNAL_APPROVED = "external-approved", "External endpoint approved"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="data_policy")
    policy = models.CharField(max_length=20, choices=Policy.choices, default=Policy.DEIDENTIFIED)
    endpoint = models.URLField(
        max_length=500, blank=True, help_text="The approved endpoint (external-approved only)."
    )
    originals_for_radiologists = models.BooleanField(
        default=False, help_text="Show the study's radiologists the original reports (owner's choice)."
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_label = models.CharField(max_length=150, blank=True)
    approved_findings = models.PositiveIntegerField(default=0)
    approved_edited = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "data policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(policy__in=["local-only", "deidentified", "external-approved"]),
                name="data_policy_known",
            ),
            models.CheckConstraint(
                condition=~Q(policy="external-approved") | ~Q(endpoint=""),
                name="data_policy_external_has_endpoint",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}: {self.policy}"

    @property
    def is_approved(self) -> bool:
        return self.approved_at is not None


class SourceDeidentification(models.Model):
    """A source's de-identified text, as its findings make it."""

    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="deidentification")
    text = models.TextField()
    # The digest of the original it was made from: a changed source is de-identified again.
    source_hash = models.CharField(max_length=64)
    detector = models.CharField(max_length=40)
    detected_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"de-identified {self.source_id}"


class DeidFinding(models.Model):
    """One identifier in a source's original text: characters [start, end) of `Source.text`."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        # Unresolved: the detector was unsure; approval waits until it is accepted or removed.
        REVIEW = "review", "To review"
        # A false positive: the text stays as it is.
        REMOVED = "removed", "Removed (not an identifier)"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="deid_findings")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=[(k, k) for k in KINDS])
    original = models.TextField()
    replacement = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACCEPTED)
    score = models.FloatField(default=1.0)
    recognizer = models.CharField(max_length=60, blank=True, help_text='"reviewer" for a marked missed span')
    edited = models.BooleanField(default=False, help_text="A reviewer changed, removed or added it.")

    class Meta:
        ordering = ["source", "start"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="deid_finding_span"),
            models.CheckConstraint(condition=Q(kind__in=list(KINDS)), name="deid_finding_kind"),
            models.CheckConstraint(
                condition=Q(status__in=["accepted", "review", "removed"]), name="deid_finding_status"
            ),
            models.UniqueConstraint(fields=["source", "start"], name="deid_finding_one_per_start"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.start}-{self.end} of source {self.source_id}"
