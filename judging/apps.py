from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"
    default_auto_field = "django.db.models.BigAutoField"
