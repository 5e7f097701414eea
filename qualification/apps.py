from django.apps import AppConfig


class QualificationConfig(AppConfig):
    """The qualification round: practice items with feedback before a flow's first real page, a
    pass rule per flow and rater group, and practice answers kept apart from the study's answers."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "qualification"
    verbose_name = "Qualification round"
