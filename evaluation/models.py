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

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "power plan"
        verbose_name_plural = "power plans"

    def __str__(self) -> str:
        return f"Power plan {self.pk} for {self.study} ({self.outcome}, {self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
