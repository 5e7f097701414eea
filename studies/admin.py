"""Admin for every model of the annotation app. Answers are read-only here: they are written only
by participants through the survey (or by an import)."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from annotation import participant_services
from annotation.activity_services import activity_record
from annotation.admin_access import ScopedRelatedFields, StudyScopedAdmin
from annotation.models import (
    REDIRECT_URL_FIELDS,
    ActivityEvent,
    AttentionCheck,
    AttentionCheckResponse,
    ConsentRefusal,
    ExpertItem,
    ItemAnswer,
    LayItem,
    Participant,
    PlantedControl,
    Simplification,
    SimplificationText,
    Source,
    Study,
    StudyMembership,
    System,
)
from annotation.redirect_urls import RedirectURLField
from annotation.selectors import study_role
from instruments.presets import preset_load, preset_names
from studies.admin_extensions import study_admin_actions, study_admin_inlines
from studies.error_span_services import study_error_spans_add
from studies.study_services import study_close, study_open
from surveys.rate_each_pair.selectors import pairs_item_problems
from surveys.rate_each_pair.services import study_instrument_attach

RELATED = admin.RelatedOnlyFieldListFilter


# Styles of admin pages (transcripts, progress bars), in a file for the Content-Security-Policy.
ADMIN_CSS = {"all": ("radlay/admin.css",)}


def transcript_table(transcript: list[dict]) -> str:
    """An agent transcript (Simplification.transcript, GenerationJob.transcript) as an HTML table;
    admins that show one include ADMIN_CSS."""
    if not transcript:
        return "—"
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td class='message'>{}</td></tr>",
        (
            (
                turn.get("round", ""),
                turn.get("agent", ""),
                f"{turn.get('role', '')}{' (cached)' if turn.get('cached') else ''}",
                turn.get("content", ""),
            )
            for turn in transcript
        ),
    )
    return format_html(
        "<table class='transcript'><tr><th>round</th><th>agent</th><th>role</th><th>message</th></tr>"
        "{}</table>",
        rows,
    )


class ReadOnlyAdmin(StudyScopedAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class SystemInline(ScopedRelatedFields, admin.TabularInline):
    model = System
    extra = 0
    fields = ("key", "label", "position", "is_reference")


class StudyMembershipInline(ScopedRelatedFields, admin.TabularInline):
    """The team, for superusers: researchers manage it on the study's Members page, which keeps
    the last owner and records the change (studies/team_services.py)."""

    model = StudyMembership
    extra = 0
    fields = ("user", "role")


class AttentionCheckInline(ScopedRelatedFields, admin.TabularInline):
    model = AttentionCheck
    extra = 0


def _preset_action(name: str):
    """The study list's action that attaches the shipped preset `name` for the rate-each-pair flow."""

    @admin.action(description=f"Attach the instrument preset {name} (rate each pair)")
    def attach(modeladmin, request, queryset):
        for study in queryset:
            try:
                study_instrument_attach(study=study, preset_name=name, actor=request.user)
            except ValidationError as exc:
                modeladmin.message_user(request, f"{study.slug}: {' '.join(exc.messages)}", messages.ERROR)
            else:
                modeladmin.message_user(request, f"{study.slug}: {name} attached.", messages.SUCCESS)

    attach.__name__ = f"attach_{name}"
    return attach


# Only the presets the rate-each-pair flow can ask (the protocol's are the radiologist and lay flows').
PRESET_ACTIONS = [
    _preset_action(name) for name in preset_names() if not pairs_item_problems(preset_load(name))
]


@admin.action(description="Add the clinical error-span typology to the radiologist instrument")
def add_error_spans(modeladmin, request, queryset):
    """Clinical error spans: every radiologist page then asks for error spans under each simplification
    (studies/error_span_services.py; the version rule applies once answers exist)."""
    for study in queryset:
        try:
            row = study_error_spans_add(study=study, actor=request.user)
        except ValidationError as exc:
            modeladmin.message_user(request, " ".join(exc.messages), messages.ERROR)
        else:
            modeladmin.message_user(
                request,
                f"Error spans added to {study.slug}: {row.key} version {row.version} is current.",
                messages.SUCCESS,
            )


@admin.register(Study)
class StudyAdmin(StudyScopedAdmin):
    list_display = (
        "slug",
        "title",
        "status",
        "unit",
        "n_sources",
        "n_participants",
        "created_at",
    )
    list_filter = ("status", "unit")
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    own_inlines = (SystemInline, AttentionCheckInline)
    own_actions = ("open_studies", "close_studies", *PRESET_ACTIONS, add_error_spans)
    fieldsets = (
        (None, {"fields": ("slug", "title", "description", "status", "unit", "language")}),
        (
            # The default instructions are the protocol's; the default consent texts are radlay's
            # own (annotation/protocol_texts.py): the heading says which.
            "Texts shown to participants (empty = the defaults: the protocol's instructions, "
            "radlay's own consent texts)",
            {
                "fields": (
                    "expert_instructions",
                    "expert_consent_text",
                    "lay_instructions",
                    "lay_consent_text",
                    "expected_duration_minutes",
                    "ethics_approval",
                    "consent_contact",
                )
            },
        ),
        ("Radiologist flow", {"fields": ("expert_sources_per_participant",)}),
        (
            "Lay flow",
            {
                "fields": (
                    "lay_sources_per_participant",
                    "ask_urgency",
                    "background_questions",
                    "abandon_after_minutes",
                    "safety_gate_enabled",
                    "safety_gate_threshold",
                    "completion_redirect_url",
                    "decline_redirect_url",
                    "screen_out_after_failed_checks",
                    "screened_out_redirect_url",
                )
            },
        ),
    )

    # Read on every use, not fixed when the class is built: other apps add theirs through
    # studies.admin_extensions, whatever the order in which the admin modules are imported.
    @property
    def inlines(self) -> list:  # type: ignore[override]
        return [*self.own_inlines, *study_admin_inlines()]

    @property
    def actions(self) -> list:  # type: ignore[override]
        return [*self.own_actions, *study_admin_actions()]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                _sources=Count("sources", distinct=True), _participants=Count("participants", distinct=True)
            )
        )

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "language":
            # A menu of settings.LANGUAGES; Study.clean refuses anything else (a crafted POST).
            # Left out of a form post (an older script), it is English, the model's default.
            return forms.TypedChoiceField(
                choices=settings.LANGUAGES,
                required=False,
                empty_value="en",
                initial="en",
                label="Participants' language",
                help_text="Every participant-facing page of this study is shown in it (docs: Languages). "
                "Translations other than English are radlay's own and not yet validated for "
                "research use.",
            )
        if db_field.name in REDIRECT_URL_FIELDS:
            # The one redirect rule (annotation/redirect_urls.py): no scheme guessed for //host/.
            kwargs |= {
                "form_class": RedirectURLField,
                "label_for_errors": REDIRECT_URL_FIELDS[db_field.name],
                "placeholder": db_field.name == "completion_redirect_url",
            }
            return db_field.formfield(**kwargs)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    @admin.display(description="sources", ordering="_sources")
    def n_sources(self, obj):
        return obj._sources

    @admin.display(description="participants", ordering="_participants")
    def n_participants(self, obj):
        return obj._participants

    def has_delete_permission(self, request, obj=None):
        # Deleting a study is its owners' (and superusers'): not an editor's, not in bulk.
        if not super().has_delete_permission(request, obj):
            return False
        if request.user.is_superuser:
            return True
        return obj is not None and study_role(user=request.user, study=obj) == StudyMembership.Role.OWNER

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # A study's activity log goes with the study; nobody deletes events on their own.
        perms_needed.discard(ActivityEvent._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def get_inlines(self, request, obj):
        inlines = super().get_inlines(request, obj)
        return [StudyMembershipInline, *inlines] if request.user.is_superuser else inlines

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if not change and not request.user.is_superuser:
            # A researcher who creates a study must be able to see it afterwards.
            form.instance.researchers.add(request.user)
        changed = sorted({*form.changed_data, *(f.prefix for f in formsets if f.has_changed())})
        if not change or changed:
            verb = "study.changed" if change else "study.created"
            details = {"fields": changed, "via": "admin"} if change else {"via": "admin"}
            activity_record(
                study=form.instance, actor=request.user, verb=verb, obj=form.instance, details=details
            )

    def _set_status(self, request, queryset, *, service, state: str) -> None:
        changed: list[str] = []
        unchanged: list[str] = []
        for study in queryset:
            try:
                (changed if service(study=study, actor=request.user) else unchanged).append(study.slug)
            except ValidationError as exc:
                self.message_user(request, " ".join(exc.messages), messages.ERROR)
        if changed:
            self.message_user(request, f"Now {state}: {', '.join(changed)}.", messages.SUCCESS)
        if unchanged:
            self.message_user(
                request, f"Already {state}, nothing changed: {', '.join(unchanged)}.", messages.INFO
            )

    @admin.action(description="Open the selected studies")
    def open_studies(self, request, queryset):
        self._set_status(request, queryset, service=study_open, state="open")

    @admin.action(description="Close the selected studies (answers given so far are kept)")
    def close_studies(self, request, queryset):
        self._set_status(request, queryset, service=study_close, state="closed")


@admin.register(Source)
class SourceAdmin(StudyScopedAdmin):
    list_display = ("key", "study", "position", "reference_severity", "short_text")
    list_filter = (("study", RELATED), "reference_severity")
    search_fields = ("key", "text")
    ordering = ("study", "position")

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.text[:100]


@admin.register(System)
class SystemAdmin(StudyScopedAdmin):
    list_display = ("key", "label", "study", "position", "is_reference")
    list_filter = (("study", RELATED), "is_reference")


@admin.register(Simplification)
class SimplificationAdmin(StudyScopedAdmin):
    list_display = (
        "source",
        "system",
        "short_text",
        "origin",
        "backend",
        "model_name",
        "prompt_version",
        "rounds",
        "flagged",
    )
    list_filter = (
        ("source__study", RELATED),
        ("system", RELATED),
        "origin",
        "backend",
        "flagged",
        "reached_round_cap",
    )
    search_fields = ("source__key", "shown_text__text")
    readonly_fields = ("shown_text", "created_at", "updated_at", "transcript_view")
    exclude = ("transcript",)

    class Media:
        css = ADMIN_CSS

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.shown_text.text[:100]

    @admin.display(description="agent transcript")
    def transcript_view(self, obj):
        return transcript_table(obj.transcript)


@admin.register(SimplificationText)
class SimplificationTextAdmin(ReadOnlyAdmin):
    list_display = ("source", "short_text", "systems")
    list_filter = (("source__study", RELATED),)
    search_fields = ("text",)

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.text[:100]

    @admin.display(description="systems")
    def systems(self, obj):
        return ", ".join(obj.simplifications.values_list("system__key", flat=True))


@admin.register(Participant)
class ParticipantAdmin(StudyScopedAdmin):
    list_display = (
        "pseudonym",
        "study",
        "role",
        "external_id",
        "latin_square_row",
        "progress",
        "consented_at",
        "completed_at",
        "survey_link",
    )
    list_filter = (("study", RELATED), "role", ("completed_at", admin.EmptyFieldListFilter))
    search_fields = ("pseudonym", "external_id")
    readonly_fields = (
        "token",
        "created_at",
        "started_at",
        "completed_at",
        "last_activity_at",
        "consented_at",
        "declined_at",
        "returned_at",
    )
    actions = ["mark_returned"]

    @admin.action(description="Mark as returned/withdrawn (their Latin-square row is handed out again)")
    def mark_returned(self, request, queryset):
        updated = participant_services.participants_mark_returned(participants=queryset, actor=request.user)
        self.message_user(request, f"{updated} participant(s) marked as returned.")

    @admin.display(description="progress")
    def progress(self, obj):
        items = obj.expert_items.all() if obj.role == Participant.Role.RADIOLOGIST else obj.lay_items.all()
        total = items.count()
        done = items.filter(completed_at__isnull=False).count()
        return f"{done}/{total}"

    @admin.display(description="link")
    def survey_link(self, obj):
        return format_html('<a href="{}">survey</a>', reverse("surveys:entry", args=[obj.token]))


@admin.register(ExpertItem)
class ExpertItemAdmin(ReadOnlyAdmin):
    list_display = ("participant", "source", "position", "time_spent_ms", "completed_at")
    list_filter = (("participant__study", RELATED),)


@admin.register(PlantedControl)
class PlantedControlAdmin(ReadOnlyAdmin):
    """Planted by generation/services/controls.py (manage.py plant_controls, the Study action)."""

    list_display = ("study", "kind", "category", "severity", "text", "start", "end", "seed")
    list_filter = (("study", RELATED), "kind")


@admin.register(ItemAnswer)
class ItemAnswerAdmin(ReadOnlyAdmin):
    """Every answer of every flow (annotation/answer_store.py writes them)."""

    list_display = (
        "participant",
        "item_key",
        "phase",
        "source",
        "shown_text",
        "control",
        "value",
        "score",
        "time_spent_ms",
        "updated_at",
    )
    list_filter = (("participant__study", RELATED), "phase", "item_key", ("instrument", RELATED))


@admin.register(LayItem)
class LayItemAdmin(ReadOnlyAdmin):
    list_display = ("participant", "source", "position", "assigned_system", "stage", "completed_at")
    list_filter = (("participant__study", RELATED), "stage", ("assigned_system", RELATED))


@admin.register(AttentionCheckResponse)
class AttentionCheckResponseAdmin(ReadOnlyAdmin):
    list_display = ("participant", "check_item", "answer", "passed", "answered_at")
    list_filter = (("participant__study", RELATED), "passed")


@admin.register(ConsentRefusal)
class ConsentRefusalAdmin(ReadOnlyAdmin):
    list_display = ("study", "role", "refused_at")
    list_filter = (("study", RELATED),)


@admin.register(ActivityEvent)
class ActivityEventAdmin(ReadOnlyAdmin):
    """The activity log as recorded: nobody, superusers included, edits or deletes an event."""

    list_display = ("created_at", "study", "actor_label", "verb", "object_label")
    list_filter = (("study", RELATED), "verb")
    search_fields = ("actor_label", "verb", "object_label")

    def has_delete_permission(self, request, obj=None):
        return False
