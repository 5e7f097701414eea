"""The data model of a two-pronged study (DESIGN.md "Domain model").

Scales are stored by their level names (annotation/scales.py maps them to numbers for analysis);
the radiologist's 1-5 Likert aspects are stored as integers with database range checks.

Identical texts: when several systems produce the same text for a source, the simplifications
point at one `SimplificationText` row. Participants see and answer that row once; analysis credits
the answer to every system whose simplification points at it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation import json_shapes, scales
from annotation.redirect_urls import COMPLETION_CODE_PLACEHOLDER as COMPLETION_CODE_PLACEHOLDER
from annotation.redirect_urls import redirect_url_errors


def new_participant_token() -> str:
    # 32 bytes = 256 bits of randomness, URL-safe.
    return secrets.token_urlsafe(32)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


def normalize_text(text: str) -> str:
    """The form under which two texts count as identical: Unicode NFC, whitespace collapsed within
    each paragraph, paragraphs (text between blank lines) kept, one blank line apart: a whole
    report's simplification keeps its paragraphs. Text without a blank line is one paragraph."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = _PARAGRAPH_BREAK.split(text)
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def text_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


SEVERITY_CHOICES = scales.SEVERITY.choices()

# The rule of every redirect URL (annotation/redirect_urls.py).
REDIRECT_URL_FIELDS = {
    "completion_redirect_url": "Completion redirect URL",
    "decline_redirect_url": "Decline redirect URL",
    "screened_out_redirect_url": "Screen-out redirect URL",
}


def completion_redirect_errors(url: str) -> list[str]:
    """Problems of a completion redirect URL (the `{code}` placeholder allowed)."""
    return redirect_url_errors(url, label=REDIRECT_URL_FIELDS["completion_redirect_url"], placeholder=True)


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        # Pilot: participants take part as when open, but are flagged (Participant.is_pilot), kept
        # out of the analysis, and can be discarded in one action before the study opens.
        PILOT = "pilot", "Pilot"
        OPEN = "open", "Open"
        # Paused: participants see a "paused" page, their answers so far are kept; resuming reopens.
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    class Unit(models.TextChoices):
        SENTENCE = "sentence", "Sentence"
        REPORT = "report", "Report"

    slug = models.SlugField(max_length=80, unique=True)
    # Not a column: the requesting user's role, set by annotation.access.access_study.
    member_role: str = ""
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    unit = models.CharField(max_length=10, choices=Unit.choices, default=Unit.SENTENCE)
    # Who may reach the study, and with which role: the rows of StudyMembership (one rule for the
    # dashboard, exports, API and admin: annotation/access.py).
    researchers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="studies",
        through="StudyMembership",
        through_fields=("study", "user"),
    )

    # Per-role texts; empty means "the protocol's default" (annotation/protocol_texts.py).
    expert_instructions = models.TextField(blank=True)
    lay_instructions = models.TextField(blank=True)
    lay_consent_text = models.TextField(blank=True)
    expert_consent_text = models.TextField(blank=True)

    # Lay flow configuration.
    lay_sources_per_participant = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sources each lay participant sees; empty = all."
    )
    ask_urgency = models.BooleanField(
        default=False,
        help_text="Ask the urgency-confidence question (in the original survey, not in the paper).",
    )
    background_questions = models.JSONField(
        default=list,
        blank=True,
        help_text='List of {"key", "question", "options": [..]} asked after consent (empty = none).',
    )
    abandon_after_minutes = models.PositiveIntegerField(
        default=120,
        help_text="A lay participant idle this long counts as abandoned; their Latin-square row is reused.",
    )
    safety_gate_enabled = models.BooleanField(default=False)
    safety_gate_threshold = models.PositiveSmallIntegerField(
        default=2,
        help_text="Withhold a text any radiologist rated at or below this on Hallucination or Correctness.",
    )
    completion_redirect_url = models.URLField(blank=True, max_length=500)
    # Shown on the consent pages of both roles (docs/guide/participants.md).
    consent_contact = models.TextField(
        blank=True, help_text="Who participants can contact about the study (shown with the consent text)."
    )
    ethics_approval = models.CharField(
        max_length=300,
        blank=True,
        help_text="The ethics approval: board and reference number (shown with the consent text).",
    )
    expected_duration_minutes = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="About how long taking part takes, in minutes (shown with the consent text).",
    )
    decline_redirect_url = models.URLField(
        blank=True,
        max_length=500,
        help_text="Where a layperson who declines is sent back (e.g. Prolific's completion URL with a "
        "no-consent code); empty = they are told to return the study on the recruitment platform.",
    )
    screen_out_after_failed_checks = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="End the survey for a layperson who failed this many attention checks (Prolific's "
        "rule: 2); they are screened out and left out of the analysis. Empty = never.",
    )
    screened_out_redirect_url = models.URLField(
        blank=True,
        max_length=500,
        help_text="Where a screened-out layperson is sent (e.g. Prolific's completion URL with a "
        "screen-out code); empty = the end page alone.",
    )
    expert_sources_per_participant = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sources each radiologist rates; empty = all."
    )

    # The language participants see (the interface through Django's i18n, the instrument's wording
    # through its per-language texts): one of settings.LANGUAGES, checked where it is set.
    language = models.CharField(max_length=16, default="en")
    # A digest of the study's current instrument versions (StudyInstrument: row id and fingerprint of
    # each), written in the same transaction as they change. Survey requests load the study anyway,
    # so the instruments they ask are cached per process under it at no query
    # (annotation/instrument_selectors.py); empty for a study with no instrument row (the protocol
    # presets then apply).
    instruments_stamp = models.CharField(max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                # The threshold is a rating on the radiologists' Likert scale.
                condition=Q(safety_gate_threshold__gte=scales.LIKERT.lowest)
                & Q(safety_gate_threshold__lte=scales.LIKERT.highest),
                name="study_safety_threshold_1_5",
            ),
            models.CheckConstraint(
                condition=Q(screen_out_after_failed_checks__isnull=True)
                | Q(screen_out_after_failed_checks__gte=1),
                name="study_screen_out_at_least_1",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if problems := json_shapes.background_questions_errors(self.background_questions):
            errors["background_questions"] = problems
        for name, label in REDIRECT_URL_FIELDS.items():
            placeholder = name == "completion_redirect_url"
            if problems := redirect_url_errors(getattr(self, name), label=label, placeholder=placeholder):
                errors[name] = problems
        # The database's checks (Meta.constraints), said here with the field's name.
        lowest, highest = scales.LIKERT.lowest, scales.LIKERT.highest
        if not lowest <= (self.safety_gate_threshold or 0) <= highest:
            errors["safety_gate_threshold"] = [f"Safety gate threshold: a level from {lowest} to {highest}."]
        if self.screen_out_after_failed_checks is not None and self.screen_out_after_failed_checks < 1:
            errors["screen_out_after_failed_checks"] = [
                "Screen out after: at least 1 failed check, or empty for never."
            ]
        if self.language not in dict(settings.LANGUAGES):
            errors["language"] = [f"Language: {self.language!r} is not one of the site's languages."]
        if errors:
            raise ValidationError(errors)

    @property
    def is_open(self) -> bool:
        """Whether participants may answer: open, or piloting (pilot participants are flagged)."""
        return self.status in (self.Status.OPEN, self.Status.PILOT)


class StudyMembership(models.Model):
    """A member of a study's team and their role. Owner: everything, members and deletion
    included; editor: set-up, participants, launches; viewer: the dashboard, the report and the
    exports without identifying fields; adjudicator: the adjudication queue alone (the raters'
    answers shown blind, evaluation/adjudication_services.py). What each role may do is
    `Role.allows`."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        EDITOR = "editor", "Editor"
        VIEWER = "viewer", "Viewer"
        ADJUDICATOR = "adjudicator", "Adjudicator"

        def allows(self, need: str) -> bool:
            return need in ROLE_CAPABILITIES[self]

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    # Owner by default: `study.researchers.add(user)` (the admin's creator, the demo command) kept
    # the full rights a researcher had before roles existed. The members page always names a role.
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.OWNER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="study_membership_unique_user"),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "editor", "viewer", "adjudicator"]),
                name="study_membership_role",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.user}/{self.role}"


# The capabilities an `access_study(need=...)` asks for, by role. "view": dashboard, report,
# exports without identifying fields; "edit": set-up, participants, launches, identifying fields;
# "own": the team and deletion; "adjudicate": the adjudication queue and recording consensus labels.
NEEDS = ("view", "edit", "own", "adjudicate")
ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    StudyMembership.Role.OWNER: frozenset({"view", "edit", "own", "adjudicate"}),
    StudyMembership.Role.EDITOR: frozenset({"view", "edit", "adjudicate"}),
    StudyMembership.Role.VIEWER: frozenset({"view"}),
    StudyMembership.Role.ADJUDICATOR: frozenset({"adjudicate"}),
}


class Source(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="sources")
    key = models.CharField(max_length=100)
    text = models.TextField()
    position = models.PositiveIntegerField(
        help_text="Fixed index i of the source in the study (Latin square)."
    )
    reference_severity = models.CharField(max_length=10, choices=SEVERITY_CHOICES, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The report a source's text came from (a hospital export's report, read whole or split into
    # sentences: studies/importers/report_file.py); empty for sources given as such.
    report_key = models.CharField(max_length=100, blank=True, default="")
    # Not columns: what a survey page's own query reads beside its source (annotation/access.py),
    # so that privacy.selectors.source_text needs no query of its own; unset elsewhere.
    deidentified_text: str | None
    originals_for_radiologists: bool | None

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "key"], name="source_unique_key"),
            models.UniqueConstraint(fields=["study", "position"], name="source_unique_position"),
            models.CheckConstraint(
                condition=Q(reference_severity="") | Q(reference_severity__in=scales.SEVERITY.names),
                name="source_reference_severity_level",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.key}"

    def clean(self) -> None:
        errors = json_shapes.object_errors(self.metadata, field="Metadata")
        if errors:
            raise ValidationError({"metadata": errors})


class System(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="systems")
    key = models.SlugField(max_length=60)
    label = models.CharField(max_length=120, blank=True)
    position = models.PositiveIntegerField(default=0)
    config = models.JSONField(default=dict, blank=True)
    is_reference = models.BooleanField(
        default=False, help_text="Human reference simplifications (used by reference-based metrics)."
    )

    class Meta:
        ordering = ["study", "position", "key"]
        constraints = [models.UniqueConstraint(fields=["study", "key"], name="system_unique_key")]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.key}"

    def clean(self) -> None:
        errors = json_shapes.object_errors(self.config, field="Config")
        if errors:
            raise ValidationError({"config": errors})


class SimplificationText(models.Model):
    """One distinct text shown for a source. Simplifications with the same normalized text share it."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="texts")
    text = models.TextField()
    text_hash = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "text_hash"], name="text_unique_per_source")]

    def __str__(self) -> str:
        return self.text[:60]


class Simplification(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="simplifications")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="simplifications")
    shown_text = models.ForeignKey(
        SimplificationText, on_delete=models.PROTECT, related_name="simplifications"
    )
    # Provenance (filled by generation; imports record "import").
    origin = models.CharField(max_length=40, default="import")
    backend = models.CharField(max_length=40, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    rounds = models.PositiveIntegerField(null=True, blank=True)
    reached_round_cap = models.BooleanField(default=False)
    transcript = models.JSONField(default=list, blank=True)
    raw_output = models.TextField(blank=True)
    flagged = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["source__position", "system__position"]
        constraints = [models.UniqueConstraint(fields=["source", "system"], name="simplification_unique")]

    def __str__(self) -> str:
        return f"{self.source} · {self.system.key}"

    @property
    def text(self) -> str:
        return self.shown_text.text


# Participant.qualification's values (annotation/qualification_states.py names them).
QUALIFICATION_STATES = ("", "due", "passed", "flagged", "failed")


class Participant(models.Model):
    class Role(models.TextChoices):
        RADIOLOGIST = "radiologist", "Radiologist"
        LAYPERSON = "layperson", "Layperson"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    role = models.CharField(max_length=12, choices=Role.choices)
    # The rater group an instrument's `roles` name (seed 000's "annotator", "medical_expert"),
    # where it is not the role itself; empty = the role. The rate-each-pair flow asks a participant the
    # items of their group (surveys/rate_each_pair/).
    rater_group = models.SlugField(max_length=60, blank=True)
    token = models.CharField(max_length=64, unique=True, default=new_participant_token, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="participations",
    )
    external_id = models.CharField(max_length=200, blank=True, help_text="e.g. the Prolific PID")
    recruitment = models.JSONField(
        default=dict, blank=True, help_text="STUDY_ID, SESSION_ID, … of the recruiter"
    )
    pseudonym = models.CharField(max_length=20, blank=True)
    latin_square_row = models.PositiveIntegerField(null=True, blank=True)
    order_seed = models.BigIntegerField(default=0)
    background = models.JSONField(default=dict, blank=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    returned_at = models.DateTimeField(
        null=True, blank=True, help_text="Returned/withdrawn: row may be reused."
    )
    last_activity_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Ended by failed attention checks (Study.screen_out_after_failed_checks): not analysed.",
    )
    # The qualification round (qualification/): "" none asked, "due" practising, "passed",
    # "flagged" (failed, went on flagged), "failed" (screened out). Read with the participant, so a
    # real page's gate costs no query.
    qualification = models.CharField(max_length=8, blank=True, default="")
    # The language this participant was shown the study in (exports record it).
    language = models.CharField(max_length=16, blank=True)
    # Who an invited radiologist is, for the team sending the link (identifying: never exported,
    # shown to owners and editors only, never in the activity log).
    contact_name = models.CharField(max_length=200, blank=True)
    contact_email = models.EmailField(blank=True)
    withdrawn_at = models.DateTimeField(
        null=True, blank=True, help_text="Withdrawn by the team: their answers were deleted."
    )
    # A researcher trying the survey from the console: may answer whatever the study's status,
    # and is never counted (annotation.selectors.counted_participants).
    is_preview = models.BooleanField(default=False)
    # Joined while the study was in pilot: kept apart from the study's data (counted nowhere) and
    # discarded in one action before opening (studies.study_services.pilot_participants_discard).
    is_pilot = models.BooleanField(default=False)
    completion_code = models.CharField(max_length=16, default=new_completion_code)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "role", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id"],
                condition=~Q(external_id=""),
                name="participant_unique_external_id",
            ),
            models.UniqueConstraint(
                fields=["study", "pseudonym"], condition=~Q(pseudonym=""), name="participant_unique_pseudonym"
            ),
            models.CheckConstraint(
                condition=Q(qualification__in=QUALIFICATION_STATES), name="participant_qualification_state"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.role}/{self.pseudonym or self.pk}"

    @property
    def is_radiologist(self) -> bool:
        return self.role == self.Role.RADIOLOGIST

    @property
    def may_answer(self) -> bool:
        """Whether the study takes this participant's answers now (a preview always may)."""
        return self.is_preview or self.study.is_open


# --- Expert (radiologist) flow ---------------------------------------------------------------


class ExpertItem(models.Model):
    """One page of the radiologist flow: a source, with its texts in a stored random order."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="expert_items")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="expert_items")
    position = models.PositiveIntegerField()
    text_order = models.JSONField(
        default=list, help_text="SimplificationText ids in display order (labels A, B, …)"
    )
    # Planted controls (PlantedControl ids) mixed into the page: [[row index, control id], …], the
    # index counting every row of the page (labels A, B, … run over real and planted rows alike).
    # Drawn when the page is created; empty for a study without controls.
    control_slots = models.JSONField(default=list, blank=True)
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "source"], name="expert_item_unique_source"),
            models.UniqueConstraint(fields=["participant", "position"], name="expert_item_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.participant} · page {self.position}"


# --- Lay flow ---------------------------------------------------------------------------------


class LayItem(models.Model):
    class Stage(models.TextChoices):
        ORIGINAL = "original", "Panel 1: original"
        ASSISTED = "assisted", "Panel 2: original + simplification"
        PREFERENCE = "preference", "Panel 3: preferences"
        DONE = "done", "Done"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="lay_items")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="lay_items")
    position = models.PositiveIntegerField(help_text="Display position in this participant's survey.")
    assigned_system = models.ForeignKey(
        System,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="lay_items",
        help_text="The system the Latin square assigned for panel 2.",
    )
    shown_text = models.ForeignKey(SimplificationText, on_delete=models.PROTECT, related_name="lay_items")
    preference_order = models.JSONField(default=list, help_text="SimplificationText ids in panel-3 order.")
    stage = models.CharField(max_length=12, choices=Stage.choices, default=Stage.ORIGINAL)
    original_locked_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "source"], name="lay_item_unique_source"),
            models.UniqueConstraint(fields=["participant", "position"], name="lay_item_unique_position"),
        ]
        indexes = [
            # Every lay request asks for the participant's first unfinished item (lay_next_step):
            # without this the database reads and sorts all of the participant's unfinished items.
            models.Index(
                fields=["participant", "position"], condition=~Q(stage="done"), name="lay_item_unfinished"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.participant} · item {self.position}"


class AttentionCheck(models.Model):
    """A check item with a known answer, shown to lay participants after `position` sources."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="attention_checks")
    position = models.PositiveIntegerField(help_text="Shown after this many sources (0 = before the first).")
    prompt = models.TextField()
    options = models.JSONField(default=list)
    expected_answer = models.CharField(max_length=200)

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="attention_check_unique_position")
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} · check after {self.position} sources"

    def clean(self) -> None:
        errors = json_shapes.attention_check_errors(
            prompt=self.prompt, options=self.options, expected_answer=self.expected_answer
        )
        if errors:
            raise ValidationError(errors)


class AttentionCheckResponse(models.Model):
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="attention_responses")
    check_item = models.ForeignKey(AttentionCheck, on_delete=models.CASCADE, related_name="responses")
    answer = models.CharField(max_length=200)
    passed = models.BooleanField()
    answered_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "check_item"], name="attention_response_unique")
        ]

    def __str__(self) -> str:
        return f"{self.participant} · check after {self.check_item.position} sources"


class ConsentRefusal(models.Model):
    """Declining consent records only that a refusal happened (no identifier)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_refusals")
    role = models.CharField(max_length=12, choices=Participant.Role.choices)
    refused_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.study.slug} · {self.role} refused consent"


# --- The study's activity log -----------------------------------------------------------------


class ActivityEvent(models.Model):
    """One researcher action on a study (created, imported, opened, invited, launched, exported,
    team changed, …): who, when, what and on which object. Append-only: written by
    `activity_record` alone, never updated or deleted by radlay (the admin shows it read-only)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="activity")
    # The account that acted; SET_NULL keeps the event when the account goes (actor_label stays).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="the username, or the command that acted")
    verb = models.CharField(max_length=60, help_text='e.g. "study.opened", "participants.invited"')
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_label = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["study", "-created_at"], name="activity_study_time"),
            models.Index(fields=["study", "verb"], name="activity_study_verb"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} {self.verb} by {self.actor_label}"


class AnswerRevision(models.Model):
    """The previous value of an answer a participant changed (an ItemAnswer row): written in the
    same transaction as the change, only when the value actually changed, never on the first save
    (annotation/answer_store.py). `previous` is {"value": the earlier value}; `previous_at` when it
    had been saved."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="answer_revisions")
    answer_type = models.CharField(max_length=60, help_text='the answer\'s model: "annotation.ItemAnswer"')
    answer_id = models.BigIntegerField()
    previous = models.JSONField()
    previous_at = models.DateTimeField()
    revised_at = models.DateTimeField()

    # Set by annotation.selectors.answer_revisions_described for the activity page: which question
    # (and panel) the revision belongs to, and its earlier value as the page shows it.
    question: str
    earlier: object

    class Meta:
        ordering = ["-revised_at", "-id"]
        indexes = [models.Index(fields=["participant", "-revised_at"], name="revision_participant_time")]

    def __str__(self) -> str:
        return f"{self.answer_type} {self.answer_id} revised {self.revised_at:%Y-%m-%d %H:%M}"


# --- Instruments as data (instruments/ holds the format, validation and presets) ----------------


class StudyInstrument(models.Model):
    """One version of an instrument a study asks (instruments/, docs/architecture/instruments.md):
    its whole definition as the canonical data `instruments.validation.instrument_to_data` writes,
    with its fingerprint. A study may ask several (one per flow, e.g. the protocol's radiologist
    and lay instruments). Rows are never edited once an answer names them: a change is a new
    version (the rule of `instruments.versioning`), recorded with who made it and why, and exactly
    one version of each key is current."""

    class Flow(models.TextChoices):
        EXPERT = "expert", "Radiologist page (one source, every text)"
        LAY = "lay", "Lay three-panel flow (original, assisted, preference)"
        PAIRS = "pairs", "Rate each pair (one text, or a text and its reference, a page)"
        PAIRWISE = "pairwise", "Pairwise comparison (two texts of one source side by side)"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="instruments")
    key = models.SlugField(max_length=60, help_text="the instrument's key (its `key` field)")
    version = models.PositiveIntegerField()
    flow = models.CharField(max_length=10, choices=Flow.choices)
    definition = models.JSONField(help_text="instrument_to_data(instrument): the canonical form")
    fingerprint = models.CharField(max_length=64, help_text="instrument_fingerprint(instrument)")
    structure_fingerprint = models.CharField(
        max_length=64, help_text="instrument_structure_fingerprint: equal when answers pool across versions"
    )
    preset = models.CharField(max_length=60, blank=True, help_text="the preset it was created from, if any")
    is_current = models.BooleanField(default=True)
    change_note = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "key", "version"]
        constraints = [
            models.UniqueConstraint(fields=["study", "key", "version"], name="instrument_unique_version"),
            models.UniqueConstraint(
                fields=["study", "key"], condition=Q(is_current=True), name="instrument_one_current"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="instrument_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id} {self.key} v{self.version}"


class ItemAnswer(models.Model):
    """One participant's answer to one instrument item on one target: the one store of every
    answer of every flow (the protocol's items, a team's added items, every other preset's items,
    the compare-two flow's choices, the answers on planted controls). `value` is the answer as
    `instruments.answers.item_value_validate` accepts it (item_value_to_json); `score` its numeric
    coding (`item_value_code`: the ordinal code, the count, the matched proportion; null for free
    text, choices and "not applicable").

    The target is the source, a shown text, a (shown text, reference text) pair (the pairwise
    flow's left and right texts), or a planted control (`control`, its source as `source`), as the
    item's `applies_to` says. `phase` is the lay panel the answer was given in (the protocol asks
    Q1-Q3 in panels 1 and 2), empty in the other flows. One answer per participant, instrument
    version, item, target and phase (partial unique constraints, since NULLs never collide). Only
    annotation/answer_store.py writes these rows; the protocol's typed shapes are read through
    annotation/answer_selectors.py."""

    class Phase(models.TextChoices):
        NONE = "", "No phase"
        ORIGINAL = "original", "Original only (panel 1)"
        ASSISTED = "assisted", "With simplification (panel 2)"
        PREFERENCE = "preference", "Preferences (panel 3)"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="item_answers")
    instrument = models.ForeignKey(StudyInstrument, on_delete=models.PROTECT, related_name="answers")
    item_key = models.SlugField(max_length=60)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="item_answers")
    shown_text = models.ForeignKey(
        SimplificationText, null=True, blank=True, on_delete=models.CASCADE, related_name="item_answers"
    )
    reference_text = models.ForeignKey(
        SimplificationText, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    control = models.ForeignKey(
        "PlantedControl", null=True, blank=True, on_delete=models.CASCADE, related_name="answers"
    )
    phase = models.CharField(max_length=10, choices=Phase.choices, blank=True, default="")
    value = models.JSONField()
    score = models.FloatField(null=True, blank=True)
    language = models.CharField(max_length=16, blank=True, help_text="the language the item was shown in")
    time_spent_ms = models.PositiveBigIntegerField(default=0)
    # AI-assisted error spans (annotation/span_suggestions.py): {"assisted": bool, "items": [each
    # suggestion shown, its origin judge | planted, and its fate]}; empty where none were offered.
    suggestions = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "instrument", "item_key", "source", "phase"],
                condition=Q(shown_text__isnull=True, control__isnull=True),
                name="item_answer_unique_source",
            ),
            models.UniqueConstraint(
                fields=["participant", "instrument", "item_key", "shown_text", "phase"],
                condition=Q(shown_text__isnull=False, reference_text__isnull=True),
                name="item_answer_unique_text",
            ),
            models.UniqueConstraint(
                fields=["participant", "instrument", "item_key", "shown_text", "reference_text"],
                condition=Q(shown_text__isnull=False, reference_text__isnull=False),
                name="item_answer_unique_pair",
            ),
            models.UniqueConstraint(
                fields=["participant", "instrument", "item_key", "control"],
                condition=Q(control__isnull=False),
                name="item_answer_unique_control",
            ),
            models.CheckConstraint(
                condition=Q(reference_text__isnull=True) | Q(shown_text__isnull=False),
                name="item_answer_reference_needs_text",
            ),
            models.CheckConstraint(
                condition=Q(control__isnull=True) | Q(shown_text__isnull=True),
                name="item_answer_control_alone",
            ),
            models.CheckConstraint(
                condition=Q(phase__in=["", "original", "assisted", "preference"]),
                name="item_answer_phase",
            ),
        ]
        indexes = [
            models.Index(fields=["instrument", "item_key"], name="item_answer_instrument_item"),
            models.Index(fields=["participant", "source"], name="item_answer_participant_source"),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id} {self.item_key} {self.value!r}"


# --- Sources uploaded in the browser (the console's upload page) --------------------------------


def source_upload_path(instance: SourceUpload, filename: str) -> str:
    return f"uploads/{instance.study_id}/{secrets.token_hex(8)}-{filename}"


class SourceUpload(models.Model):
    """A sources file uploaded in the browser and imported by a task (console/upload_services.py):
    the same reader and writer as `manage.py import_study`, all or nothing. `errors` holds the
    reader's refusal as rows of file, row, column and reason; `progress` is 0..1 while it runs."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Importing"
        SUCCEEDED = "succeeded", "Imported"
        FAILED = "failed", "Refused"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="uploads")
    file = models.FileField(upload_to=source_upload_path, max_length=300)
    original_name = models.CharField(max_length=200)
    size = models.PositiveBigIntegerField(default=0)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=20, blank=True, help_text="checking or writing, while it runs")
    progress = models.FloatField(default=0.0)
    rows_read = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    # A FHIR/HL7 file's reports imported a source per sentence rather than whole.
    split_sentences = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The job layer's lease (work.single_jobs): when the task was last sent (and why the broker
    # refused it), the task that holds the upload (its retry takes it over), and how many times a
    # task took it.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="source_upload_progress_0_1"
            )
        ]

    def __str__(self) -> str:
        return f"{self.study_id} {self.original_name} ({self.status})"


class PairwiseTask(models.Model):
    """One page of the compare-two flow (surveys/compare_two/): a participant compares two
    simplifications of one source, `left` shown as A on the left. Which systems are paired and
    which side each takes are drawn per participant (seeded, surveys/compare_two/assignment.py)
    and stored here, so the answer (an ItemAnswer with shown_text = left's text, reference_text =
    right's) is read back with the systems it compared."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="pairwise_tasks")
    instrument = models.ForeignKey(StudyInstrument, on_delete=models.PROTECT, related_name="pairwise_tasks")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="pairwise_tasks")
    left = models.ForeignKey(Simplification, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Simplification, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "position"], name="pairwise_task_unique_position"),
            models.UniqueConstraint(fields=["participant", "source"], name="pairwise_task_one_per_source"),
            models.CheckConstraint(condition=~Q(left=models.F("right")), name="pairwise_task_two_texts"),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id} #{self.position}"


class PlantedControl(models.Model):
    """A deliberately degraded copy of one distinct simplification text (Appraise's "BAD
    references", made clinical: generation/controls.py), mixed into radiologists' pages and never
    shown as such. Its answers are ItemAnswer rows whose target is the control (`control` set, no
    shown text), so a planted item cannot enter the study's tables. `start`/`end` locate the planted change in
    `text`, `original_start`/`original_end` the part of the original it replaced."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="planted_controls")
    degrades = models.ForeignKey(
        SimplificationText, on_delete=models.CASCADE, related_name="planted_controls"
    )
    kind = models.CharField(max_length=20)
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    original_start = models.PositiveIntegerField()
    original_end = models.PositiveIntegerField()
    category = models.CharField(max_length=60)
    severity = models.CharField(max_length=30)
    seed = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["degrades", "kind"], name="planted_control_one_per_kind"),
            models.CheckConstraint(condition=Q(start__lte=models.F("end")), name="planted_control_span"),
            models.CheckConstraint(
                condition=Q(original_start__lte=models.F("original_end")),
                name="planted_control_original_span",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:60]}"
