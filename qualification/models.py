"""A study's qualification rules and its participants' practice attempts and answers. Practice
answers live here and nowhere else: no analysis, export or answer table reads them (a test holds
it); the progress page and the qualification results (command, API) do."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Participant, Study, StudyInstrument


class QualificationRule(models.Model):
    """The pass rule of one flow and rater group, and what a participant who fails it sees."""

    class OnFail(models.TextChoices):
        RETRY = "retry", "Retry until passed"
        SCREEN_OUT = "screen_out", "Screen out (sent back to the recruiter with the screen-out code)"
        FLAG = "flag", "Continue the study, flagged"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="qualification_rules")
    flow = models.CharField(max_length=10, choices=StudyInstrument.Flow.choices)
    rater_group = models.SlugField(max_length=60, help_text="the role, or the rater group an item names")
    share_percent = models.PositiveSmallIntegerField(help_text="share of practice items within tolerance")
    retries = models.PositiveSmallIntegerField(default=0, help_text="further attempts after a failed one")
    min_seconds = models.PositiveIntegerField(default=0, help_text="an attempt faster than this fails")
    on_fail = models.CharField(max_length=12, choices=OnFail.choices, default=OnFail.RETRY)
    # Where a screened-out participant is sent (Prolific's URL with its screen-out code); empty =
    # the study's screen-out redirect URL.
    screen_out_redirect_url = models.URLField(blank=True, max_length=500)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "flow", "rater_group"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "flow", "rater_group"], name="qualification_rule_unique"
            ),
            models.CheckConstraint(
                condition=Q(share_percent__gte=1) & Q(share_percent__lte=100),
                name="qualification_share_1_100",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} {self.flow}/{self.rater_group}: {self.share_percent} %"


class QualificationAttempt(models.Model):
    """One pass through a flow's practice items. `instrument` is the version whose practice items
    were asked (null: the flow's preset, the study had no instrument row); the outcome is written
    when the last item is answered."""

    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="qualification_attempts"
    )
    flow = models.CharField(max_length=10, choices=StudyInstrument.Flow.choices)
    rater_group = models.SlugField(max_length=60)
    number = models.PositiveSmallIntegerField()
    instrument = models.ForeignKey(
        StudyInstrument,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="qualification_attempts",
    )
    instrument_key = models.SlugField(max_length=60)
    instrument_version = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    total = models.PositiveSmallIntegerField()
    correct = models.PositiveSmallIntegerField(default=0)
    needed = models.PositiveSmallIntegerField()
    seconds = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    too_fast = models.BooleanField(default=False)

    class Meta:
        ordering = ["participant", "flow", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "flow", "number"], name="qualification_attempt_unique_number"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="qualification_attempt_number_positive"),
            models.CheckConstraint(
                condition=Q(correct__lte=models.F("total")), name="qualification_attempt_correct_le_total"
            ),
            models.CheckConstraint(
                condition=Q(passed__isnull=True) | Q(finished_at__isnull=False),
                name="qualification_attempt_outcome_when_finished",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id} {self.flow} #{self.number}"


class PracticeAnswer(models.Model):
    """A participant's answer to one practice item in one attempt, scored against its gold: never
    an answer of the study."""

    attempt = models.ForeignKey(QualificationAttempt, on_delete=models.CASCADE, related_name="answers")
    practice_key = models.SlugField(max_length=60)
    item_key = models.SlugField(max_length=60)
    position = models.PositiveSmallIntegerField()
    value = models.JSONField(null=True)
    correct = models.BooleanField()
    # Points off (ordinal, count) or the overlap share (multiple choice, error spans).
    measure = models.FloatField(null=True, blank=True)
    language = models.CharField(max_length=16, blank=True)
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["attempt", "position"]
        constraints = [
            models.UniqueConstraint(fields=["attempt", "practice_key"], name="practice_answer_unique_item"),
            models.UniqueConstraint(fields=["attempt", "position"], name="practice_answer_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.attempt_id} {self.practice_key}: {'correct' if self.correct else 'off'}"
