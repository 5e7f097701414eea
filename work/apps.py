from django.apps import AppConfig


class WorkConfig(AppConfig):
    """Batches of background jobs run by Celery workers (generation batches, judge runs): the
    scheduler, the abstract models, progress, the launch form and options, the embedded-mode runner
    and the database retry policy, each written once. Apps that launch batches are its users; it
    imports none of them."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "work"
    verbose_name = "Background work"
