"""DRF serializers of the read-only research API (evaluation/api.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Simplification, Source, Study, System
from privacy.selectors import data_policy_of


class DataPolicySerializer(serializers.Serializer):
    """A study's data policy (privacy/): what its text may reach and whether its
    de-identification is approved."""

    policy = serializers.CharField()
    endpoint = serializers.CharField(allow_blank=True)
    deidentification_approved_at = serializers.DateTimeField(allow_null=True, source="approved_at")


class StudySerializer(serializers.ModelSerializer):
    n_sources = serializers.IntegerField(read_only=True)
    n_systems = serializers.IntegerField(read_only=True)
    n_participants = serializers.IntegerField(read_only=True)
    data_policy = serializers.SerializerMethodField()

    @extend_schema_field(DataPolicySerializer)
    def get_data_policy(self, study: Study) -> dict:
        return dict(DataPolicySerializer(data_policy_of(study=study)).data)

    class Meta:
        model = Study
        fields = [
            "slug",
            "title",
            "description",
            "status",
            "unit",
            "language",
            "created_at",
            "updated_at",
            "n_sources",
            "n_systems",
            "n_participants",
            "data_policy",
        ]


class SourceSerializer(serializers.ModelSerializer):
    # The de-identified text unless an owner asked for originals (evaluation/api.py).
    text = serializers.CharField(source="shown_text", read_only=True)

    class Meta:
        model = Source
        fields = ["key", "position", "text", "reference_severity", "metadata"]


class SystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["key", "label", "position", "is_reference", "config"]


class SimplificationSerializer(serializers.ModelSerializer):
    source = serializers.CharField(source="source.key")
    system = serializers.CharField(source="system.key")
    text = serializers.CharField(source="shown_text.text")
    text_id = serializers.IntegerField(source="shown_text_id")

    class Meta:
        model = Simplification
        fields = [
            "source",
            "system",
            "text",
            "text_id",
            "origin",
            "backend",
            "model_name",
            "prompt_version",
            "parameters",
            "seed",
            "rounds",
            "reached_round_cap",
            "flagged",
            "flag_reason",
            "created_at",
        ]


class ParticipantProgressSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="pseudonym")
    role = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    status = serializers.CharField()
    latin_square_row = serializers.IntegerField(allow_null=True)
    language = serializers.CharField(
        allow_blank=True,
        help_text="the language the participant was shown the study in (empty: not recorded)",
    )
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)


class AnswerSerializer(serializers.Serializer):
    """One raw answer (the export's long format; evaluation/exports/rows.py AnswerRow)."""

    study = serializers.CharField()
    participant = serializers.CharField(help_text="pseudonym")
    role = serializers.CharField()
    language = serializers.CharField(
        allow_blank=True,
        help_text="the language the participant was shown the study in (empty: not recorded)",
    )
    source = serializers.CharField(
        allow_blank=True, help_text="source key (empty for attention checks and background answers)"
    )
    systems = serializers.CharField(
        allow_blank=True, help_text="';'-joined keys of every system that produced the text"
    )
    assigned_system = serializers.CharField(
        allow_blank=True, help_text="the system the Latin square assigned (lay answers)"
    )
    text_id = serializers.IntegerField(allow_null=True, help_text="the distinct text answered about")
    phase = serializers.CharField(
        help_text="original, assisted, preference, expert, attention_check, background"
    )
    question = serializers.CharField(help_text="the question; for background answers the question's key")
    value = serializers.CharField(
        allow_blank=True, help_text="level name as shown to the participant (or free text)"
    )
    value_number = serializers.IntegerField(allow_null=True, help_text="the level in radlay's coding")
    time_spent_ms = serializers.IntegerField()
    created_at = serializers.CharField(allow_blank=True, help_text="ISO 8601")
    updated_at = serializers.CharField(allow_blank=True, help_text="ISO 8601")


class AnswerPageSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = AnswerSerializer(many=True)


class AnalysisSerializer(serializers.Serializer):
    """The analysis document (see `manage.py analyze`); documented by its top-level keys."""

    study = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField(), help_text="system keys in study order")
    system_details = serializers.DictField(help_text="label, position, is_reference per system key")
    readability = serializers.DictField()
    expert = serializers.DictField()
    lay = serializers.DictField()
    confidence_vs_accuracy = serializers.DictField()
    preferences = serializers.DictField()
    agreement = serializers.DictField()
    severity_distribution = serializers.DictField()
    correlations = serializers.ListField(child=serializers.DictField())
    confidence_intervals = serializers.DictField()
    comparisons = serializers.DictField()
    metrics = serializers.DictField()
    system_means = serializers.DictField(
        help_text="per measure and system: mean with its crossed-design interval"
    )
    snapshot = serializers.DictField(
        help_text="when this analysis was computed (computed_at), how many answers it covers (n_answers, "
        "last_answer_at), whether a newer one is being computed (recomputing) because the data changed "
        "(stale, answers_since: as of the last check of the data), and whether a newer check is on its way "
        "(checking)"
    )


class AuditRowSerializer(serializers.Serializer):
    id = serializers.CharField()
    table = serializers.CharField()
    row = serializers.CharField()
    column = serializers.CharField()
    path = serializers.CharField()
    reported = serializers.CharField()
    reported_value = serializers.FloatField(allow_null=True)
    value = serializers.FloatField(allow_null=True)
    difference = serializers.FloatField(allow_null=True)
    tolerance = serializers.FloatField(allow_null=True)
    status = serializers.ChoiceField(choices=["agrees", "differs", "not computed"])
    note = serializers.CharField(allow_blank=True)


class AuditSerializer(serializers.Serializer):
    paper = serializers.CharField(allow_blank=True)
    reported_file = serializers.CharField()
    summary = serializers.DictField(child=serializers.IntegerField())
    rows = AuditRowSerializer(many=True)
