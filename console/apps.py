from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The researcher's set-up pages: create and configure a study, upload sources,
    launch generation and judges, invite and manage participants, open/pause/close, preview and
    pilot. Views stay thin: every rule they apply is a service or selector of the app that owns it."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "console"
    verbose_name = "Study console"
